"""Interaction files read into compact columns, for very large tables.

``load_file`` keeps raw ids as NumPy strings (their longest id's width per
row, plus Python's per-string overhead while parsing): about 1 KB per
interaction before preparation. ``read_encoded`` streams the files instead
and keeps each raw id once, in a dict, with an int32 code per row: 8 bytes
per interaction for the ids, 4 for a timestamp in whole seconds (8 for
others), 4 per numeric column.

Exact duplicates: a row of a table with timestamps that repeats an earlier
row in every field (user, item, timestamp, numeric values and any other
column) is a duplicate (``DuplicateRows``): dropped, or kept, and counted
either way. Without timestamps, identical lines are repeats in time order,
not duplicates. The Apache Beam engine applies the same rule.
"""

import array
import dataclasses

import numpy as np

from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.data.sources.loaders import read_records
from tfrec_tricks.errors import DataError


@dataclasses.dataclass(frozen=True)
class DuplicateRows:
    """The exact duplicate rows of a table, for the user to read.

    Why they are dropped by default: docs/decisions.md#drop-duplicates.

    Attributes:
        count: int. Rows that repeat an earlier row exactly.
        first: str. ``file:line`` of the first of them in file order.
        original: str. ``file:line`` of the row it repeats.
        dropped: bool. Whether they were dropped.
    """

    count: int
    first: str
    original: str
    dropped: bool

    def message(self) -> str:
        """One line: how many, the first, and what was done."""
        done = (
            "dropped (--no-drop-duplicates keeps them)"
            if self.dropped
            else "kept (--drop-duplicates drops them)"
        )
        rows = "row repeats" if self.count == 1 else "rows repeat"
        return (
            f"Duplicates: {self.count:,} {rows} an earlier row exactly "
            f"(same user, item, timestamp and every other field), the "
            f"first {self.first} (a copy of {self.original}); {done}."
        )


