"""tfrec_tricks.data.RaggedRows: flat values and row offsets."""

import numpy as np
import pytest

from tfrec_tricks.data.item_features.ragged_rows import RaggedRows


def test_storage_follows_the_number_of_values_not_the_widest_row():
    rows = RaggedRows.from_lists(
        [[1]] * 999 + [list(range(1, 20_001))], np.int32
    )
    assert rows.width == 20_000
    # 20,999 int32 values and 1,001 int64 offsets; padded would be
    # 1,000 x 20,000 int32.
    assert rows.nbytes() == 20_999 * 4 + 1_001 * 8
    assert rows.nbytes() < 1_000 * 20_000 * 4 / 100


def test_float_rows_pad_with_nan_and_read_back_the_same():
    rows = RaggedRows.from_lists([[0.5, 2.0], [], [-1.0]], np.float32)
    dense = rows.to_dense()
    assert dense.shape == (3, 2)
    assert np.isnan(dense[1]).all() and np.isnan(dense[2, 1])
    assert RaggedRows.from_dense(dense) == rows
    # A 0.0 value is a value of a float row, not padding.
    zero = RaggedRows.from_lists([[0.0]], np.float32)
    assert RaggedRows.from_dense(zero.to_dense()) == zero


def test_padding_anywhere_in_an_integer_row_is_dropped():
    rows = RaggedRows.from_dense(np.array([[0, 3, 0, 4], [0, 0, 0, 0]]))
    assert rows.values.tolist() == [3, 4]
    assert rows.row_splits.tolist() == [0, 2, 2]
    assert rows.row(1).size == 0


def test_concatenate_appends_rows_in_this_dtype():
    first = RaggedRows.from_lists([[1, 2]], np.int32)
    more = RaggedRows.from_lists([[], [7]], np.int64)
    both = first.concatenate(more)
    assert both.values.dtype == np.int32
    assert both.row_lengths().tolist() == [2, 0, 1]
    assert both.row(2).tolist() == [7]


def test_equal_only_with_the_same_rows_and_dtype():
    a = RaggedRows.from_lists([[1], [2]], np.int32)
    assert a == RaggedRows.from_lists([[1], [2]], np.int32)
    assert a != RaggedRows.from_lists([[1, 2], []], np.int32)
    assert a != RaggedRows.from_lists([[1], [2]], np.int64)


@pytest.mark.parametrize(
    "values, splits, message",
    [
        (np.zeros((2, 2)), [0, 4], "one flat array"),
        ([1, 2], [0.0, 2.0], "integer offsets"),
        ([1, 2], [1, 2], "start at 0"),
        ([1, 2], [0, 1], "end at len"),
        ([1, 2], [0, 2, 1, 2], "non-decreasing"),
    ],
)
def test_malformed_rows_are_refused_naming_what_was_received(
    values, splits, message
):
    with pytest.raises(ValueError, match=message):
        RaggedRows(np.asarray(values), np.asarray(splits))
