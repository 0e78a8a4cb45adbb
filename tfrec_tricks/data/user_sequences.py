"""Each user's interactions once, in time order, with the leave-one-out split.

Every preparation engine (in memory, on disk, Apache Beam) ends in the same
``UserSequences``: in memory it becomes prefix examples (``prepare``), on
disk one ``tf.train.Example`` per user (``write_prepared``), from which
``OnDiskDataset`` forms the same examples on the fly.

The id rules, shared by all engines:

- rows of users and items with too few interactions are dropped, the two
  bounds applied again until nothing changes (RecBole's k-core filter);
- users are numbered 0, 1, ... in order of their first kept row in the
  source (file order);
- a user's rows are sorted by time, rows of equal time in file order;
- items are numbered 1, 2, ... (0 is padding) in order of first appearance
  in that sorted table, user after user.

Memory: integer codes (``read_encoded``'s) are counted, renumbered and
sorted by user with arrays of one entry per code and loops over a million
rows at a time, the row order in int32; per interaction, ``user_sequences``
holds 4 bytes of row order besides its input and its output (4 bytes of
item id and 4 per feature).
"""

import dataclasses

import numpy as np

from tfrec_tricks.errors import DataError

PADDING = "[PAD]"
TIME_GAP = "time_gap"
# Fewest interactions a user needs for a (test, validation) example.
SPLITS = {"recbole": (3, 4), "every-user": (3, 3)}
NO_POSITION = -1


def check_split(split: str) -> None:
    """Raises ``ValueError`` naming ``split`` unless it is in ``SPLITS``."""
    if split not in SPLITS:
        raise ValueError(
            f"split must be one of {sorted(SPLITS)}. Received: split={split!r}"
        )


@dataclasses.dataclass
class UserSequences:
    """Every kept user's item ids in time order, and where the split cuts.

    Attributes:
        item_names: list of str. Raw item id of each contiguous id;
            ``item_names[0]`` is the padding token.
        user_names: list of str. Raw user id of each user index.
        items: int32 [n]. Contiguous item ids, user after user: user ``u``'s
            sequence is ``items[starts[u]:starts[u] + lengths[u]]``.
        starts: int64 [U]. Where each user's sequence begins in ``items``.
        lengths: int64 [U]. Each user's number of interactions.
        features: dict of float32 [n] per-interaction features, aligned
            with ``items`` (``time_gap``: seconds since the user's previous
            interaction, NaN at a user's first).
        validation_positions: int64 [U]. Index within the user's sequence
            of its validation target, or -1 when it has none.
        test_positions: int64 [U]. Likewise for the test target.
        tokens: dict of str [n] categorical per-interaction columns,
            aligned with ``items`` (raw values, ``""``: no value); their
            vocabularies come from the training positions
            (``interaction_tokens``).
    """

    item_names: list[str]
    user_names: list[str]
    items: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    features: dict[str, np.ndarray]
    validation_positions: np.ndarray
    test_positions: np.ndarray
    tokens: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    @property
    def num_users(self) -> int:
        return len(self.starts)

    @property
    def train_ends(self) -> np.ndarray:
        """int64 [U]: each user's last training target position (0: none).

        Training targets are positions ``1 .. train_ends[u]`` of a user's
        sequence: every position with a history, up to the first held-out
        one.
        """
        held_out = np.where(
            self.validation_positions >= 0,
            self.validation_positions,
            np.where(self.test_positions >= 0, self.test_positions, -1),
        )
        return np.where(held_out >= 0, held_out - 1, self.lengths - 1)


