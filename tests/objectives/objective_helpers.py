"""Encoded batches of a random item table, for the objectives' tests."""

import numpy as np
import tensorflow as tf

from tfrec_tricks.layers import SoftmaxCPR, TiedSoftmax
from tfrec_tricks.objectives import EncodedBatch

NUM_ITEMS = 12
DIM = 4
# Right-padded histories; targets 5 and 9 repeat (accidental hits).
HISTORY = np.array(
    [[1, 2, 3, 0], [4, 5, 0, 0], [6, 5, 7, 8], [9, 0, 0, 0], [2, 9, 3, 0]],
    np.int32,
)
TARGETS = np.array([5, 9, 5, 7, 9], np.int32)


def head_inputs(history, states, training):
    """The model's head inputs, without its output dropout."""
    return {
        "hidden_states": states[-1],
        "history_ids": history,
        "layer_hidden_states": states,
    }


def make_batch(
    head=None,
    training=False,
    targets=TARGETS,
    history=HISTORY,
    seed=0,
    **kwargs,
):
    """An ``EncodedBatch`` of random states, table and bias."""
    rng = np.random.default_rng(seed)
    states = [tf.constant(rng.normal(size=[*history.shape, DIM]), tf.float32)]
    return EncodedBatch(
        TiedSoftmax() if head is None else head,
        head_inputs,
        tf.constant(history),
        states,
        tf.constant(targets),
        item_table=tf.constant(rng.normal(size=[NUM_ITEMS, DIM]), tf.float32),
        item_bias=tf.constant(rng.normal(size=[NUM_ITEMS]), tf.float32),
        training=training,
        **kwargs,
    )


def cpr_head():
    """A CPR head whose partitions change the softmax's logits.

    Its projections are drawn on its first call: seeded here, so every
    test sees the same head (an unseeded draw once gave logits whose
    float32 loss missed the reference's 1e-5 tolerance).
    """
    tf.keras.utils.set_random_seed(0)
    return SoftmaxCPR(
        reranker_ks=(3,), dropout=0.0, start_as_softmax=False, output_dim=DIM
    )


def log_softmax_loss(scores, positive):
    """NumPy cross-entropy of one row of scores, in float64."""
    scores = np.asarray(scores, np.float64)
    top = scores.max()
    return top + np.log(np.exp(scores - top).sum()) - scores[positive]


def ranks(logits, targets):
    """Pessimistic 1-based ranks: the real items (padding aside) scoring
    at least the target's score."""
    logits = np.asarray(logits)
    return np.array(
        [(row[1:] >= row[target]).sum() for row, target in zip(logits, targets)]
    )


class Flip:
    """A label noise that maps every label to ``label % 3 + 1`` in
    training (a stand-in for the label SSE)."""

    def __call__(self, targets, training=False):
        return targets % 3 + 1 if training else targets
