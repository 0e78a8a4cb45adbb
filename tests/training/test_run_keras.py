"""training.run_keras: a training run under either Keras, and its record.

These tests run under tf-keras (the default) and under Keras 3
(``TF_USE_LEGACY_KERAS=0``, in CI's Keras 3 job): a tiny run trains,
evaluates and writes its run directory in the format of the Keras in use,
is reused and loaded back, resumes after an interruption, and a run of
the other Keras (made in a process of its own) is refused, naming both.
"""

import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from tests.keras_env import KERAS3
from tests.run_helpers import (
    TINY_FLAGS,
    Interrupt,
    run_cli,
    run_in_process,
    snapshot,
    tiny_config,
)
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.training import run_keras
from tfrec_tricks.training.persistence import load_model
from tfrec_tricks.training.run_training import train

THIS = "keras-3" if KERAS3 else "tf-keras"
OTHER = "tf-keras" if KERAS3 else "keras-3"
NAMES = {"tf-keras": "tf-keras (Keras 2)", "keras-3": "Keras 3"}
# The weights a finished run keeps, in its Keras' format.
WEIGHTS = {
    "tf-keras": ("model/weights.index", "checkpoints/best.index"),
    "keras-3": ("model/weights.weights.h5", "checkpoints/best.weights.h5"),
}


def test_the_keras_in_use_is_recorded_by_keras_3_runs_only():
    assert run_keras.keras_in_use() == THIS
    fingerprint = {"train": {}, "model": {}}
    recorded = run_keras.with_keras(fingerprint)
    # A tf-keras fingerprint is the one from before the record existed.
    assert recorded == (
        {**fingerprint, "keras": "keras-3"} if KERAS3 else fingerprint
    )
    assert run_keras.recorded_keras(recorded) == THIS
    assert run_keras.recorded_keras(fingerprint) == "tf-keras"


def test_weights_paths_are_the_keras_own_format(tmp_path):
    stem = str(tmp_path / "best")
    assert run_keras.weights_path(stem) == (
        stem + ".weights.h5" if KERAS3 else stem
    )
    assert not run_keras.weights_saved(stem)
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    model(np.ones((1, 3)))
    model.save_weights(run_keras.weights_path(stem))
    assert run_keras.weights_saved(stem)
    copy = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    copy(np.ones((1, 3)))
    run_keras.load_weights(copy, run_keras.weights_path(stem))
    np.testing.assert_array_equal(
        copy.layers[0].kernel.numpy(), model.layers[0].kernel.numpy()
    )


def test_a_run_of_the_other_keras_is_refused_naming_both():
    other = {"keras": "keras-3"} if not KERAS3 else {}
    run_keras.check_run_keras("runs/r", {"keras": THIS}, "resumed")
    with pytest.raises(RunDirectoryError) as raised:
        run_keras.check_run_keras("runs/r", other, "resumed")
    message = str(raised.value)
    assert NAMES[OTHER] in message and NAMES[THIS] in message
    assert "runs/r" in message and "cannot be resumed" in message
    # The setting that runs it: the run's Keras.
    setting = "1" if KERAS3 else "0"
    assert f"TF_USE_LEGACY_KERAS={setting}" in message


def test_multi_worker_runs_need_tf_keras(monkeypatch):
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    monkeypatch.setenv(
        "TF_CONFIG",
        json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": 0}}
        ),
    )
    # One process on its own devices trains under either Keras.
    for mode in ("off", "mirrored"):
        run_keras.check_keras_3_distribution(mode)
    if KERAS3:
        with pytest.raises(
            ValueError, match=r"cluster of 2 tasks\) needs tf-keras"
        ):
            run_keras.check_keras_3_distribution("auto")
    else:
        run_keras.check_keras_3_distribution("auto")
    monkeypatch.delenv("TF_CONFIG")
    run_keras.check_keras_3_distribution("auto")


def test_a_damaged_keras_3_backup_is_named(tmp_path):
    assert run_keras.keras3_backup_problem(str(tmp_path)) is None
    (tmp_path / "latest.weights.h5").write_bytes(b"\x89HDF\r\n cut short")
    assert "latest.weights.h5" in run_keras.keras3_backup_problem(str(tmp_path))
    (tmp_path / "latest.weights.h5").unlink()
    (tmp_path / "training_metadata.json").write_text('{"epo')
    assert "training_metadata.json" in run_keras.keras3_backup_problem(
        str(tmp_path)
    )


def _h5(path, value: float) -> None:
    h5py = pytest.importorskip("h5py")
    with h5py.File(path, "w") as handle:
        handle["w"] = [value]


