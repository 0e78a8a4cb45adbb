"""InBatchSampledSoftmax against a NumPy ``tasks.Retrieval`` loss."""

import numpy as np
import pytest
import tensorflow as tf

from tests.objectives.objective_helpers import (
    NUM_ITEMS,
    TARGETS,
    cpr_head,
    make_batch,
    ranks,
)
from tfrec_tricks.objectives import InBatchSampledSoftmax
from tfrec_tricks.objectives.remove_accidental_hits import MIN_FLOAT

COUNTS = np.arange(NUM_ITEMS)
PROBABILITY = (COUNTS / COUNTS.sum()).astype(np.float32)


def numpy_loss(scores, targets, probability=None, hits=True, hard=None):
    """Per-query loss: logQ, accidental hits, hard negatives, in order."""
    scores = np.asarray(scores, np.float64)
    if probability is not None:
        scores = scores - np.log(np.clip(probability[targets], 1e-6, 1.0))
    if hits:
        same = targets[:, None] == targets[None, :]
        scores = scores + (same & ~np.eye(len(targets), dtype=bool)) * MIN_FLOAT
    losses = []
    for i, row in enumerate(scores):
        positive = i
        if hard is not None:
            negatives = np.sort(np.delete(row, i))[::-1][:hard]
            row, positive = np.concatenate([[row[i]], negatives]), 0
        shifted = row - row.max()
        losses.append(np.log(np.exp(shifted).sum()) - shifted[positive])
    return np.array(losses)


OPTIONS = {
    "plain": {"logq_correction": False, "remove_accidental_hits": False},
    "logq": {"remove_accidental_hits": False},
    "hits": {"logq_correction": False},
    "all": {},
    "hard": {"num_hard_negatives": 2},
}


@pytest.mark.parametrize("name", list(OPTIONS))
def test_the_loss_matches_numpy(name):
    options = OPTIONS[name]
    objective = InBatchSampledSoftmax(**options)
    scores = np.random.default_rng(1).normal(size=[5, 5]).astype("f4")
    expected = numpy_loss(
        scores,
        TARGETS,
        PROBABILITY if options.get("logq_correction", True) else None,
        hits=options.get("remove_accidental_hits", True),
        hard=options.get("num_hard_negatives"),
    )
    got = objective.loss(scores, TARGETS, tf.constant(PROBABILITY))
    np.testing.assert_allclose(got, expected, rtol=1e-5)


@pytest.mark.parametrize("head", ["softmax", "cpr"])
@pytest.mark.parametrize("training", [False, True])
def test_training_scores_the_candidates_and_evaluation_gathers_them(
    head, training
):
    # Training scores only the [B, B] candidates; evaluation reads them
    # off its full logits and ranks the catalogue: the same loss.
    batch = make_batch(
        head=cpr_head() if head == "cpr" else None,
        training=training,
        candidate_probability=tf.constant(PROBABILITY),
    )
    logits = batch.logits().numpy()
    objective = InBatchSampledSoftmax(num_hard_negatives=3)
    losses, got_ranks = objective(batch)
    expected = numpy_loss(logits[:, TARGETS], TARGETS, PROBABILITY, hard=3)
    # atol: a loss near 0 (7e-4) carries float32 rounding of 1e-7.
    np.testing.assert_allclose(losses, expected, rtol=1e-5, atol=1e-6)
    if training:
        assert got_ranks is None
    else:
        np.testing.assert_array_equal(got_ranks, ranks(logits, TARGETS))


def test_the_base_loss_adds_the_weighted_loss_of_the_base_logits():
    batch = make_batch(
        head=cpr_head(), candidate_probability=tf.constant(PROBABILITY)
    )
    logits, base = (x.numpy() for x in batch.logits(return_base_logits=True))
    losses, _ = InBatchSampledSoftmax(base_loss_weight=0.5)(batch)
    expected = numpy_loss(
        logits[:, TARGETS], TARGETS, PROBABILITY
    ) + 0.5 * numpy_loss(base[:, TARGETS], TARGETS, PROBABILITY)
    np.testing.assert_allclose(losses, expected, rtol=1e-5)


def test_the_logq_correction_needs_probabilities():
    with pytest.raises(ValueError, match="candidate_probability=None"):
        InBatchSampledSoftmax().loss(np.zeros([2, 2], "f4"), [1, 2])


def test_it_samples_its_candidates_and_ranks_only_in_evaluation():
    assert not InBatchSampledSoftmax.ranks_in_training
    assert InBatchSampledSoftmax.samples_candidates
