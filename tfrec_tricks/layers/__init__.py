"""Keras layers of tfrec_tricks; each works under tf-keras and Keras 3.

The output heads (`SoftmaxCPR`, `TiedSoftmax`, `MixtureOfSoftmax`) live in
``tfrec_tricks.heads``, which builds on this package's helpers
(``common``, ``top_k``); they are re-exported here, on first access
(PEP 562 ``__getattr__``), so that importing ``tfrec_tricks.heads`` first
never meets a half-initialised ``tfrec_tricks.layers``.
"""

from typing import Any

from tfrec_tricks.layers.soft_one_hot_encoding import SoftOneHotEncoding
from tfrec_tricks.layers.stochastic_shared_embedding import (
    StochasticSharedEmbedding,
)
from tfrec_tricks.layers.tied_item_embedding import TiedItemEmbedding

# The heads re-exported from tfrec_tricks.heads (the import paths of old).
_HEADS = ("MixtureOfSoftmax", "SoftmaxCPR", "TiedSoftmax")

__all__ = [
    "MixtureOfSoftmax",
    "SoftOneHotEncoding",
    "SoftmaxCPR",
    "StochasticSharedEmbedding",
    "TiedItemEmbedding",
    "TiedSoftmax",
]


def __getattr__(name: str) -> Any:
    """The heads of ``tfrec_tricks.heads``, imported on first access."""
    if name in _HEADS:
        from tfrec_tricks import heads

        return getattr(heads, name)
    raise AttributeError(
        f"module 'tfrec_tricks.layers' has no attribute {name!r}"
    )


def __dir__() -> list:
    return sorted(set(globals()) | set(_HEADS))
