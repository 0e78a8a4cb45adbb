"""``ClaimWrittenFiles``: records what Keras and TensorBoard wrote."""

import tensorflow as tf

from tfrec_tricks import ownership


class ClaimWrittenFiles(tf.keras.callbacks.Callback):
    """Claims into ``folder``'s record (``tfrec_tricks.ownership``) the
    files that other callbacks wrote in its ``names`` under names they
    choose: ``ModelCheckpoint``'s and ``BackupAndRestore``'s checkpoint
    files, TensorBoard's event files.

    Placed after those callbacks: it claims at the start of training, at
    the start of every epoch (what callbacks placed after it wrote when
    training started, e.g. KerasTuner's hparams), after every epoch (and
    its validation) and at the end: a process killed mid-epoch leaves
    nothing unclaimed. A folder without a record (a worker's scratch
    folder) is left alone.

    Args:
        folder: str. The owned folder (a run directory, a search folder).
        names: the subfolders (or files) of ``folder`` to claim in.

    Example:

    >>> import os, tempfile
    >>> import numpy as np
    >>> folder = tempfile.mkdtemp()
    >>> ownership.start_record(folder, "run directory")
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile(loss="mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones(4), verbose=0, callbacks=[
    ...     tf.keras.callbacks.CSVLogger(os.path.join(folder, "log.csv")),
    ...     ClaimWrittenFiles(folder, ["log.csv"])])
    >>> ownership.foreign_entries(folder)
    []
    """

    def __init__(self, folder: str, names: list[str] | tuple[str, ...]):
        super().__init__()
        self.folder = folder
        self.names = tuple(names)

    def claim(self) -> list[str]:
        """Claims now; returns what was claimed."""
        return ownership.claim_below(self.folder, self.names)

    def on_train_begin(self, logs=None):
        self.claim()

    def on_epoch_begin(self, epoch, logs=None):
        self.claim()

    def on_epoch_end(self, epoch, logs=None):
        self.claim()

    def on_train_end(self, logs=None):
        self.claim()
