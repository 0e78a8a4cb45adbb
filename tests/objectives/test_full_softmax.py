"""FullSoftmax: softmax cross-entropy over the catalogue, and the ranks."""

import numpy as np
import pytest
import tensorflow as tf

from tests.objectives.objective_helpers import (
    HISTORY,
    TARGETS,
    Flip,
    cpr_head,
    log_softmax_loss,
    make_batch,
    ranks,
)
from tfrec_tricks.layers import TiedSoftmax
from tfrec_tricks.objectives import FullSoftmax


@pytest.mark.parametrize("training", [False, True])
def test_the_loss_and_ranks_match_numpy(training):
    batch = make_batch(training=training)
    logits = batch.logits().numpy()
    losses, got_ranks = FullSoftmax()(batch)
    expected = [log_softmax_loss(r, t) for r, t in zip(logits, TARGETS)]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    np.testing.assert_array_equal(got_ranks, ranks(logits, TARGETS))


def test_the_loss_reads_the_noisy_labels_and_ranks_the_true_targets():
    batch = make_batch(training=True, label_noise=Flip())
    logits = batch.logits().numpy()
    losses, got_ranks = FullSoftmax()(batch)
    labels = TARGETS % 3 + 1
    expected = [log_softmax_loss(r, t) for r, t in zip(logits, labels)]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    np.testing.assert_array_equal(got_ranks, ranks(logits, TARGETS))


def test_a_history_excluding_head_is_scored_with_the_history():
    # A target may repeat the history: the loss reads logits with it, the
    # ranks those served (history last).
    batch = make_batch(head=TiedSoftmax(exclude_history=True))
    with_history = batch.logits(exclude_history=False).numpy()
    served = batch.logits().numpy()
    losses, got_ranks = FullSoftmax()(batch)
    expected = [log_softmax_loss(r, t) for r, t in zip(with_history, TARGETS)]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    np.testing.assert_array_equal(got_ranks, ranks(served, TARGETS))


def test_the_base_loss_adds_the_weighted_loss_of_the_base_logits():
    batch = make_batch(head=cpr_head())
    logits, base = (x.numpy() for x in batch.logits(return_base_logits=True))
    assert np.abs(logits - base).max() > 1e-3
    losses, _ = FullSoftmax(base_loss_weight=0.5)(batch)
    expected = [
        log_softmax_loss(r, t) + 0.5 * log_softmax_loss(b, t)
        for r, b, t in zip(logits, base, TARGETS)
    ]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)


def test_merged_prefix_rows_are_scored_per_target_position():
    position_targets = np.array(
        [[2, 3, 7, 0], [5, 6, 0, 0], [0, 7, 0, 1], [4, 0, 0, 0], [9, 0, 3, 0]]
    )
    batch = make_batch(position_targets=tf.constant(position_targets))
    losses, got_ranks = FullSoftmax()(batch)
    rows = batch.position_rows()
    expected_targets = position_targets[position_targets > 0]
    np.testing.assert_array_equal(rows.targets, expected_targets)
    logits = rows.logits().numpy()
    expected = [
        log_softmax_loss(r, t) for r, t in zip(logits, expected_targets)
    ]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    np.testing.assert_array_equal(got_ranks, ranks(logits, expected_targets))
    # The tied softmax reads the last state: each row is the item at its
    # target position.
    np.testing.assert_array_equal(rows.history[:3, 0], HISTORY[0, [0, 1, 2]])
