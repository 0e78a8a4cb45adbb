"""Training statistics from user sequences equal the prefix examples'."""

import numpy as np
import pytest

from tfrec_tricks.data.in_memory_dataset import prepare
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.training_statistics import (
    LOG1P_FEATURES,
    Moments,
    TrainingStatistics,
    training_statistics,
)
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.layers.soft_one_hot_encoding import signed_log1p


def window_statistics(train, num_items):
    """What the statistics mean: computed from the prefix examples."""
    counts = np.bincount(train.target, minlength=num_items)
    real = train.history > 0
    moments = {}
    for name, column in train.features.items():
        values = column.astype(np.float64)[real]
        values = values[np.isfinite(values)]
        if name in LOG1P_FEATURES:
            values = signed_log1p(values)
        moments[name] = (values.size, values.mean(), values.var())
    return counts, moments


@pytest.mark.parametrize("max_len", [3, 8, 50])
@pytest.mark.parametrize("split", ["recbole", "every-user"])
def test_statistics_equal_those_of_the_prefix_examples(max_len, split):
    table = synthetic.generate(num_users=60, num_items=40, seed=3).interactions
    data = prepare(table, max_len=max_len, split=split)
    counts, moments = window_statistics(data.train, data.num_items)
    np.testing.assert_array_equal(data.statistics.item_counts, counts)
    assert sorted(data.statistics.moments) == sorted(moments)
    for name, (size, mean, variance) in moments.items():
        got = data.statistics.moments[name]
        assert got.weight == size
        assert got.mean == pytest.approx(mean, rel=1e-9)
        assert got.variance == pytest.approx(variance, rel=1e-9)


def test_statistics_of_disjoint_users_merge():
    table = synthetic.generate(num_users=50, num_items=60, seed=5).interactions
    whole = user_sequences(table.users, table.items, table.timestamps)
    users = np.unique(table.users)
    parts = []
    for half in (users[:20], users[20:]):
        rows = np.isin(table.users, half)
        part = user_sequences(
            table.users[rows], table.items[rows], table.timestamps[rows]
        )
        # Map the part's item ids back to the whole's (same raw ids).
        index = {name: i for i, name in enumerate(whole.item_names)}
        part.items = np.asarray(
            [index[part.item_names[i]] for i in part.items], np.int32
        )
        parts.append(training_statistics(part, 10, len(whole.item_names)))
    merged = parts[0].merge(parts[1])
    expected = training_statistics(whole, 10)
    np.testing.assert_array_equal(merged.item_counts, expected.item_counts)
    for name, moments in expected.moments.items():
        assert merged.moments[name].weight == moments.weight
        assert merged.moments[name].mean == pytest.approx(moments.mean)
        assert merged.moments[name].variance == pytest.approx(moments.variance)


def test_statistics_round_trip_through_a_dict():
    stats = TrainingStatistics(
        np.array([0, 2, 1]), {"rating": Moments(3.0, 4.0, 1.5)}, 2
    )
    again = TrainingStatistics.from_dict(stats.to_dict())
    np.testing.assert_array_equal(again.item_counts, stats.item_counts)
    assert again.moments == stats.moments
    assert again.feature_statistics == {"rating": (4.0, 0.5)}
    assert again.repeat_targets == 2
    assert again.repeat_share == pytest.approx(2 / 3)
    # A dataset prepared before repeats were counted: unknown, not zero.
    older = stats.to_dict()
    del older["repeat_targets"]
    assert TrainingStatistics.from_dict(older).repeat_share is None


def repeat_targets_by_loops(sequences):
    """Training targets whose item the user had before, one at a time."""
    count = 0
    for user in range(sequences.num_users):
        start = sequences.starts[user]
        items = sequences.items[start : start + sequences.lengths[user]]
        for j in range(1, int(sequences.train_ends[user]) + 1):
            count += bool(items[j] in items[:j])
    return count


@pytest.mark.parametrize("seed", [0, 1])
def test_repeat_targets_are_the_targets_seen_before(seed):
    # Synthetic users copy earlier items, so both kinds of target occur;
    # max_len 3 is shorter than most histories: repeats count anyway.
    table = synthetic.generate(num_users=40, num_items=60, seed=seed)
    table = table.interactions
    sequences = user_sequences(table.users, table.items, table.timestamps)
    stats = training_statistics(sequences, max_len=3)
    expected = repeat_targets_by_loops(sequences)
    assert 0 < expected < stats.item_counts.sum()
    assert stats.repeat_targets == expected


def test_repeat_share_of_hand_made_sequences():
    # u: a b a | c a held out (validation, test); v: x x | y z. Training
    # targets b a and x: a (u's third) and x (v's second) repeat.
    users = np.array(["u"] * 5 + ["v"] * 4)
    items = np.array(list("abaca") + list("xxyz"))
    sequences = user_sequences(users, items, np.arange(9.0))
    stats = training_statistics(sequences, max_len=2)
    assert stats.item_counts.sum() == 3
    assert stats.repeat_targets == 2
    assert stats.repeat_share == pytest.approx(2 / 3)


def test_repeat_targets_merge_and_unknown_stays_unknown():
    known = TrainingStatistics(np.array([0, 3]), {}, 1)
    assert (
        known.merge(TrainingStatistics(np.array([0, 1]), {}, 1)).repeat_targets
        == 2
    )
    unknown = TrainingStatistics(np.array([0, 1]), {}, None)
    assert known.merge(unknown).repeat_share is None


def test_moments_merge_with_nothing_is_itself():
    moments = Moments(2.0, 1.0, 0.5)
    assert moments.merge(Moments()) == moments
    assert Moments().merge(Moments()) == Moments()