def user_sequences(
    users: np.ndarray,
    items: np.ndarray,
    timestamps: np.ndarray | None = None,
    numeric: dict[str, np.ndarray] | None = None,
    min_user_interactions: int = 1,
    min_item_interactions: int = 0,
    numeric_features: bool = True,
    split: str = "recbole",
    source: str = "",
    user_names: list | None = None,
    item_names: list | None = None,
    tokens: dict[str, np.ndarray] | None = None,
) -> UserSequences:
    """Filters, sorts and splits an interaction table into user sequences.

    Args:
        users: array [n] of user ids: raw strings, or integer codes into
            ``user_names`` (a streaming reader's compact form).
        items: array [n] of item ids, likewise (``item_names``).
        timestamps: array [n] of times or None (then file order is time
            order): float64, or integers (only their order and
            differences count: ``read_encoded``'s offsets).
        numeric: dict of float32 arrays [n], numeric columns (``rating``).
        min_user_interactions: int. Users with fewer rows are dropped.
        min_item_interactions: int. Items with fewer rows are dropped.
        numeric_features: bool. Keep ``time_gap`` (when there are
            timestamps) and the numeric columns as features.
        split: str. A key of ``SPLITS`` (see ``prepare``).
        source: str. Named in errors.
        user_names: list or None. Raw ids of integer ``users`` codes.
        item_names: list or None. Raw ids of integer ``items`` codes.
        tokens: dict of str arrays [n] or None, categorical
            per-interaction columns (kept as ``UserSequences.tokens``).

    Returns:
        A ``UserSequences``.
    """
    if min_user_interactions < 1:
        raise ValueError(
            "min_user_interactions must be at least 1. Received: "
            f"min_user_interactions={min_user_interactions}"
        )
    check_split(split)
    test_from, validation_from = SPLITS[split]
    if split == "every-user":
        min_user_interactions = max(min_user_interactions, test_from)
    keep = filter_rows(
        users, items, min_user_interactions, min_item_interactions
    )
    if not keep.all():
        if not keep.any():
            raise DataError(
                f"No interactions left in {source} after filtering with "
                f"min_user_interactions={min_user_interactions}, "
                f"min_item_interactions={min_item_interactions}."
            )
        users, items = users[keep], items[keep]
        timestamps = None if timestamps is None else timestamps[keep]
        numeric = {k: v[keep] for k, v in (numeric or {}).items()}
        tokens = {k: v[keep] for k, v in (tokens or {}).items()}
    del keep
    user_codes, user_order = _first_appearance(users)
    del users
    lengths = np.bincount(user_codes, minlength=len(user_order))
    starts = np.cumsum(lengths) - lengths
    # Sort by user, then time, then file order (stable for equal times).
    order = _group_rows(user_codes, starts)
    del user_codes
    if timestamps is not None:
        _sort_groups_by_time(order, timestamps, starts, lengths)
    item_codes, item_order = _first_appearance(_take(items, order))
    del items
    item_ids = item_codes.astype(np.int32, copy=False)
    del item_codes
    item_ids += 1  # 0 is padding
    features = {}
    if numeric_features:
        if timestamps is not None:
            features[TIME_GAP] = _time_gaps(timestamps, order, starts)
        for name, column in sorted((numeric or {}).items()):
            features[name] = _take(column, order, np.float32)
    token_columns = {
        name: _take(np.asarray(column), order)
        for name, column in sorted((tokens or {}).items())
    }
    del order
    validation_positions, test_positions = split_positions(lengths, split)
    for name, positions, needed in (
        ("validation", validation_positions, validation_from),
        ("test", test_positions, test_from),
    ):
        if not (positions >= 0).any():
            raise DataError(
                f"No {name} examples in {source}: with split={split!r} a "
                f"user gives one from {needed} interactions on, and the "
                f"longest of the {len(starts):,} users has {lengths.max()}."
            )
    names = _names(item_order, item_names)
    if PADDING in names:
        # The files' loaders refuse it by file and line; this is for tables
        # built in memory. A second "[PAD]" could never be exported.
        raise DataError(
            f"An item of {source or 'the table'} is named {PADDING!r}, the "
            "reserved padding token (contiguous id 0): rename it. "
            f"Received: item {PADDING!r}"
        )
    return UserSequences(
        item_names=[PADDING] + names,
        user_names=_names(user_order, user_names),
        items=item_ids,
        starts=starts.astype(np.int64),
        lengths=lengths.astype(np.int64),
        features=features,
        validation_positions=validation_positions.astype(np.int64),
        test_positions=test_positions.astype(np.int64),
        tokens=token_columns,
    )


