"""``RemoveAccidentalHits``: TFRS's numbers under either Keras, where
keras-rs 0.4's layer removes nothing. Runs in CI's Keras 3 job too."""

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
