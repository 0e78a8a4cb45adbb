"""GRU4RecEncoder: the standard layer checks, a hand-run GRU stack, bad
arguments and the ModelConfig constructor."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.models import ModelConfig
from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder
from tfrec_tricks.testing import run_layer_test


def test_standard_layer_checks():
    run_layer_test(
        GRU4RecEncoder,
        {"hidden_dim": 6, "num_layers": 2, "dropout": 0.1},
        tf.random.normal((3, 5, 4)),
        expected_output_shape=[(3, 5, 6), (3, 5, 6)],
        run_mixed_precision=False,
    )


def test_states_are_each_gru_layer_run_in_turn():
    encoder = GRU4RecEncoder(5, num_layers=2)
    x = tf.random.stateless_normal((2, 4, 3), seed=(1, 2))
    states = encoder(x)
    reference = x
    for gru, state in zip(encoder.grus, states):
        reference = gru(reference)
        np.testing.assert_allclose(state, reference, rtol=1e-6, atol=1e-6)
    # Causal: changing the last step changes no earlier state.
    changed = tf.concat([x[:, :-1], x[:, -1:] + 1.0], axis=1)
    np.testing.assert_allclose(
        encoder(changed)[-1][:, :-1], states[-1][:, :-1], atol=1e-6
    )


@pytest.mark.parametrize(
    "arguments",
    [
        {"hidden_dim": 0},
        {"hidden_dim": 4, "num_layers": 0},
        {"hidden_dim": 4, "dropout": 1.0},
        {"hidden_dim": 4, "dropout": -0.1},
    ],
)
def test_bad_arguments_are_refused(arguments):
    with pytest.raises(ValueError, match="Received: hidden_dim="):
        GRU4RecEncoder(**arguments)


def test_from_model_config_takes_the_layers_and_no_dropout():
    config = ModelConfig(num_items=10, num_layers=3, dropout=0.3)
    encoder = GRU4RecEncoder.from_model_config(config, 7, name="enc")
    assert (encoder.hidden_dim, encoder.num_layers, encoder.dropout) == (
        7,
        3,
        0.0,
    )
    assert encoder.name == "enc"
