"""Soft one-hot encoding of a continuous feature."""

from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.layers.common import is_integer, softmax_dtype
from tfrec_tricks.serialization import register

_NORMALIZATIONS = (None, "log1p", "standardize", "log1p_standardize")
_LOG1P = ("log1p", "log1p_standardize")
_STANDARDIZE = ("standardize", "log1p_standardize")


def signed_log1p(values: np.ndarray) -> np.ndarray:
    """``sign(x) * log1p(|x|)``: the ``"log1p"`` normalisation, in NumPy.

    For statistics computed outside the layer (e.g. a model's
    ``from_data``), so that they match what ``call`` standardises.
    """
    return np.sign(values) * np.log1p(np.abs(values))


_MISSING = ("learned", "zeros")
# Floor on the standard deviation, as in keras' Normalization layer.
_EPSILON = 1e-7


@register
class SoftOneHotEncoding(tf.keras.layers.Layer):
    """Encodes a continuous scalar as a soft mixture of learned embeddings.

    For every scalar ``x`` the layer computes bucket logits ``p = x W + b``
    (``W`` of shape ``[1, num_embeddings]``, ``b`` of shape
    ``[num_embeddings]``), the bucket weights
    ``s = softmax(p / temperature)`` and returns ``g = s E``, a weighted
    sum over the rows of the embedding table ``E`` of shape
    ``[num_embeddings, output_dim]``. Close values get similar weights, so
    unlike bucketising the encoding is smooth and every bucket is trained.

    The input may have any rank: ``[B]``, ``[B, L]``, or ``[B, L, 1]``. A
    static trailing dimension of 1 (on inputs of rank 2 or more) is the
    scalar axis and is dropped, so the output shape is the input shape
    without that axis, plus ``[output_dim]``. Inputs of shape ``[B, 1]``
    therefore give ``[B, output_dim]``.

    Missing values: every non-finite input (NaN or +-inf) is replaced
    before any arithmetic, so neither the output nor any gradient is ever
    NaN; its output is a learned ``missing`` vector (``missing="learned"``)
    or zeros (``missing="zeros"``).

    Normalisation, applied to finite inputs before the projection:
    ``"log1p"`` maps ``x`` to ``sign(x) * log1p(|x|)`` (heavy-tailed
    features such as time gaps); ``"standardize"`` maps ``x`` to
    ``(x - mean) / sqrt(variance)``, with ``mean`` and ``variance`` given
    as arguments or computed from data with ``adapt``;
    ``"log1p_standardize"`` does both, in that order (``mean`` and
    ``variance`` are those of the log1p values). Without standardising, a
    positive feature far from 0 (a gap of 300 s is 5.7 after log1p, a day
    11.4) sends every value to the bucket with the largest ``W`` entry: the
    encoding then hardly tells values apart and learns slowly. The
    statistics are stored both in non-trainable weights (so a SavedModel
    and ``set_weights`` carry them) and in the config (so ``from_config``
    alone reproduces them).

    Masks are passed through unchanged (e.g. the padding mask of a
    sequence feature). Under ``mixed_float16`` the inputs are not cast to
    float16 (large raw values would overflow) and the projection and
    softmax run in float32; the output has the layer's compute dtype.

    Args:
        num_embeddings: int. Number of buckets ``P``: rows of ``E``.
        output_dim: int. Size ``D`` of the output vector.
        normalization: str or None. ``None``, ``"log1p"``,
            ``"standardize"`` or ``"log1p_standardize"``. Defaults to
            ``None``.
        missing: str. Output for NaN or infinite inputs: ``"learned"`` (a
            trainable vector) or ``"zeros"``. Defaults to ``"learned"``.
        temperature: float. Divides the bucket logits before the softmax;
            lower values give a harder, more one-hot assignment. Defaults
            to ``1.0``.
        mean: float or None. Mean used by ``"standardize"`` (of the log1p
            values with ``"log1p_standardize"``). Give both
            ``mean`` and ``variance``, or neither and call ``adapt``.
            Defaults to ``None``.
        variance: float or None. Variance used by ``"standardize"``.
            Defaults to ``None``.
        kernel_initializer: str or initializer. Initializer of ``W``.
            Defaults to ``"glorot_uniform"``.
        bias_initializer: str or initializer. Initializer of ``b``.
            Defaults to ``"zeros"``.
        embeddings_initializer: str or initializer. Initializer of ``E``.
            Defaults to ``"uniform"``.
        missing_initializer: str or initializer. Initializer of the missing
            vector. Defaults to ``"uniform"``.
        embeddings_regularizer: str or regularizer or None. Regularizer of
            ``E``. Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``
            (``name``, ``dtype``, ``trainable``).

    Call arguments:
        inputs: float (or int) tensor of shape ``[B]``, ``[B, L]`` or
            ``[B, L, 1]``.

    Returns:
        A tensor of shape ``input_shape (without a trailing 1) +
        [output_dim]`` in the layer's compute dtype.

    Example:

    >>> import numpy as np
    >>> import tfrec_tricks.layers
    >>> layer = tfrec_tricks.layers.SoftOneHotEncoding(
    ...     num_embeddings=10, output_dim=8, normalization="log1p")
    >>> gaps = np.array([[3.0, 60.0, np.nan], [0.0, 1.5, 3600.0]], "float32")
    >>> outputs = layer(gaps)
    >>> print(outputs.shape)
    (2, 3, 8)
    >>> print(bool(np.isfinite(outputs.numpy()).all()))
    True

    Standardisation with statistics adapted from data:

    >>> layer = tfrec_tricks.layers.SoftOneHotEncoding(
    ...     num_embeddings=4, output_dim=2, normalization="standardize")
    >>> layer.adapt(np.array([1.0, 2.0, 3.0, np.nan], "float32"))
    >>> print(layer.mean, round(layer.variance, 4))
    2.0 0.6667
    >>> print(layer(np.ones((5, 7, 1), "float32")).shape)
    (5, 7, 2)

    References:
        - [Li, Du and Bengio, 2017](https://arxiv.org/abs/1708.00065):
          Time-dependent representation for neural event sequence
          prediction.
        - [Moreira et al., 2021](https://dl.acm.org/doi/10.1145/3460231.3474255):
          Transformers4Rec, appendix A.
    """

    def __init__(
        self,
        num_embeddings: int,
        output_dim: int,
        normalization: str | None = None,
        missing: str = "learned",
        temperature: float = 1.0,
        mean: float | None = None,
        variance: float | None = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        embeddings_initializer: Any = "uniform",
        missing_initializer: Any = "uniform",
        embeddings_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        # Raw inputs must not be cast to float16 (time gaps in seconds
        # overflow it) and weights are read in full precision: the layer
        # does its own casting.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        if not is_integer(num_embeddings) or num_embeddings <= 0:
            raise ValueError(
                "`num_embeddings` must be a positive int. "
                f"Received: num_embeddings={num_embeddings}"
            )
        if not is_integer(output_dim) or output_dim <= 0:
            raise ValueError(
                "`output_dim` must be a positive int. "
                f"Received: output_dim={output_dim}"
            )
        if normalization not in _NORMALIZATIONS:
            raise ValueError(
                f"`normalization` must be one of {_NORMALIZATIONS}. "
                f"Received: normalization={normalization}"
            )
        if missing not in _MISSING:
            raise ValueError(
                f"`missing` must be one of {_MISSING}. "
                f"Received: missing={missing}"
            )
        if not temperature > 0:
            raise ValueError(
                "`temperature` must be positive. "
                f"Received: temperature={temperature}"
            )
        if (mean is None) != (variance is None):
            raise ValueError(
                "Give both `mean` and `variance`, or neither. "
                f"Received: mean={mean}, variance={variance}"
            )
        if mean is not None and normalization not in _STANDARDIZE:
            raise ValueError(
                "`mean` and `variance` are only used with "
                "normalization='standardize' or 'log1p_standardize'. "
                f"Received: normalization={normalization}"
            )
        if variance is not None and not variance >= 0:
            raise ValueError(
                f"`variance` must be >= 0. Received: variance={variance}"
            )
        self.num_embeddings = int(num_embeddings)
        self.output_dim = int(output_dim)
        self.normalization = normalization
        self.missing = missing
        self.temperature = float(temperature)
        self.mean = None if mean is None else float(mean)
        self.variance = None if variance is None else float(variance)
        self.kernel_initializer = tf.keras.initializers.get(kernel_initializer)
        self.bias_initializer = tf.keras.initializers.get(bias_initializer)
        self.embeddings_initializer = tf.keras.initializers.get(
            embeddings_initializer
        )
        self.missing_initializer = tf.keras.initializers.get(
            missing_initializer
        )
        self.embeddings_regularizer = tf.keras.regularizers.get(
            embeddings_regularizer
        )
        self.supports_masking = True

    def build(self, input_shape: Any = None) -> None:
        self.kernel = self.add_weight(
            name="kernel",
            shape=(1, self.num_embeddings),
            initializer=self.kernel_initializer,
            autocast=False,
        )
        self.bias = self.add_weight(
            name="bias",
            shape=(self.num_embeddings,),
            initializer=self.bias_initializer,
            autocast=False,
        )
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.num_embeddings, self.output_dim),
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            autocast=False,
        )
        self.missing_embedding = None
        if self.missing == "learned":
            self.missing_embedding = self.add_weight(
                name="missing_embedding",
                shape=(self.output_dim,),
                initializer=self.missing_initializer,
                autocast=False,
            )
        self.adapted_mean = None
        self.adapted_variance = None
        if self.normalization in _STANDARDIZE:
            mean = 0.0 if self.mean is None else self.mean
            variance = 1.0 if self.variance is None else self.variance
            self.adapted_mean = self.add_weight(
                name="mean",
                shape=(),
                initializer=tf.keras.initializers.Constant(mean),
                trainable=False,
                autocast=False,
            )
            self.adapted_variance = self.add_weight(
                name="variance",
                shape=(),
                initializer=tf.keras.initializers.Constant(variance),
                trainable=False,
                autocast=False,
            )
        self.built = True

    def adapt(self, data: Any) -> None:
        """Sets ``mean`` and ``variance`` from data (non-finite ignored).

        Args:
            data: array-like, tensor, or ``tf.data.Dataset`` of feature
                values (any shape). Statistics are over all finite values.
        """
        if self.normalization not in _STANDARDIZE:
            raise ValueError(
                "`adapt` needs normalization='standardize' or "
                "'log1p_standardize'. "
                f"Received: normalization={self.normalization}"
            )
        batches = data if isinstance(data, tf.data.Dataset) else [data]
        count, total, total_sq, shift = 0, 0.0, 0.0, None
        for batch in batches:
            values = np.asarray(batch, dtype=np.float64).ravel()
            values = values[np.isfinite(values)]
            if self.normalization in _LOG1P:
                values = signed_log1p(values)
            if values.size:
                # Shift by the first value seen: a one-pass variance of
                # large, close values would otherwise cancel catastrophically.
                shift = values[0] if shift is None else shift
                centred = values - shift
                count += values.size
                total += centred.sum()
                total_sq += np.square(centred).sum()
        if count == 0:
            raise ValueError(
                "`adapt` found no finite values. Received: data with 0 "
                "finite values"
            )
        mean = total / count
        self.mean = float(mean + shift)
        self.variance = float(max(total_sq / count - mean * mean, 0.0))
        if self.built:
            self.adapted_mean.assign(self.mean)
            self.adapted_variance.assign(self.variance)

    def call(self, inputs: Any) -> tf.Tensor:
        dtype = softmax_dtype(self.compute_dtype)
        x = tf.cast(inputs, dtype)
        if x.shape.rank is not None and x.shape.rank >= 2:
            if x.shape[-1] == 1:
                x = tf.squeeze(x, axis=-1)
        finite = tf.math.is_finite(x)
        # Replace missing values before any arithmetic: a NaN that only
        # gets masked at the end still poisons the gradients.
        x = tf.where(finite, x, tf.zeros_like(x))
        if self.normalization in _LOG1P:
            x = tf.sign(x) * tf.math.log1p(tf.abs(x))
        if self.normalization in _STANDARDIZE:
            mean = tf.cast(self.adapted_mean, dtype)
            variance = tf.cast(self.adapted_variance, dtype)
            x = (x - mean) / tf.maximum(tf.sqrt(variance), _EPSILON)
        kernel = tf.cast(self.kernel, dtype)[0]
        bias = tf.cast(self.bias, dtype)
        logits = (x[..., tf.newaxis] * kernel + bias) / self.temperature
        weights = tf.nn.softmax(logits, axis=-1)
        outputs = tf.tensordot(
            weights, tf.cast(self.embeddings, dtype), axes=[[-1], [0]]
        )
        if self.missing_embedding is not None:
            fill = tf.cast(self.missing_embedding, dtype)
        else:
            fill = tf.zeros([self.output_dim], dtype)
        outputs = tf.where(finite[..., tf.newaxis], outputs, fill)
        return tf.cast(outputs, self.compute_dtype)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return mask

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = tuple(tf.TensorShape(input_shape).as_list())
        if len(shape) >= 2 and shape[-1] == 1:
            shape = shape[:-1]
        return shape + (self.output_dim,)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "num_embeddings": self.num_embeddings,
                "output_dim": self.output_dim,
                "normalization": self.normalization,
                "missing": self.missing,
                "temperature": self.temperature,
                "mean": self.mean,
                "variance": self.variance,
                "kernel_initializer": tf.keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": tf.keras.initializers.serialize(
                    self.bias_initializer
                ),
                "embeddings_initializer": tf.keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "missing_initializer": tf.keras.initializers.serialize(
                    self.missing_initializer
                ),
                "embeddings_regularizer": tf.keras.regularizers.serialize(
                    self.embeddings_regularizer
                ),
            }
        )
        return config
