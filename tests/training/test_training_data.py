"""A run's data (``tfrec_tricks.training.training_data``): in memory or
from a prepared dataset on disk, with the same results."""

import dataclasses
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import tiny_config, write_token_interactions
from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.training.prepare_dataset import (
    prepare_dataset,
    resolved_config,
)
from tfrec_tricks.training.run_directory import data_identity
from tfrec_tricks.training.run_training import train
from tfrec_tricks.training.training_data import (
    data_files,
    item_feature_files,
    load_training_data,
    prepare_in_memory,
)

# A one-seed run on either path: measured on 300 synthetic users, 10
# epochs, seeds 0-3, the test and validation NDCG@10 of the two paths
# differed by at most 0.015 (only the order of the shuffled batches
# differs). Twice that is the bound.
NDCG_TOLERANCE = 0.03


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("prepared")
    config = tiny_config(root)
    return config, prepare_dataset(
        config, str(root / "data"), num_shards=3, verbose=False
    )


@pytest.mark.slow
@pytest.mark.parametrize("bucket", [False, True])
def test_evaluation_is_the_same_on_either_path(prepared, bucket):
    config, path = prepared
    _, data = prepare_in_memory(config)
    dataset = OnDiskDataset(path)
    model = SequentialRetrievalModel.from_data(
        config.model_config(data.num_items), data
    )
    model.compile()
    on_disk = model.evaluate(
        dataset.batches("test", 16, bucket_by_length=bucket),
        return_dict=True,
        verbose=0,
    )
    in_memory = model.evaluate(
        make_dataset(data.test, 16, bucket_by_length=bucket),
        return_dict=True,
        verbose=0,
    )
    for name in ("ndcg@10", "hr@10", "mrr@10"):
        assert on_disk[name] == pytest.approx(in_memory[name], abs=1e-6)


@pytest.mark.slow
def test_training_reaches_the_same_metrics(tmp_path):
    base = dict(
        synthetic_users=300,
        synthetic_items=100,
        max_len=20,
        epochs=10,
        patience=10,
        model={"embedding_dim": 16},
    )
    memory = tiny_config(tmp_path, name="memory", **base)
    path = prepare_dataset(memory, str(tmp_path / "data"), verbose=False)
    disk = tiny_config(tmp_path, name="disk", prepared=path, **base)
    results = [train(config, verbose=0).metrics for config in (memory, disk)]
    for split in ("validation", "test"):
        a, b = (r[split]["ndcg@10"] for r in results)
        assert abs(a - b) <= NDCG_TOLERANCE, (split, a, b)
    assert results[0]["num_train_examples"] == results[1]["num_train_examples"]


@pytest.mark.slow
def test_every_position_trains_on_disk(prepared, tmp_path):
    config, path = prepared
    run = tiny_config(
        tmp_path, prepared=path, every_position=True, epochs=1, model={}
    )
    result = train(run, verbose=0)
    assert np.isfinite(result.metrics["test"]["ndcg@10"])


def test_in_memory_data_describes_and_batches_each_split(tmp_path):
    config = tiny_config(tmp_path)
    data = load_training_data(config)
    assert not data.on_disk
    assert [line.split(":")[0] for line in data.description] == [
        "Data",
        "Prepared",
    ]
    assert data.num_items == data.prepared.num_items
    for split in ("train", "validation", "test"):
        count = data.num_examples(split)
        batches = list(data.batches(split, 7))
        assert count > 0
        assert sum(len(b["target"]) for b in batches) == count


def test_in_memory_batches_are_shared_among_the_input_pipelines(tmp_path):
    # Multi-worker training in memory: worker i reads every n-th batch.
    data = load_training_data(tiny_config(tmp_path))
    batches = [b["target"].numpy().tolist() for b in data.batches("test", 4)]
    shares = [
        [
            b["target"].numpy().tolist()
            for b in data.batches(
                "test", 4, input_context=tf.distribute.InputContext(2, i)
            )
        ]
        for i in (0, 1)
    ]
    assert shares == [batches[0::2], batches[1::2]]


# --- item features ----------------------------------------------------------

# 80 users over 30 items; the .item file lists 24 of them (genres, a
# year) and 3 items no user clicked.
RATINGS = "".join(
    f"u{u}\ti{(u * 7 + k * (1 + u % 3)) % 30}\t{1 + k % 5}\t{100 * u + k}\n"
    for u in range(80)
    for k in range(4 + u % 5)
)
ITEM_NAMES = [f"i{i}" for i in range(24)] + ["cold-b", "cold-a", "cold-c"]


def _item_file(year_offset=1990):
    return "item_id:token\tgenres:token_seq\tyear:float\n" + "".join(
        f"{item}\tg{k % 4} g{k % 3 + 4}\t{year_offset + k % 9}\n"
        for k, item in enumerate(ITEM_NAMES)
    )


