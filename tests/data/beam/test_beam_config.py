"""The Beam preparation's options are checked before the pipeline runs."""

import pytest

from tfrec_tricks.data.beam.config import (
    DEFAULT_NUM_SHARDS,
    FILTER_ROUNDS,
    BeamConfig,
)


def test_defaults():
    config = BeamConfig.from_options({"max_len": 7}, None, FILTER_ROUNDS)
    assert (config.max_len, config.split) == (7, "recbole")
    assert (config.min_user, config.min_item) == (1, 0)
    assert config.numeric_features and config.drop_duplicates
    assert config.num_shards == DEFAULT_NUM_SHARDS
    assert config.filter_rounds == FILTER_ROUNDS


def test_every_user_split_raises_the_user_bound():
    options = {"max_len": 3, "split": "every-user"}
    assert BeamConfig.from_options(options, 1, 1).min_user == 3


@pytest.mark.parametrize(
    "options, num_shards, filter_rounds, message",
    [
        ({}, 1, 1, "must hold max_len"),
        ({"max_len": 3, "min_user_interactions": 0}, 1, 1, "at least 1"),
        ({"max_len": 3}, 0, 1, "num_shards must be positive"),
        ({"max_len": 3}, 1, 0, "filter_rounds must be at least 1"),
        ({"max_len": 3, "split": "nope"}, 1, 1, "nope"),
    ],
)
def test_bad_options(options, num_shards, filter_rounds, message):
    with pytest.raises(ValueError, match=message):
        BeamConfig.from_options(options, num_shards, filter_rounds)
