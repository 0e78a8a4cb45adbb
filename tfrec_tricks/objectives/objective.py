"""The contract every training objective fills in."""

import abc
from typing import Any

import tensorflow as tf

from tfrec_tricks.objectives.encoded_batch import EncodedBatch


class Objective(abc.ABC):
    """A training loss of the sequential retrieval model.

    The plug-in of ``tfrs.tasks.Retrieval``: the model encodes a batch and
    calls its objective with it; the objective scores what it needs
    through the head and returns the per-example losses. An objective is
    a plain class, not a Keras layer: it owns no weight (the model keeps
    the candidate probabilities, in the checkpoint key they have always
    had), and the TFRS loss layers it calls are weightless.

    A new objective is a subclass filling in ``__call__``, its test, and
    an ``ObjectiveSpec`` registered with ``@register_objective``, whose
    ``build`` says which configs it trains
    (``tfrec_tricks.objectives.objective_registry``).

    Class attributes:
        ranks_in_training: bool. Whether a training step returns the
            targets' ranks (it scores the whole catalogue). Evaluation
            always does.
        samples_candidates: bool. Whether the model keeps each item's
            sampling probability for it (``EncodedBatch``'s
            ``candidate_probability``).

    Args:
        base_loss_weight: float >= 0. The weight of the loss of a head's
            base logits beside its own (``cpr_base_loss``; 0: none).
            Defaults to 0.

    Raises:
        ValueError: a negative ``base_loss_weight``.
    """

    ranks_in_training: bool = True
    samples_candidates: bool = False

    def __init__(self, base_loss_weight: float = 0.0):
        if not base_loss_weight >= 0:
            raise ValueError(
                "base_loss_weight must be >= 0. Received: "
                f"base_loss_weight={base_loss_weight!r}"
            )
        self.base_loss_weight = float(base_loss_weight)

    @classmethod
    def from_model_config(
        cls, config: Any, base_loss_weight: float = 0.0
    ) -> "Objective":
        """The objective of a ``ModelConfig``.

        Args:
            config: a ``tfrec_tricks.models.ModelConfig``.
            base_loss_weight: float, see the class. Defaults to 0.
        """
        return cls(base_loss_weight=base_loss_weight)

    @abc.abstractmethod
    def __call__(self, batch: EncodedBatch) -> tuple:
        """The batch's loss.

        Args:
            batch: an ``EncodedBatch``.

        Returns:
            ``(per_example, ranks)``: float32 ``[M]`` losses (one per
            example, or per target position of merged-prefix rows) and the
            true targets' int ``[M]`` ranks, or None where the objective
            does not score the catalogue.
        """

    @property
    def with_base(self) -> bool:
        """Whether the loss adds that of the head's base logits."""
        return self.base_loss_weight > 0

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_loss_weight={self.base_loss_weight})"
        )


def softmax_cross_entropy(labels: Any, scores: Any) -> tf.Tensor:
    """Per-row softmax cross-entropy of one-hot (or soft) ``labels``.

    Args:
        labels: float ``[M, C]``.
        scores: float ``[M, C]`` logits.

    Returns:
        float32 ``[M]``.

    Example:

    >>> import tensorflow as tf
    >>> loss = softmax_cross_entropy(tf.constant([[1.0, 0.0]]),
    ...                              tf.constant([[0.0, 0.0]]))
    >>> round(float(loss[0]), 4)
    0.6931
    """
    return tf.keras.losses.categorical_crossentropy(
        labels, scores, from_logits=True
    )
