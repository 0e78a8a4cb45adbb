"""Smoke tests on the real datasets of ../shared/data (skipped when absent).

The counts are those of ../shared/data/README.md. Nothing is copied into the
repository; the only derived file is written to pytest's tmp_path.
"""

import functools

import numpy as np
import pytest

from tfrec_tricks.data.in_memory_dataset import PADDING, TIME_GAP, prepare
from tfrec_tricks.data.sources import loaders, named_sources
from tfrec_tricks.errors import DataError

# Loading and preparing the real datasets takes seconds each.
pytestmark = [pytest.mark.real_data, pytest.mark.slow]

# name: (rows, users, items, timestamps, numeric columns)
EXPECTED = {
    "ml-1m": (1_000_209, 6_040, 3_706, False, []),
    "ml-1m-timed": (487_650, 2_999, None, True, ["rating"]),
    "ml-100k": (100_000, 943, 1_682, True, ["rating"]),
    "yoochoose-100k": (83_846, 21_210, 2_933, True, []),
}


@functools.lru_cache(maxsize=None)
def load(name, folder):
    # As RecBole reads them, whose counts these are: with yoochoose-100k's
    # one exact duplicate row (dropped by default).
    return named_sources.load_source(
        name, data_path=folder, drop_duplicates=False
    ).interactions


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_duplicates(shared_data, name):
    source = named_sources.load_source(name, data_path=str(shared_data))
    if name != "yoochoose-100k":
        assert source.duplicates is None
        return
    assert len(source.interactions) == EXPECTED[name][0] - 1
    assert source.duplicates.count == 1
    assert source.duplicates.first.endswith("_train_full.txt:67134")
    assert source.duplicates.original.endswith("_train_full.txt:67133")


@functools.lru_cache(maxsize=None)
def prepared(name, folder, max_len):
    return prepare(load(name, folder), max_len=max_len)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_load_source_counts(shared_data, name):
    rows, users, items, timed, numeric = EXPECTED[name]
    table = load(name, str(shared_data))
    assert len(table) == rows
    assert len(np.unique(table.users)) == users
    if items is not None:
        assert len(np.unique(table.items)) == items
    assert (table.timestamps is not None) == timed
    assert sorted(table.numeric) == numeric
    assert table.source == name


def test_ml_1m_ids_are_contiguous(shared_data):
    table = load("ml-1m", str(shared_data))
    assert set(table.users.astype(int)) == set(range(1, 6_041))
    assert set(table.items.astype(int)) == set(range(1, 3_707))


def test_ml_1m_timed_covers_users_1_to_2999(shared_data):
    table = load("ml-1m-timed", str(shared_data))
    assert set(table.users.astype(int)) == set(range(1, 3_000))
    assert set(np.unique(table.ratings)) == {1, 2, 3, 4, 5}
    assert np.all(table.timestamps > 9e8)


def test_ml_100k_ratings_and_times(shared_data):
    table = load("ml-100k", str(shared_data))
    assert set(np.unique(table.ratings)) == {1, 2, 3, 4, 5}
    assert np.all(table.timestamps > 8e8)
    assert set(table.users.astype(int)) == set(range(1, 944))


