"""Softmax of each target against K uniformly sampled negatives."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.evaluation.full_ranking import tf_target_ranks
from tfrec_tricks.layers import common
from tfrec_tricks.objectives import loss_layers
from tfrec_tricks.objectives.encoded_batch import EncodedBatch
from tfrec_tricks.objectives.objective import (
    Objective,
    softmax_cross_entropy,
)


class SampledNegatives(Objective):
    """Softmax of each target against K negatives shared by the batch.

    ``--objective sampled --num-sampled-negatives K``: one draw of K item
    ids per step, uniform over the real items ``1..N-1`` (with
    replacement), scored against every query beside its target, so the
    step reads only those rows of the item table, and the loss is a
    softmax over ``[M, 1 + K]`` instead of the catalogue. A negative equal
    to the query's target is left out (``remove_accidental_hits``), then
    only the ``num_hard_negatives`` hardest are kept, if set. Uniform
    negatives need no logQ correction: every candidate's correction is
    the same constant. Evaluation reads the same scores off its logits.

    Args:
        num_items: int. N, the catalogue size with padding id 0.
        num_negatives: int >= 1. K.
        remove_accidental_hits: bool. Defaults to True.
        num_hard_negatives: int or None. Defaults to None.
        base_loss_weight: float. Must be 0: the sampled negatives score a
            softmax head, which has no base logits. Defaults to 0.

    Raises:
        ValueError: ``num_negatives`` below 1, ``num_items`` below 2 or a
            positive ``base_loss_weight``.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.objectives import SampledNegatives
    >>> objective = SampledNegatives(num_items=10, num_negatives=3)
    >>> scores = objective.with_negatives(
    ...     np.zeros([1], np.float32), np.zeros([1, 3], np.float32),
    ...     np.array([4, 5, 6]), np.array([5]))
    >>> loss = objective.loss(scores)  # 5 is the target: not a negative
    >>> round(float(loss[0]), 4)
    1.0986
    """

    ranks_in_training = False
    samples_candidates = True

    def __init__(
        self,
        num_items: int,
        num_negatives: int,
        remove_accidental_hits: bool = True,
        num_hard_negatives: int | None = None,
        base_loss_weight: float = 0.0,
    ):
        super().__init__(base_loss_weight)
        if num_negatives < 1 or num_items < 2 or self.with_base:
            raise ValueError(
                "SampledNegatives needs num_negatives >= 1, num_items >= 2 "
                f"and no base loss. Received: num_negatives={num_negatives}, "
                f"num_items={num_items}, base_loss_weight={base_loss_weight}"
            )
        self.num_items = num_items
        self.num_negatives = num_negatives
        self.remove_accidental_hits = remove_accidental_hits
        self.num_hard_negatives = num_hard_negatives
        self.hard_negatives = None
        if num_hard_negatives is not None:
            # TFRS's layer; keras-rs' under Keras 3 (``loss_layers``).
            self.hard_negatives = loss_layers.hard_negative_mining(
                num_hard_negatives
            )

    @classmethod
    def from_model_config(
        cls, config: Any, base_loss_weight: float = 0.0
    ) -> "SampledNegatives":
        return cls(
            config.num_items,
            config.num_sampled_negatives,
            remove_accidental_hits=config.remove_accidental_hits,
            num_hard_negatives=config.num_hard_negatives,
            base_loss_weight=base_loss_weight,
        )

    def __call__(self, batch: EncodedBatch) -> tuple:
        batch = batch.position_rows()
        labels = batch.labels(batch.targets)
        if batch.training:
            # The [M, 1] targets and the [K] negatives from one set of
            # inputs (one output dropout draw), reading only their rows.
            inputs = batch.head_inputs()
            negative_ids = self.sample_negatives()
            positive = batch.logits(inputs, candidate_ids=labels[:, None])
            positive = positive[:, 0]
            negatives = batch.logits(inputs, candidate_ids=negative_ids)
            scores = self.with_negatives(
                positive, negatives, negative_ids, labels
            )
            return self.loss(scores), None
        excludes_history = batch.excludes_history
        logits = batch.logits(
            exclude_history=False if excludes_history else None
        )
        # Evaluation's loss is the objective's, read off the logits.
        negative_ids = self.sample_negatives()
        scores = self.with_negatives(
            tf.gather(logits, labels, batch_dims=1),
            tf.gather(logits, negative_ids, axis=1),
            negative_ids,
            labels,
        )
        per_example = self.loss(scores)
        if excludes_history:
            logits = batch.logits()
        return per_example, tf_target_ranks(logits, batch.targets)

    def sample_negatives(self) -> tf.Tensor:
        """``num_negatives`` item ids, uniform over the real items
        (1..N-1, with replacement), one draw for the whole batch."""
        return tf.random.uniform(
            [self.num_negatives],
            minval=1,
            maxval=self.num_items,
            dtype=tf.int32,
        )

    def with_negatives(
        self, positive: Any, negatives: Any, negative_ids: Any, targets: Any
    ) -> tf.Tensor:
        """The ``[M, 1 + K]`` scores ``loss`` reads.

        Args:
            positive: float ``[M]``, each query's score of its target.
            negatives: float ``[M, K]``, its scores of the negatives.
            negative_ids: int ``[K]``, the negatives' item ids.
            targets: int ``[M]``, the targets' ids.

        Returns:
            float32 ``[M, 1 + K]``: the target first; with
            ``remove_accidental_hits``, a negative that is the query's
            target at ``-1e9`` (it is not a negative).
        """
        negatives = tf.cast(negatives, tf.float32)
        if self.remove_accidental_hits:
            hit = tf.equal(
                tf.cast(negative_ids, tf.int32)[None, :],
                tf.cast(targets, tf.int32)[:, None],
            )
            negatives = tf.where(
                hit, tf.constant(common.PADDING_LOGIT), negatives
            )
        return tf.concat([tf.cast(positive, tf.float32)[:, None], negatives], 1)

    def loss(self, scores: Any) -> tf.Tensor:
        """Softmax cross-entropy of the target (column 0) against the
        negatives, after hard-negative mining when configured.

        Args:
            scores: float ``[M, 1 + K]`` (``with_negatives``).

        Returns:
            float32 ``[M]`` losses.
        """
        scores = tf.cast(scores, tf.float32)
        labels = tf.one_hot(
            tf.zeros(tf.shape(scores)[:1], tf.int32), tf.shape(scores)[1]
        )
        if self.hard_negatives is not None:
            scores, labels = self.hard_negatives(scores, labels)
        return softmax_cross_entropy(labels, scores)
