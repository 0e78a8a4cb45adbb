"""Keras callbacks for long, interruptible training runs."""

from tfrec_tricks.callbacks.epoch_timer import EpochTimer
from tfrec_tricks.callbacks.publish_weights import PublishWeights
from tfrec_tricks.callbacks.resumable_csv_logger import ResumableCSVLogger
from tfrec_tricks.callbacks.resumable_early_stopping import (
    ResumableEarlyStopping,
    epochs_since_best,
    monitor_history,
)
from tfrec_tricks.callbacks.stop_on_divergence import StopOnDivergence

__all__ = [
    "EpochTimer",
    "PublishWeights",
    "ResumableCSVLogger",
    "ResumableEarlyStopping",
    "StopOnDivergence",
    "epochs_since_best",
    "monitor_history",
]
