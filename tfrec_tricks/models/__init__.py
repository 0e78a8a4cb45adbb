"""TFRS sequential retrieval models (need tf-keras: see keras_version)."""

from tfrec_tricks.keras_version import require_legacy_keras

require_legacy_keras("tfrec_tricks.models")

from tfrec_tricks.models.config import ModelConfig  # noqa: E402
from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder  # noqa: E402
from tfrec_tricks.models.hstu_encoder import HSTUEncoder  # noqa: E402
from tfrec_tricks.models.sasrec_encoder import SASRecEncoder  # noqa: E402
from tfrec_tricks.models.sequential_retrieval_model import (  # noqa: E402
    SequentialRetrievalModel,
)

__all__ = [
    "GRU4RecEncoder",
    "HSTUEncoder",
    "ModelConfig",
    "SASRecEncoder",
    "SequentialRetrievalModel",
]
