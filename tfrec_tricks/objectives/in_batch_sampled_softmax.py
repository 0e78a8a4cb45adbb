"""In-batch sampled softmax, ``tfrs.tasks.Retrieval``'s loss."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.evaluation.full_ranking import tf_target_ranks
from tfrec_tricks.objectives import loss_layers
from tfrec_tricks.objectives.encoded_batch import EncodedBatch
from tfrec_tricks.objectives.objective import (
    Objective,
    softmax_cross_entropy,
)


class InBatchSampledSoftmax(Objective):
    """Softmax over the batch's targets, as ``tfrs.tasks.Retrieval``.

    Query ``i``'s positive is candidate ``i``, the batch's other targets
    its negatives. The head scores the ``[B, B]`` candidates per query, so
    for CPR a candidate's partition depends on that query's history, and a
    training step reads the batch's rows of the item table only. Then, in
    the order of ``tfrs.tasks.Retrieval.call`` and from
    ``tfrs.layers.loss`` (keras-rs under Keras 3, ``loss_layers``): the
    logQ correction (subtract the log of each
    candidate's sampling probability), the removal of accidental hits (a
    negative equal to the query's target) and hard-negative mining (each
    as configured), then softmax cross-entropy. Evaluation, which ranks
    the catalogue anyway, gathers the candidates' scores from its logits.

    Args:
        logq_correction: bool. Defaults to True.
        remove_accidental_hits: bool. Defaults to True.
        num_hard_negatives: int or None. Keep only that many hardest
            negatives per query. Defaults to None.
        base_loss_weight: float >= 0. Defaults to 0.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.objectives import InBatchSampledSoftmax
    >>> objective = InBatchSampledSoftmax(logq_correction=False)
    >>> scores = np.zeros([3, 3], np.float32)
    >>> loss = objective.loss(scores, np.array([1, 2, 1]))
    >>> [round(float(x), 4) for x in loss]  # targets 1 and 1: a hit
    [0.6931, 1.0986, 0.6931]
    """

    ranks_in_training = False
    samples_candidates = True

    def __init__(
        self,
        logq_correction: bool = True,
        remove_accidental_hits: bool = True,
        num_hard_negatives: int | None = None,
        base_loss_weight: float = 0.0,
    ):
        super().__init__(base_loss_weight)
        self.logq_correction = logq_correction
        self.remove_accidental_hits = remove_accidental_hits
        self.num_hard_negatives = num_hard_negatives
        # tfrs' own loss layers (weightless; keras-rs' under Keras 3),
        # created in this order.
        self.probability_correction = (
            loss_layers.sampling_probability_correction()
        )
        self.accidental_hits = loss_layers.remove_accidental_hits()
        self.hard_negatives = None
        if num_hard_negatives is not None:
            self.hard_negatives = loss_layers.hard_negative_mining(
                num_hard_negatives
            )

    @classmethod
    def from_model_config(
        cls, config: Any, base_loss_weight: float = 0.0
    ) -> "InBatchSampledSoftmax":
        return cls(
            logq_correction=config.logq_correction,
            remove_accidental_hits=config.remove_accidental_hits,
            num_hard_negatives=config.num_hard_negatives,
            base_loss_weight=base_loss_weight,
        )

    def __call__(self, batch: EncodedBatch) -> tuple:
        batch = batch.position_rows()
        labels = batch.labels(batch.targets)
        logits = base_logits = None
        excludes_history = batch.excludes_history
        if batch.training:
            # Only the candidates: no [B, N] product.
            scores = batch.logits(
                candidate_ids=labels, return_base_logits=self.with_base
            )
        else:
            logits = batch.logits(
                exclude_history=False if excludes_history else None,
                return_base_logits=self.with_base,
            )
            if self.with_base:
                logits, base_logits = logits
            # Evaluation has the full logits already: the candidates' are
            # a gather, not a second pass over the catalogue (for CPR's
            # rerankers, a second top-k over [B, N]).
            scores = tf.gather(logits, labels, axis=1)
            if self.with_base:
                base_logits = tf.gather(base_logits, labels, axis=1)
                scores = (scores, base_logits)
        base_scores = None
        if self.with_base:
            scores, base_scores = scores
        probability = batch.candidate_probability
        per_example = self.loss(scores, labels, probability)
        if base_scores is not None:
            per_example += self.base_loss_weight * self.loss(
                base_scores, labels, probability
            )
        if logits is None:
            return per_example, None
        if excludes_history:
            logits = batch.logits()
        return per_example, tf_target_ranks(logits, batch.targets)

    def loss(
        self, scores: Any, candidate_ids: Any, candidate_probability: Any = None
    ) -> tf.Tensor:
        """Per-query loss of in-batch candidate scores.

        Args:
            scores: float ``[B, B]``, each query's score of each candidate.
            candidate_ids: int ``[B]``, the candidates' item ids.
            candidate_probability: float ``[N]`` or None: each item's
                sampling probability (needed by the logQ correction).
                Defaults to None.

        Returns:
            float32 ``[B]`` losses.

        Raises:
            ValueError: the logQ correction without probabilities.
        """
        if self.logq_correction and candidate_probability is None:
            raise ValueError(
                "The logQ correction needs the candidates' sampling "
                "probabilities. Received: candidate_probability=None"
            )
        scores = tf.cast(scores, tf.float32)
        candidate_ids = tf.cast(candidate_ids, tf.int32)
        labels = tf.eye(tf.shape(scores)[0], tf.shape(scores)[1])
        if self.logq_correction:
            scores = self.probability_correction(
                scores, tf.gather(candidate_probability, candidate_ids)
            )
        if self.remove_accidental_hits:
            scores = self.accidental_hits(labels, scores, candidate_ids)
        if self.hard_negatives is not None:
            scores, labels = self.hard_negatives(scores, labels)
        return softmax_cross_entropy(labels, scores)
