"""StopOnDivergence: a non-finite training or validation loss raises."""

import numpy as np
import pytest

from tfrec_tricks.callbacks import StopOnDivergence
from tfrec_tricks.errors import TrainingDivergedError


def test_finite_or_missing_losses_pass():
    callback = StopOnDivergence()
    callback.on_epoch_begin(0)
    callback.on_train_batch_end(0, {"loss": 1.5})
    callback.on_train_batch_end(1, None)
    callback.on_epoch_end(0, {"loss": np.float32(0.3), "val_loss": 2.0})
    callback.on_epoch_end(0, {"accuracy": float("nan")})  # not a loss


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -np.inf])
def test_a_non_finite_step_loss_names_step_and_epoch(value):
    callback = StopOnDivergence(hint="lower --learning-rate")
    callback.on_epoch_begin(2)
    with pytest.raises(TrainingDivergedError) as error:
        callback.on_train_batch_end(4, {"loss": value})
    assert str(error.value) == (
        f"Training diverged: the training loss became {float(value)} at "
        "step 5 of epoch 3; lower --learning-rate."
    )


def test_a_non_finite_validation_loss_at_the_end_of_an_epoch():
    callback = StopOnDivergence()
    callback.on_epoch_begin(0)
    with pytest.raises(
        TrainingDivergedError,
        match=r"the validation loss became nan at the end of epoch 1\.$",
    ):
        callback.on_epoch_end(0, {"loss": 0.1, "val_loss": np.nan})
