"""Leave-one-out preparation: exact arrays on hand-built interactions.

Histories are right-padded (real items first, in time order, then zeros),
as ``preparation._windows`` does; ``padded`` builds the expected rows.
"""

import numpy as np
import pytest

from tfrec_tricks.data.in_memory_dataset import (
    PADDING,
    TIME_GAP,
    Vocabulary,
    filter_interactions,
    prepare,
)
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.errors import DataError

NAN = np.nan

# (user, item, time, rating), deliberately not sorted. After sorting by
# (user, time): a = y@10 z@20 x@35 w@60 v@100, b = y@5 x@6 z@8, c = x@1 y@2.
# The exact-array tests below use split="every-user", which drops c (two
# interactions); the RecBole split's tests follow them.
ROWS = [
    ("a", "x", 35, 3),
    ("b", "y", 5, 4),
    ("a", "y", 10, 5),
    ("c", "x", 1, 1),
    ("a", "z", 20, 1),
    ("b", "z", 8, 2),
    ("a", "v", 100, 2),
    ("c", "y", 2, 2),
    ("b", "x", 6, 5),
    ("a", "w", 60, 4),
]
# Item ids follow first appearance in (user, time) order: y z x w v.
Y, Z, X, W, V = 1, 2, 3, 4, 5


def padded(rows, max_len):
    """Expected history (or feature) rows: real values, then zeros."""
    out = np.zeros((len(rows), max_len))
    for r, values in enumerate(rows):
        out[r, : len(values)] = values
    return out


def table(rows, timestamps=True, rating=True, source="hand-built"):
    users, items, times, ratings = zip(*rows)
    return Interactions(
        users=np.asarray(users, dtype=str),
        items=np.asarray(items, dtype=str),
        timestamps=np.asarray(times, np.float64) if timestamps else None,
        numeric={"rating": np.asarray(ratings, np.float32)} if rating else {},
        source=source,
    )


def assert_split(split, history, target, user, **features):
    np.testing.assert_array_equal(split.history, history)
    np.testing.assert_array_equal(split.target, target)
    np.testing.assert_array_equal(split.user, user)
    assert split.history.dtype == np.int32
    assert split.target.dtype == np.int32
    assert split.user.dtype == np.int32
    assert sorted(split.features) == sorted(features)
    for name, expected in features.items():
        assert split.features[name].dtype == np.float32
        np.testing.assert_array_equal(split.features[name], expected)


@pytest.fixture
def prepared():
    return prepare(table(ROWS), max_len=3, split="every-user")


def test_vocabulary(prepared):
    vocab = prepared.vocabulary
    assert vocab.items == [PADDING, "y", "z", "x", "w", "v"]
    assert vocab.users == ["a", "b"]
    assert vocab.num_items == prepared.num_items == 6
    assert prepared.max_len == 3
    assert prepared.feature_names == ["rating", TIME_GAP]


def test_train_split_exact(prepared):
    # Only user a has positions between the first and the last two.
    assert_split(
        prepared.train,
        history=padded([[Y], [Y, Z]], 3),
        target=[Z, X],
        user=[0, 0],
        time_gap=padded([[NAN], [NAN, 10]], 3),
        rating=padded([[5], [5, 1]], 3),
    )


def test_validation_split_exact(prepared):
    assert_split(
        prepared.validation,
        history=padded([[Y, Z, X], [Y]], 3),
        target=[W, X],
        user=[0, 1],
        time_gap=padded([[NAN, 10, 15], [NAN]], 3),
        rating=padded([[5, 1, 3], [4]], 3),
    )


def test_test_split_exact_and_truncated(prepared):
    # a's history y z x w is cut to its last max_len=3 items.
    assert_split(
        prepared.test,
        history=padded([[Z, X, W], [Y, X]], 3),
        target=[V, Z],
        user=[0, 1],
        time_gap=padded([[10, 15, 25], [NAN, 1]], 3),
        rating=padded([[1, 3, 4], [4, 5]], 3),
    )


