"""HSTUEncoder: the paper's block, causality, shapes and the layer checks."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.models import HSTUEncoder
from tfrec_tricks.testing import run_layer_test


def test_standard_layer_checks():
    run_layer_test(
        HSTUEncoder,
        {
            "hidden_dim": 8,
            "max_len": 6,
            "num_layers": 2,
            "num_heads": 2,
            "dropout": 0.1,
            "attention_dropout": 0.1,
        },
        tf.random.normal((3, 5, 8)),
        expected_output_shape=[(3, 5, 8), (3, 5, 8)],
        run_mixed_precision=False,
    )


def hstu_reference(encoder, x):
    """The paper's blocks by hand, one position and head at a time."""

    def norm(layer, v):
        mean, variance = (
            np.mean(v, -1, keepdims=True),
            np.var(v, -1, keepdims=True),
        )
        return (v - mean) / np.sqrt(variance + 1e-6) * layer.gamma + layer.beta

    def silu(v):
        return v / (1 + np.exp(-v))

    x = np.asarray(x, np.float64)
    length, width = x.shape[1], encoder.hidden_dim
    heads, size = encoder.num_heads, width // encoder.num_heads
    x = x * width**0.5 + np.asarray(encoder.positions)[:length][None]
    states = []
    for block in encoder.blocks:
        uvqk = silu(
            norm(block["input_norm"], x) @ block["uvqk"].kernel.numpy()
            + block["uvqk"].bias.numpy()
        )
        u, v, q, k = np.split(uvqk, 4, -1)
        bias = block["relative_bias"].numpy()
        attended = np.zeros_like(v)
        for i in range(length):
            for h in range(heads):
                part = slice(h * size, (h + 1) * size)
                for j in range(i + 1):
                    weight = silu(
                        np.sum(q[:, i, part] * k[:, j, part], -1) + bias[i - j]
                    )
                    attended[:, i, part] += (
                        weight[:, None] * v[:, j, part] / encoder.max_len
                    )
        gated = norm(block["output_norm"], attended) * u
        x = (
            x
            + gated @ block["output"].kernel.numpy()
            + block["output"].bias.numpy()
        )
        states.append(x)
    states[-1] = norm(encoder.final_norm, states[-1])
    return states


def test_blocks_are_the_papers():
    encoder = HSTUEncoder(hidden_dim=8, max_len=6, num_layers=2, num_heads=2)
    x = tf.random.normal((2, 5, 8))
    encoder(x)
    for block in encoder.blocks:  # a bias that is not all zeros
        block["relative_bias"].assign(tf.random.normal((6,)))
    got = encoder(x)
    for state, expected in zip(got, hstu_reference(encoder, x)):
        np.testing.assert_allclose(state, expected, atol=1e-4)


def test_causal_later_positions_do_not_change_earlier_states():
    encoder = HSTUEncoder(hidden_dim=8, max_len=6, num_layers=2)
    x = tf.random.normal((2, 6, 8))
    changed = tf.concat([x[:, :3], tf.random.normal((2, 3, 8))], axis=1)
    np.testing.assert_allclose(
        encoder(x)[-1][:, :3], encoder(changed)[-1][:, :3], atol=1e-5
    )


def test_shorter_inputs_give_the_same_states():
    # The weights are divided by max_len, not by the batch's length.
    encoder = HSTUEncoder(hidden_dim=8, max_len=6)
    x = tf.random.normal((2, 6, 8))
    np.testing.assert_allclose(
        encoder(x[:, :4])[-1], encoder(x)[-1][:, :4], atol=1e-5
    )


def test_input_projection_when_sizes_differ():
    states = HSTUEncoder(hidden_dim=6, max_len=4, num_heads=3)(
        tf.random.normal((2, 4, 8))
    )
    assert states[-1].shape == (2, 4, 6)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Received: num_heads=3"):
        HSTUEncoder(hidden_dim=8, max_len=4, num_heads=3)
    with pytest.raises(ValueError, match="Received: attention_dropout=1.0"):
        HSTUEncoder(hidden_dim=8, max_len=4, attention_dropout=1.0)


def test_longer_inputs_than_max_len_are_an_error():
    encoder = HSTUEncoder(hidden_dim=8, max_len=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_len=4"):
        encoder(tf.random.normal((2, 5, 8)))


def test_docstring_example():
    import doctest

    import tfrec_tricks.models.hstu_encoder as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
