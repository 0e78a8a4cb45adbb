"""Training objectives of the sequential retrieval model, TFRS-task style.

The model encodes a batch into an ``EncodedBatch``; its ``Objective``
turns it into per-example losses and the targets' ranks. Which objective
trains a model is its config's ``objective`` spec's to say
(``objective_for(config, head)``, ``ObjectiveSpec.build``; the built-in
specs in ``objective_specs``). A new objective is its loss and its spec,
registered with ``@register_objective`` (docs/adding-a-head.md).

The losses are imported on first access (PEP 562 ``__getattr__``): the
specs import no TensorFlow, so the command line reads ``--objective``'s
choices before TensorFlow loads.
"""

from tfrec_tricks.lazy_exports import lazy_exports
from tfrec_tricks.objectives import objective_specs as _builtin_specs  # noqa: F401
from tfrec_tricks.objectives.objective_registry import (
    ObjectiveSpec,
    objective_for,
    objective_spec,
    register_objective,
    registered_objectives,
    unregister_objective,
)

# The losses, by the submodule that defines each.
_LOSSES = {
    "EncodedBatch": "encoded_batch",
    "FullSoftmax": "full_softmax",
    "InBatchSampledSoftmax": "in_batch_sampled_softmax",
    "Objective": "objective",
    "PartitionedSoftmax": "partitioned_softmax",
    "SampledNegatives": "sampled_negatives",
}

__all__ = [
    "EncodedBatch",
    "FullSoftmax",
    "InBatchSampledSoftmax",
    "Objective",
    "ObjectiveSpec",
    "PartitionedSoftmax",
    "SampledNegatives",
    "objective_for",
    "objective_spec",
    "register_objective",
    "registered_objectives",
    "unregister_objective",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LOSSES)
