"""Early stopping that carries on the count of an interrupted run."""

import csv
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

# best_weights while the best epoch is one from before the interruption:
# its weights are in the best-epoch checkpoint, not in memory.
_IN_CHECKPOINT = ("in checkpoint",)


def monitor_history(history_path: str, monitor: str) -> list[float]:
    """The ``monitor`` column of a ``CSVLogger`` file; [] if there is none.

    Args:
        history_path: the run's ``history.csv``.
        monitor: the column, e.g. ``"val_ndcg@10"``.

    Raises:
        ValueError: the file has rows but no such column, or a value that
            is not a number (named with its line).
    """
    if not os.path.isfile(history_path):
        return []
    with open(history_path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    values = []
    for line, row in enumerate(rows, start=2):
        if monitor not in row:
            raise ValueError(
                f"{history_path}: no column {monitor!r} to resume early "
                f"stopping from. Received columns: {sorted(row)}"
            )
        try:
            values.append(float(row[monitor]))
        except (TypeError, ValueError):
            raise ValueError(
                f"{history_path}, line {line}: {monitor} is not a number. "
                f"Received: {row[monitor]!r}"
            ) from None
    return values


def epochs_since_best(
    values: Sequence[float], maximise: bool = True
) -> tuple[int, int]:
    """``(best_epoch, epochs waited since)`` of monitored values.

    The first epoch with the best value, as Keras' ``EarlyStopping`` keeps
    the first; it stops once the epochs waited reach ``patience``.

    >>> epochs_since_best([0.30, 0.35, 0.34, 0.35])
    (1, 2)
    """
    pick = np.argmax if maximise else np.argmin
    best_epoch = int(pick(values))
    return best_epoch, len(values) - 1 - best_epoch


class ResumableEarlyStopping(tf.keras.callbacks.EarlyStopping):
    """``EarlyStopping`` that continues from an interrupted run's epochs.

    Keras resets the best value, the epochs waited and the best weights
    whenever ``fit`` starts, so a run resumed by ``BackupAndRestore`` would
    forget an epoch that was best before the interruption: it would wait
    ``patience`` epochs anew and restore the best of the resumed epochs
    only. Given the monitored values of the epochs already run, this
    callback starts from their best value, its epoch and the epochs waited
    since; if that epoch is still the best at the end, its weights are
    loaded from ``best_checkpoint`` (a ``ModelCheckpoint`` with
    ``save_best_only`` and ``initial_value_threshold`` set to that value,
    so that it keeps them).

    Args:
        resumed_values: the monitored value of each epoch already run, in
            order (``monitor_history``); empty for a new run.
        best_checkpoint: path of the best epoch's weights.
        **kwargs: ``tf.keras.callbacks.EarlyStopping`` arguments;
            ``mode`` must be ``"max"`` or ``"min"``.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.callbacks.resumable_early_stopping import (
    ...     ResumableEarlyStopping)
    >>> stopping = ResumableEarlyStopping(
    ...     [0.30, 0.35, 0.34], "best", monitor="val_ndcg@10", mode="max",
    ...     patience=3)
    >>> stopping.on_train_begin()
    >>> stopping.best, stopping.best_epoch, stopping.wait
    (0.35, 1, 1)
    """

    def __init__(
        self,
        resumed_values: Sequence[float],
        best_checkpoint: str,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if kwargs.get("mode") not in ("max", "min"):
            raise ValueError(
                "ResumableEarlyStopping needs mode='max' or mode='min'. "
                f"Received: mode={kwargs.get('mode')!r}"
            )
        self.resumed_values = [float(v) for v in resumed_values]
        self.best_checkpoint = best_checkpoint
        # From the mode, not from `monitor_op`: that is a NumPy comparison
        # in tf-keras and a Keras op in Keras 3.
        self.maximise = kwargs["mode"] == "max"

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        if not self.resumed_values:
            return
        best_epoch, self.wait = epochs_since_best(
            self.resumed_values, self.maximise
        )
        self.best = self.resumed_values[best_epoch]
        self.best_epoch = best_epoch
        if self.restore_best_weights:
            self.best_weights = _IN_CHECKPOINT

    def on_train_end(self, logs=None):
        in_checkpoint = self.best_weights is _IN_CHECKPOINT
        if in_checkpoint:
            self.best_weights = None
        super().on_train_end(logs)
        if in_checkpoint:
            status = self.model.load_weights(self.best_checkpoint)
            if status is not None:  # tf-keras' restore status; Keras 3: None
                status.expect_partial()
