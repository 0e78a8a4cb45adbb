"""EncodedBatch: what an objective asks of the model's encoded batch."""

import numpy as np
import pytest
import tensorflow as tf

from tests.objectives.objective_helpers import (
    HISTORY,
    TARGETS,
    Flip,
    cpr_head,
    make_batch,
)


def test_labels_are_the_targets_without_label_noise():
    batch = make_batch(training=True)
    assert batch.labels(batch.targets) is batch.targets


@pytest.mark.parametrize("training", [False, True])
def test_label_noise_acts_in_training_only(training):
    batch = make_batch(training=training, label_noise=Flip())
    expected = TARGETS % 3 + 1 if training else TARGETS
    np.testing.assert_array_equal(batch.labels(batch.targets), expected)


def test_each_head_inputs_call_draws_again():
    calls = []
    batch = make_batch()
    draw = batch._head_inputs
    batch._head_inputs = lambda *args: calls.append(1) or draw(*args)
    inputs = batch.head_inputs()
    batch.logits(inputs)
    assert len(calls) == 1
    batch.logits()
    assert len(calls) == 2


def test_candidate_logits_are_the_catalogues_at_their_ids():
    batch = make_batch()
    logits = batch.logits().numpy()
    ids = np.array([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]])
    np.testing.assert_allclose(
        batch.logits(candidate_ids=tf.constant(ids)),
        np.take_along_axis(logits, ids, axis=1),
        atol=1e-5,
    )
    shared = batch.logits(candidate_ids=tf.constant([2, 7])).numpy()
    np.testing.assert_allclose(shared, logits[:, [2, 7]], atol=1e-5)


def test_position_rows_without_position_targets_is_the_batch():
    batch = make_batch()
    assert batch.position_rows() is batch


@pytest.mark.parametrize("head", ["softmax", "cpr"])
def test_position_rows_are_one_row_per_target_position(head):
    position_targets = np.zeros_like(HISTORY)
    position_targets[0, :3] = [2, 3, 4]
    position_targets[2, 1] = 9
    batch = make_batch(
        head=cpr_head() if head == "cpr" else None,
        position_targets=tf.constant(position_targets),
        label_noise=Flip(),
    )
    rows = batch.position_rows()
    np.testing.assert_array_equal(rows.targets, [2, 3, 4, 9])
    assert rows.position_targets is None
    assert rows.label_noise is batch.label_noise
    if head == "cpr":  # reads the whole prefix
        np.testing.assert_array_equal(rows.history[1], [1, 2, 0, 0])
    else:  # reads the last state only
        np.testing.assert_array_equal(rows.history[:, 0], [1, 2, 3, 5])