def split_positions(
    lengths: np.ndarray | int, split: str
) -> tuple[np.ndarray, np.ndarray]:
    """Where each user's validation and test targets are (-1: none).

    Args:
        lengths: each user's number of interactions (an array, or one int).
        split: str. A key of ``SPLITS``: the last position is the test
            target from ``SPLITS[split][0]`` interactions on, the one
            before it the validation target from ``SPLITS[split][1]`` on.

    >>> split_positions(np.array([2, 3, 4]), "recbole")
    (array([-1, -1,  2]), array([-1,  2,  3]))
    """
    test_from, validation_from = SPLITS[split]
    lengths = np.asarray(lengths)
    test = np.where(lengths >= test_from, lengths - 1, NO_POSITION)
    validation = np.where(lengths >= validation_from, lengths - 2, NO_POSITION)
    return validation, test


def filter_rows(
    users: np.ndarray,
    items: np.ndarray,
    min_user_interactions: int = 0,
    min_item_interactions: int = 0,
) -> np.ndarray:
    """Row mask keeping users and items with enough interactions.

    Filters repeat until stable (dropping items can shrink users below the
    bound and back), as RecBole's k-core filtering does.
    """
    keep = np.ones(len(users), dtype=bool)
    while True:
        before = np.count_nonzero(keep)
        for column, bound in (
            (items, min_item_interactions),
            (users, min_user_interactions),
        ):
            if bound > 1:
                _drop_rare(column, keep, bound)
        if np.count_nonzero(keep) == before:
            return keep


