"""SASRec's sequence encoder: causal self-attention blocks."""

import inspect
from typing import Any

import tensorflow as tf

from tfrec_tricks.models.config import SASREC_NORMS as NORMS
from tfrec_tricks.models.encoder_registry import register_encoder_layer
from tfrec_tricks.models.positional_inputs import (
    build_positional_inputs,
    check_encoder_arguments,
    positional_inputs,
)
from tfrec_tricks.serialization import register


@register_encoder_layer("sasrec")
@register
class SASRecEncoder(tf.keras.layers.Layer):
    """Transformer blocks with causal self-attention (Kang & McAuley, 2018).

    Learned positional embeddings are added to the input, then
    ``num_layers`` blocks each apply causal multi-head self-attention and a
    position-wise feed-forward network, each with dropout and a residual
    connection. The inputs are projected to ``hidden_dim`` first when their
    size differs. Two block layouts:

    - ``norm="post"`` (RecBole's SASRec): the input is layer-normalised,
      each sublayer's residual sum is layer-normalised, GELU.
    - ``norm="pre"`` (the paper's code, Kang & McAuley, and SASRec+): the
      input is scaled by ``sqrt(hidden_dim)``; attention reads
      ``q = LN(x)`` and adds to ``q``; the feed-forward network reads
      ``y = LN(x)`` and adds to ``y``, ReLU with dropout inside; a final
      layer norm after the last block.

    ``post`` is the default; the two are not compared yet
    (docs/decisions.md#sasrec-norm).

    The encoder is causal: the state at position t depends on positions
    <= t only. With right-padded histories (real items first, padding
    after) the causal mask alone keeps real positions from attending to
    padding, so no padding mask is needed and the state at the last real
    item is exact; the states at padding positions are finite but
    meaningless. Inputs shorter than ``max_len`` read the first rows of the
    positional table, so a batch may be cut to its longest history.

    Args:
        hidden_dim: int. Model width; divisible by ``num_heads``.
        max_len: int. Rows of the positional table: the longest input.
        num_layers: int. Transformer blocks. Defaults to 1.
        num_heads: int. Attention heads. Defaults to 2.
        dropout: float. Dropout on the embedded input and on the outputs of
            attention and feed-forward sublayers ("hidden dropout").
            Defaults to 0.
        attention_dropout: float. Dropout on the attention weights.
            Defaults to 0.
        ffn_dim: int or None. Inner size of the feed-forward network;
            None means ``hidden_dim``. Defaults to None.
        norm: str. ``"post"`` or ``"pre"``, the block layout above.
            Defaults to ``"post"``.
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
    >>> from tfrec_tricks.models import SASRecEncoder
    >>> encoder = SASRecEncoder(hidden_dim=8, max_len=5, num_layers=2)
    >>> states = encoder(tf.random.normal((3, 4, 8)))
    >>> len(states), states[-1].shape
    (2, TensorShape([3, 4, 8]))

    References:
        Kang and McAuley, "Self-Attentive Sequential Recommendation",
        ICDM 2018.
    """

    def __init__(
        self,
        hidden_dim: int,
        max_len: int,
        num_layers: int = 1,
        num_heads: int = 2,
        dropout: float = 0.0,
        attention_dropout: float = 0.0,
        ffn_dim: int | None = None,
        norm: str = "post",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if norm not in NORMS:
            raise ValueError(
                f"`norm` must be one of {NORMS}. Received: norm={norm!r}"
            )
        check_encoder_arguments(
            hidden_dim=hidden_dim,
            max_len=max_len,
            num_layers=num_layers,
            num_heads=num_heads,
            dropout=dropout,
            attention_dropout=attention_dropout,
            ffn_dim=ffn_dim,
        )
        self.hidden_dim = hidden_dim
        self.max_len = max_len
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.ffn_dim = ffn_dim
        self.norm = norm

    @classmethod
    def from_model_config(
        cls, config: Any, hidden_dim: int, **kwargs
    ) -> "SASRecEncoder":
        """The encoder a ``ModelConfig`` names (``encoder="sasrec"``).

        Args:
            config: a ``tfrec_tricks.models.ModelConfig``.
            hidden_dim: int, the encoder's width.
            **kwargs: base layer keyword arguments (e.g. ``name``).
        """
        return cls(
            hidden_dim,
            config.max_len,
            ffn_dim=config.ffn_dim,
            norm=config.sasrec_norm,
            num_layers=config.num_layers,
            num_heads=config.num_heads,
            dropout=config.dropout,
            attention_dropout=config.attention_dropout,
            **kwargs,
        )

    def build(self, input_shape):
        policy = self.dtype_policy
        build_positional_inputs(self, int(input_shape[-1]))
        pre = self.norm == "pre"
        # One layer norm on the input (post) or after the last block (pre).
        norm = tf.keras.layers.LayerNormalization(
            epsilon=1e-12,
            dtype=policy,
            name="final_norm" if pre else "input_norm",
        )
        if pre:
            self.final_norm = norm
        else:
            self.input_norm = norm
        self.input_dropout = tf.keras.layers.Dropout(self.dropout, dtype=policy)
        ffn = self.ffn_dim or self.hidden_dim
        self.blocks = []
        for i in range(self.num_layers):
            block = {
                "attention": tf.keras.layers.MultiHeadAttention(
                    self.num_heads,
                    self.hidden_dim // self.num_heads,
                    dropout=self.attention_dropout,
                    kernel_initializer=_attention_kernel_initializer(),
                    dtype=policy,
                    name=f"attention_{i}",
                ),
                "attention_dropout": tf.keras.layers.Dropout(
                    self.dropout, dtype=policy
                ),
                "attention_norm": tf.keras.layers.LayerNormalization(
                    epsilon=1e-12, dtype=policy, name=f"attention_norm_{i}"
                ),
                "inner": tf.keras.layers.Dense(
                    ffn,
                    activation="relu" if pre else "gelu",
                    dtype=policy,
                    name=f"ffn_in_{i}",
                ),
                "outer": tf.keras.layers.Dense(
                    self.hidden_dim, dtype=policy, name=f"ffn_out_{i}"
                ),
                "ffn_dropout": tf.keras.layers.Dropout(
                    self.dropout, dtype=policy
                ),
                "ffn_norm": tf.keras.layers.LayerNormalization(
                    epsilon=1e-12, dtype=policy, name=f"ffn_norm_{i}"
                ),
            }
            if pre:  # Dropout inside the feed-forward network too.
                block["inner_dropout"] = tf.keras.layers.Dropout(
                    self.dropout, dtype=policy
                )
            self.blocks.append(block)
        super().build(input_shape)

    def call(self, inputs, training=None):
        x, positions = positional_inputs(self, inputs)
        if self.norm == "pre":
            x = x * tf.cast(self.hidden_dim**0.5, x.dtype) + positions[None]
        else:
            x = self.input_norm(x + positions[None])
        x = self.input_dropout(x, training=training)
        states = []
        for block in self.blocks:
            if self.norm == "pre":
                x = self._pre_norm_block(block, x, training)
            else:
                x = self._post_norm_block(block, x, training)
            states.append(x)
        if self.norm == "pre":
            states[-1] = self.final_norm(states[-1])
        return states

    @staticmethod
    def _feed_forward(block: dict, x, training):
        hidden = block["inner"](x)
        if "inner_dropout" in block:
            hidden = block["inner_dropout"](hidden, training=training)
        return block["ffn_dropout"](block["outer"](hidden), training=training)

    def _post_norm_block(self, block: dict, x, training):
        attended = block["attention"](
            x, x, use_causal_mask=True, training=training
        )
        attended = block["attention_dropout"](attended, training=training)
        x = block["attention_norm"](x + attended)
        return block["ffn_norm"](x + self._feed_forward(block, x, training))

    def _pre_norm_block(self, block: dict, x, training):
        # As the paper's code: the residuals start from the normalised
        # inputs, and keys and values are the block's raw input.
        query = block["attention_norm"](x)
        attended = block["attention"](
            query, x, use_causal_mask=True, training=training
        )
        x = query + block["attention_dropout"](attended, training=training)
        y = block["ffn_norm"](x)
        return y + self._feed_forward(block, y, training)

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
                "ffn_dim": self.ffn_dim,
                "norm": self.norm,
            }
        )
        return config


