"""Training statistics from user sequences equal the prefix examples'."""

import numpy as np
import pytest

from tfrec_tricks.data import synthetic
from tfrec_tricks.data.preparation import prepare
from tfrec_tricks.data.statistics import (
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
        np.array([0, 2, 1]), {"rating": Moments(3.0, 4.0, 1.5)}
    )
    again = TrainingStatistics.from_dict(stats.to_dict())
    np.testing.assert_array_equal(again.item_counts, stats.item_counts)
    assert again.moments == stats.moments
    assert again.feature_statistics == {"rating": (4.0, 0.5)}


def test_moments_merge_with_nothing_is_itself():
    moments = Moments(2.0, 1.0, 0.5)
    assert moments.merge(Moments()) == moments
    assert Moments().merge(Moments()) == Moments()
