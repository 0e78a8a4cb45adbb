import json

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks import testing
from tfrec_tricks.layers import SoftOneHotEncoding

P, D = 5, 3


def reference(
    x,
    kernel,
    bias,
    embeddings,
    missing_vector,
    temperature=1.0,
    normalization=None,
    mean=0.0,
    variance=1.0,
):
    """softmax((n(x) W + b) / T) E in float64, NaN/inf -> missing_vector."""
    x = np.asarray(x, np.float64)
    finite = np.isfinite(x)
    x = np.where(finite, x, 0.0)
    if normalization in ("log1p", "log1p_standardize"):
        x = np.sign(x) * np.log1p(np.abs(x))
    if normalization in ("standardize", "log1p_standardize"):
        x = (x - mean) / np.sqrt(variance)
    logits = (x[..., None] * kernel.reshape(-1) + bias) / temperature
    logits -= logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    weights /= weights.sum(axis=-1, keepdims=True)
    out = weights @ embeddings
    return np.where(finite[..., None], out, missing_vector)


def random_weights(layer, seed=0):
    """Sets every weight to known random values and returns them by name."""
    rng = np.random.default_rng(seed)
    values = {}
    for weight in layer.weights:
        name = weight.name.split("/")[-1].split(":")[0]
        if weight.trainable:
            value = rng.normal(size=weight.shape).astype("float32")
        else:
            value = weight.numpy()
        weight.assign(value)
        values[name] = value
    return values


SEQUENCE = np.array(
    [[0.0, 1.5, np.nan, -3.0], [250.0, np.inf, 0.1, -np.inf]], "float32"
)


@pytest.mark.parametrize(
    "init_kwargs, data, shape, num_weights",
    [
        ({}, SEQUENCE[:, 0], (2, D), 4),
        ({}, SEQUENCE, (2, 4, D), 4),
        ({"missing": "zeros"}, SEQUENCE[..., None], (2, 4, D), 3),
        (
            {"normalization": "log1p", "temperature": 0.5},
            SEQUENCE,
            (2, 4, D),
            4,
        ),
        (
            {"normalization": "standardize", "mean": 2.0, "variance": 9.0},
            SEQUENCE[..., None],
            (2, 4, D),
            4,
        ),
    ],
)
def test_run_layer_test(init_kwargs, data, shape, num_weights):
    testing.run_layer_test(
        SoftOneHotEncoding,
        {"num_embeddings": P, "output_dim": D, **init_kwargs},
        data,
        expected_output_shape=shape,
        expected_output_dtype="float32",
        expected_num_trainable_weights=num_weights,
    )


@pytest.mark.parametrize(
    "init_kwargs",
    [
        {},
        {"missing": "zeros", "temperature": 0.3},
        {"normalization": "log1p"},
        {"normalization": "standardize", "mean": -1.0, "variance": 4.0},
        {"normalization": "log1p_standardize", "mean": 2.0, "variance": 3.0},
    ],
)
def test_matches_numpy_reference(init_kwargs):
    layer = SoftOneHotEncoding(P, D, **init_kwargs)
    layer.build(SEQUENCE.shape)
    w = random_weights(layer)
    missing = w.get("missing_embedding", np.zeros(D))
    expected = reference(
        SEQUENCE,
        w["kernel"],
        w["bias"],
        w["embeddings"],
        missing,
        temperature=init_kwargs.get("temperature", 1.0),
        normalization=init_kwargs.get("normalization"),
        mean=init_kwargs.get("mean", 0.0),
        variance=init_kwargs.get("variance", 1.0),
    )
    np.testing.assert_allclose(layer(SEQUENCE), expected, atol=1e-5)


def test_all_input_ranks_give_the_same_vectors():
    layer = SoftOneHotEncoding(P, D)
    per_position = layer(SEQUENCE).numpy()
    assert per_position.shape == (2, 4, D)
    np.testing.assert_allclose(layer(SEQUENCE[..., None]), per_position)
    np.testing.assert_allclose(
        layer(SEQUENCE.reshape(-1)), per_position.reshape(-1, D)
    )
    # A trailing dimension of 1 is the scalar axis, also for [B, 1].
    assert layer(SEQUENCE[:, :1]).shape == (2, D)
    assert layer.compute_output_shape((None, 7, 1)) == (None, 7, D)
    assert layer.compute_output_shape((None,)) == (None, D)


