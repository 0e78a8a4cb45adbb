"""Keras callbacks for long, interruptible training runs."""

from tfrec_tricks.callbacks.epoch_timer import EpochTimer
from tfrec_tricks.callbacks.resumable_early_stopping import (
    ResumableEarlyStopping,
    monitor_history,
)

__all__ = ["EpochTimer", "ResumableEarlyStopping", "monitor_history"]
