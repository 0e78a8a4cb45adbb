"""Which objective a model config trains with: one line per objective."""

from typing import Any

from tfrec_tricks.objectives.full_softmax import FullSoftmax
from tfrec_tricks.objectives.in_batch_sampled_softmax import (
    InBatchSampledSoftmax,
)
from tfrec_tricks.objectives.objective import Objective
from tfrec_tricks.objectives.partitioned_softmax import PartitionedSoftmax
from tfrec_tricks.objectives.sampled_negatives import SampledNegatives

#: Every objective; each one's ``trains(config, head)`` says which
#: configs it trains, and exactly one says yes for a valid config.
OBJECTIVES = (
    FullSoftmax,
    PartitionedSoftmax,
    InBatchSampledSoftmax,
    SampledNegatives,
)


def objective_for(
    config: Any, head: Any, base_loss_weight: float = 0.0
) -> Objective:
    """The objective ``config`` trains ``head`` with.

    Args:
        config: a ``tfrec_tricks.models.ModelConfig``.
        head: the model's output head.
        base_loss_weight: float >= 0, the weight of the loss of the head's
            base logits. Defaults to 0.

    Returns:
        An ``Objective``.

    Raises:
        ValueError: if not exactly one of ``OBJECTIVES`` trains ``config``.

    Example:

    >>> from tfrec_tricks.layers import TiedSoftmax
    >>> from tfrec_tricks.models import ModelConfig
    >>> config = ModelConfig(num_items=10, objective="sampled")
    >>> objective_for(config, TiedSoftmax())
    InBatchSampledSoftmax(base_loss_weight=0.0)
    """
    matches = [cls for cls in OBJECTIVES if cls.trains(config, head)]
    if len(matches) != 1:
        raise ValueError(
            "Exactly one objective must train the config. Received: "
            f"objective={config.objective!r}, num_sampled_negatives="
            f"{config.num_sampled_negatives!r}, head={type(head).__name__}; "
            f"matching: {[cls.__name__ for cls in matches]}"
        )
    return matches[0].from_model_config(config, base_loss_weight)