def test_recbole_split_trains_on_short_users():
    # RecBole: a's 4 examples -> 2 train, validation, test; b's 2 examples
    # (3 items) -> train, test; c's only example (2 items) -> train.
    data = prepare(table(ROWS), max_len=3)
    assert data.vocabulary.users == ["a", "b", "c"]
    assert data.vocabulary.items == [PADDING, "y", "z", "x", "w", "v"]
    assert_split(
        data.train,
        history=padded([[Y], [Y, Z], [Y], [X]], 3),
        target=[Z, X, X, Y],
        user=[0, 0, 1, 2],
        time_gap=padded([[NAN], [NAN, 10], [NAN], [NAN]], 3),
        rating=padded([[5], [5, 1], [4], [1]], 3),
    )
    assert_split(
        data.validation,
        history=padded([[Y, Z, X]], 3),
        target=[W],
        user=[0],
        time_gap=padded([[NAN, 10, 15]], 3),
        rating=padded([[5, 1, 3]], 3),
    )
    every_user = prepare(table(ROWS), max_len=3, split="every-user")
    for name in ("history", "target", "user"):
        np.testing.assert_array_equal(
            getattr(data.test, name), getattr(every_user.test, name)
        )


def test_recbole_split_matches_recbole_counts():
    # Per user with n items: n - 1 examples; test from n >= 3, validation
    # from n >= 4 (RecBole's _split_index_by_leave_one_out after its
    # data augmentation), the rest train.
    rows = [(f"u{n}", f"i{k}", k, 0) for n in range(1, 7) for k in range(n)]
    data = prepare(table(rows), max_len=10)
    assert len(data.test) == 4  # u3..u6
    assert len(data.validation) == 3  # u4..u6
    assert len(data.train) == sum(n - 1 for n in range(1, 7)) - 4 - 3
    np.testing.assert_array_equal(
        [data.vocabulary.users[u] for u in data.validation.user],
        ["u4", "u5", "u6"],
    )


