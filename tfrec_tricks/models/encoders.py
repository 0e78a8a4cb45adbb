"""The sequence encoder a model config names, built by its spec."""

from typing import Any

import tensorflow as tf

# The built-in layers register themselves for their specs' ``build``.
from tfrec_tricks.models import (  # noqa: F401
    gru4rec_encoder,
    hstu_encoder,
    sasrec_encoder,
)
from tfrec_tricks.models.encoder_registry import encoder_spec


def encoder_for(config: Any, hidden_dim: int) -> tf.keras.layers.Layer:
    """The encoder ``config.encoder`` names, with the model's layer name.

    Args:
        config: a ``tfrec_tricks.models.ModelConfig``.
        hidden_dim: int, the encoder's width.

    Returns:
        The encoder layer, named ``"encoder"`` (its checkpoint key).

    Raises:
        ValueError: an encoder name no spec has (``encoder_spec``).

    Example:

    >>> from tfrec_tricks.models import ModelConfig
    >>> encoder_for(ModelConfig(num_items=5, encoder="hstu"), 8).name
    'encoder'
    """
    return encoder_spec(config.encoder).build(
        config, hidden_dim, name="encoder"
    )
