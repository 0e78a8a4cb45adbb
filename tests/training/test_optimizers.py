"""--optimizer: Adagrad's update touches only the batch's rows of the table;
--lr-schedule and --warmup-epochs: the rate of each step."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import Interrupt, tiny_config
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.training.optimizers import (
    learning_rate_schedule,
    make_optimizer,
)
from tfrec_tricks.training.run_training import train

NUM_ITEMS = 50


def batch(items):
    history = np.zeros([len(items), 5], np.int32)
    history[:, 0] = items
    return {
        "history": tf.constant(history),
        "target": tf.constant(items, tf.int32),
        "user": tf.zeros(len(items), tf.int32),
    }


def rows_moved_by_a_step_elsewhere(optimizer):
    """Table rows of step 1's items that step 2 (other items) changed."""
    tf.keras.utils.set_random_seed(0)
    model = SequentialRetrievalModel(
        ModelConfig(
            num_items=NUM_ITEMS,
            max_len=5,
            embedding_dim=4,
            objective="sampled",
            dropout=0.0,
        )
    )
    model.compile(optimizer=make_optimizer(optimizer, 0.1))
    first, second = [1, 2, 3, 4], [11, 12, 13, 14]
    step = lambda items: model.fit(  # noqa: E731
        tf.data.Dataset.from_tensors(batch(items)), verbose=0
    )
    step(first)
    table = model.item_embedding.output_embeddings
    before = table.numpy()[first]
    step(second)
    return np.abs(table.numpy()[first] - before).max()


@pytest.mark.slow
def test_adagrad_updates_only_the_rows_of_the_batch():
    assert rows_moved_by_a_step_elsewhere("adagrad") == 0.0
    # Adam's moments keep moving rows the batch did not hold: its update
    # is dense, O(items x d) per step.
    assert rows_moved_by_a_step_elsewhere("adam") > 0.0


def test_an_unknown_optimizer_is_refused():
    with pytest.raises(ValueError, match="Received: optimizer='sgd'"):
        make_optimizer("sgd", 0.1)


@pytest.mark.slow
def test_a_run_trains_with_adagrad(tmp_path):
    result = train(
        tiny_config(tmp_path, epochs=2, optimizer="adagrad", learning_rate=0.1),
        verbose=0,
    )
    assert type(result.model.optimizer).__name__ == "Adagrad"
    assert result.history["loss"][-1] < result.history["loss"][0]
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["optimizer"] == "adagrad"


def rates(schedule, steps):
    return [round(float(schedule(step)), 6) for step in steps]


def test_the_cosine_warms_up_then_decays_to_zero_at_the_last_step():
    schedule = learning_rate_schedule("cosine", 0.004, 100, warmup_steps=20)
    assert rates(schedule, [0, 10, 20, 60, 100, 150]) == [
        0.0,
        0.002,
        0.004,
        0.002,
        0.0,
        0.0,
    ]


def test_a_constant_rate_without_warmup_is_the_plain_float():
    # The optimizer of every run from before --lr-schedule, unchanged.
    assert learning_rate_schedule("constant", 0.002, 100) == 0.002


@pytest.mark.parametrize(
    "arguments, match",
    [
        (("linear", 0.1, 10), "Received: lr_schedule='linear'"),
        (("cosine", 0.1, 10, 10), "Received: warmup_steps=10"),
        (("constant", 0.1, 10, -1), "Received: warmup_steps=-1"),
    ],
)
def test_a_schedule_that_cannot_train_is_refused(arguments, match):
    with pytest.raises(ValueError, match=match):
        learning_rate_schedule(*arguments)


def test_a_warmup_as_long_as_the_run_is_refused(tmp_path):
    with pytest.raises(ValueError, match="warmup_epochs=3, epochs=3"):
        tiny_config(tmp_path, warmup_epochs=3)
    with pytest.raises(ValueError, match="Received: lr_schedule='step'"):
        tiny_config(tmp_path, lr_schedule="step")


@pytest.mark.slow
def test_a_cosine_run_ends_at_a_zero_rate_and_resumes_on_its_curve(tmp_path):
    config = tiny_config(
        tmp_path, epochs=3, lr_schedule="cosine", warmup_epochs=1
    )
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=1)])
    result = train(config, verbose=0)
    optimizer = result.model.optimizer
    steps = int(optimizer.iterations.numpy())
    assert result.metrics["epochs_run"] == 3
    # 3 epochs of the data's steps, the two before the interruption
    # restored from the backup: the cosine reached its end, not restarted.
    assert steps % 3 == 0 and steps > 3
    # The rate of the last step (the optimizer reports the one it applied
    # last): the end of the cosine, about 0.
    last = learning_rate_schedule("cosine", 1e-3, steps, steps // 3)(steps - 1)
    assert float(optimizer.learning_rate) == pytest.approx(float(last))
    assert float(last) < 1e-5
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["lr_schedule"] == "cosine"
