"""Output heads: the layers that score the catalogue from a query's states.

Every head is an `OutputHead`: the model and the serving module call
``call``, ``top_k_candidates`` and ``score_candidates`` (and ask
``has_index``, ``has_cross_entropy``, ...) without asking which head it is.

* `TiedSoftmax`: ``h E^T + b``, optionally ranking the history last.
* `SoftmaxCPR`: Softmax-CPR, per-partition projections of the query
  (``softmax_cpr``; its partitions ``cpr_partitions``, its training loss
  ``cpr_loss`` and ``partitioned_cross_entropy``, its candidate scoring
  ``cpr_candidates``).
* `MixtureOfSoftmax`: a mixture of softmaxes (no index).

They work under tf-keras and Keras 3, and are also importable from
``tfrec_tricks.layers``.
"""

from tfrec_tricks.heads.mixture_of_softmax import MixtureOfSoftmax
from tfrec_tricks.heads.output_head import OutputHead
from tfrec_tricks.heads.softmax_cpr import SoftmaxCPR
from tfrec_tricks.heads.tied_softmax import TiedSoftmax

__all__ = ["MixtureOfSoftmax", "OutputHead", "SoftmaxCPR", "TiedSoftmax"]
