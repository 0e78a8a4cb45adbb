"""prepared.writer: shard counts and the split histograms, against loops."""

import collections
import json
import os

import numpy as np
import pytest

from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.data.prepared.item_features import ItemFeatureRequest
from tfrec_tricks.data.prepared.writer import (
    INTERACTIONS_PER_SHARD,
    MIN_SHARDS,
    default_num_shards,
    merge_split_counts,
    split_counts,
    write_prepared,
)
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.ownership import RECORD_FILE


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


def _sequences():
    users = np.repeat([f"u{u}" for u in range(6)], 5)
    items = np.array([f"i{(u + k) % 7}" for u in range(6) for k in range(5)])
    return user_sequences(users, items)


def test_item_features_are_written_listed_and_recorded(tmp_path):
    table = ItemFeatureTable(
        {"color": "token"}, {"i1": {"color": "red"}, "new": {"color": "red"}}
    )
    request = ItemFeatureRequest(table, lambda *_: ["color"])
    path = write_prepared(
        _sequences(),
        str(tmp_path / "p"),
        {"max_len": 3},
        2,
        item_features=request,
    )
    with open(os.path.join(path, "metadata.json")) as handle:
        metadata = json.load(handle)
    assert metadata["item_feature_names"] == ["color"]
    new = ["item_features.json", "item_features.npz", "trained_items.npy"]
    listed = [entry["file"] for entry in metadata["files"]]
    assert set(new) <= set(listed)
    # The tool's record of what it wrote holds them (ownership).
    with open(os.path.join(path, RECORD_FILE)) as handle:
        assert set(new) <= set(json.load(handle)["entries"])
    # The cold item joins the catalogue.
    with open(os.path.join(path, "vocabulary.json")) as handle:
        assert json.load(handle)["items"][-1] == "new"
    assert metadata["num_items"] == 9


def test_without_item_features_none_are_named(tmp_path):
    path = write_prepared(_sequences(), str(tmp_path / "p"), {"max_len": 3}, 2)
    with open(os.path.join(path, "metadata.json")) as handle:
        metadata = json.load(handle)
    assert metadata["item_feature_names"] == []
    assert not any(e["file"].startswith("item") for e in metadata["files"])


def test_refused_features_write_nothing(tmp_path):
    def refuse(names, token_names):
        raise ValueError(f"--features names 'colour'. It has {names}")

    request = ItemFeatureRequest(None, refuse)
    with pytest.raises(ValueError, match="names 'colour'"):
        write_prepared(
            _sequences(),
            str(tmp_path / "p"),
            {"max_len": 3},
            item_features=request,
        )
    assert os.listdir(tmp_path) == []


def test_token_columns_are_written_listed_and_named(tmp_path):
    users = np.repeat(["u0", "u1"], 4)
    items = np.array(list("abcdbcda"))
    devices = np.array(["web", "", "web", "tv", "app", "web", "app", "tv"])
    sequences = user_sequences(users, items, tokens={"device": devices})
    seen = []  # what --features is checked against: token columns too

    def select(names, token_names):
        seen.append((names, token_names))
        return []

    path = write_prepared(
        sequences,
        str(tmp_path / "p"),
        {"max_len": 3, "min_feature_count": 2},
        2,
        item_features=ItemFeatureRequest(None, select),
    )
    assert seen == [([], ["device"])]
    with open(os.path.join(path, "metadata.json")) as handle:
        metadata = json.load(handle)
    assert metadata["token_feature_names"] == ["device"]
    assert "interaction_tokens.json" in [e["file"] for e in metadata["files"]]
    with open(os.path.join(path, "interaction_tokens.json")) as handle:
        (spec,) = json.load(handle)
    # Training positions 0..1 of each user: web, "" and app, web: web 2,
    # app 1; min_feature_count 2 keeps web only. 7 of 8 have a value.
    assert spec == {
        "name": "device",
        "kind": "token",
        "vocabulary": ["web"],
        "vocabulary_size": 3,
        "coverage": 7 / 8,
    }


def test_without_token_columns_none_are_named(tmp_path):
    path = write_prepared(_sequences(), str(tmp_path / "p"), {"max_len": 3}, 2)
    with open(os.path.join(path, "metadata.json")) as handle:
        assert json.load(handle)["token_feature_names"] == []
    assert "interaction_tokens.json" not in os.listdir(path)


def test_a_bad_min_feature_count_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match="min_count"):
        write_prepared(
            _sequences(),
            str(tmp_path / "p"),
            {"max_len": 3, "min_feature_count": 0},
        )
    assert os.listdir(tmp_path) == []
