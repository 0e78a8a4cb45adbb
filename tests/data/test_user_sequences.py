"""user_sequences: split positions, k-core filtering, first-appearance
codes and the sequences themselves, against naive loops."""

import numpy as np
import pytest

from tfrec_tricks.data.user_sequences import (
    NO_POSITION,
    SPLITS,
    check_split,
    filter_rows,
    first_appearance_codes,
    split_positions,
    user_sequences,
)


@pytest.mark.parametrize("split", sorted(SPLITS))
def test_split_positions_follow_the_split_bounds(split):
    test_from, validation_from = SPLITS[split]
    lengths = np.arange(0, 8)
    validation, test = split_positions(lengths, split)
    for n, v, t in zip(lengths, validation, test):
        assert t == (n - 1 if n >= test_from else NO_POSITION)
        assert v == (n - 2 if n >= validation_from else NO_POSITION)


def test_check_split_names_the_bad_value():
    check_split("recbole")
    with pytest.raises(ValueError, match="'leave-two-out'"):
        check_split("leave-two-out")


def _k_core_by_loops(users, items, min_user, min_item):
    rows = list(range(len(users)))
    while True:
        before = len(rows)
        for column, bound in ((items, min_item), (users, min_user)):
            counts = {}
            for r in rows:
                counts[column[r]] = counts.get(column[r], 0) + 1
            rows = [r for r in rows if counts[column[r]] >= bound]
        if len(rows) == before:
            return rows


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("bounds", [(0, 0), (3, 0), (0, 3), (3, 4)])
def test_filter_rows_is_the_k_core_of_a_loop(seed, bounds):
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 15, size=120)
    items = rng.integers(0, 25, size=120)
    keep = filter_rows(users, items, *bounds)
    assert np.flatnonzero(keep).tolist() == _k_core_by_loops(
        users, items, *bounds
    )


@pytest.mark.parametrize(
    "values",
    [np.array(["b", "a", "b", "c", "a"]), np.array([9, 3, 9, 9, 0, 3])],
)
def test_first_appearance_codes_number_values_as_they_come(values):
    codes, ordered = first_appearance_codes(values)
    naive = list(dict.fromkeys(values.tolist()))
    assert ordered.tolist() == naive
    assert codes.tolist() == [naive.index(v) for v in values.tolist()]


def test_sequences_are_in_time_order_and_numbered_by_first_row():
    users = np.array(["u2", "u1", "u2", "u1", "u2", "u1", "u1"])
    items = np.array(["a", "b", "c", "a", "b", "c", "b"])
    times = np.array([5.0, 1.0, 2.0, 3.0, 9.0, 2.0, 7.0])
    sequences = user_sequences(users, items, times, numeric_features=False)
    by_user = {}
    for user, item, _ in sorted(zip(users, items, times), key=lambda r: r[2]):
        by_user.setdefault(str(user), []).append(str(item))
    assert sequences.user_names == ["u2", "u1"]  # order of first rows
    for u, name in enumerate(sequences.user_names):
        start, length = sequences.starts[u], sequences.lengths[u]
        ids = sequences.items[start : start + length]
        assert [sequences.item_names[i] for i in ids] == by_user[name]
    assert sequences.item_names[0] == "[PAD]"
    assert sequences.validation_positions.tolist() == [-1, 2]
    assert sequences.test_positions.tolist() == [2, 3]
    assert sequences.train_ends.tolist() == [1, 1]
