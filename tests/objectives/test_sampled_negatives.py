"""SampledNegatives: K shared uniform negatives, against NumPy."""

import numpy as np
import pytest
import tensorflow as tf

from tests.objectives.objective_helpers import (
    NUM_ITEMS,
    TARGETS,
    make_batch,
    ranks,
)
from tfrec_tricks.objectives import SampledNegatives

# A repeated negative, and one that is the first row's target (an
# accidental hit, left out for the rows whose target it is).
NEGATIVES = [3, 1, 7, 3, int(TARGETS[0])]


def numpy_loss(logits, targets, ids, hits=True, hard=None):
    expected = []
    for row, target in zip(np.asarray(logits, np.float64), targets):
        negatives = row[ids]
        if hits:
            negatives = np.where(np.array(ids) == target, -1e9, negatives)
        if hard is not None:
            negatives = np.sort(negatives)[-hard:]
        scores = np.concatenate([[row[target]], negatives])
        top = scores.max()
        expected.append(top + np.log(np.exp(scores - top).sum()) - scores[0])
    return np.array(expected)


def fixed(objective, ids):
    """``objective`` draws ``ids`` as its negatives."""
    objective.sample_negatives = lambda: tf.constant(ids, tf.int32)
    return objective


@pytest.mark.parametrize("hits", [True, False])
@pytest.mark.parametrize("hard", [None, 2])
@pytest.mark.parametrize("training", [False, True])
def test_the_loss_matches_numpy(hits, hard, training):
    objective = fixed(
        SampledNegatives(
            NUM_ITEMS,
            len(NEGATIVES),
            remove_accidental_hits=hits,
            num_hard_negatives=hard,
        ),
        NEGATIVES,
    )
    batch = make_batch(training=training)
    logits = batch.logits().numpy()
    losses, got_ranks = objective(batch)
    expected = numpy_loss(logits, TARGETS, NEGATIVES, hits=hits, hard=hard)
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    if training:
        assert got_ranks is None
    else:
        np.testing.assert_array_equal(got_ranks, ranks(logits, TARGETS))


def test_the_negatives_are_uniform_real_items():
    ids = SampledNegatives(40, 4000).sample_negatives().numpy()
    assert ids.shape == (4000,)
    assert ids.min() >= 1 and ids.max() <= 39
    # Every item drawn about K / (N - 1) times.
    counts = np.bincount(ids, minlength=40)[1:]
    assert counts.min() > 0 and counts.max() < 3 * counts.mean()


@pytest.mark.parametrize(
    "arguments",
    [
        {"num_items": 10, "num_negatives": 0},
        {"num_items": 1, "num_negatives": 3},
        {"num_items": 10, "num_negatives": 3, "base_loss_weight": 0.5},
    ],
)
def test_bad_arguments_are_an_error(arguments):
    with pytest.raises(ValueError, match="Received: num_negatives="):
        SampledNegatives(**arguments)
