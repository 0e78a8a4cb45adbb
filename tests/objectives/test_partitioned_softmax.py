"""PartitionedSoftmax: the head's own cross-entropy equals the full one."""

import numpy as np
import pytest
import tensorflow as tf

from tests.objectives.objective_helpers import (
    TARGETS,
    Flip,
    cpr_head,
    log_softmax_loss,
    make_batch,
    ranks,
)
from tfrec_tricks.objectives import FullSoftmax, PartitionedSoftmax

POSITION_TARGETS = np.array(
    [[2, 3, 7, 0], [5, 6, 0, 0], [0, 7, 0, 1], [4, 0, 0, 0], [9, 0, 3, 0]]
)


@pytest.mark.parametrize("base_loss_weight", [0.0, 0.5])
@pytest.mark.parametrize("label_noise", [None, Flip()])
def test_training_gives_the_loss_of_the_written_out_logits(
    base_loss_weight, label_noise
):
    head = cpr_head()
    batch = make_batch(head=head, training=True, label_noise=label_noise)
    logits, base = (x.numpy() for x in batch.logits(return_base_logits=True))
    labels = TARGETS if label_noise is None else TARGETS % 3 + 1
    losses, got_ranks = PartitionedSoftmax(base_loss_weight)(batch)
    expected = [
        log_softmax_loss(r, t) + base_loss_weight * log_softmax_loss(b, t)
        for r, b, t in zip(logits, base, labels)
    ]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    # The true targets' ranks, not the noisy labels'.
    np.testing.assert_array_equal(got_ranks, ranks(logits, TARGETS))


def test_merged_prefix_rows_in_place_equal_the_expanded_rows():
    position_targets = tf.constant(POSITION_TARGETS)
    training = make_batch(
        head=cpr_head(), training=True, position_targets=position_targets
    )
    losses, got_ranks = PartitionedSoftmax()(training)
    evaluation = make_batch(
        head=training.head, position_targets=position_targets
    )
    expected, expected_ranks = FullSoftmax()(evaluation)
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    np.testing.assert_array_equal(got_ranks, expected_ranks)


def test_evaluation_is_the_full_softmax():
    batch = make_batch(head=cpr_head())
    losses, got_ranks = PartitionedSoftmax()(batch)
    expected, expected_ranks = FullSoftmax()(batch)
    np.testing.assert_array_equal(losses, expected)
    np.testing.assert_array_equal(got_ranks, expected_ranks)
