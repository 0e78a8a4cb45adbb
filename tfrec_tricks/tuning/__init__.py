"""KerasTuner searches over the techniques (needs tf-keras: see keras_version).

``import_keras_tuner()`` returns ``keras_tuner`` bound to tf-keras (import
it through this, not with ``import keras_tuner``, before anything else
imports KerasTuner); ``SequentialRetrievalHyperModel`` is the search space;
``tfrec_tricks.tuning.search`` runs a whole search as ``tfrec-tricks tune``
does.
"""

from tfrec_tricks.tuning.keras_tuner_binding import (
    KerasTunerBindingError,
    import_keras_tuner,
)
from tfrec_tricks.tuning.sequential_retrieval_hypermodel import (
    SequentialRetrievalHyperModel,
)

__all__ = [
    "KerasTunerBindingError",
    "SequentialRetrievalHyperModel",
    "import_keras_tuner",
]
