"""Interactions: the checks on a table built directly in Python."""

import numpy as np
import pytest

from tfrec_tricks.data.sources.interactions import Interactions


def build(timestamps):
    n = len(timestamps)
    return Interactions(
        users=np.array([f"u{i}" for i in range(n)]),
        items=np.array([f"i{i}" for i in range(n)]),
        timestamps=timestamps,
    )


@pytest.mark.parametrize(
    "bad, shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")]
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_finite_timestamp_names_first_index_and_row(bad, shown, dtype):
    timestamps = np.array([1.0, 2.0, bad, np.nan], dtype)
    with pytest.raises(ValueError) as info:
        build(timestamps)
    assert str(info.value) == (
        "timestamps must be finite. Received: "
        f"timestamps[2]={shown} (user 'u2', item 'i2')"
    )


@pytest.mark.parametrize(
    "timestamps",
    [None, np.array([3.0, 1.0, 2.5]), np.array([3, 1, 2], np.int64)],
)
def test_finite_or_missing_timestamps_are_accepted(timestamps):
    table = Interactions(
        users=np.array(["a", "a", "b"]),
        items=np.array(["x", "y", "x"]),
        timestamps=timestamps,
        numeric={"rating": np.array([1, 2, 3], np.float32)},
    )
    assert len(table) == 3


def test_column_length_mismatch():
    with pytest.raises(ValueError, match="'items' has 1 rows, users has 2"):
        Interactions(users=np.array(["a", "b"]), items=np.array(["x"]))
