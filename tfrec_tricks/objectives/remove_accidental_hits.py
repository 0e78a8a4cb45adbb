"""TFRS's accidental-hit removal as a layer of either Keras."""

from typing import Any

import numpy as np
import tensorflow as tf

# tfrs.layers.loss.MIN_FLOAT: low enough to take a logit out of a softmax,
# far enough from float32's minimum that adding it overflows nothing.
MIN_FLOAT = float(np.finfo(np.float32).min / 100.0)


class RemoveAccidentalHits(tf.keras.layers.Layer):
    """Pushes the logits of accidental negatives out of the softmax.

    ``tfrs.layers.loss.RemoveAccidentalHits``, same arguments, same
    numbers, for Keras 3, where TFRS cannot be imported: in each row, a
    negative candidate with the positive's id gets ``MIN_FLOAT`` added to
    its logit. keras-rs 0.4's ``RemoveAccidentalHits`` would be the
    natural replacement, but it adds ``finfo(float32).smallest_normal /
    100`` (about 1e-40, which leaves every logit as it was) and, with
    per-row candidate ids, reads every row's positive id from row 0
    (keras-team/keras-rs pull request 206, open when this was written).
    Weightless; written against ``tf.keras``, so it runs under both Keras.

    Call arguments (TFRS's order):
        labels: float ``[B, C]`` one-hot labels.
        logits: float ``[B, C]`` logits.
        candidate_ids: int ``[C]`` the candidates' ids.

    Returns:
        ``logits`` with ``MIN_FLOAT`` added to the accidental hits.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.objectives.remove_accidental_hits import (
    ...     RemoveAccidentalHits)
    >>> logits = RemoveAccidentalHits()(
    ...     tf.eye(2, 3), tf.ones([2, 3]), tf.constant([7, 7, 9]))
    >>> (logits.numpy() < -1e30).astype(int).tolist()
    [[0, 1, 0], [1, 0, 0]]
    """

    def call(self, labels: Any, logits: Any, candidate_ids: Any) -> tf.Tensor:
        candidate_ids = tf.expand_dims(candidate_ids, 1)
        positive_indices = tf.math.argmax(labels, axis=1)
        positive_candidate_ids = tf.gather(candidate_ids, positive_indices)
        duplicate = tf.cast(
            tf.equal(positive_candidate_ids, tf.transpose(candidate_ids)),
            labels.dtype,
        )
        # The positive itself is not a hit.
        duplicate = duplicate - labels
        return logits + duplicate * MIN_FLOAT
