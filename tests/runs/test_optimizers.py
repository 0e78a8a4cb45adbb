"""--optimizer: Adagrad's update touches only the batch's rows of the table."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import tiny_config
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.runs.optimizers import make_optimizer
from tfrec_tricks.runs.training import train

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