def test_yoochoose_files_and_repeats(shared_data):
    folder = shared_data / "yoochoose-100k"
    train = loaders.load_file(
        str(folder / "yoochoose-clicks-100k_train_full.txt")
    )
    test = loaders.load_file(str(folder / "yoochoose-clicks-100k_test.txt"))
    assert (len(train), len(test)) == (70_278, 13_568)
    assert not set(train.users) & set(test.users)
    table = load("yoochoose-100k", str(shared_data))
    order = np.lexsort([table.timestamps, table.users.astype(np.int64)])
    sessions, items = table.users[order], table.items[order]
    seen, repeats, repeating_sessions = set(), 0, set()
    for session, item in zip(sessions, items):
        if (session, item) in seen:
            repeats += 1
            repeating_sessions.add(session)
        seen.add((session, item))
    assert repeats / len(table) == pytest.approx(0.267, abs=0.001)
    assert len(repeating_sessions) / 21_210 == pytest.approx(0.49, abs=0.005)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_prepare_real_dataset(shared_data, name):
    table = load(name, str(shared_data))
    data = prepared(name, str(shared_data), 20)
    users = len(data.vocabulary.users)
    assert users == EXPECTED[name][1]  # RecBole's split drops no user
    assert data.vocabulary.items[0] == PADDING
    n = data.num_items
    for split in (data.train, data.validation, data.test):
        assert split.history.shape == (len(split), 20)
        assert split.history.min() >= 0 and split.history.max() < n
        assert split.target.min() >= 1 and split.target.max() < n
        assert split.user.max() <= users - 1
    # Every interaction but each user's first is exactly one example.
    examples = len(data.train) + len(data.validation) + len(data.test)
    assert examples == len(table) - users
    lengths = np.bincount(
        np.unique(table.users, return_inverse=True)[1].ravel()
    )
    assert len(data.test) == (lengths >= 3).sum()
    assert len(data.validation) == (lengths >= 4).sum()
    if name == "yoochoose-100k":  # RecBole's counts on this split
        assert (len(data.train), len(data.validation), len(data.test)) == (
            42_869,
            7_710,
            12_057,
        )
    if EXPECTED[name][3]:
        assert TIME_GAP in data.feature_names
        for split in (data.train, data.validation, data.test):
            gaps = split.features[TIME_GAP]
            # Sorted by time within a user: no negative gap.
            assert np.all(np.isnan(gaps) | (gaps >= 0))


def test_ml_1m_keeps_file_order(shared_data):
    table = load("ml-1m", str(shared_data))
    data = prepared("ml-1m", str(shared_data), 20)
    first_user = data.vocabulary.users[0]
    rows = table.items[table.users == first_user]
    items = data.vocabulary.items
    assert items[data.test.target[0]] == rows[-1]
    assert items[data.validation.target[0]] == rows[-2]
    history = data.test.history[0]
    assert [items[i] for i in history[history > 0]] == list(rows[-21:-1])


def test_ml_100k_sorted_by_time(shared_data):
    # u.data rows are in random order: the targets are each user's latest.
    table = load("ml-100k", str(shared_data))
    data = prepared("ml-100k", str(shared_data), 20)
    items = data.vocabulary.items
    for u in (0, 100, 942):
        raw_user = data.vocabulary.users[data.test.user[u]]
        mine = table.users == raw_user
        latest = table.timestamps[mine].max()
        target = items[data.test.target[u]]
        assert target in set(table.items[mine & (table.timestamps == latest)])


def test_ml_100k_as_recbole_inter(shared_data, tmp_path):
    """The same rows written as a RecBole .inter file load identically."""
    udata = loaders.load_udata(str(shared_data / "ml-100k" / "u.data"))
    path = tmp_path / "ml-100k.inter"
    with open(path, "w") as handle:
        handle.write(
            "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
        )
        for row in zip(
            udata.users,
            udata.items,
            udata.ratings.astype(int),
            udata.timestamps.astype(np.int64),
        ):
            handle.write("\t".join(map(str, row)) + "\n")
    inter = loaders.load_file(str(path))
    np.testing.assert_array_equal(inter.users, udata.users)
    np.testing.assert_array_equal(inter.items, udata.items)
    np.testing.assert_array_equal(inter.timestamps, udata.timestamps)
    np.testing.assert_array_equal(inter.ratings, udata.ratings)


def test_ml_100k_item_file_is_not_an_interaction_file(shared_data):
    # RecBole's atomic .item file has item_id:token but no user column.
    path = str(shared_data / "ml-100k" / "ml-100k.item")
    with pytest.raises(DataError, match="user_id:token") as info:
        loaders.load_recbole(path)
    assert str(info.value).startswith(f"{path}:1:")
