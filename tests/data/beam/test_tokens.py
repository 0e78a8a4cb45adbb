"""The Beam engine's token specs and ids equal the local engine's
(``interaction_token_features``), counted per user and summed."""

import collections

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.tokens import (
    add_pairs,
    encode_user_tokens,
    token_features,
    token_lookups,
    token_specs,
    user_token_counts,
    user_token_coverage,
)
from tfrec_tricks.data.interaction_tokens import interaction_token_features
from tfrec_tricks.data.user_sequences import user_sequences

VALUES = ["web", "app", "tv", "", "kiosk"]


def _users(split, seed=0):
    """Random users (1 to 7 interactions) as ``ranked_users`` gives them,
    and the local engine's ``UserSequences`` of the same rows."""
    rng = np.random.default_rng(seed)
    users, rows = [], []
    for index in range(30):
        length = int(rng.integers(1, 8))
        devices = [VALUES[v] for v in rng.integers(0, 5, length)]
        pages = [f"p{v}" for v in rng.integers(0, 3, length)]
        items = [f"i{index}-{k}" for k in range(length)]
        users.append((index, items, {}, {"device": devices, "page": pages}))
        rows += [
            (f"u{index}", i, d, p) for i, d, p in zip(items, devices, pages)
        ]
    names, items, devices, pages = (np.array(c) for c in zip(*rows))
    sequences = user_sequences(
        names,
        items,
        split=split,
        min_user_interactions=3 if split == "every-user" else 1,
        tokens={"device": devices, "page": pages},
    )
    if split == "every-user":
        users = [user for user in users if len(user[1]) >= 3]
    return users, sequences


def _specs_of_counts(users, split, min_count):
    """``token_specs`` of the per-user counts, summed as Beam sums them."""
    counts = collections.Counter()
    coverage = collections.defaultdict(list)
    for user in users:
        for key, count in user_token_counts(user, split):
            counts[key] += count
        for name, pair in user_token_coverage(user):
            coverage[name].append(pair)
    return token_specs(
        list(counts.items()),
        [(name, add_pairs(pairs)) for name, pairs in coverage.items()],
        min_count,
    )


@pytest.mark.parametrize("split", ["recbole", "every-user"])
@pytest.mark.parametrize("min_count", [1, 2, 3])
def test_specs_and_ids_equal_the_local_engines(split, min_count):
    users, sequences = _users(split)
    specs, ids = interaction_token_features(sequences, min_count)
    got = _specs_of_counts(users, split, min_count)
    assert got == [spec.to_dict() for spec in specs]
    lookups = token_lookups(got)
    encoded = [encode_user_tokens(user[3], lookups) for user in users]
    for name in ("device", "page"):
        np.testing.assert_array_equal(
            np.concatenate([user[name] for user in encoded]), ids[name]
        )


def test_a_user_without_a_training_example_counts_no_value():
    # Two interactions, every-user split: validation and test only.
    user = (0, ["a", "b", "c"], {}, {"device": ["web", "tv", ""]})
    assert list(user_token_counts(user, "every-user")) == []
    assert list(user_token_coverage(user)) == [("device", (2, 3))]
    assert list(user_token_counts((0, ["a"], {}, {}), "recbole")) == []


@pytest.mark.slow
def test_the_pipeline_builds_the_specs_on_one_worker():
    users, sequences = _users("recbole", seed=3)
    specs, _ = interaction_token_features(sequences, 2)
    config = BeamConfig.from_options(
        {"max_len": 3, "min_feature_count": 2}, None, filter_rounds=1
    )
    with beam.Pipeline() as pipeline:
        got = token_features(pipeline | beam.Create(users), config)
        assert_that(got, equal_to([[spec.to_dict() for spec in specs]]))


@pytest.mark.slow
def test_without_token_columns_the_specs_are_empty():
    config = BeamConfig.from_options({"max_len": 3}, None, filter_rounds=1)
    with beam.Pipeline() as pipeline:
        users = pipeline | beam.Create([(0, ["a", "b"], {}, {})])
        assert_that(token_features(users, config), equal_to([[]]))


def test_a_bad_min_feature_count_is_refused():
    with pytest.raises(ValueError, match="min_count"):
        BeamConfig.from_options(
            {"max_len": 3, "min_feature_count": 0}, None, filter_rounds=1
        )
