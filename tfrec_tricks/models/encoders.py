"""Which sequence encoder a model config names: one line per encoder."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder
from tfrec_tricks.models.hstu_encoder import HSTUEncoder
from tfrec_tricks.models.sasrec_encoder import SASRecEncoder

#: ``ModelConfig.encoder`` -> the encoder class; each class builds itself
#: from the config (``from_model_config(config, hidden_dim, **kwargs)``).
ENCODER_CLASSES = {
    "gru4rec": GRU4RecEncoder,
    "sasrec": SASRecEncoder,
    "hstu": HSTUEncoder,
}


def encoder_for(config: Any, hidden_dim: int) -> tf.keras.layers.Layer:
    """The encoder ``config.encoder`` names, with the model's layer name.

    Args:
        config: a ``tfrec_tricks.models.ModelConfig``.
        hidden_dim: int, the encoder's width.

    Returns:
        The encoder layer, named ``"encoder"`` (its checkpoint key).

    Raises:
        ValueError: an encoder name without a class.

    Example:

    >>> from tfrec_tricks.models import ModelConfig
    >>> encoder_for(ModelConfig(num_items=5, encoder="hstu"), 8).name
    'encoder'
    """
    if config.encoder not in ENCODER_CLASSES:
        raise ValueError(
            f"config.encoder must be one of {sorted(ENCODER_CLASSES)}. "
            f"Received: encoder={config.encoder!r}"
        )
    cls = ENCODER_CLASSES[config.encoder]
    return cls.from_model_config(config, hidden_dim, name="encoder")
