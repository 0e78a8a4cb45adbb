"""Small pieces the layers share."""

import numbers
from typing import Any

import tensorflow as tf

# Logit given to ids that must never win (padding id 0; history items of
# "softmax without duplication"): finite in float32, so 0 * logit stays 0
# in a loss, yet exp() of it is exactly 0.
PADDING_LOGIT = -1e9


def is_integer(value: Any) -> bool:
    """Python and NumPy integers; bool is an int subclass but a mistake."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def softmax_dtype(compute_dtype: Any) -> tf.DType:
    """The dtype for softmax-related math: float32 under mixed precision.

    float16 / bfloat16 compute dtypes get float32; float32 and float64 stay.
    """
    dtype = tf.as_dtype(compute_dtype)
    if dtype in (tf.float16, tf.bfloat16):
        return tf.float32
    return dtype


def dense_projection(
    owner: tf.keras.layers.Layer, name: str, units: int, input_dim: int
) -> tf.keras.layers.Dense:
    """A built Dense sublayer with ``owner``'s initializers and dtype policy.

    Each projection gets fresh initializer objects (seeded initializers
    would otherwise give every projection the same weights).
    """
    layer = tf.keras.layers.Dense(
        units,
        kernel_initializer=tf.keras.initializers.get(
            tf.keras.initializers.serialize(owner.kernel_initializer)
        ),
        bias_initializer=tf.keras.initializers.get(
            tf.keras.initializers.serialize(owner.bias_initializer)
        ),
        dtype=owner.dtype_policy,
        name=name,
    )
    layer.build((None, input_dim))
    return layer
