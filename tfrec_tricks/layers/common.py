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
