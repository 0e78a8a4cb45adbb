"""Training objectives of the sequential retrieval model, TFRS-task style.

The model encodes a batch into an ``EncodedBatch``; its ``Objective``
(``objective_for(config, head)``, from ``OBJECTIVES``) turns it into
per-example losses and the targets' ranks.
"""

from tfrec_tricks.objectives.encoded_batch import EncodedBatch
from tfrec_tricks.objectives.full_softmax import FullSoftmax
from tfrec_tricks.objectives.in_batch_sampled_softmax import (
    InBatchSampledSoftmax,
)
from tfrec_tricks.objectives.objective import Objective
from tfrec_tricks.objectives.partitioned_softmax import PartitionedSoftmax
from tfrec_tricks.objectives.registry import OBJECTIVES, objective_for
from tfrec_tricks.objectives.sampled_negatives import SampledNegatives

__all__ = [
    "OBJECTIVES",
    "EncodedBatch",
    "FullSoftmax",
    "InBatchSampledSoftmax",
    "Objective",
    "PartitionedSoftmax",
    "SampledNegatives",
    "objective_for",
]
