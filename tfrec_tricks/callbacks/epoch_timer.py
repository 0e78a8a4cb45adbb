"""``EpochTimer``: the wall time of each epoch."""

import time

import tensorflow as tf


class EpochTimer(tf.keras.callbacks.Callback):
    """Records the wall time of each epoch (training and validation).

    Attributes:
        seconds: list of float, one per epoch run by this ``fit``.

    Example:

    >>> import numpy as np
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile(loss="mse")
    >>> timer = EpochTimer()
    >>> _ = model.fit(np.ones((4, 2)), np.ones(4), epochs=2, verbose=0,
    ...               callbacks=[timer])
    >>> len(timer.seconds), all(s > 0 for s in timer.seconds)
    (2, True)
    """

    def __init__(self):
        super().__init__()
        # Empty until a fit runs (a run that skips its fit reports none).
        self.seconds = []

    def on_train_begin(self, logs=None):
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self._start)
