"""Tests of FeatureFusion against a NumPy reference."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks import testing
from tfrec_tricks.features import FUSION_MODES, FeatureFusion

RNG = np.random.default_rng(0)
ID_ROWS = RNG.normal(size=(5, 4)).astype("float32")
GENRES = RNG.normal(size=(5, 4)).astype("float32")
PRICE = RNG.normal(size=(5, 4)).astype("float32")
SMALL = RNG.normal(size=(5, 2)).astype("float32")


def reference(mode, inputs, kernel=None, bias=None):
    """``[x_0; ...; x_k] W + b`` or ``x_0 + ... + x_k`` in float64."""
    inputs = [np.asarray(x, np.float64) for x in inputs]
    if mode == "sum":
        return np.sum(inputs, axis=0)
    return np.concatenate(inputs, axis=-1) @ kernel + bias


def random_projection(layer, seed=1):
    rng = np.random.default_rng(seed)
    kernel, bias = (
        rng.normal(size=w.shape).astype("float32")
        for w in layer.projection.weights
    )
    layer.projection.set_weights([kernel, bias])
    return kernel, bias


def test_modes():
    assert FUSION_MODES == ("concat", "sum")


@pytest.mark.parametrize(
    "init_kwargs, data, shape, num_weights",
    [
        ({}, [ID_ROWS, GENRES, SMALL], (5, 4), 2),
        ({"output_dim": 6}, [ID_ROWS, SMALL], (5, 6), 2),
        ({"mode": "sum"}, [ID_ROWS, GENRES, PRICE], (5, 4), 0),
        ({"mode": "sum", "output_dim": 4}, [ID_ROWS, GENRES], (5, 4), 0),
        ({}, [ID_ROWS], (5, 4), 2),
        (
            {"output_dim": 3},
            [np.stack([ID_ROWS, GENRES]), np.stack([SMALL, SMALL])],
            (2, 5, 3),
            2,
        ),
    ],
)
def test_run_layer_test(init_kwargs, data, shape, num_weights):
    testing.run_layer_test(
        FeatureFusion,
        init_kwargs,
        data,
        expected_output_shape=shape,
        expected_output_dtype="float32",
        expected_num_trainable_weights=num_weights,
    )


@pytest.mark.parametrize("output_dim", [None, 3])
def test_concat_matches_numpy_reference(output_dim):
    layer = FeatureFusion("concat", output_dim=output_dim)
    inputs = [ID_ROWS, GENRES, SMALL]
    layer.build([x.shape for x in inputs])
    kernel, bias = random_projection(layer)
    assert kernel.shape == (10, output_dim or 4)
    np.testing.assert_allclose(
        layer(inputs), reference("concat", inputs, kernel, bias), atol=1e-5
    )
    # The order of the inputs matters: the id embedding is first.
    swapped = layer([GENRES, ID_ROWS, SMALL]).numpy()
    assert not np.allclose(swapped, layer(inputs).numpy())


def test_sum_matches_numpy_reference():
    layer = FeatureFusion("sum")
    inputs = [ID_ROWS, GENRES, PRICE]
    np.testing.assert_allclose(
        layer(inputs), reference("sum", inputs), atol=1e-6
    )
    assert not layer.weights


def test_a_training_step_moves_the_projection():
    layer = FeatureFusion("concat")
    inputs = [ID_ROWS, GENRES]
    layer(inputs)
    before = [w.numpy().copy() for w in layer.trainable_weights]
    optimizer = tf.keras.optimizers.SGD(0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(layer(inputs)))
    grads = tape.gradient(loss, layer.trainable_weights)
    optimizer.apply_gradients(zip(grads, layer.trainable_weights))
    for old, new in zip(before, layer.trainable_weights):
        assert not np.allclose(old, new.numpy())


def test_gradients_reach_every_input():
    inputs = [tf.constant(x) for x in (ID_ROWS, GENRES, SMALL)]
    for layer in (FeatureFusion("concat"), FeatureFusion("sum")):
        used = inputs if layer.mode == "concat" else inputs[:2]
        with tf.GradientTape() as tape:
            tape.watch(used)
            loss = tf.reduce_sum(layer(used))
        for grad in tape.gradient(loss, used):
            assert grad is not None and np.abs(grad.numpy()).sum() > 0


def test_output_shape():
    assert FeatureFusion("concat", 7).compute_output_shape(
        [(None, 4), (None, 2)]
    ) == (None, 7)
    assert FeatureFusion("concat").compute_output_shape(
        [(None, 4), (None, 2)]
    ) == (None, 4)
    assert FeatureFusion("sum").compute_output_shape(
        [(3, 5, 4), (3, 5, 4)]
    ) == (3, 5, 4)


def test_mixed_precision_output_dtype():
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        for mode in FUSION_MODES:
            outputs = FeatureFusion(mode)([ID_ROWS, GENRES])
            assert outputs.dtype == tf.float16
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"mode": "mean"}, r"mode='mean'"),
        ({"mode": "mean"}, r"\('concat', 'sum'\)"),
        ({"output_dim": 0}, "output_dim=0"),
        ({"output_dim": 2.5}, "output_dim=2.5"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FeatureFusion(**kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"sizes=\[4, 2\]"):
        FeatureFusion("sum")([ID_ROWS, SMALL])
    with pytest.raises(ValueError, match="output_dim=3"):
        FeatureFusion("sum", output_dim=3)([ID_ROWS, GENRES])
    with pytest.raises(ValueError, match="list of tensors"):
        FeatureFusion("concat")(ID_ROWS)
    with pytest.raises(ValueError, match="list of tensors"):
        FeatureFusion("sum").build((None, 4))
