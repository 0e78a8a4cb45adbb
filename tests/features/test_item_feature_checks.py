"""features.item_feature_checks: feature descriptions and item values.

The encoder's own tests (test_item_feature_encoder.py) go through these
checks with every bad input; here, the functions themselves.
"""

import numpy as np
import pytest

from tfrec_tricks.data.item_features import item_file
from tfrec_tricks.features import item_feature_checks
from tfrec_tricks.features.item_feature_checks import (
    check_feature,
    check_features,
    checked_id_known,
    checked_rows,
    padded_table,
)

GENRES = {
    "name": "genres",
    "kind": "token_seq",
    "width": 3,
    "vocabulary_size": 5,
    "num_values": 4,
}


def test_a_feature_is_completed_and_a_bad_one_named_by_its_index():
    assert check_feature(0, {"name": "price", "kind": "float", "width": 1}) == {
        "name": "price",
        "kind": "float",
        "width": 1,
        "vocabulary_size": 0,
        "mean": 0.0,
        "variance": 1.0,
    }
    with pytest.raises(ValueError, match=r"features\[2\].*width=2"):
        check_feature(2, {"name": "price", "kind": "float", "width": 2})
    with pytest.raises(ValueError, match="ragged tables.*'genres'"):
        check_features([GENRES, {"name": "price", "kind": "float", "width": 1}])


def test_rows_ragged_or_padded_are_checked_against_the_feature():
    rows = checked_rows(
        GENRES, (np.array([2, 3, 4, 1]), np.array([0, 0, 2, 3, 4])), 4, True
    )
    assert rows.values.dtype == np.int32
    assert rows.row_splits.tolist() == [0, 0, 2, 3, 4]
    np.testing.assert_array_equal(
        padded_table(rows, 3, np.int32),
        [[0, 0, 0], [2, 3, 0], [4, 0, 0], [1, 0, 0]],
    )
    with pytest.raises(ValueError, match=r"ids in \[1, 5\).*an id 7"):
        checked_rows(GENRES, (np.array([7]), np.array([0, 1, 1, 1, 1])), 4,
                     False)  # fmt: skip
    with pytest.raises(ValueError, match="num_values=4.*Received: 3 values"):
        checked_rows(
            GENRES, (np.array([2, 3, 4]), np.array([0, 0, 2, 3, 3])), 4, True
        )


def test_id_known_is_zeros_and_ones_of_the_catalogue():
    np.testing.assert_array_equal(
        checked_id_known([True, False], 2), np.array([1, 0], np.float32)
    )
    with pytest.raises(ValueError, match=r"shape \(3,\).*shape=\(2,\)"):
        checked_id_known([1, 0], 3)
    with pytest.raises(ValueError, match="0 and 1"):
        checked_id_known([1, 2], 2)


def test_the_kinds_are_the_item_files_not_a_copy():
    # One definition (issue 73): the layers check the kinds the .item
    # reader accepts, so a kind added to one is known to the other.
    for name in ("FEATURE_KINDS", "TOKEN_KINDS", "FLOAT_KINDS"):
        assert getattr(item_feature_checks, name) is getattr(item_file, name)
    with pytest.raises(ValueError, match="`kind` must be one of"):
        check_feature(0, {**GENRES, "kind": "token_list"})
