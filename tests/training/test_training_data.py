"""A run's data (``tfrec_tricks.training.training_data``): in memory or
from a prepared dataset on disk, with the same results."""

import os

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import tiny_config
from tfrec_tricks.data.on_disk_dataset import OnDiskDataset
from tfrec_tricks.data.pipeline import make_dataset
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.training.prepare_dataset import prepare_dataset
from tfrec_tricks.training.training import train
from tfrec_tricks.training.training_data import (
    data_files,
    input_paths,
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


def test_a_prepared_datasets_files_identify_its_data(tmp_path):
    config = tiny_config(tmp_path, prepared="prep", tfds_data_dir="tfds")
    assert data_files(config) == [
        os.path.join("prep", name)
        for name in ("metadata.json", "vocabulary.json", "statistics.json")
    ]
    # Nothing a run writes may be, contain or lie inside what it reads.
    assert input_paths(config) == [*data_files(config), "prep", "tfds"]
    assert input_paths(tiny_config(tmp_path)) == []  # synthetic: no file
