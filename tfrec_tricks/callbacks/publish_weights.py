"""``PublishWeights``: weights a callback wrote aside, renamed into place."""

import os

import tensorflow as tf


class PublishWeights(tf.keras.callbacks.Callback):
    """Renames a weights file written aside into place, at each epoch's end.

    Keras 3's ``ModelCheckpoint`` writes a ``.weights.h5`` file in place:
    a kill or a full disk while it writes leaves the best epoch's weights
    unreadable (tf-keras' TensorFlow checkpoints are written aside and
    renamed). Give the checkpoint callback ``staging`` as its file and put
    this callback after it: at the end of each epoch a file written there
    replaces ``path`` in one rename, so ``path`` always holds a whole file.
    A leftover of a process killed before the rename is removed when
    training begins again.

    Args:
        staging: str. Where the other callback writes.
        path: str. Where the weights are read from.

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> staging = os.path.join(folder, "best.saving.weights.h5")
    >>> path = os.path.join(folder, "best.weights.h5")
    >>> publish = PublishWeights(staging, path)
    >>> with open(staging, "w") as handle:
    ...     _ = handle.write("weights")
    >>> publish.on_epoch_end(0)
    >>> sorted(os.listdir(folder)), open(path).read()
    (['best.weights.h5'], 'weights')
    """

    def __init__(self, staging: str, path: str):
        super().__init__()
        self.staging = staging
        self.path = path

    def on_train_begin(self, logs=None):
        # A killed process's file: whole or not, never renamed.
        if os.path.exists(self.staging):
            os.remove(self.staging)

    def on_epoch_end(self, epoch, logs=None):
        if os.path.exists(self.staging):
            os.replace(self.staging, self.path)
