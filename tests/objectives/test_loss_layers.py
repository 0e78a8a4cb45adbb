"""The sampled objectives' loss layers compute TFRS's numbers under either
Keras: TFRS's own layers under tf-keras, keras-rs' (and this package's
``RemoveAccidentalHits``) under Keras 3. Runs in CI's Keras 3 job too."""

import numpy as np
import tensorflow as tf

from tests.keras_env import KERAS3
from tfrec_tricks.objectives import loss_layers
from tfrec_tricks.objectives.remove_accidental_hits import (
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