def duplicate_mask(columns: list[np.ndarray]) -> np.ndarray:
    """Which rows repeat an earlier row in every one of ``columns``.

    The first row of each group of equal rows is not marked, the others
    are.

    >>> duplicate_mask([np.array([1, 2, 1, 1]), np.array([5, 5, 5, 6])])
    array([False, False,  True, False])
    """
    size = len(columns[0])
    # lexsort is stable: equal rows stay in row order, the first first.
    order = np.lexsort(columns[::-1])
    same = np.ones(max(size - 1, 0), bool)
    for column in columns:
        ordered = column[order]
        same &= ordered[1:] == ordered[:-1]
    mask = np.zeros(size, bool)
    mask[order[1:][same]] = True
    return mask


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
        time_origin: float. What int32 ``timestamps`` are offsets from
            (0 for float64 times).
        duplicates: ``DuplicateRows``, or None when there are none.
        tokens: dict of name -> (int32 [n] codes, list of str values):
            categorical per-interaction columns (``Columns.tokens``).
    """

    users: np.ndarray
    items: np.ndarray
    timestamps: np.ndarray | None
    numeric: dict[str, np.ndarray]
    user_names: list[str]
    item_names: list[str]
    source: str = ""
    time_origin: float = 0.0
    duplicates: DuplicateRows | None = None
    tokens: dict[str, tuple[np.ndarray, list[str]]] = dataclasses.field(
        default_factory=dict
    )

    def __len__(self) -> int:
        return len(self.users)

    def to_interactions(self) -> Interactions:
        """The table with raw ids and Unix times, as ``load_file`` gives."""
        timestamps = None
        if self.timestamps is not None:
            timestamps = self.timestamps.astype(np.float64) + self.time_origin
        return Interactions(
            users=np.asarray(self.user_names, dtype=str)[self.users],
            items=np.asarray(self.item_names, dtype=str)[self.items],
            timestamps=timestamps,
            numeric=dict(self.numeric),
            source=self.source,
            tokens={
                name: np.asarray(values, dtype=str)[codes]
                for name, (codes, values) in self.tokens.items()
            },
        )


def read_encoded(
    paths: list[str],
    file_format: str = "auto",
    source: str = "",
    drop_duplicates: bool = True,
) -> EncodedInteractions:
    """Reads interaction files in order into compact columns.

    Several files are one table: timestamps are kept when every file has
    them, numeric and token columns when every file has them. Exact
    duplicate rows (see the module docstring) are counted, and dropped
    unless ``drop_duplicates`` is False.

    Args:
        paths: list of str. The files, in order.
        file_format: str. A format of ``loaders.FORMATS`` or "auto"
            (guessed per file).
        source: str. Named in messages; defaults to the paths.
        drop_duplicates: bool. Drop the rows that repeat an earlier row
            exactly (the first is kept). Defaults to True.

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
    token_names = sorted(
        set.intersection(*(set(columns.tokens) for columns, _ in readers))
    )
    user_codes, item_codes, rest_codes = {}, {}, {}
    users, items = array.array("i"), array.array("i")
    times = array.array("d")
    # A code per distinct (numeric values, other fields): the rest of a
    # row, compared to find duplicates (only with timestamps).
    rests = array.array("i")
    numeric = {name: array.array("f") for name in numeric_names}
    tokens = {name: (array.array("i"), {}) for name in token_names}
    for columns, records in readers:
        slots = [columns.numeric.index(name) for name in numeric_names]
        targets = [numeric[name] for name in numeric_names]
        token_slots = [columns.tokens.index(name) for name in token_names]
        token_targets = [tokens[name] for name in token_names]
        for record in records:
            users.append(user_codes.setdefault(record.user, len(user_codes)))
            items.append(item_codes.setdefault(record.item, len(item_codes)))
            if has_time:
                times.append(record.time)
                rest = (record.numeric, record.other)
                rests.append(rest_codes.setdefault(rest, len(rest_codes)))
            for slot, target in zip(slots, targets):
                target.append(record.numeric[slot])
            for slot, (codes, values) in zip(token_slots, token_targets):
                value = record.tokens[slot]
                codes.append(values.setdefault(value, len(values)))
    source = source or ", ".join(paths)
    if not users:
        empty = "the file is" if len(paths) == 1 else "the files are"
        raise DataError(f"No interactions in {source}: {empty} empty.")
    table = EncodedInteractions(
        users=np.frombuffer(users, np.int32),
        items=np.frombuffer(items, np.int32),
        timestamps=np.frombuffer(times, np.float64) if has_time else None,
        numeric={k: np.frombuffer(v, np.float32) for k, v in numeric.items()},
        user_names=list(user_codes),
        item_names=list(item_codes),
        source=source,
        tokens={
            name: (np.frombuffer(codes, np.int32), list(values))
            for name, (codes, values) in tokens.items()
        },
    )
    if has_time:
        rest = np.frombuffer(rests, np.int32)
        del rests
        _find_duplicates(table, rest, paths, file_format, drop_duplicates)
    if table.timestamps is not None:
        earliest = float(table.timestamps.min())
        compact = compact_times(table.timestamps)
        if compact.dtype == np.int32:
            table.time_origin = earliest
        table.timestamps = compact
    return table


def _find_duplicates(
    table: EncodedInteractions,
    rest: np.ndarray,
    paths: list[str],
    file_format: str,
    drop: bool,
) -> None:
    """Sets ``table.duplicates``; drops the duplicate rows when ``drop``."""
    columns = [table.users, table.items, table.timestamps, rest]
    mask = duplicate_mask(columns)
    count = int(mask.sum())
    if not count:
        return
    first = int(np.argmax(mask))
    same = np.ones(len(mask), bool)
    for column in columns:
        same &= column == column[first]
    original = int(np.argmax(same))
    places = _places(paths, file_format, (original, first))
    table.duplicates = DuplicateRows(
        count, places[first], places[original], drop
    )
    if drop:
        keep = ~mask
        table.users = table.users[keep]
        table.items = table.items[keep]
        table.timestamps = table.timestamps[keep]
        table.numeric = {k: v[keep] for k, v in table.numeric.items()}
        table.tokens = {
            k: (codes[keep], values)
            for k, (codes, values) in table.tokens.items()
        }


def _places(
    paths: list[str], file_format: str, rows: tuple[int, ...]
) -> dict[int, str]:
    """``file:line`` of each of ``rows`` (indices in file order), found by
    reading the files again up to the last of them."""
    wanted, places, index = set(rows), {}, 0
    for path in paths:
        for record in read_records(path, file_format)[1]:
            if index in wanted:
                places[index] = f"{path}:{record.line}"
                if len(places) == len(wanted):
                    return places
            index += 1
    return places


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
