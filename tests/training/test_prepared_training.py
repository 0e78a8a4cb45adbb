"""Training on a prepared dataset on disk: the in-memory path's results."""

import json

import numpy as np
import pytest

from tests.run_helpers import TINY_FLAGS, run_cli, tiny_config
from tfrec_tricks.data.on_disk_dataset import OnDiskDataset
from tfrec_tricks.data.pipeline import make_dataset
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.training.prepare_dataset import prepare_dataset
from tfrec_tricks.training.training import train
from tfrec_tricks.training.training_data import prepare_in_memory

pytestmark = pytest.mark.slow

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


def test_every_position_trains_on_disk(prepared, tmp_path):
    config, path = prepared
    run = tiny_config(
        tmp_path, prepared=path, every_position=True, epochs=1, model={}
    )
    result = train(run, verbose=0)
    assert np.isfinite(result.metrics["test"]["ndcg@10"])


def test_cli_prepare_then_train(tmp_path):
    prepared = run_cli(
        "prepare",
        *TINY_FLAGS[:6],
        "--output",
        "data",
        "--shards",
        "2",
        cwd=tmp_path,
    )
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    assert "Prepared: data: 60 users" in prepared.stdout
    trained = run_cli(
        "train",
        "--prepared",
        "data",
        "--embedding-dim",
        "8",
        "--epochs",
        "1",
        "--quiet",
        cwd=tmp_path,
    )
    assert trained.returncode == 0, trained.stderr[-2000:]
    # The run is named after the prepared dataset and records its origin.
    with open(tmp_path / "runs" / "data" / "config.json") as handle:
        recorded = json.load(handle)["train"]
    assert recorded["prepared"] == "data"
    assert recorded["max_len"] == 10 and recorded["synthetic_users"] == 60
    # The prepared files identify the run's data.
    with open(tmp_path / "runs" / "data" / "run.json") as handle:
        files = [d["file"] for d in json.load(handle)["fingerprint"]["data"]]
    assert sorted(files) == [
        "metadata.json",
        "statistics.json",
        "vocabulary.json",
    ]


def test_cli_prepare_with_beam_equals_local(tmp_path):
    lines = [
        f"u{u}\ti{(u * 7 + k * 3) % 13}\t{1 + k % 5}\t{100 * k + u}"
        for u in range(12)
        for k in range(3 + u % 4)
    ]
    (tmp_path / "ratings.tsv").write_text("\n".join(lines) + "\n")
    common = ["--data", "file", "--data-path", "ratings.tsv", "--format"]
    for engine, extra in (
        ("local", []),
        ("beam", ["--beam-runner", "DirectRunner"]),
    ):
        result = run_cli(
            "prepare",
            *common,
            "udata",
            "--engine",
            engine,
            *extra,
            "--output",
            engine,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert "WARNING" not in result.stderr, result.stderr[-3000:]
    local, beam = (
        (tmp_path / engine / "vocabulary.json").read_bytes()
        for engine in ("local", "beam")
    )
    assert local == beam