def test_long_max_len_pads_with_zeros(prepared):
    data = prepare(table(ROWS), max_len=6)
    np.testing.assert_array_equal(
        data.test.history, [[Y, Z, X, W, 0, 0], [Y, X, 0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        data.test.features[TIME_GAP],
        [[NAN, 10, 15, 25, 0, 0], [NAN, 1, 0, 0, 0, 0]],
    )
    np.testing.assert_array_equal(data.test.target, prepared.test.target)


def test_user_index_maps_back_to_raw_users(prepared):
    vocab = prepared.vocabulary
    raw = [vocab.users[u] for u in prepared.test.user]
    assert raw == ["a", "b"]
    assert [vocab.items[t] for t in prepared.test.target] == ["v", "z"]


def test_as_dict_and_summary(prepared):
    batch = prepared.train.as_dict()
    assert sorted(batch) == ["history", "rating", "target", TIME_GAP, "user"]
    assert len(prepared.train) == 2 and len(prepared.test) == 2
    summary = prepared.summary()
    assert "2 users" in summary and "5 items" in summary
    assert "train 2" in summary and "max_len 3" in summary


def test_vocabulary_round_trip(prepared, tmp_path):
    path = tmp_path / "vocab.json"
    prepared.vocabulary.save(str(path))
    loaded = Vocabulary.load(str(path))
    assert loaded == prepared.vocabulary
    assert loaded.num_items == 6


def test_vocabulary_round_trip_non_ascii(tmp_path):
    vocab = Vocabulary(items=[PADDING, "Amélie", "東京"], users=["ü"])
    path = tmp_path / "vocab.json"
    vocab.save(str(path))
    assert Vocabulary.load(str(path)) == vocab


def test_without_numeric_features():
    data = prepare(
        table(ROWS), max_len=3, numeric_features=False, split="every-user"
    )
    assert data.feature_names == []
    assert data.test.features == {}
    np.testing.assert_array_equal(
        data.test.history, padded([[Z, X, W], [Y, X]], 3)
    )


def test_rating_without_timestamps_keeps_file_order():
    # The sasrec case: no timestamps, so the file order is the time order.
    rows = [
        ("u2", "p", 0, 1),
        ("u1", "q", 0, 2),
        ("u2", "r", 0, 3),
        ("u1", "p", 0, 4),
        ("u2", "q", 0, 5),
        ("u1", "s", 0, 6),
        ("u2", "s", 0, 7),
    ]
    data = prepare(table(rows, timestamps=False), max_len=4)
    assert data.vocabulary.users == ["u2", "u1"]
    assert data.vocabulary.items == [PADDING, "p", "r", "q", "s"]
    assert data.feature_names == ["rating"]
    # u2: p r q s ; u1: q p s
    assert_split(
        data.test,
        history=padded([[1, 2, 3], [3, 1]], 4),
        target=[4, 4],
        user=[0, 1],
        rating=padded([[1, 3, 5], [2, 4]], 4),
    )
    # u1 has 3 items: its first example trains (RecBole's split).
    assert_split(
        data.train,
        history=padded([[1], [3]], 4),
        target=[2, 1],
        user=[0, 1],
        rating=padded([[1], [2]], 4),
    )


def test_sasrec_without_any_numeric_column():
    rows = [("1", "30", 0, 0), ("1", "2", 0, 0), ("1", "7", 0, 0)]
    data = prepare(
        table(rows, timestamps=False, rating=False),
        max_len=2,
        split="every-user",
    )
    assert data.feature_names == []
    assert data.vocabulary.items == [PADDING, "30", "2", "7"]
    np.testing.assert_array_equal(data.validation.history, [[1, 0]])
    np.testing.assert_array_equal(data.test.history, [[1, 2]])
    np.testing.assert_array_equal(data.test.target, [3])
    assert len(data.train) == 0
    assert data.train.history.shape == (0, 2)


def test_equal_timestamps_keep_file_order():
    rows = [
        ("u", "b", 5, 0),
        ("u", "a", 5, 0),
        ("u", "c", 1, 0),
        ("u", "d", 5, 0),
    ]
    data = prepare(table(rows), max_len=4)
    # c@1 then b, a, d (all @5) in file order.
    assert data.vocabulary.items == [PADDING, "c", "b", "a", "d"]
    np.testing.assert_array_equal(data.test.history, [[1, 2, 3, 0]])
    np.testing.assert_array_equal(
        data.test.features[TIME_GAP], [[NAN, 4, 0, 0]]
    )


def test_min_user_filter_drops_short_users():
    data = prepare(table(ROWS), max_len=3, min_user_interactions=4)
    assert data.vocabulary.users == ["a"]
    # b's items that a also has stay; nothing else disappears.
    assert data.vocabulary.items == [PADDING, "y", "z", "x", "w", "v"]
    assert len(data.test) == 1


def test_min_item_filter_is_iterative():
    # i4 is rare -> u2 drops below 3 -> i7 (u1, u2) becomes rare -> dropped.
    rows = [
        ("u1", "i1", 1, 0),
        ("u1", "i2", 2, 0),
        ("u1", "i3", 3, 0),
        ("u1", "i7", 4, 0),
        ("u4", "i1", 1, 0),
        ("u4", "i2", 2, 0),
        ("u4", "i3", 3, 0),
        ("u2", "i7", 1, 0),
        ("u2", "i4", 2, 0),
        ("u2", "i1", 3, 0),
    ]
    interactions = table(rows)
    keep = filter_interactions(interactions, 3, 2)
    np.testing.assert_array_equal(keep, [1, 1, 1, 0, 1, 1, 1, 0, 0, 0])
    data = prepare(
        interactions,
        min_user_interactions=3,
        min_item_interactions=2,
        split="every-user",
    )
    assert data.vocabulary.items == [PADDING, "i1", "i2", "i3"]
    assert data.vocabulary.users == ["u1", "u4"]
    np.testing.assert_array_equal(data.test.target, [3, 3])


def test_filter_bounds_of_one_keep_everything():
    keep = filter_interactions(table(ROWS), 1, 1)
    assert keep.all()


def test_empty_after_filtering_raises_data_error():
    rows = [
        ("u1", "i1", 1, 0),
        ("u1", "i2", 2, 0),
        ("u1", "i3", 3, 0),
        ("u2", "i1", 1, 0),
        ("u2", "i2", 2, 0),
        ("u2", "i4", 3, 0),
        ("u3", "i1", 1, 0),
        ("u3", "i3", 2, 0),
        ("u3", "i5", 3, 0),
    ]
    with pytest.raises(DataError, match="No interactions left") as info:
        prepare(
            table(rows, source="tiny.inter"),
            min_user_interactions=3,
            min_item_interactions=2,
        )
    message = str(info.value)
    assert "tiny.inter" in message
    assert "min_item_interactions=2" in message


def test_all_users_too_short_raises_data_error():
    rows = [("u1", "i1", 1, 0), ("u1", "i2", 2, 0), ("u2", "i1", 1, 0)]
    with pytest.raises(DataError, match="min_user_interactions=3"):
        prepare(table(rows), split="every-user")
    with pytest.raises(DataError, match="No validation examples") as info:
        prepare(table(rows, source="short.inter"))
    message = str(info.value)
    assert "short.inter" in message and "split='recbole'" in message
    assert "from 4 interactions" in message and "has 2" in message


@pytest.mark.parametrize("max_len", [0, -5])
def test_bad_max_len(max_len):
    with pytest.raises(ValueError, match="max_len"):
        prepare(table(ROWS), max_len=max_len)


@pytest.mark.parametrize("bound", [0, -1])
def test_min_user_interactions_below_one(bound):
    with pytest.raises(ValueError, match=f"at least 1. Received: .*={bound}"):
        prepare(table(ROWS), min_user_interactions=bound)


def test_unknown_split():
    with pytest.raises(ValueError, match="split='last-two'"):
        prepare(table(ROWS), split="last-two")


def test_invariants_on_synthetic_data():
    data = synthetic.generate(
        num_users=60, num_items=80, num_clusters=4, mean_length=12, seed=3
    )
    prepared = prepare(data.interactions, max_len=8, split="every-user")
    n = prepared.num_items
    assert n - 1 == len(np.unique(data.interactions.items))
    assert len(prepared.vocabulary.users) == 60
    for split in (prepared.train, prepared.validation, prepared.test):
        assert split.history.min() >= 0 and split.history.max() < n
        assert split.target.min() >= 1 and split.target.max() < n
        # Right padding: once padding starts, no real item follows.
        real = split.history > 0
        assert real[:, 0].all()
        assert np.all(np.diff(real.astype(int), axis=1) <= 0)
        gaps = split.features[TIME_GAP]
        np.testing.assert_array_equal(gaps[~real], 0)
        # A gap is NaN only at a user's first interaction, else positive.
        assert np.all(~np.isnan(gaps[:, 1:]))
        assert np.all(gaps[:, 1:][real[:, 1:]] > 0)
        short = real.sum(axis=1) < split.history.shape[1]
        # Histories shorter than max_len start at the user's first item.
        assert np.all(np.isnan(gaps[short, 0]))
    # Test = validation shifted by one.
    valid, test = prepared.validation, prepared.test
    np.testing.assert_array_equal(test.user, np.arange(60))
    for t_row, v_row, v_target in zip(
        test.history, valid.history, valid.target
    ):
        expected = [*v_row[v_row > 0], v_target][-8:]
        np.testing.assert_array_equal(t_row[t_row > 0], expected)
    # Each user gets length - 3 training examples.
    lengths = np.unique(data.interactions.users, return_counts=True)[1]
    assert len(prepared.train) == (lengths - 3).sum()


def test_an_item_named_like_the_padding_token_is_refused():
    # Loaders refuse it by file and line; a table built in memory too.
    table = Interactions(
        users=np.array(["u"] * 4), items=np.array(["a", "[PAD]", "b", "c"])
    )
    with pytest.raises(DataError, match=r"named '\[PAD\]'.*rename it"):
        prepare(table, max_len=3)