def _attention_kernel_initializer() -> Any:
    """Glorot uniform for the attention's kernels, with tf-keras' fans
    under either Keras, so that SASRec starts from one distribution.

    The kernels are 3-D (``[d, heads, head_dim]`` for the query, key and
    value, ``[heads, head_dim, d]`` for the output). tf-keras counts their
    fans as a convolution's: the first axis is a receptive field, so
    fan_in = shape[0] * shape[1] and fan_out = shape[0] * shape[2]. Keras
    3's ``EinsumDense`` counts the einsum's own input and output axes
    instead (since keras-team/keras pull request 22789), which makes the
    query, key and value kernels 4x wider at d=64 (standard deviation 0.125
    against 0.030) and made SASRec start and train differently under Keras
    3 (a higher loss for the first epochs on yoochoose-100k). Naming
    tf-keras' axes keeps the model that tf-keras trains under both, and
    tf-keras' own draws as they were.

    Returns:
        ``"glorot_uniform"`` where the initializer takes no axes (tf-keras:
        its default, so tf-keras' weights are drawn as before), else a
        ``GlorotUniform`` with ``input_axes=(0, 1)`` and
        ``output_axes=(0, 2)``.
    """
    glorot = tf.keras.initializers.GlorotUniform
    if "input_axes" not in inspect.signature(glorot).parameters:
        return "glorot_uniform"
    return glorot(input_axes=(0, 1), output_axes=(0, 2))
