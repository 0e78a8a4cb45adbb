"""SASRecEncoder: causality, shapes and the standard layer checks."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.models import SASRecEncoder
from tfrec_tricks.testing import run_layer_test


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_standard_layer_checks(norm):
    run_layer_test(
        SASRecEncoder,
        {
            "hidden_dim": 8,
            "max_len": 6,
            "num_layers": 2,
            "num_heads": 2,
            "dropout": 0.1,
            "attention_dropout": 0.1,
            "norm": norm,
        },
        tf.random.normal((3, 5, 8)),
        expected_output_shape=[(3, 5, 8), (3, 5, 8)],
        run_mixed_precision=False,
    )


def pre_norm_reference(encoder, x):
    """The paper's block by hand, from the encoder's weights (no dropout)."""

    def norm(layer, v):
        mean, variance = tf.nn.moments(v, axes=[-1], keepdims=True)
        return (v - mean) / tf.sqrt(variance + 1e-12) * layer.gamma + layer.beta

    length = x.shape[1]
    x = x * 8**0.5 + encoder.positions[:length][None]
    states = []
    for block in encoder.blocks:
        query = norm(block["attention_norm"], x)
        x = query + block["attention"](query, x, use_causal_mask=True)
        y = norm(block["ffn_norm"], x)
        inner = tf.nn.relu(y @ block["inner"].kernel + block["inner"].bias)
        x = y + inner @ block["outer"].kernel + block["outer"].bias
        states.append(x)
    states[-1] = norm(encoder.final_norm, states[-1])
    return states


def test_pre_norm_blocks_are_the_papers():
    encoder = SASRecEncoder(hidden_dim=8, max_len=6, num_layers=2, norm="pre")
    x = tf.random.normal((2, 5, 8))
    got = encoder(x)
    for state, expected in zip(got, pre_norm_reference(encoder, x)):
        np.testing.assert_allclose(state, expected, atol=1e-4)
    assert not hasattr(encoder, "input_norm")


def test_pre_norm_blocks_are_causal():
    encoder = SASRecEncoder(hidden_dim=8, max_len=6, num_layers=2, norm="pre")
    x = tf.random.normal((2, 6, 8))
    changed = tf.concat([x[:, :3], tf.random.normal((2, 3, 8))], axis=1)
    np.testing.assert_allclose(
        encoder(x)[-1][:, :3], encoder(changed)[-1][:, :3], atol=1e-5
    )


def test_input_projection_when_sizes_differ():
    states = SASRecEncoder(hidden_dim=6, max_len=4, num_heads=3)(
        tf.random.normal((2, 4, 8))
    )
    assert states[-1].shape == (2, 4, 6)


def test_causal_later_positions_do_not_change_earlier_states():
    encoder = SASRecEncoder(hidden_dim=8, max_len=6, num_layers=2)
    x = tf.random.normal((2, 6, 8))
    changed = tf.concat([x[:, :3], tf.random.normal((2, 3, 8))], axis=1)
    first = encoder(x)[-1][:, :3]
    second = encoder(changed)[-1][:, :3]
    np.testing.assert_allclose(first, second, atol=1e-5)


def test_shorter_inputs_read_the_first_positions():
    encoder = SASRecEncoder(hidden_dim=8, max_len=6)
    x = tf.random.normal((2, 6, 8))
    np.testing.assert_allclose(
        encoder(x[:, :4])[-1], encoder(x)[-1][:, :4], atol=1e-5
    )


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_heads"):
        SASRecEncoder(hidden_dim=8, max_len=4, num_heads=3)
    with pytest.raises(ValueError, match="dropout"):
        SASRecEncoder(hidden_dim=8, max_len=4, dropout=1.0)
    with pytest.raises(ValueError, match="Received: norm='mid'"):
        SASRecEncoder(hidden_dim=8, max_len=4, norm="mid")


def test_longer_inputs_than_max_len_are_an_error():
    encoder = SASRecEncoder(hidden_dim=8, max_len=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_len=4"):
        encoder(tf.random.normal((2, 5, 8)))


def test_docstring_example():
    import doctest

    import tfrec_tricks.models.sasrec_encoder as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_attention_kernels_start_as_tf_keras_draws_them():
    # tf-keras counts a 3-D kernel's fans as a convolution's (the first axis
    # a receptive field); Keras 3's EinsumDense counts the einsum's axes and
    # would draw the query, key and value kernels 4x wider. The encoder
    # names tf-keras' fans, so SASRec starts alike under either Keras.
    tf.keras.utils.set_random_seed(0)
    encoder = SASRecEncoder(hidden_dim=64, max_len=5, num_heads=2)
    encoder(tf.zeros((1, 5, 64)))
    attention = encoder.blocks[0]["attention"]

    def glorot_std(fan_in, fan_out):
        return (2.0 / (fan_in + fan_out)) ** 0.5

    expected = {  # [d, heads, head_dim] in, [heads, head_dim, d] out
        "query": glorot_std(64 * 2, 64 * 32),
        "key": glorot_std(64 * 2, 64 * 32),
        "value": glorot_std(64 * 2, 64 * 32),
        "attention_output": glorot_std(2 * 32, 2 * 64),
    }
    dense = {
        "query": attention._query_dense,
        "key": attention._key_dense,
        "value": attention._value_dense,
        "attention_output": attention._output_dense,
    }
    for name, std in expected.items():
        kernel = dense[name].kernel.numpy()
        assert np.std(kernel) == pytest.approx(std, rel=0.1), name
