"""Sequential retrieval models, under tf-keras (TFRS) or Keras 3.

The model is a ``tfrs.Model`` under tf-keras, the default, and a
``keras.Model`` with the same training and test steps under Keras 3
(TensorFlow backend): ``retrieval_base`` picks the base by the Keras in
use (docs/keras-versions.md).

``ModelConfig`` (``tfrec_tricks.models.config``) is a plain dataclass,
imported without TensorFlow: the command line reads its fields for its
flags and checks them before TensorFlow loads. The models and encoders are
imported on first access (PEP 562 ``__getattr__``), which checks the Keras
first (``require_model_keras``).
"""

from typing import TYPE_CHECKING

from tfrec_tricks.keras_version import (
    choose_model_keras,
    lazy_legacy_keras_names,
    require_model_keras,
)

# On import: tf-keras chosen unless the environment chose Keras 3, and the
# whole check if TensorFlow is already imported; nothing here imports it.
choose_model_keras("tfrec_tricks.models")

from tfrec_tricks.models.config import ModelConfig  # noqa: E402

if TYPE_CHECKING:
    from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder
    from tfrec_tricks.models.hstu_encoder import HSTUEncoder
    from tfrec_tricks.models.sasrec_encoder import SASRecEncoder
    from tfrec_tricks.models.sequential_retrieval_model import (
        SequentialRetrievalModel,
    )

# The names imported on first access, and their modules.
_LAZY = {
    "GRU4RecEncoder": "gru4rec_encoder",
    "HSTUEncoder": "hstu_encoder",
    "SASRecEncoder": "sasrec_encoder",
    "SequentialRetrievalModel": "sequential_retrieval_model",
}

__all__ = [
    "GRU4RecEncoder",
    "HSTUEncoder",
    "ModelConfig",
    "SASRecEncoder",
    "SequentialRetrievalModel",
]


# The models' names imported on first access, the Keras checked first.
__getattr__, __dir__ = lazy_legacy_keras_names(
    __name__, _LAZY, check=require_model_keras
)