@pytest.mark.parametrize("missing", ["learned", "zeros"])
def test_missing_values_and_gradients_are_never_nan(missing):
    layer = SoftOneHotEncoding(P, D, missing=missing, normalization="log1p")
    x = tf.constant(SEQUENCE)
    with tf.GradientTape() as tape:
        tape.watch(x)
        outputs = layer(x)
        loss = tf.reduce_sum(outputs * outputs)
    grads = tape.gradient(loss, [x, *layer.trainable_weights])
    assert np.isfinite(outputs.numpy()).all()
    for grad in grads:
        assert np.isfinite(tf.convert_to_tensor(grad).numpy()).all()
    missing_rows = outputs.numpy()[~np.isfinite(SEQUENCE)]
    if missing == "learned":
        expected = layer.missing_embedding.numpy()
        assert len(layer.trainable_weights) == 4
    else:
        expected = np.zeros(D)
    np.testing.assert_array_equal(missing_rows, np.tile(expected, (3, 1)))


def test_learned_missing_vector_trains_only_from_missing_inputs():
    layer = SoftOneHotEncoding(P, D)
    for data, expect_zero in [([1.0, 2.0], True), ([1.0, np.nan], False)]:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(layer(np.array(data, "float32")))
        grad = tape.gradient(loss, layer.missing_embedding)
        assert (np.abs(grad.numpy()).sum() == 0) == expect_zero


def test_log1p_is_symmetric_and_handles_large_values():
    layer = SoftOneHotEncoding(P, D, normalization="log1p")
    layer.build(None)
    w = random_weights(layer)
    x = np.array([-1e6, -2.0, 0.0, 2.0, 1e6, 3e7], "float32")
    expected = reference(
        x,
        w["kernel"],
        w["bias"],
        w["embeddings"],
        w["missing_embedding"],
        normalization="log1p",
    )
    np.testing.assert_allclose(layer(x), expected, atol=1e-5)


def test_adapt_sets_mean_and_variance():
    rng = np.random.default_rng(1)
    data = rng.normal(5.0, 3.0, size=(300, 7)).astype("float32")
    data[rng.random(data.shape) < 0.1] = np.nan
    layer = SoftOneHotEncoding(P, D, normalization="standardize")
    layer.adapt(data)
    np.testing.assert_allclose(layer.mean, np.nanmean(data), rtol=1e-5)
    np.testing.assert_allclose(layer.variance, np.nanvar(data), rtol=1e-5)

    # A dataset of batches gives the same statistics.
    from_dataset = SoftOneHotEncoding(P, D, normalization="standardize")
    from_dataset.adapt(tf.data.Dataset.from_tensor_slices(data).batch(64))
    np.testing.assert_allclose(from_dataset.mean, layer.mean, rtol=1e-6)
    np.testing.assert_allclose(from_dataset.variance, layer.variance, rtol=1e-6)

    # The statistics are used, and survive both weights and config.
    layer.build(data.shape)
    w = random_weights(layer)
    expected = reference(
        data,
        w["kernel"],
        w["bias"],
        w["embeddings"],
        w["missing_embedding"],
        normalization="standardize",
        mean=np.nanmean(data),
        variance=np.nanvar(data),
    )
    np.testing.assert_allclose(layer(data), expected, atol=1e-4)
    assert layer.adapted_mean.numpy() == pytest.approx(layer.mean)
    config = json.loads(json.dumps(layer.get_config()))
    revived = SoftOneHotEncoding.from_config(config)
    revived.build(None)
    assert revived.adapted_variance.numpy() == pytest.approx(layer.variance)


def test_log1p_standardize_adapts_to_the_log_values():
    gaps = np.array([[np.nan, 300.0, 60.0], [86400.0, 5.0, 0.0]], "float32")
    layer = SoftOneHotEncoding(P, D, normalization="log1p_standardize")
    layer.adapt(gaps)
    logs = np.log1p(gaps[np.isfinite(gaps)].astype(np.float64))
    assert layer.mean == pytest.approx(logs.mean())
    assert layer.variance == pytest.approx(logs.var())
    layer.build(gaps.shape)
    w = random_weights(layer)
    expected = reference(
        gaps,
        w["kernel"],
        w["bias"],
        w["embeddings"],
        w["missing_embedding"],
        normalization="log1p_standardize",
        mean=logs.mean(),
        variance=logs.var(),
    )
    np.testing.assert_allclose(layer(gaps), expected, atol=1e-5)


