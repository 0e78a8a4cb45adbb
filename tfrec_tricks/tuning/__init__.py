"""KerasTuner searches over the techniques, under tf-keras or Keras 3.

``import_keras_tuner()`` returns ``keras_tuner`` bound to the Keras in use
(``keras_tuner_binding``: tf-keras unless the environment chose Keras 3;
import it through this, not with ``import keras_tuner``, before anything
else imports KerasTuner); ``SequentialRetrievalHyperModel`` is the search
space; ``tfrec_tricks.tuning.search`` runs a whole search as
``tfrec-tricks tune`` does (``run_search(config, SearchOptions(...))``).

Importing the package itself loads nothing: the first of the three names
above that is used imports the search space, which binds KerasTuner to
the Keras in use (and raises ``KerasTunerBindingError`` if it cannot).
Light modules such as ``tfrec_tricks.tuning.search_budget`` (the defaults
the command line's parser shows) and ``tfrec_tricks.tuning.search_options``
(``SearchOptions``) are thus read without importing KerasTuner.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    """The public names, imported on first use (PEP 562)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    binding = importlib.import_module(f"{__name__}.keras_tuner_binding")
    # Importing the search space binds KerasTuner, whichever name is asked.
    hypermodel = importlib.import_module(
        f"{__name__}.sequential_retrieval_hypermodel"
    )
    globals().update(
        KerasTunerBindingError=binding.KerasTunerBindingError,
        SequentialRetrievalHyperModel=hypermodel.SequentialRetrievalHyperModel,
        import_keras_tuner=binding.import_keras_tuner,
    )
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
