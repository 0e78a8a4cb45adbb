"""HSTU's sequence encoder: pointwise (SiLU) causal attention blocks."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.models.encoder_registry import register_encoder_layer
from tfrec_tricks.models.positional_inputs import (
    build_positional_inputs,
    check_encoder_arguments,
    positional_inputs,
)
from tfrec_tricks.serialization import register


@register_encoder_layer("hstu")
@register
class HSTUEncoder(tf.keras.layers.Layer):
    """Hierarchical Sequential Transduction Units (Zhai et al., ICML 2024).

    The input is scaled by ``sqrt(hidden_dim)`` and learned positional
    embeddings are added; then ``num_layers`` blocks each compute, from
    ``n = LayerNorm(x)``, with ``H = num_heads`` heads of ``hidden_dim / H``:

    ``u, v, q, k = split(silu(n W_1 + b_1))``

    ``a[i, j] = silu(q_i . k_j + r[i - j]) / max_len`` for ``j <= i``, else 0

    ``x = x + W_2 dropout(LayerNorm(a v) * u) + b_2``

    with ``r`` a learned bias per relative position (shared by the heads).
    Unlike softmax attention the weights are not normalised over the row:
    how much history there is stays visible to the block, which the
    authors found better for non-stationary, high-cardinality item
    vocabularies. A final layer norm follows the last block. The paper's
    relative bias on time gaps is left out: time reaches the toolkit's
    models as soft one-hot input features (``--features time_gap``).

    The encoder is causal and its scale is fixed by ``max_len``, not by
    the batch: with right-padded histories (real items first, padding
    after) the state at position t depends on the real positions <= t only,
    so a batch may be cut to its longest history. The states at padding
    positions are finite but meaningless.

    Args:
        hidden_dim: int. Model width; divisible by ``num_heads``.
        max_len: int. Rows of the positional table and of the relative
            bias: the longest input.
        num_layers: int. HSTU blocks. Defaults to 1.
        num_heads: int. Attention heads, each of ``hidden_dim //
            num_heads`` for ``q``, ``k``, ``v`` and ``u``. Defaults to 1.
        dropout: float. Dropout on each block's gated output (the input
            is the caller's to drop out: ``SequentialRetrievalModel``
            drops out the embedded items). Defaults to 0.
        attention_dropout: float. Dropout on the attention weights.
            Defaults to 0.
        **kwargs: base layer keyword arguments.

    Call arguments:
        inputs: float tensor [B, L, d] with L <= max_len, the embedded
            history in time order.
        training: bool. Dropout is applied only when training.

    Returns:
        A list with the per-position states [B, L, hidden_dim] of each
        block, last block last (Softmax-CPR's Mi reads several layers).

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.models import HSTUEncoder
    >>> encoder = HSTUEncoder(hidden_dim=8, max_len=5, num_layers=2)
    >>> states = encoder(tf.random.normal((3, 4, 8)))
    >>> len(states), states[-1].shape
    (2, TensorShape([3, 4, 8]))

    References:
        Zhai et al., "Actions Speak Louder than Words: Trillion-Parameter
        Sequential Transducers for Generative Recommendations", ICML 2024.
    """

    def __init__(
        self,
        hidden_dim: int,
        max_len: int,
        num_layers: int = 1,
        num_heads: int = 1,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_encoder_arguments(
            hidden_dim=hidden_dim,
            max_len=max_len,
            num_layers=num_layers,
            num_heads=num_heads,
            dropout=dropout,
            attention_dropout=attention_dropout,
        )
        self.hidden_dim = hidden_dim
        self.max_len = max_len
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.dropout = dropout
        self.attention_dropout = attention_dropout

    @classmethod
    def from_model_config(
        cls, config: Any, hidden_dim: int, **kwargs
    ) -> "HSTUEncoder":
        """The encoder a ``ModelConfig`` names (``encoder="hstu"``).

        Args:
            config: a ``tfrec_tricks.models.ModelConfig``.
            hidden_dim: int, the encoder's width.
            **kwargs: base layer keyword arguments (e.g. ``name``).
        """
        return cls(
            hidden_dim,
            config.max_len,
            num_layers=config.num_layers,
            num_heads=config.num_heads,
            dropout=config.dropout,
            attention_dropout=config.attention_dropout,
            **kwargs,
        )

    def build(self, input_shape):
        policy = self.dtype_policy
        build_positional_inputs(self, int(input_shape[-1]))
        self.blocks = []
        for i in range(self.num_layers):
            self.blocks.append(
                {
                    "input_norm": tf.keras.layers.LayerNormalization(
                        epsilon=1e-6, dtype=policy, name=f"input_norm_{i}"
                    ),
                    # u, v, q and k, each hidden_dim wide.
                    "uvqk": tf.keras.layers.Dense(
                        4 * self.hidden_dim,
                        activation="silu",
                        dtype=policy,
                        name=f"uvqk_{i}",
                    ),
                    "relative_bias": self.add_weight(
                        name=f"relative_position_bias_{i}",
                        shape=(self.max_len,),
                        initializer="zeros",
                    ),
                    "attention_dropout": tf.keras.layers.Dropout(
                        self.attention_dropout, dtype=policy
                    ),
                    "output_norm": tf.keras.layers.LayerNormalization(
                        epsilon=1e-6, dtype=policy, name=f"output_norm_{i}"
                    ),
                    "output_dropout": tf.keras.layers.Dropout(
                        self.dropout, dtype=policy
                    ),
                    "output": tf.keras.layers.Dense(
                        self.hidden_dim, dtype=policy, name=f"output_{i}"
                    ),
                }
            )
        self.final_norm = tf.keras.layers.LayerNormalization(
            epsilon=1e-6, dtype=policy, name="final_norm"
        )
        super().build(input_shape)

    def call(self, inputs, training=None):
        x, positions = positional_inputs(self, inputs)
        length = tf.shape(x)[1]
        x = x * tf.cast(self.hidden_dim**0.5, x.dtype) + positions[None]
        # [L, L] relative positions i - j, and the causal mask j <= i.
        index = tf.range(length)
        distance = index[:, None] - index[None, :]
        causal = tf.cast(distance >= 0, x.dtype)
        distance = tf.maximum(distance, 0)
        states = []
        for block in self.blocks:
            x = self._block(block, x, distance, causal, training)
            states.append(x)
        states[-1] = self.final_norm(states[-1])
        return states

    def _heads(self, x):
        """[B, L, hidden] -> [B, H, L, hidden / H]."""
        shape = tf.shape(x)
        x = tf.reshape(
            x,
            [
                shape[0],
                shape[1],
                self.num_heads,
                self.hidden_dim // self.num_heads,
            ],
        )
        return tf.transpose(x, [0, 2, 1, 3])

    def _block(self, block: dict, x, distance, causal, training):
        u, v, q, k = tf.split(block["uvqk"](block["input_norm"](x)), 4, -1)
        scores = tf.matmul(self._heads(q), self._heads(k), transpose_b=True)
        bias = tf.cast(tf.gather(block["relative_bias"], distance), x.dtype)
        # Pointwise weights, zero above the diagonal; divided by the fixed
        # max_len, so a state does not depend on how long the batch is.
        weights = tf.nn.silu(scores + bias) * causal
        weights = weights / tf.cast(self.max_len, x.dtype)
        weights = block["attention_dropout"](weights, training=training)
        attended = tf.matmul(weights, self._heads(v))  # [B, H, L, d / H]
        shape = tf.shape(x)
        attended = tf.reshape(
            tf.transpose(attended, [0, 2, 1, 3]),
            [shape[0], shape[1], self.hidden_dim],
        )
        gated = block["output_norm"](attended) * u
        gated = block["output_dropout"](gated, training=training)
        return x + block["output"](gated)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "max_len": self.max_len,
                "num_layers": self.num_layers,
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
            }
        )
        return config
