"""Softmax cross-entropy over the whole catalogue."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.evaluation.full_ranking import tf_target_ranks
from tfrec_tricks.objectives.encoded_batch import EncodedBatch
from tfrec_tricks.objectives.objective import Objective


class FullSoftmax(Objective):
    """Softmax cross-entropy of the head's ``[B, N]`` logits.

    The Softmax-CPR paper's objective (``--objective full``): every item of
    the catalogue is a negative. The loss reads the head's logits at the
    (label-SSE perturbed) targets, plus ``base_loss_weight`` times that of
    the head's base logits (CPR's ``f_V``); the ranks are the true
    targets' among the logits as served (a ``softmax_no_dup`` head scores
    the loss with the history, ranks without it). Merged-prefix rows are
    scored one row per target position.

    Args:
        base_loss_weight: float >= 0. Defaults to 0.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers import TiedSoftmax
    >>> from tfrec_tricks.objectives import EncodedBatch, FullSoftmax
    >>> batch = EncodedBatch(
    ...     TiedSoftmax(), lambda h, s, training: {
    ...         "hidden_states": s[-1], "history_ids": h},
    ...     tf.constant([[1, 2]]), [tf.ones([1, 2, 4])], tf.constant([3]),
    ...     item_table=tf.ones([5, 4]))
    >>> losses, ranks = FullSoftmax()(batch)
    >>> # 4 real items, tied: the pessimistic rank is the last.
    >>> round(float(losses[0]), 4), int(ranks[0])
    (1.3863, 4)
    """

    def __call__(self, batch: EncodedBatch) -> tuple:
        batch = batch.position_rows()
        labels = batch.labels(batch.targets)
        # A head that ranks the history last (at inference) is scored
        # without that rule for the loss: a target may repeat the history.
        excludes_history = batch.excludes_history
        logits = batch.logits(
            exclude_history=False if excludes_history else None,
            return_base_logits=self.with_base,
        )
        base_logits = None
        if self.with_base:
            logits, base_logits = logits
        per_example = self.loss(logits, labels)
        if base_logits is not None:
            per_example += self.base_loss_weight * self.loss(
                base_logits, labels
            )
        if excludes_history:
            logits = batch.logits()
        # One comparison pass over [B, N] for every metric: over a large
        # catalogue it costs as much as the logits themselves.
        return per_example, tf_target_ranks(logits, batch.targets)

    @staticmethod
    def loss(logits: Any, labels: Any) -> tf.Tensor:
        """Softmax cross-entropy: float ``[M, N]`` logits, int ``[M]``
        labels -> float32 ``[M]``."""
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
