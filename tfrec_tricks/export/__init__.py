"""SavedModels for TF Serving (needs tf-keras: see keras_version).

``export_for_serving`` writes ``<base_path>/<version>/``: a SavedModel with
raw-id signatures (``serving_default``, ``score_candidates``), TF Serving
warmup requests, and next to the model folder the ``models.config`` entry
and a REST request example. ``extend_catalogue`` adds items to a model
trained with item features, without retraining (``--add-items``).
"""

from tfrec_tricks.keras_version import require_legacy_keras

require_legacy_keras("tfrec_tricks.export")

from tfrec_tricks.export.catalogue_extension import (  # noqa: E402
    extend_catalogue,
)
from tfrec_tricks.export.export_for_serving import (  # noqa: E402
    export_for_serving,
)
from tfrec_tricks.export.models_config import (  # noqa: E402
    check_model_name,
)
from tfrec_tricks.export.serving_module import ServingModule  # noqa: E402

__all__ = [
    "ServingModule",
    "check_model_name",
    "export_for_serving",
    "extend_catalogue",
]
