"""Interaction files read into compact columns, for very large tables.

``load_file`` keeps raw ids as NumPy strings (their longest id's width per
row, plus Python's per-string overhead while parsing): about 1 KB per
interaction before preparation. ``read_encoded`` streams the files instead
and keeps each raw id once, in a dict, with an int32 code per row: 8 bytes
per interaction for the ids, 4 for a timestamp in whole seconds (8 for
others), 4 per numeric column.
"""

import array
import dataclasses

import numpy as np

from tfrec_tricks.data.loaders import read_records
from tfrec_tricks.errors import DataError


@dataclasses.dataclass
class EncodedInteractions:
    """Interactions with raw ids replaced by codes, in file order.

    Attributes:
        users: int32 [n]. Codes into ``user_names``, numbered in order of
            first appearance.
        items: int32 [n]. Codes into ``item_names``, likewise.
        timestamps: [n] or None. int32 offsets from the earliest time
            when every time is a whole number within 2**31 of it (what
            preparation uses of times, their order and differences, is
            the same), else float64 times.
        numeric: dict of float32 [n] numeric columns.
        user_names: list of str. Raw id of each user code.
        item_names: list of str. Raw id of each item code.
        source: str. The files read, for messages.
    """

    users: np.ndarray
    items: np.ndarray
    timestamps: np.ndarray | None
    numeric: dict[str, np.ndarray]
    user_names: list[str]
    item_names: list[str]
    source: str = ""

    def __len__(self) -> int:
        return len(self.users)


def read_encoded(
    paths: list[str], file_format: str = "auto", source: str = ""
) -> EncodedInteractions:
    """Reads interaction files in order into compact columns.

    Several files are one table, as ``load_source`` concatenates them:
    timestamps are kept when every file has them, numeric columns when
    every file has them.

    Args:
        paths: list of str. The files, in order.
        file_format: str. A format of ``loaders.FORMATS`` or "auto"
            (guessed per file).
        source: str. Named in messages; defaults to the paths.

    Returns:
        An ``EncodedInteractions``.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "seq.txt")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write("u1 i9\\nu2 i9\\nu1 i4\\n")
    >>> table = read_encoded([path], "sasrec")
    >>> table.users.tolist(), table.items.tolist(), table.item_names
    ([0, 1, 0], [0, 0, 1], ['i9', 'i4'])
    """
    if not paths:
        raise DataError("read_encoded needs at least one file.")
    readers = [read_records(path, file_format) for path in paths]
    has_time = all(columns.has_time for columns, _ in readers)
    kept = set.intersection(*(set(columns.numeric) for columns, _ in readers))
    numeric_names = sorted(kept)
    user_codes, item_codes = {}, {}
    users, items = array.array("i"), array.array("i")
    times = array.array("d")
    numeric = {name: array.array("f") for name in numeric_names}
    for columns, records in readers:
        slots = [columns.numeric.index(name) for name in numeric_names]
        targets = [numeric[name] for name in numeric_names]
        for record in records:
            users.append(user_codes.setdefault(record.user, len(user_codes)))
            items.append(item_codes.setdefault(record.item, len(item_codes)))
            if has_time:
                times.append(record.time)
            for slot, target in zip(slots, targets):
                target.append(record.numeric[slot])
    source = source or ", ".join(paths)
    if not users:
        raise DataError(f"No interactions in {source}: the files are empty.")
    return EncodedInteractions(
        users=np.frombuffer(users, np.int32),
        items=np.frombuffer(items, np.int32),
        timestamps=compact_times(np.frombuffer(times, np.float64))
        if has_time
        else None,
        numeric={k: np.frombuffer(v, np.float32) for k, v in numeric.items()},
        user_names=list(user_codes),
        item_names=list(item_codes),
        source=source,
    )


# Rows converted at a time by ``compact_times``.
CHUNK_ROWS = 1 << 20


def compact_times(times: np.ndarray) -> np.ndarray:
    """int32 offsets from the earliest of ``times``, when they are exact.

    Whole-number times (Unix seconds) within ``2**31`` of the earliest
    keep their order and differences exactly as offsets, in half the
    memory; other times are returned as they are.

    >>> compact_times(np.array([1e9 + 5, 1e9, 1e9 + 2])).tolist()
    [5, 0, 2]
    >>> compact_times(np.array([0.5, 1.0])).dtype
    dtype('float64')
    """
    if not len(times):
        return times
    earliest, latest = float(times.min()), float(times.max())
    if latest - earliest >= 2**31 or max(-earliest, latest) >= 2**53:
        return times
    offsets = np.empty(len(times), np.int32)
    for start in range(0, len(times), CHUNK_ROWS):
        part = times[start : start + CHUNK_ROWS]
        if (part != np.floor(part)).any():
            return times
        offsets[start : start + CHUNK_ROWS] = part - earliest
    return offsets
