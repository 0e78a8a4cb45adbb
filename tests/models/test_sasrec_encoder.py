"""SASRecEncoder: causality, shapes and the standard layer checks."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.models import SASRecEncoder
from tfrec_tricks.testing import run_layer_test


def test_standard_layer_checks():
    run_layer_test(
        SASRecEncoder,
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


def test_longer_inputs_than_max_len_are_an_error():
    encoder = SASRecEncoder(hidden_dim=8, max_len=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_len=4"):
        encoder(tf.random.normal((2, 5, 8)))


def test_docstring_example():
    import doctest

    import tfrec_tricks.models.sasrec_encoder as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
