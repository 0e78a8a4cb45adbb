"""``StopOnDivergence``: a NaN or infinite loss ends ``fit`` with an error."""

import math

import tensorflow as tf

from tfrec_tricks.errors import TrainingDivergedError


class StopOnDivergence(tf.keras.callbacks.Callback):
    """Raises ``TrainingDivergedError`` when the loss becomes NaN or inf.

    Keras' ``TerminateOnNaN`` sets ``stop_training``, so ``fit`` returns as
    if it had finished and the caller goes on to evaluate and save a
    diverged model. This callback raises instead, naming the epoch and the
    step, so the caller can record the run as failed. It checks the
    training loss after each step (each ``steps_per_execution`` steps) and
    the training and validation losses at the end of each epoch; put it
    first among the callbacks, so that it raises before the others save
    the epoch.

    Args:
        hint: str. Appended to the message: what to change, e.g.
            "lower --learning-rate (this run: 0.1)". Defaults to "".

    Example:

    >>> import numpy as np
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile(optimizer=tf.keras.optimizers.SGD(1e30), loss="mse")
    >>> x = np.full((8, 2), 1e3, np.float32)
    >>> model.fit(x, np.ones(8), epochs=3, batch_size=2, verbose=0,
    ...           callbacks=[StopOnDivergence()])
    Traceback (most recent call last):
    ...
    tfrec_tricks.errors.TrainingDivergedError: Training diverged: the ...
    """

    def __init__(self, hint: str = ""):
        super().__init__()
        self.hint = hint
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        self._check(logs, ("loss",), f"step {int(batch) + 1} of epoch")

    def on_epoch_end(self, epoch, logs=None):
        self._check(logs, ("loss", "val_loss"), "the end of epoch")

    def _check(self, logs, names, where):
        for name in names:
            value = (logs or {}).get(name)
            if value is None:
                continue
            value = float(value)
            if not math.isfinite(value):
                what = "training" if name == "loss" else "validation"
                hint = f"; {self.hint}" if self.hint else ""
                raise TrainingDivergedError(
                    f"Training diverged: the {what} loss became {value} at "
                    f"{where} {self._epoch + 1}{hint}."
                )
