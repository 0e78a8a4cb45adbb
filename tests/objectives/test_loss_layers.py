"""The sampled objectives' loss layers compute TFRS's numbers under either
Keras: TFRS's own layers under tf-keras, keras-rs' (and this package's
``RemoveAccidentalHits``) under Keras 3. Runs in CI's Keras 3 job too."""

import numpy as np
import pytest
import tensorflow as tf

from tests.keras_env import KERAS3
from tfrec_tricks.objectives import loss_layers
from tfrec_tricks.objectives.remove_accidental_hits import (
    MIN_FLOAT,
    RemoveAccidentalHits,
)

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=[4, 6]).astype(np.float32)
LABELS = np.eye(4, 6, dtype=np.float32)
# Rows 0 and 1 share the positive id 3; row 3's positive (3) appears
# again in column 5.
CANDIDATE_IDS = np.array([3, 3, 7, 3, 2, 3], np.int32)


def test_the_layers_are_those_of_the_keras_in_use():
    layers = [
        loss_layers.sampling_probability_correction(),
        loss_layers.remove_accidental_hits(),
        loss_layers.hard_negative_mining(2),
    ]
    modules = [type(layer).__module__ for layer in layers]
    if KERAS3:
        assert modules[0].startswith("keras_rs")
        assert isinstance(layers[1], RemoveAccidentalHits)
        assert modules[2].startswith("keras_rs")
    else:
        assert all(m.startswith("tensorflow_recommenders") for m in modules)


def test_sampling_probability_correction_subtracts_the_clipped_log():
    probability = np.array([0.5, 1e-9, 0.1, 1.0, 0.2, 0.3], np.float32)
    corrected = loss_layers.sampling_probability_correction()(
        LOGITS, np.broadcast_to(probability, LOGITS.shape)
    )
    expected = LOGITS - np.log(np.clip(probability, 1e-6, 1.0))
    np.testing.assert_allclose(corrected, expected, rtol=1e-6)


def expected_without_hits(logits, labels, ids):
    positive_ids = ids[labels.argmax(1)]
    hit = (ids[None, :] == positive_ids[:, None]) & (labels == 0)
    return logits + hit * MIN_FLOAT


def test_remove_accidental_hits_takes_the_hits_out():
    removed = loss_layers.remove_accidental_hits()(
        tf.constant(LABELS), tf.constant(LOGITS), tf.constant(CANDIDATE_IDS)
    )
    removed = np.asarray(removed)
    np.testing.assert_array_equal(
        removed, expected_without_hits(LOGITS, LABELS, CANDIDATE_IDS)
    )
    # Row 0: its positive id 3 is also in columns 1, 3 and 5.
    assert (removed[0, [1, 3, 5]] < -1e30).all()
    assert removed[0, 0] == LOGITS[0, 0]
    assert removed[2, 2] == LOGITS[2, 2]  # id 7 appears once


@pytest.mark.skipif(KERAS3, reason="TFRS imports under tf-keras only")
def test_our_layer_equals_tfrs_numbers():
    # The Keras 3 stand-in computes tfrs.layers.loss.RemoveAccidentalHits'
    # numbers bit for bit (compared where TFRS imports: under tf-keras).
    import tensorflow_recommenders as tfrs

    inputs = [tf.constant(x) for x in (LABELS, LOGITS, CANDIDATE_IDS)]
    ours = RemoveAccidentalHits()(*inputs)
    theirs = tfrs.layers.loss.RemoveAccidentalHits()(*inputs)
    np.testing.assert_array_equal(ours, theirs)
    assert MIN_FLOAT == tfrs.layers.loss.MIN_FLOAT


def test_hard_negative_mining_keeps_the_positive_and_the_hardest():
    logits, labels = loss_layers.hard_negative_mining(2)(
        tf.constant(LOGITS), tf.constant(LABELS)
    )
    logits, labels = np.asarray(logits), np.asarray(labels)
    assert logits.shape == labels.shape == (4, 3)
    for row in range(4):
        # The positive is kept once, beside the two highest negatives.
        assert labels[row].sum() == 1
        assert logits[row][labels[row] == 1][0] == LOGITS[row, row]
        negatives = np.delete(LOGITS[row], row)
        np.testing.assert_array_equal(
            np.sort(logits[row][labels[row] == 0]),
            np.sort(negatives)[-2:],
        )


@pytest.mark.skipif(not KERAS3, reason="keras-rs layers run under Keras 3")
def test_keras_rs_remove_accidental_hits_still_removes_nothing():
    # Why loss_layers does not use keras-rs 0.4's RemoveAccidentalHits
    # (keras-team/keras-rs pull request 206). When this fails, keras-rs
    # has fixed it: loss_layers can take it (mind its argument order:
    # logits, labels, candidate_ids).
    import keras_rs

    removed = keras_rs.layers.RemoveAccidentalHits()(
        LOGITS, LABELS, CANDIDATE_IDS
    )
    np.testing.assert_array_equal(np.asarray(removed), LOGITS)