def _feature_config(folder, name="memory", item_file=None, **overrides):
    (folder / "u.data").write_text(RATINGS)
    (folder / "x.item").write_text(item_file or _item_file())
    values = dict(
        data="file",
        data_path=str(folder / "u.data"),
        file_format="udata",
        item_features=str(folder / "x.item"),
        max_len=6,
        name=name,
    )
    return tiny_config(folder, **{**values, **overrides})


@pytest.fixture(scope="module")
def with_items(tmp_path_factory):
    """(in-memory config, prepared config) of the same data and .item."""
    root = tmp_path_factory.mktemp("items")
    memory = _feature_config(root, model={"embedding_dim": 8})
    path = prepare_dataset(memory, str(root / "data"), verbose=False)
    disk = tiny_config(root, name="disk", prepared=path, max_len=6)
    return memory, resolved_config(disk)


def test_prepared_item_features_equal_the_in_memory_ones(with_items):
    memory_config, disk_config = with_items
    _, memory = prepare_in_memory(memory_config)
    data = load_training_data(disk_config)
    disk = data.prepared
    assert data.on_disk
    assert disk.vocabulary == memory.vocabulary
    assert disk.vocabulary.items[-3:] == ["cold-b", "cold-a", "cold-c"]
    np.testing.assert_array_equal(disk.trained_items, memory.trained_items)
    assert disk.item_features.specs == memory.item_features.specs
    for name, values in memory.item_features.values.items():
        np.testing.assert_array_equal(disk.item_features.values[name], values)
    np.testing.assert_array_equal(
        disk.statistics.item_counts, memory.statistics.item_counts
    )
    # The run says the same of them.
    assert data.description[1:] == [
        line
        for line in load_training_data(memory_config).description
        if line.startswith("Item")
    ]


@pytest.mark.slow
def test_a_model_of_either_path_is_the_same(with_items):
    memory_config, disk_config = with_items
    _, memory = prepare_in_memory(memory_config)
    disk = OnDiskDataset(disk_config.prepared)
    models, metrics = [], []
    for config, data, test in (
        (memory_config, memory, make_dataset(memory.test, 16)),
        (disk_config, disk, disk.batches("test", 16)),
    ):
        model_config = config.model_config(data.num_items, data)
        tf.keras.utils.set_random_seed(0)
        model = SequentialRetrievalModel.from_data(model_config, data)
        model.compile()
        metrics.append(model.evaluate(test, return_dict=True, verbose=0))
        models.append(model)
    assert models[0].config == models[1].config
    assert models[0].config.item_features  # the features are read
    for a, b in zip(models[0].get_weights(), models[1].get_weights()):
        np.testing.assert_array_equal(a, b)
    for name in ("ndcg@10", "hr@10", "mrr@10"):
        assert metrics[1][name] == pytest.approx(metrics[0][name], abs=1e-6)


@pytest.mark.slow
def test_training_with_item_features_reaches_the_same_metrics(with_items):
    # As id-only runs (test_training_reaches_the_same_metrics): only the
    # order of the shuffled batches differs.
    memory_config, disk_config = with_items
    base = dict(epochs=8, patience=8)
    runs = [
        train(dataclasses.replace(config, **base), verbose=0)
        for config in (memory_config, disk_config)
    ]
    memory, disk = (run.metrics for run in runs)
    for split in ("validation", "test"):
        a, b = memory[split]["ndcg@10"], disk[split]["ndcg@10"]
        assert abs(a - b) <= NDCG_TOLERANCE, (split, a, b)
    for key in ("item_features", "cold_items", "items_without_attributes"):
        assert disk[key] == memory[key], key
    assert disk["cold_items"] == 3
    # The run directories keep the same vocabularies.
    for name in ("item_features.json", "vocabulary.json"):
        a, b = (open(os.path.join(r.run_dir, name), "rb").read() for r in runs)
        assert a == b, name


def test_the_item_file_is_in_a_prepared_runs_fingerprint(tmp_path):
    identities = []
    for year in (1990, 1991):
        folder = tmp_path / str(year)
        folder.mkdir()
        config = _feature_config(folder, item_file=_item_file(year))
        assert item_feature_files(config) == [config.item_features]
        path = prepare_dataset(config, str(folder / "data"), verbose=False)
        run = tiny_config(folder, prepared=path, max_len=6)
        identities.append(data_identity(data_files(resolved_config(run))))
    # metadata.json lists the item features' files with their SHA-256s,
    # and the .item file's: it differs, so the run's data does.
    first, second = ({d["file"]: d for d in i} for i in identities)
    assert first["metadata.json"]["sha256"] != second["metadata.json"]["sha256"]
    assert first["vocabulary.json"] == second["vocabulary.json"]


