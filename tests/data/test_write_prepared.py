"""write_prepared: shard counts and the split histograms, against loops."""

import collections

import numpy as np
import pytest

from tfrec_tricks.data.write_prepared import (
    INTERACTIONS_PER_SHARD,
    MIN_SHARDS,
    default_num_shards,
    merge_split_counts,
    split_counts,
)


@pytest.mark.parametrize(
    "interactions, shards",
    [
        (0, MIN_SHARDS),
        (1, MIN_SHARDS),
        (MIN_SHARDS * INTERACTIONS_PER_SHARD, MIN_SHARDS),
        (MIN_SHARDS * INTERACTIONS_PER_SHARD + 1, MIN_SHARDS + 1),
        (10 * INTERACTIONS_PER_SHARD, 10),
    ],
)
def test_default_num_shards(interactions, shards):
    assert default_num_shards(interactions) == shards


def _histogram(values, keep):
    counts = collections.Counter(int(v) for v in values if keep(v))
    return {str(v): c for v, c in sorted(counts.items())}


def test_split_counts_leave_out_users_without_a_target():
    rng = np.random.default_rng(1)
    ends = rng.integers(0, 6, size=50)
    valid = rng.integers(-1, 6, size=50)
    test = rng.integers(-1, 6, size=50)
    assert split_counts(ends, valid, test) == {
        "train_ends": _histogram(ends, lambda v: v > 0),
        "validation_positions": _histogram(valid, lambda v: v >= 0),
        "test_positions": _histogram(test, lambda v: v >= 0),
    }


def test_merged_counts_of_disjoint_users_equal_the_counts_of_all():
    rng = np.random.default_rng(2)
    ends, valid, test = (rng.integers(-1, 12, size=90) for _ in range(3))
    parts = [
        split_counts(ends[a:b], valid[a:b], test[a:b])
        for a, b in ((0, 10), (10, 55), (55, 90))
    ]
    merged = merge_split_counts(parts)
    assert merged == split_counts(ends, valid, test)
    for histogram in merged.values():  # keys in numeric, not string, order
        assert [int(k) for k in histogram] == sorted(int(k) for k in histogram)
    assert merge_split_counts([]) == {}