def test_adapt_after_build_updates_the_weights():
    layer = SoftOneHotEncoding(P, D, normalization="standardize")
    x = np.array([10.0, 12.0], "float32")
    before = layer(x).numpy()  # built with the defaults mean 0, variance 1
    layer.adapt(np.array([9.0, 11.0], "float32"))
    assert layer.adapted_mean.numpy() == pytest.approx(10.0)
    assert layer.adapted_variance.numpy() == pytest.approx(1.0)
    w = {v.name.split("/")[-1].split(":")[0]: v.numpy() for v in layer.weights}
    expected = reference(
        x,
        w["kernel"],
        w["bias"],
        w["embeddings"],
        w["missing_embedding"],
        normalization="standardize",
        mean=10.0,
        variance=1.0,
    )
    np.testing.assert_allclose(layer(x), expected, atol=1e-5)
    assert not np.allclose(before, expected)


def test_mask_is_passed_through():
    x = np.array([[[1.0], [2.0], [0.0]], [[3.0], [0.0], [0.0]]], "float32")
    masked = tf.keras.layers.Masking(mask_value=0.0)(x)
    outputs = SoftOneHotEncoding(P, D)(masked)
    np.testing.assert_array_equal(
        outputs._keras_mask, [[True, True, False], [True, False, False]]
    )
    inputs = tf.keras.Input((3, 1))
    features = SoftOneHotEncoding(P, D)(tf.keras.layers.Masking(0.0)(inputs))
    pooled = tf.keras.layers.GlobalAveragePooling1D()(features)
    model = tf.keras.Model(inputs, pooled)
    assert model(x).shape == (2, D)


def test_mixed_precision_keeps_large_inputs_finite():
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = SoftOneHotEncoding(P, D, temperature=1e-3)
        # 1e6 overflows float16: the layer must not cast its inputs.
        x = np.array([1e6, -1e6, 1.0, np.nan], "float32")
        outputs = layer(x)
        assert outputs.dtype == tf.float16
        assert layer.kernel.dtype == tf.float32
        assert np.isfinite(outputs.numpy()).all()
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)
    full = SoftOneHotEncoding(P, D, temperature=1e-3)
    full.build(None)
    full.set_weights(layer.get_weights())
    np.testing.assert_allclose(outputs, full(x), atol=2e-3)


@pytest.mark.slow
def test_saved_model_in_fresh_process():
    layer = SoftOneHotEncoding(P, D, normalization="log1p")
    served = testing.assert_saved_model_in_fresh_process(layer, SEQUENCE)
    assert np.isfinite(served["output_0"]).all()


@pytest.mark.slow
def test_subclassed_model_trains():
    class Model(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.gap = SoftOneHotEncoding(8, 4, normalization="log1p")
            self.head = tf.keras.layers.Dense(1)

        def call(self, inputs):
            return self.head(tf.reduce_mean(self.gap(inputs), axis=1))

    rng = np.random.default_rng(0)
    x = rng.exponential(100.0, size=(64, 5)).astype("float32")
    x[rng.random(x.shape) < 0.2] = np.nan
    y = (np.nan_to_num(x).mean(axis=1) > 100).astype("float32")
    model = Model()
    model.compile(optimizer="adam", loss="mse")
    history = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_embeddings": 0}, "num_embeddings=0"),
        ({"output_dim": -2}, "output_dim=-2"),
        ({"temperature": 0.0}, "temperature=0.0"),
        ({"normalization": "log"}, "normalization=log"),
        ({"missing": "mean"}, "missing=mean"),
        ({"normalization": "standardize", "mean": 1.0}, "variance=None"),
        ({"mean": 1.0, "variance": 1.0}, "normalization=None"),
        (
            {"normalization": "standardize", "mean": 0.0, "variance": -1.0},
            "variance=-1.0",
        ),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SoftOneHotEncoding(**{"num_embeddings": P, "output_dim": D, **kwargs})


def test_adapt_needs_standardize_and_finite_data():
    with pytest.raises(ValueError, match="normalization=None"):
        SoftOneHotEncoding(P, D).adapt(np.ones(3))
    layer = SoftOneHotEncoding(P, D, normalization="standardize")
    with pytest.raises(ValueError, match="0 finite values"):
        layer.adapt(np.array([np.nan, np.inf]))
