"""Helpers shared by the tests of training runs and run directories."""

import hashlib
import os
import subprocess
import sys

import tensorflow as tf

from tfrec_tricks.runs.train_config import TrainConfig

# The CLI flags of a tiny synthetic run (what ``tiny_config`` trains on).
TINY_FLAGS = [
    "--synthetic-users",
    "60",
    "--synthetic-items",
    "40",
    "--max-len",
    "10",
    "--embedding-dim",
    "8",
]


def run_cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Runs ``tfrec-tricks ARGS`` in a fresh process; captures its output."""
    return subprocess.run(
        [sys.executable, "-m", "tfrec_tricks.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def tiny_config(tmp_path, **overrides) -> TrainConfig:
    """A run on 60 synthetic users and 40 items, in ``tmp_path/run``."""
    values = dict(
        synthetic_users=60,
        synthetic_items=40,
        max_len=10,
        epochs=3,
        patience=5,
        output_dir=str(tmp_path),
        name="run",
        model={"embedding_dim": 8},
    )
    values.update(overrides)
    return TrainConfig(**values)


class Interrupt(tf.keras.callbacks.Callback):
    """Stops the process-like run after an epoch, as a crash would."""

    def __init__(self, after_epoch=0):
        super().__init__()
        self.after_epoch = after_epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.after_epoch:
            raise KeyboardInterrupt


def snapshot(folder) -> dict:
    """Every file (its SHA-256) and folder below ``folder``."""
    entries = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            entries[os.path.relpath(os.path.join(root, name), folder)] = "/"
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            entries[os.path.relpath(path, folder)] = digest
    return entries
