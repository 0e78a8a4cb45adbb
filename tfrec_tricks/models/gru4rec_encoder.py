"""GRU4Rec's sequence encoder."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.models.encoder_registry import register_encoder_layer
from tfrec_tricks.serialization import register


@register_encoder_layer("gru4rec")
@register
class GRU4RecEncoder(tf.keras.layers.Layer):
    """Stacked GRUs over item embeddings (Hidasi et al., 2016).

    The encoder is causal: the state at position t depends on positions
    <= t only. With right-padded histories (real items first) the state at
    the last real item is therefore exact without a mask, and GRUs run
    several times faster unmasked on CPU.

    Args:
        hidden_dim: int. GRU state size.
        num_layers: int. Stacked GRU layers. Defaults to 1.
        dropout: float. Dropout on the inputs of each layer. Defaults to 0.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: float tensor [B, L, d], the embedded history.
        training: bool. Dropout is applied only when training.

    Returns:
        A list with the per-position states [B, L, hidden_dim] of each
        layer, last layer last (Softmax-CPR's Mi reads several layers).

    References:
        Hidasi et al., "Session-based Recommendations with Recurrent Neural
        Networks", ICLR 2016.
    """

    def __init__(
        self,
        hidden_dim: int,
        num_layers: int = 1,
        dropout: float = 0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_dim <= 0 or num_layers <= 0 or not 0 <= dropout < 1:
            raise ValueError(
                "Expected hidden_dim > 0, num_layers > 0, 0 <= dropout < 1. "
                f"Received: hidden_dim={hidden_dim}, num_layers={num_layers},"
                f" dropout={dropout}"
            )
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.dropout = dropout

    @classmethod
    def from_model_config(
        cls, config: Any, hidden_dim: int, **kwargs
    ) -> "GRU4RecEncoder":
        """The encoder a ``ModelConfig`` names (``encoder="gru4rec"``).

        The model's own dropouts surround it, so its layers get none.

        Args:
            config: a ``tfrec_tricks.models.ModelConfig``.
            hidden_dim: int, the encoder's width.
            **kwargs: base layer keyword arguments (e.g. ``name``).
        """
        return cls(hidden_dim, config.num_layers, dropout=0.0, **kwargs)

    def build(self, input_shape):
        self.dropouts = [
            tf.keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
            for _ in range(self.num_layers)
        ]
        self.grus = [
            tf.keras.layers.GRU(
                self.hidden_dim,
                return_sequences=True,
                dtype=self.dtype_policy,
                name=f"gru_{i}",
            )
            for i in range(self.num_layers)
        ]
        super().build(input_shape)

    def call(self, inputs, training=None):
        states = []
        x = inputs
        for dropout, gru in zip(self.dropouts, self.grus):
            x = gru(dropout(x, training=training), training=training)
            states.append(x)
        return states

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "num_layers": self.num_layers,
                "dropout": self.dropout,
            }
        )
        return config
