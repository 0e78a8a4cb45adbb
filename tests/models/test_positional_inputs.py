"""positional_inputs: the encoders' argument checks, projection and
learned positions."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.models.positional_inputs import (
    build_positional_inputs,
    check_encoder_arguments,
    positional_inputs,
)

GOOD = {
    "hidden_dim": 8,
    "max_len": 5,
    "num_layers": 1,
    "num_heads": 2,
    "dropout": 0.0,
    "attention_dropout": 0.5,
}


def test_good_arguments_pass():
    check_encoder_arguments(**GOOD, ffn_dim=None, qk_dim=4)


@pytest.mark.parametrize(
    "name, value",
    [
        ("hidden_dim", 0),
        ("max_len", -1),
        ("num_layers", 0),
        ("num_heads", 3),  # does not divide 8
        ("dropout", 1.0),
        ("attention_dropout", -0.1),
        ("ffn_dim", 0),
    ],
)
def test_the_bad_argument_is_named(name, value):
    with pytest.raises(ValueError, match=f"Received: {name}={value!r}"):
        check_encoder_arguments(**{**GOOD, name: value})


class _Positional(tf.keras.layers.Layer):
    hidden_dim = 4
    max_len = 3

    def build(self, input_shape):
        build_positional_inputs(self, input_shape[-1])

    def call(self, inputs):
        return positional_inputs(self, inputs)


@pytest.mark.parametrize("width, projected", [(4, False), (6, True)])
def test_inputs_are_projected_only_to_change_their_width(width, projected):
    layer = _Positional()
    inputs = tf.random.normal((2, 2, width))
    x, positions = layer(inputs)
    assert (layer.input_projection is not None) == projected
    expected = layer.input_projection(inputs) if projected else inputs
    np.testing.assert_allclose(x, expected, rtol=1e-6)
    np.testing.assert_array_equal(positions, layer.positions.numpy()[:2])


def test_inputs_longer_than_max_len_are_refused():
    layer = _Positional()
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_len=3"):
        layer(tf.zeros((1, 4, 4)))
