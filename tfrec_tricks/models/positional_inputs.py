"""The parts SASRec's and HSTU's encoders share: argument checks, the
input projection and the learned positions."""

from typing import Any

import tensorflow as tf


def check_encoder_arguments(**values: Any) -> None:
    """Raises for a size that is not positive (None allowed for an optional
    size), ``num_heads`` not dividing ``hidden_dim``, or a dropout outside
    [0, 1), naming the first bad argument.

    Args:
        **values: ``hidden_dim``, ``max_len``, ``num_layers``,
            ``num_heads``, ``dropout`` and ``attention_dropout``; other
            names are optional sizes (positive or None).

    Raises:
        ValueError: naming the argument and the value received.
    """
    hidden_dim = values["hidden_dim"]
    rules = {
        "hidden_dim": hidden_dim > 0,
        "max_len": values["max_len"] > 0,
        "num_layers": values["num_layers"] > 0,
        "num_heads": values["num_heads"] > 0
        and hidden_dim % values["num_heads"] == 0,
        "dropout": 0 <= values["dropout"] < 1,
        "attention_dropout": 0 <= values["attention_dropout"] < 1,
    }
    for name, value in values.items():
        if name not in rules:
            rules[name] = value is None or value > 0
    for name, ok in rules.items():
        if not ok:
            raise ValueError(
                "Expected positive sizes, num_heads dividing hidden_dim "
                f"and dropouts in [0, 1). Received: {name}={values[name]!r}"
            )


def build_positional_inputs(
    layer: tf.keras.layers.Layer, input_dim: int
) -> None:
    """Creates ``layer.input_projection`` (a Dense to ``layer.hidden_dim``
    when the inputs' size differs, else None) and ``layer.positions``, the
    ``[max_len, hidden_dim]`` learned positional table."""
    layer.input_projection = None
    if input_dim != layer.hidden_dim:
        layer.input_projection = tf.keras.layers.Dense(
            layer.hidden_dim, dtype=layer.dtype_policy, name="input_projection"
        )
    layer.positions = layer.add_weight(
        name="position_embeddings",
        shape=(layer.max_len, layer.hidden_dim),
        initializer=tf.keras.initializers.TruncatedNormal(stddev=0.02),
    )


def positional_inputs(layer: tf.keras.layers.Layer, inputs: Any) -> tuple:
    """``(x, positions)``: the inputs projected to the layer's width, and
    the first ``L`` rows of its positional table, ``[L, hidden_dim]``.

    Raises:
        tf.errors.InvalidArgumentError: for inputs longer than ``max_len``.
    """
    x = inputs
    if layer.input_projection is not None:
        x = layer.input_projection(x)
    length = tf.shape(x)[1]
    check = tf.debugging.assert_less_equal(
        length,
        layer.max_len,
        message=f"{type(layer).__name__} reads at most "
        f"max_len={layer.max_len} positions",
    )
    with tf.control_dependencies([check]):
        length = tf.identity(length)
    return x, tf.cast(layer.positions[:length], x.dtype)