def test_a_per_interaction_feature_never_reads_the_metadata(tmp_path):
    # ml-100k's ratings without its u.item: --features time_gap trains as
    # before; naming an item feature then says which file is missing.
    folder = tmp_path / "data" / "ml-100k"
    folder.mkdir(parents=True)
    lines = [
        f"{user}\t{item}\t4\t{100 * user + item}"
        for user in range(1, 6)
        for item in range(1, 8)
    ]
    (folder / "u.data").write_text("\n".join(lines) + "\n")
    config = tiny_config(
        tmp_path,
        data="ml-100k",
        data_path=str(tmp_path / "data"),
        model={"features": ["time_gap"]},
    )
    _, data = prepare_in_memory(config)
    assert data.item_features is None
    config = dataclasses.replace(config, model={"features": ["genres"]})
    with pytest.raises(Exception, match="Item metadata of .ml-100k. not found"):
        prepare_in_memory(config)


def _token_config(tmp_path, **model):
    path = write_token_interactions(tmp_path / "shop.inter", empty=True)
    return tiny_config(
        tmp_path,
        data="file",
        data_path=path,
        max_len=4,
        epochs=1,
        model={"embedding_dim": 8, "features": ["device"], **model},
    )


def test_token_features_are_selected_and_described(tmp_path):
    data = load_training_data(_token_config(tmp_path))
    assert data.prepared.token_feature_names == ["device"]  # not channel
    assert "device" not in data.prepared.feature_names
    lines = [line for line in data.description if "Interaction feature" in line]
    assert len(lines) == 1 and lines[0].startswith(
        "Interaction feature device: token, 5 ids (padding and OOV included)"
    )
    batch = next(iter(data.batches("train", 8)))
    assert batch["device"].dtype == tf.int32 and "channel" not in batch
    # Without --features the token columns are left out, as float ones are.
    plain = load_training_data(_token_config(tmp_path, features=[]))
    assert plain.prepared.token_features == ()
    assert "device" not in next(iter(plain.batches("train", 8)))


@pytest.mark.slow
@pytest.mark.parametrize(
    "encoder, options",
    [
        ("gru4rec", {}),
        ("sasrec", {"train_windows": True}),
        ("hstu", {}),
    ],
)
def test_a_model_with_token_features_trains_with_each_encoder(
    tmp_path, encoder, options
):
    config = dataclasses.replace(
        _token_config(tmp_path, encoder=encoder, num_heads=2), **options
    )
    result = train(config, verbose=0)
    assert result.model.config.token_features[0]["name"] == "device"
    weights = [w.name for w in result.model.weights]
    assert any("token_feature_device" in name for name in weights)
    rows = result.metrics["interaction_features"]
    assert [(r["name"], r["kind"], r["vocabulary_size"]) for r in rows] == [
        ("device", "token", 5)
    ]
    assert 0 < rows[0]["coverage"] < 1  # empty values: no value
    with open(os.path.join(result.run_dir, "interaction_features.json")) as f:
        saved = json.load(f)
    assert saved[0]["vocabulary"] == ["web", "app", "tv"]
    assert np.isfinite(result.metrics["test"]["ndcg@10"])


@pytest.mark.slow
def test_a_prepared_dataset_trains_with_token_features(tmp_path):
    # `prepare --features device`, then `train --prepared DIR --features
    # device`: the features, the model and its files as in memory.
    memory = _token_config(tmp_path)
    path = prepare_dataset(memory, str(tmp_path / "data"), verbose=False)
    disk = dataclasses.replace(memory, prepared=path, name="disk")
    on_disk = load_training_data(resolved_config(disk))
    in_memory = load_training_data(memory)
    assert on_disk.on_disk and on_disk.prepared.token_feature_names == [
        "device"
    ]
    assert on_disk.prepared.token_features == in_memory.prepared.token_features
    lines = [
        [line for line in data.description if "Interaction feature" in line]
        for data in (in_memory, on_disk)
    ]
    assert lines[0] == lines[1] and len(lines[0]) == 1
    batch = next(iter(on_disk.batches("train", 8)))
    assert batch["device"].dtype == tf.int32 and "channel" not in batch
    # "all" takes every token column of the dataset; none without.
    every = dataclasses.replace(
        _token_config(tmp_path, features=["all"]), prepared=path
    )
    assert load_training_data(
        resolved_config(every)
    ).prepared.token_feature_names == ["channel", "device"]
    results = [train(config, verbose=0) for config in (memory, disk)]
    configs = [result.model.config for result in results]
    assert configs[1].token_features == configs[0].token_features
    assert configs[1].token_features[0]["name"] == "device"
    saved = []
    for result in results:
        with open(
            os.path.join(result.run_dir, "interaction_features.json")
        ) as f:
            saved.append(f.read())
    assert saved[0] == saved[1]
    metrics = [result.metrics["interaction_features"] for result in results]
    assert metrics[0] == metrics[1]
    assert np.isfinite(results[1].metrics["test"]["ndcg@10"])
