"""The built-in objectives' specs: ``full`` and ``sampled``.

Registered on import (``tfrec_tricks.models.config`` imports this module);
no TensorFlow here: each spec imports its losses in ``build``.
"""

from typing import Any

from tfrec_tricks.heads.registry import head_spec, tied_softmax_heads
from tfrec_tricks.objectives.objective_registry import (
    ObjectiveSpec,
    register_objective,
)


@register_objective
class FullSoftmaxSpec(ObjectiveSpec):
    """Softmax cross-entropy over the whole catalogue: ``FullSoftmax``, or
    ``PartitionedSoftmax`` for a head with its own cross-entropy
    (Softmax-CPR's partitions)."""

    name = "full"
    summary = "softmax cross-entropy over the whole catalogue"

    def build(
        self, config: Any, head: Any, base_loss_weight: float = 0.0
    ) -> Any:
        if head.has_cross_entropy:
            from tfrec_tricks.objectives.partitioned_softmax import (
                PartitionedSoftmax as loss,
            )
        else:
            from tfrec_tricks.objectives.full_softmax import FullSoftmax as loss
        return loss.from_model_config(config, base_loss_weight)


@register_objective
class SampledSoftmaxSpec(ObjectiveSpec):
    """A softmax over sampled candidates (million-item catalogues): the
    batch's targets (``InBatchSampledSoftmax``, TFRS Retrieval
    semantics), or ``num_sampled_negatives`` uniform negatives shared by
    the batch (``SampledNegatives``, softmax heads)."""

    name = "sampled"
    summary = "in-batch sampled softmax, or K shared uniform negatives"
    settings = ("num_sampled_negatives",)
    later_options = {"num_sampled_negatives": None}

    def build(
        self, config: Any, head: Any, base_loss_weight: float = 0.0
    ) -> Any:
        if config.num_sampled_negatives is None:
            from tfrec_tricks.objectives.in_batch_sampled_softmax import (
                InBatchSampledSoftmax as loss,
            )
        else:
            from tfrec_tricks.objectives.sampled_negatives import (
                SampledNegatives as loss,
            )
        return loss.from_model_config(config, base_loss_weight)

    def check(self, config: Any) -> None:
        if config.num_sampled_negatives is not None and not (
            head_spec(config.head).tied_softmax
        ):
            raise ValueError(
                "Invalid model config: num_sampled_negatives applies to the "
                f"sampled objective with a softmax head {tied_softmax_heads()}"
                f". Received: num_sampled_negatives="
                f"{config.num_sampled_negatives!r} with objective="
                f"{config.objective!r}, head={config.head!r}"
            )

    def logit_columns(self, config: Any, rows: int) -> int:
        if config.num_sampled_negatives is not None:
            return 1 + config.num_sampled_negatives  # the target and K
        return rows  # the batch's targets
