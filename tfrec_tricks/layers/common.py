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
    owner: tf.keras.layers.Layer,
    name: str,
    units: int,
    input_dim: int,
    kernel_initializer: Any = None,
) -> tf.keras.layers.Dense:
    """A built Dense sublayer with ``owner``'s initializers and dtype policy.

    Each projection gets fresh initializer objects (seeded initializers
    would otherwise give every projection the same weights).
    ``kernel_initializer``, if given, replaces the owner's for this one.
    """
    layer = tf.keras.layers.Dense(
        units,
        kernel_initializer=tf.keras.initializers.get(
            kernel_initializer
            or tf.keras.initializers.serialize(owner.kernel_initializer)
        ),
        bias_initializer=tf.keras.initializers.get(
            tf.keras.initializers.serialize(owner.bias_initializer)
        ),
        dtype=owner.dtype_policy,
        name=name,
    )
    layer.build((None, input_dim))
    return layer


def check_head_arguments(dropout: Any, output_dim: Any) -> None:
    """The output heads' shared argument checks (ValueError on bad values)."""
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(
            f"`dropout` must be in [0, 1). Received: dropout={dropout!r}"
        )
    if output_dim is not None and (
        isinstance(output_dim, bool)
        or not isinstance(output_dim, int)
        or output_dim < 1
    ):
        raise ValueError(
            "`output_dim` must be a positive int or None. "
            f"Received: output_dim={output_dim!r}"
        )