def first_appearance_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes 0..K-1 in order of first appearance, and the values in order.

    >>> codes, values = first_appearance_codes(np.array(["b", "a", "b"]))
    >>> codes.tolist(), values.tolist()
    ([0, 1, 0], ['b', 'a'])
    """
    codes, ordered = _first_appearance(values)
    return codes.astype(np.intp), ordered


# Rows per step of the chunked loops below: their temporaries stay a few
# tens of MB, whatever the size of the table.
CHUNK_ROWS = 1 << 20


def _chunks(size: int):
    """``slice``s of at most ``CHUNK_ROWS`` covering ``range(size)``."""
    for start in range(0, size, CHUNK_ROWS):
        yield slice(start, min(start + CHUNK_ROWS, size))


def _index_dtype(size: int) -> type:
    """int32 for row indices and codes when they fit: half the memory."""
    return np.int32 if size < 2**31 else np.int64


def _code_range(values: np.ndarray) -> int | None:
    """``max + 1`` when ``values`` are small non-negative integer codes.

    Codes (a streaming reader's ids into its list of names) are counted
    and renumbered with arrays of ``max + 1`` entries, in chunks, instead
    of ``np.unique``'s sorted copies and int64 arrays of every row; other
    values (raw strings, large integers) take ``np.unique``.
    """
    if not (np.issubdtype(values.dtype, np.integer) and len(values)):
        return None
    low, high = int(values.min()), int(values.max())
    if low < 0 or high >= 4 * len(values) + 2**16:
        return None
    return high + 1


def _drop_rare(column: np.ndarray, keep: np.ndarray, bound: int) -> None:
    """Clears ``keep`` of rows whose value has < ``bound`` kept rows."""
    size = _code_range(column)
    if size is None:
        _, inverse, counts = np.unique(
            column[keep], return_inverse=True, return_counts=True
        )
        kept = np.flatnonzero(keep)
        keep[kept[counts[inverse.reshape(-1)] < bound]] = False
        return
    counts = np.zeros(size, np.int64)
    for rows in _chunks(len(column)):
        counts += np.bincount(column[rows][keep[rows]], minlength=size)
    for rows in _chunks(len(column)):
        keep[rows] &= counts[column[rows]] >= bound


def _first_appearance(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``first_appearance_codes``, with int32 codes of small integer codes.

    Codes already numbered in order of first appearance (a streaming
    reader's, before any row was filtered out) are returned as they are.
    """
    size = _code_range(values)
    if size is None:
        uniques, first, inverse = np.unique(
            values, return_index=True, return_inverse=True
        )
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        return rank[inverse.reshape(-1)], uniques[order]
    if _numbered_in_order(values):
        return values, np.arange(size, dtype=values.dtype)
    rank, ordered = _first_appearance_rank(values, size)
    codes = np.empty(len(values), rank.dtype)
    for rows in _chunks(len(values)):
        codes[rows] = rank[values[rows]]
    return codes, ordered.astype(values.dtype)


def _numbered_in_order(values: np.ndarray) -> bool:
    """Whether integer ``values`` are 0, 1, ... by first appearance.

    That is, every value is at most one more than all before it.
    """
    highest = -1
    for rows in _chunks(len(values)):
        chunk = values[rows].astype(np.int64)
        before = np.maximum.accumulate(np.r_[highest, chunk[:-1]])
        if (chunk > before + 1).any():
            return False
        highest = max(highest, int(chunk.max()))
    return True


def _first_appearance_rank(
    values: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Code of each value in ``range(size)``, and the values in order.

    Returns:
        ``rank`` [size] (the code of value ``v`` is ``rank[v]``; -1 for
        absent values) and the present values in order of first
        appearance.
    """
    n = len(values)
    first = np.full(size, n, np.int64)
    for rows in _chunks(n):
        np.minimum.at(first, values[rows], np.arange(rows.start, rows.stop))
    present = np.flatnonzero(first < n)
    ordered = present[np.argsort(first[present], kind="stable")]
    rank = np.full(size, -1, _index_dtype(n))
    rank[ordered] = np.arange(len(ordered))
    return rank, ordered


def _take(
    column: np.ndarray, order: np.ndarray, dtype: type | None = None
) -> np.ndarray:
    """``column[order].astype(dtype)``, a chunk at a time."""
    result = np.empty(len(order), dtype or column.dtype)
    for rows in _chunks(len(order)):
        result[rows] = column[order[rows]]
    return result


def _group_rows(codes: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Row order grouping rows by code, each group in row order.

    ``np.argsort(codes, kind="stable")`` as a counting sort: each chunk of
    rows is sorted alone and placed after the rows of earlier chunks, so
    the order is the only array of every row (int32 when it fits).

    Args:
        codes: int array [n] of codes in ``range(len(starts))``.
        starts: int64 [K]. Where each code's rows begin in the order
            (the cumulative counts of the codes before it).
    """
    order = np.empty(len(codes), _index_dtype(len(codes)))
    filled = starts.copy()
    for rows in _chunks(len(codes)):
        chunk = codes[rows]
        within = np.argsort(chunk, kind="stable")
        ranked = chunk[within]
        heads = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
        sizes = np.diff(np.r_[heads, len(ranked)])
        offsets = np.arange(len(ranked)) - np.repeat(heads, sizes)
        order[filled[ranked] + offsets] = within + rows.start
        filled[ranked[heads]] += sizes
    return order


def _user_blocks(lengths: np.ndarray):
    """``(first, last)`` user ranges of about ``CHUNK_ROWS`` rows each."""
    ends = np.cumsum(lengths)
    first = 0
    while first < len(lengths):
        row = ends[first] - lengths[first] + CHUNK_ROWS
        last = max(int(np.searchsorted(ends, row, side="right")), first + 1)
        yield first, last
        first = last


def _sort_groups_by_time(
    order: np.ndarray,
    timestamps: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
) -> None:
    """Sorts each user's rows of ``order`` by time, stably, in place.

    ``order`` groups the rows by user, each user's rows in file order; a
    block of users at a time is sorted (``np.lexsort``, stable: rows of
    equal time stay in file order) unless it already is in time order,
    as logs mostly are.
    """
    for first, last in _user_blocks(lengths):
        rows = slice(starts[first], starts[last - 1] + lengths[last - 1])
        block = order[rows]
        times = timestamps[block]
        user = np.repeat(np.arange(last - first), lengths[first:last])
        if ((np.diff(times) >= 0) | (user[1:] != user[:-1])).all():
            continue
        order[rows] = block[np.lexsort((times, user))]


def _time_gaps(
    timestamps: np.ndarray, order: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """float32 seconds since the user's previous row, NaN at the first."""
    gap = np.empty(len(order), dtype=np.float32)
    for rows in _chunks(len(order)):
        lead = max(rows.start - 1, 0)
        times = timestamps[order[lead : rows.stop]]
        gap[lead + 1 : rows.stop] = np.diff(times)
    gap[starts] = np.nan
    return gap


def _names(values: np.ndarray, names: list | None) -> list[str]:
    """Raw ids of ``values``: themselves, or ``names[v]`` for codes."""
    if names is None:
        return [str(v) for v in values]
    return [str(names[v]) for v in values]