def test_a_failed_keras_3_backup_write_is_settled_as_keras_3_means(tmp_path):
    latest = tmp_path / "latest.weights.h5"
    metadata = tmp_path / "training_metadata.json"
    cut = b"\x89HDF\r\n cut short"
    # The write of epoch 2's weights failed: epoch 1's (.bkp) come back.
    _h5(str(latest) + ".bkp", 1.0)
    latest.write_bytes(cut)
    metadata.write_text('{"epoch": 1}')
    (tmp_path / "training_metadata.json.bkp").write_text('{"epoch": 0}')
    assert run_keras.settle_keras3_backup(str(tmp_path)) is None
    assert (
        latest.read_bytes() == (tmp_path / "latest.weights.h5.bkp").read_bytes()
    )
    assert metadata.read_text() == '{"epoch": 0}'
    assert run_keras.keras3_backup_problem(str(tmp_path)) is None
    # The first backup's write failed (no epoch, no .bkp): nothing was
    # backed up, and the file goes.
    for path in tmp_path.iterdir():
        path.unlink()
    latest.write_bytes(cut)
    assert run_keras.settle_keras3_backup(str(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []
    # A whole backup's file cut short later (a power loss): left, named.
    latest.write_bytes(cut)
    metadata.write_text('{"epoch": 3}')
    problem = run_keras.settle_keras3_backup(str(tmp_path))
    assert "latest.weights.h5" in problem
    assert latest.read_bytes() == cut
    assert "latest.weights.h5" in run_keras.keras3_backup_problem(str(tmp_path))


@pytest.mark.slow
def test_a_run_trains_evaluates_and_is_reused(tmp_path, capsys):
    args = ["train", *TINY_FLAGS, "--epochs", "2", "--head", "softmax"]
    args += ["--output-dir", tmp_path, "--name", "run", "--quiet"]
    code, output = run_in_process(capsys, *args)
    assert code == 0, output[-3000:]
    run_dir = tmp_path / "run"
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for split in ("validation", "test"):
        assert set(metrics[split]) == {"ndcg@10", "hr@10", "mrr@10"}
    assert metrics["epochs_run"] == 2
    with open(run_dir / "history.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["epoch"] for row in rows] == ["0", "1"]
    assert {"loss", "val_loss", "val_ndcg@10"} <= set(rows[0])
    for name in WEIGHTS[THIS]:
        assert (run_dir / name).is_file(), name
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "finished"
    assert run_keras.recorded_keras(run["fingerprint"]) == THIS
    assert ("keras" in run["fingerprint"]) == KERAS3
    assert not (run_dir / "backup").exists() or not os.listdir(
        run_dir / "backup"
    )
    # The same command reuses it, and its model loads under this Keras.
    before = snapshot(run_dir)
    code, output = run_in_process(capsys, *args)
    assert code == 0, output[-3000:]
    assert snapshot(run_dir) == before
    model = load_model(str(run_dir))
    assert model.config.head == "softmax"
    logits = model({"history": tf.constant([[3, 4, 5]])}, training=False)
    assert logits.shape == (1, model.config.num_items)


@pytest.mark.slow
def test_an_interrupted_run_resumes_as_the_uninterrupted_run(tmp_path):
    # No dropout: the resumed epoch reads the data in the order it would
    # have, from the weights and optimizer state of the backup.
    settings = dict(epochs=2, patience=5, model={"embedding_dim": 8})
    settings["model"]["dropout"] = 0.0
    whole = train(tiny_config(tmp_path, name="whole", **settings), verbose=0)
    config = tiny_config(tmp_path, name="resumed", **settings)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=0)])
    backup = tmp_path / "resumed" / "backup"
    if KERAS3:
        assert (backup / "latest.weights.h5").is_file()
    assert os.listdir(backup)
    resumed = train(config, verbose=0)
    assert len(resumed.history["loss"]) == 1  # only the second epoch
    assert resumed.metrics["epochs_run"] == 2
    assert _losses(tmp_path / "resumed") == _losses(tmp_path / "whole")
    assert resumed.metrics["test"] == whole.metrics["test"]


def _losses(run_dir) -> list:
    with open(run_dir / "history.csv") as handle:
        return [row["loss"] for row in csv.DictReader(handle)]


@pytest.mark.slow
@pytest.mark.parametrize("finished", [True, False], ids=["reuse", "resume"])
def test_a_run_of_the_other_keras_is_refused(tmp_path, capsys, finished):
    args = ["train", *TINY_FLAGS, "--epochs", "1", "--head", "softmax"]
    args += ["--output-dir", str(tmp_path), "--name", "run", "--quiet"]
    other = {"TF_USE_LEGACY_KERAS": "1" if KERAS3 else "0"}
    made = run_cli(*args, env=other)
    assert made.returncode == 0, made.stderr[-3000:]
    run_dir = tmp_path / "run"
    if not finished:
        # As an interrupted run leaves it: running, with the other Keras'
        # backup.
        run = json.loads((run_dir / "run.json").read_text())
        run["status"] = "running"
        (run_dir / "run.json").write_text(json.dumps(run))
    before = snapshot(tmp_path)
    code, output = run_in_process(capsys, *args)
    assert code == 1
    doing = "reused" if finished else "resumed"
    assert f"trained under {NAMES[OTHER]}" in output
    assert f"this process uses {NAMES[THIS]}" in output
    assert f"cannot be {doing} under another Keras" in output
    assert snapshot(tmp_path) == before  # nothing written, nothing lost
    with pytest.raises(RunDirectoryError, match="cannot be loaded"):
        load_model(str(run_dir))
