"""Exact duplicate rows: the mask, and how a read table drops or keeps
and reports them (``DuplicateRows``)."""

import numpy as np
import pytest
from input_file_helpers import HEADER, load_table, write_file

from tfrec_tricks.data.sources.encoded_interactions import duplicate_mask


def test_duplicate_mask_keeps_the_first_of_each_group():
    users = np.array([3, 1, 3, 1, 3])
    times = np.array([5.0, 5.0, 5.0, 6.0, 5.0])
    assert duplicate_mask([users, times]).tolist() == [
        False,
        False,
        True,
        False,
        True,
    ]


DUPLICATED = (
    HEADER
    + "1\ti1\t100\n"
    + "1\ti2\t101\n"
    + "1\ti2\t101\n"  # line 4: a copy of line 3
    + "1\ti2\t102\n"  # another time: a repeat, not a duplicate
    + "2\ti1\t100\n"
    + "1\ti2\t101\n"  # line 7: a copy of line 3 again
)


def test_duplicates_are_dropped_and_reported(tmp_path):
    path = write_file(tmp_path / "clicks.tsv", DUPLICATED)
    source = load_table(path)
    assert len(source.interactions) == 4
    assert source.duplicates.count == 2
    assert source.duplicates.first == f"{path}:4"
    assert source.duplicates.original == f"{path}:3"
    message = source.duplicates.message()
    assert "Duplicates: 2 rows repeat an earlier row exactly" in message
    assert f"the first {path}:4 (a copy of {path}:3); dropped" in message


def test_duplicates_are_kept_when_asked(tmp_path):
    path = write_file(tmp_path / "clicks.tsv", DUPLICATED)
    source = load_table(path, drop_duplicates=False)
    assert len(source.interactions) == 6
    assert source.duplicates.count == 2
    assert "kept (--drop-duplicates drops them)" in (
        source.duplicates.message()
    )


def test_duplicates_across_shards(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    write_file(folder / "part-1.tsv", HEADER + "1\ti1\t100\n1\ti2\t101\n")
    write_file(folder / "part-2.tsv", HEADER + "1\ti2\t101\n")
    source = load_table(str(folder / "part-*.tsv"))
    assert source.duplicates.first == f"{folder / 'part-2.tsv'}:2"
    assert source.duplicates.original == f"{folder / 'part-1.tsv'}:3"
    assert source.interactions.items.tolist() == ["i1", "i2"]


@pytest.mark.parametrize(
    "name, text",
    [
        # Another rating: not the same row.
        ("u.data", "1\t10\t3\t100\n1\t10\t4\t100\n"),
        # Another value in a column that is no id, time or number.
        (
            "x.inter",
            "user_id:token\titem_id:token\ttimestamp:float\tkind:token\n"
            "1\t10\t100\tview\n1\t10\t100\tcart\n",
        ),
        # No timestamps: identical lines are repeats in time order.
        ("seq.txt", "u1 i1\nu1 i1\n"),
    ],
)
def test_rows_that_differ_or_have_no_time_are_not_duplicates(
    tmp_path, name, text
):
    source = load_table(write_file(tmp_path / name, text))
    assert source.duplicates is None
    assert len(source.interactions) == 2


def test_a_rating_written_differently_is_the_same_value(tmp_path):
    path = write_file(tmp_path / "u.data", "1\t10\t3\t100\n1\t10\t3.0\t100.0\n")
    assert load_table(path).duplicates.count == 1
