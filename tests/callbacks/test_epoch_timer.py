"""EpochTimer: one wall time per epoch of the latest fit."""

import time

import numpy as np
import tensorflow as tf

from tfrec_tricks.callbacks import EpochTimer


class _Sleep(tf.keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        time.sleep(0.05 * (epoch + 1))


def test_seconds_are_per_epoch_and_reset_by_each_fit():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(loss="mse")
    timer = EpochTimer()
    assert timer.seconds == []
    x, y = np.ones((4, 2)), np.ones(4)
    # _Sleep ends each epoch before the timer does: its sleep is timed.
    model.fit(x, y, epochs=3, verbose=0, callbacks=[_Sleep(), timer])
    assert len(timer.seconds) == 3
    for epoch, seconds in enumerate(timer.seconds):
        assert seconds >= 0.05 * (epoch + 1)
    model.fit(x, y, epochs=1, verbose=0, callbacks=[timer])
    assert len(timer.seconds) == 1
