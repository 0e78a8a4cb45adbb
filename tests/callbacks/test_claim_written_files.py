"""ClaimWrittenFiles: what other callbacks write is claimed as it appears."""

import os

import numpy as np
import tensorflow as tf

from tfrec_tricks import ownership
from tfrec_tricks.callbacks import ClaimWrittenFiles


class _WriteEachEpoch(tf.keras.callbacks.Callback):
    def __init__(self, folder):
        super().__init__()
        self.folder = folder

    def on_epoch_begin(self, epoch, logs=None):
        os.makedirs(os.path.join(self.folder, "logs"), exist_ok=True)
        path = os.path.join(self.folder, "logs", f"epoch-{epoch}.txt")
        with open(path, "w") as handle:
            handle.write("x")


def _fit(callbacks, epochs=2):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(loss="mse")
    model.fit(np.ones((4, 2)), np.ones(4), epochs=epochs, verbose=0,
              callbacks=callbacks)  # fmt: skip


def test_files_written_during_fit_are_claimed(tmp_path):
    folder = str(tmp_path)
    ownership.start_record(folder, "run directory")
    open(os.path.join(folder, "stray.txt"), "w").close()  # not in names
    claim = ClaimWrittenFiles(folder, ["logs"])
    _fit([_WriteEachEpoch(folder), claim])
    assert ownership.foreign_entries(folder) == ["stray.txt"]
    assert claim.claim() == []  # nothing new to claim


def test_a_folder_without_a_record_is_left_alone(tmp_path):
    folder = str(tmp_path)
    _fit([_WriteEachEpoch(folder), ClaimWrittenFiles(folder, ["logs"])], 1)
    assert ownership.read_record(folder) is None
