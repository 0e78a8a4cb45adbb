"""Exact duplicate rows are counted and, if asked, dropped in a pipeline."""

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.duplicates import (
    drop_duplicate_rows,
    duplicate_rows,
    merge_duplicates,
)


def _config(drop_duplicates: bool = True) -> BeamConfig:
    options = {"max_len": 5, "drop_duplicates": drop_duplicates}
    return BeamConfig.from_options(options, num_shards=1, filter_rounds=1)


@pytest.mark.slow
@pytest.mark.parametrize("drop", [True, False])
def test_duplicate_phase_counts_and_keeps_the_first(drop):
    # (file, line, user, item, time, numeric, other)
    first = (0, 1, "u", "a", 1.0, [], None)
    again = (0, 2, "u", "a", 1.0, [], None)
    later_file = (1, 1, "u", "a", 1.0, [], None)
    other = (0, 3, "u", "b", 2.0, [], None)
    schema = {"has_time": True, "numeric": [], "slots": {0: [], 1: []}}
    with beam.Pipeline() as pipeline:
        rows = pipeline | "Rows" >> beam.Create(
            [later_file, again, other, first]
        )
        side = beam.pvalue.AsSingleton(pipeline | "S" >> beam.Create([schema]))
        kept, duplicates = drop_duplicate_rows(rows, side, _config(drop))
        expected = [first, other] if drop else [first, again, later_file, other]
        assert_that(kept, equal_to(expected), label="Kept")
        assert_that(
            duplicates, equal_to([(2, (0, 2), (0, 1))]), label="Counted"
        )


@pytest.mark.slow
def test_without_timestamps_identical_lines_are_no_duplicates():
    # Identical lines without time are repeats, in file order.
    rows = [(0, 1, "u", "a", None, [], None), (0, 2, "u", "a", None, [], None)]
    schema = {"has_time": False, "numeric": [], "slots": {0: []}}
    with beam.Pipeline() as pipeline:
        created = pipeline | "Rows" >> beam.Create(rows)
        side = beam.pvalue.AsSingleton(pipeline | "S" >> beam.Create([schema]))
        kept, duplicates = drop_duplicate_rows(created, side, _config())
        assert_that(kept, equal_to(rows), label="Kept")
        assert_that(duplicates, equal_to([(0, None, None)]), label="None")


def test_merge_keeps_the_first_duplicate_in_file_order():
    merged = merge_duplicates([(1, (1, 4), (0, 3)), (2, (0, 9), (0, 2))])
    assert merged == (3, (0, 9), (0, 2))
    assert merge_duplicates([]) == (0, None, None)


def test_duplicate_rows_names_paths_and_lines():
    found = duplicate_rows(
        [3, [1, 4], [0, 2]], ["a.tsv", "b.tsv"], _config(drop_duplicates=False)
    )
    assert (found.count, found.first, found.original) == (
        3,
        "b.tsv:4",
        "a.tsv:2",
    )
    assert not found.dropped
    assert duplicate_rows([0, None, None], ["a.tsv"], _config()) is None
