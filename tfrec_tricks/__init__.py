"""tfrec_tricks: four modelling techniques for sequential recommenders.

The package root stays light: it imports no TensorFlow. Import what you need:

* ``tfrec_tricks.Recommender``: train, evaluate, recommend, save and export
  in a few calls (``tfrec_tricks.recommender``, imported on first access:
  it brings TensorFlow and the training runs).
* ``tfrec_tricks.layers``: Keras layers; they work under tf-keras (Keras 2)
  and under Keras 3 with the TensorFlow backend.
* ``tfrec_tricks.models``: the retrieval models, on TFRS under tf-keras
  (``TF_USE_LEGACY_KERAS=1`` before TensorFlow is imported; the CLI and
  the examples do this for you) and on keras-rs under Keras 3
  (``TF_USE_LEGACY_KERAS=0``): see docs/keras-versions.md.
* ``tfrec_tricks.data`` and ``tfrec_tricks.evaluation``: data and
  evaluation.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["Recommender"]


def __getattr__(name: str) -> Any:
    """``Recommender``, imported on first access (PEP 562): importing the
    package root stays free of TensorFlow."""
    if name == "Recommender":
        from tfrec_tricks.recommender import Recommender

        return Recommender
    raise AttributeError(f"module 'tfrec_tricks' has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
