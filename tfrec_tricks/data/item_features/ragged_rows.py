"""Rows of different lengths, stored as flat values and row offsets.

An item's multi-valued attribute (its genres, its sizes) holds a few values
for most items and many for a few. Stored padded, every item's row takes
the widest row's width: one row of 20,000 tokens makes a catalogue's table
20,000 wide. ``RaggedRows`` stores the values of all rows one after the
other (``values``, ``[T]``) and where each row starts (``row_splits``,
``[N + 1]``, row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``), as
``tf.RaggedTensor`` does: its size follows the number of values.
"""

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class RaggedRows:
    """``N`` rows of values: the flat values and the rows' offsets.

    Attributes:
        values: np.ndarray ``[T]``. Every row's values, row after row.
        row_splits: np.ndarray int64 ``[N + 1]``. Row ``i`` is
            ``values[row_splits[i]:row_splits[i + 1]]``: 0 first,
            non-decreasing, ``T`` last.

    Example:

    >>> rows = RaggedRows.from_lists([[2, 3], [], [4]], np.int32)
    >>> rows.values.tolist(), rows.row_splits.tolist()
    ([2, 3, 4], [0, 2, 2, 3])
    >>> rows.num_rows, rows.width, rows.row_lengths().tolist()
    (3, 2, [2, 0, 1])
    >>> rows.to_dense().tolist()
    [[2, 3], [0, 0], [4, 0]]
    >>> RaggedRows.from_dense(rows.to_dense()) == rows
    True
    """

    values: np.ndarray
    row_splits: np.ndarray

    def __post_init__(self) -> None:
        values = np.asarray(self.values)
        splits = np.asarray(self.row_splits)
        if values.ndim != 1:
            raise ValueError(
                "`values` must be one flat array [T]. "
                f"Received: values.shape={values.shape}"
            )
        if (
            splits.ndim != 1
            or splits.size < 1
            or not np.issubdtype(splits.dtype, np.integer)
        ):
            raise ValueError(
                "`row_splits` must be integer offsets [N + 1]. Received: "
                f"row_splits of {splits.dtype} {splits.shape}"
            )
        if splits[0] != 0 or splits[-1] != values.size:
            raise ValueError(
                "`row_splits` must start at 0 and end at len(values) = "
                f"{values.size}. Received: row_splits[0]={splits[0]}, "
                f"row_splits[-1]={splits[-1]}"
            )
        if np.any(np.diff(splits) < 0):
            raise ValueError(
                "`row_splits` must be non-decreasing (a row's length is "
                "never negative). Received: a decreasing row_splits"
            )
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "row_splits", splits.astype(np.int64))

    @property
    def num_rows(self) -> int:
        """``N``, the number of rows."""
        return int(self.row_splits.size - 1)

    @property
    def width(self) -> int:
        """The longest row's length, at least 1 (a padded table's width)."""
        lengths = self.row_lengths()
        return max(1, int(lengths.max())) if lengths.size else 1

    def row_lengths(self) -> np.ndarray:
        """int64 ``[N]``: the number of values of each row."""
        return np.diff(self.row_splits)

    def row(self, index: int) -> np.ndarray:
        """The values of row ``index``."""
        start, end = self.row_splits[index], self.row_splits[index + 1]
        return self.values[start:end]

    def nbytes(self) -> int:
        """The bytes of ``values`` and ``row_splits``."""
        return int(self.values.nbytes + self.row_splits.nbytes)

    def to_dense(self, padding: Any = None) -> np.ndarray:
        """The rows padded to ``[N, width]``.

        Args:
            padding: the value after a row's end. None: 0 for integer
                values, NaN for floats (a float feature's "no value").
        """
        if padding is None:
            padding = (
                0 if np.issubdtype(self.values.dtype, np.integer) else np.nan
            )
        dense = np.full((self.num_rows, self.width), padding, self.values.dtype)
        lengths = self.row_lengths()
        columns = np.arange(self.values.size) - np.repeat(
            self.row_splits[:-1], lengths
        )
        dense[np.repeat(np.arange(self.num_rows), lengths), columns] = (
            self.values
        )
        return dense

    @classmethod
    def from_dense(cls, array: Any) -> "RaggedRows":
        """The rows of a padded array ``[N, width]``: its values that are
        not padding, in row order. Padding is 0 in an integer array and
        any non-finite value (NaN: no value) in a float array, wherever it
        stands in the row."""
        array = np.asarray(array)
        if array.ndim != 2:
            raise ValueError(
                "A padded table is [num_rows, width]. "
                f"Received: shape={array.shape}"
            )
        if np.issubdtype(array.dtype, np.integer):
            kept = array != 0
        else:
            kept = np.isfinite(array)
        splits = np.concatenate([[0], np.cumsum(kept.sum(axis=1))])
        return cls(array[kept], splits)

    @classmethod
    def from_lists(cls, lists: Sequence, dtype: Any) -> "RaggedRows":
        """The rows of a sequence of sequences, as ``dtype``."""
        lengths = np.fromiter((len(row) for row in lists), np.int64, len(lists))
        splits = np.concatenate([[0], np.cumsum(lengths)])
        flat = [value for row in lists for value in row]
        return cls(np.asarray(flat, dtype).reshape(-1), splits)

    def concatenate(self, other: "RaggedRows") -> "RaggedRows":
        """These rows, then ``other``'s (its values cast to this dtype)."""
        values = np.concatenate(
            [self.values, np.asarray(other.values, self.values.dtype)]
        )
        splits = np.concatenate(
            [self.row_splits, other.row_splits[1:] + self.row_splits[-1]]
        )
        return RaggedRows(values, splits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RaggedRows):
            return NotImplemented
        return (
            self.values.dtype == other.values.dtype
            and np.array_equal(self.row_splits, other.row_splits)
            and np.array_equal(self.values, other.values, equal_nan=True)
        )

    __hash__ = None  # type: ignore[assignment]
