"""Output heads: the layers that score the catalogue from a query's states.

Every head is an `OutputHead`: the model and the serving module call
``call``, ``top_k_candidates`` and ``score_candidates`` (and ask
``has_index``, ``has_cross_entropy``, ...) without asking which head it is.

* `TiedSoftmax`: ``h E^T + b``, optionally ranking the history last.
* `SoftmaxCPR`: Softmax-CPR, per-partition projections of the query
  (the ``cpr`` sub-package: the layer ``softmax_cpr``, its partitions
  ``partitions``, its training loss ``loss`` and
  ``partitioned_cross_entropy``, its candidate scoring ``candidates``).
* `MixtureOfSoftmax`: a mixture of softmaxes (no index).

Each head has a ``HeadSpec`` (``registry``; the built-in ones in
``head_specs``): what a model config builds, searches, estimates and
reports for it, asked by name (``head_spec(config.head)``). A new head is
its layer and its spec, registered with ``@register_head``
(docs/adding-a-head.md).

The layers work under tf-keras and Keras 3 and are imported on first
access (PEP 562 ``__getattr__``): the specs import no TensorFlow, so the
command line reads the heads' names before TensorFlow loads. They are also
importable from ``tfrec_tricks.layers``.
"""

from tfrec_tricks.heads import head_specs as _builtin_specs  # noqa: F401
from tfrec_tricks.heads.registry import (
    HeadParts,
    HeadSpec,
    head_spec,
    register_head,
    unregister_head,
)
from tfrec_tricks.lazy_exports import lazy_exports

# The layers, by the submodule that defines each.
_LAYERS = {
    "MixtureOfSoftmax": "mixture_of_softmax",
    "OutputHead": "output_head",
    "SoftmaxCPR": "cpr.softmax_cpr",
    "TiedSoftmax": "tied_softmax",
}

__all__ = [
    "HeadParts",
    "HeadSpec",
    "MixtureOfSoftmax",
    "OutputHead",
    "SoftmaxCPR",
    "TiedSoftmax",
    "head_spec",
    "register_head",
    "unregister_head",
]


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAYERS)
