"""Tests of CategoricalFeatureEmbedding against a NumPy reference."""

import json

import numpy as np
import pytest
import tensorflow as tf

import tfrec_tricks.features
from tfrec_tricks import testing
from tfrec_tricks.features import CategoricalFeatureEmbedding

VOCABULARY, D = 7, 3
# Rows of V = 3 values: several ids, an out-of-vocabulary id (1), a
# repeated id, a row of padding only.
IDS = np.array([[2, 5, 0], [1, 0, 0], [0, 0, 0], [6, 6, 3]], "int32")


def reference(ids, table):
    """Mean of ``table[id]`` over the non-zero ids of each row (float64);
    zeros for a row without any."""
    ids = np.asarray(ids)
    vectors = np.asarray(table, np.float64)[ids]
    valid = (ids != 0)[..., None]
    count = valid.sum(axis=-2)
    total = (vectors * valid).sum(axis=-2)
    return np.where(count > 0, total / np.maximum(count, 1), 0.0)


def random_table(layer, seed=0):
    layer.build(None)
    table = np.random.default_rng(seed).normal(size=layer.embeddings.shape)
    layer.embeddings.assign(table.astype("float32"))
    return table.astype("float32")


@pytest.mark.parametrize(
    "data, shape",
    [
        (IDS, (4, D)),
        (IDS[:, :1], (4, D)),  # a single-valued column: V = 1
        (np.stack([IDS, IDS[::-1]]), (2, 4, D)),
        (IDS.astype("int64"), (4, D)),
    ],
)
def test_run_layer_test(data, shape):
    testing.run_layer_test(
        CategoricalFeatureEmbedding,
        {"vocabulary_size": VOCABULARY, "output_dim": D},
        data,
        expected_output_shape=shape,
        expected_output_dtype="float32",
        expected_num_trainable_weights=1,
    )


@pytest.mark.parametrize("data", [IDS, IDS[:, :1], np.stack([IDS, IDS])])
def test_matches_numpy_reference(data):
    layer = CategoricalFeatureEmbedding(VOCABULARY, D)
    table = random_table(layer)
    outputs = layer(data).numpy()
    np.testing.assert_allclose(outputs, reference(data, table), atol=1e-6)
    assert np.isfinite(outputs).all()


def test_padding_is_masked_and_an_empty_row_is_zeros():
    layer = CategoricalFeatureEmbedding(VOCABULARY, D)
    table = random_table(layer, seed=3)
    outputs = layer(IDS).numpy()
    np.testing.assert_allclose(outputs[0], (table[2] + table[5]) / 2, 1e-6)
    np.testing.assert_allclose(outputs[1], table[1], atol=1e-6)
    np.testing.assert_array_equal(outputs[2], np.zeros(D))
    np.testing.assert_allclose(
        outputs[3], (2 * table[6] + table[3]) / 3, atol=1e-6
    )
    # Padding after the ids or before them gives the same vector.
    np.testing.assert_allclose(
        layer(np.array([[0, 2, 5]])), outputs[:1], atol=1e-6
    )


def test_gradients_skip_padding_and_are_finite():
    layer = CategoricalFeatureEmbedding(VOCABULARY, D)
    random_table(layer)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(IDS))
    grad = tf.convert_to_tensor(tape.gradient(loss, layer.embeddings))
    grad = grad.numpy()
    assert np.isfinite(grad).all()
    np.testing.assert_array_equal(grad[0], np.zeros(D))  # padding
    np.testing.assert_array_equal(grad[4], np.zeros(D))  # unused id
    # Each id's gradient is its weight in its rows' means.
    np.testing.assert_allclose(grad[2], np.full(D, 0.5), atol=1e-6)
    np.testing.assert_allclose(grad[6], np.full(D, 2 / 3), atol=1e-6)
    np.testing.assert_allclose(grad[1], np.ones(D), atol=1e-6)


def test_a_training_step_moves_the_used_rows():
    layer = CategoricalFeatureEmbedding(VOCABULARY, D)
    before = random_table(layer)
    optimizer = tf.keras.optimizers.SGD(0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(layer(IDS) - 1.0))
    grads = tape.gradient(loss, layer.trainable_weights)
    optimizer.apply_gradients(zip(grads, layer.trainable_weights))
    moved = np.abs(layer.embeddings.numpy() - before).sum(axis=1) > 0
    np.testing.assert_array_equal(moved, [0, 1, 1, 1, 0, 1, 1])


def test_default_initializer_matches_the_item_table():
    layer = CategoricalFeatureEmbedding(VOCABULARY, D)
    config = layer.get_config()
    json.dumps(config)
    initializer = config["embeddings_initializer"]
    assert initializer["class_name"] == "RandomNormal"
    assert initializer["config"]["stddev"] == pytest.approx(0.02)
    revived = CategoricalFeatureEmbedding.from_config(config)
    assert revived.get_config() == config
    custom = CategoricalFeatureEmbedding(
        VOCABULARY, D, embeddings_initializer="zeros"
    )
    np.testing.assert_array_equal(custom(IDS), np.zeros((4, D)))


def test_output_shape_and_mixed_precision():
    layer = CategoricalFeatureEmbedding(VOCABULARY, D)
    assert layer.compute_output_shape((None, 5, 3)) == (None, 5, D)
    assert layer.compute_output_shape((8, 1)) == (8, D)
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = CategoricalFeatureEmbedding(VOCABULARY, D)
        outputs = mixed(IDS)
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)
    assert outputs.dtype == tf.float16
    assert mixed.embeddings.dtype == tf.float32
    expected = reference(IDS, mixed.embeddings.numpy())
    np.testing.assert_allclose(outputs, expected, atol=1e-3)


def test_public_path():
    assert (
        tfrec_tricks.features.CategoricalFeatureEmbedding
        is CategoricalFeatureEmbedding
    )
    config = tf.keras.utils.serialize_keras_object(
        CategoricalFeatureEmbedding(VOCABULARY, D)
    )
    assert "tfrec_tricks>CategoricalFeatureEmbedding" in json.dumps(config)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"vocabulary_size": 1}, "vocabulary_size=1"),
        ({"vocabulary_size": 3.0}, "vocabulary_size=3.0"),
        ({"vocabulary_size": True}, "vocabulary_size=True"),
        ({"output_dim": 0}, "output_dim=0"),
        ({"output_dim": "8"}, "output_dim='8'"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CategoricalFeatureEmbedding(
            **{"vocabulary_size": VOCABULARY, "output_dim": D, **kwargs}
        )
