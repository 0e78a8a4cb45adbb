"""SavedModels for TF Serving, under tf-keras or Keras 3.

``export_for_serving`` writes ``<base_path>/<version>/``: a SavedModel with
raw-id signatures (``serving_default``, ``score_candidates``), TF Serving
warmup requests, and next to the model folder the ``models.config`` entry
and a REST request example. ``extend_catalogue`` adds items to a model
trained with item features, without retraining (``--add-items``).

``check_model_name`` (``tfrec_tricks.export.models_config``) imports no
TensorFlow: the command line checks ``--name`` and ``--version`` with it
before TensorFlow loads. The others are imported on first access (PEP 562
``__getattr__``), which checks the Keras first (``require_model_keras``):
tf-keras, or Keras 3 on the TensorFlow backend (docs/keras-versions.md).
"""

import sys
import types
from typing import TYPE_CHECKING, Any

from tfrec_tricks.keras_version import (
    choose_model_keras,
    lazy_legacy_keras_names,
    require_model_keras,
)

# On import: tf-keras chosen unless the environment chose Keras 3, and the
# whole check if TensorFlow is already imported; nothing here imports it.
choose_model_keras("tfrec_tricks.export")

from tfrec_tricks.export.models_config import check_model_name  # noqa: E402

if TYPE_CHECKING:
    from tfrec_tricks.export.catalogue_extension import extend_catalogue
    from tfrec_tricks.export.export_for_serving import export_for_serving
    from tfrec_tricks.export.serving_module import ServingModule

# The names imported on first access, and their modules.
_LAZY = {
    "ServingModule": "serving_module",
    "export_for_serving": "export_for_serving",
    "extend_catalogue": "catalogue_extension",
}

__all__ = [
    "ServingModule",
    "check_model_name",
    "export_for_serving",
    "extend_catalogue",
]


# The exports' names imported on first access, the Keras checked first.
__getattr__, __dir__ = lazy_legacy_keras_names(
    __name__, _LAZY, check=require_model_keras
)


class _Package(types.ModuleType):
    """This package, whose ``export_for_serving`` is the function.

    Importing the submodule ``export.export_for_serving`` sets the
    package's attribute of that name to the submodule; eagerly imported,
    the function replaced it afterwards. Lazily, ``__setattr__`` keeps the
    function, so ``tfrec_tricks.export.export_for_serving(...)`` calls it
    whichever was imported first.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _LAZY.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
