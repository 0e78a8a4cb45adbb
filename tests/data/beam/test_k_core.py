"""The unrolled k-core filter keeps what the local filter keeps."""

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.k_core import k_core

pytestmark = pytest.mark.slow

# (file, line, user, item, time, numeric, other): item "c" is rare; without
# it user "v" is too short, and without "v" item "b" is rare in turn.
ROWS = [
    (0, 1, "u", "a", None, [], None),
    (0, 2, "u", "a", None, [], None),
    (0, 3, "v", "b", None, [], None),
    (0, 4, "v", "c", None, [], None),
    (0, 5, "w", "a", None, [], None),
    (0, 6, "w", "b", None, [], None),
]


def _filter(filter_rounds: int, min_user: int = 2, min_item: int = 2):
    options = {
        "max_len": 3,
        "min_user_interactions": min_user,
        "min_item_interactions": min_item,
    }
    config = BeamConfig.from_options(options, 1, filter_rounds)
    pipeline = beam.Pipeline()
    kept, unsettled = k_core(pipeline | beam.Create(ROWS), config)
    return pipeline, kept, unsettled


def test_rounds_until_settled():
    pipeline, kept, unsettled = _filter(filter_rounds=3)
    with pipeline:
        assert_that(kept, equal_to(ROWS[:2]), label="Kept")
        assert_that(unsettled, equal_to([0]), label="Unsettled")


def test_counts_the_items_of_an_unsettled_filter():
    pipeline, kept, unsettled = _filter(filter_rounds=1)
    with pipeline:
        # After one round: items a and b kept, then user v dropped.
        assert_that(kept, equal_to([*ROWS[:2], *ROWS[4:]]), label="Kept")
        assert_that(unsettled, equal_to([1]), label="Unsettled")


def test_one_bound_is_final_after_one_pass():
    pipeline, kept, unsettled = _filter(filter_rounds=5, min_user=1)
    with pipeline:
        assert_that(kept, equal_to([*ROWS[:3], *ROWS[4:]]), label="Kept")
        assert_that(unsettled, equal_to([0]), label="Unsettled")
