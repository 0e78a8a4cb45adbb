"""Tests of MixtureOfSoftmax against a NumPy reference."""

import json

import numpy as np
import pytest
import tensorflow as tf

import tfrec_tricks.heads
from tests.heads.head_inputs import (
    HISTORY,
    D,
    L,
    N,
    call_head,
    head_data,
    head_inputs,
)
from tfrec_tricks import testing
from tfrec_tricks.heads import MixtureOfSoftmax, SoftmaxCPR

NEG = -1e9
K = 3


@pytest.fixture(autouse=True)
def _seeded():
    # Layer weights come from unseeded initializers: fix them per test.
    tf.keras.utils.set_random_seed(1234)


def _proj(dense, x):
    kernel, bias = (w.astype("float64") for w in dense.get_weights())
    return x @ kernel + bias


def reference(layer, data, use_bias=True):
    """log sum_k pi_k softmax(tanh(W_k h) E^T + b), padding excluded."""
    table = data["table"].astype("float64")
    bias = data["bias"].astype("float64") if use_bias else np.zeros(N)
    out = np.zeros((3, N))
    for i, ids in enumerate(data["ids"]):
        real = [t for t in range(L) if ids[t] != 0]
        # An empty row reads position 0 (input_contract.last_positions).
        h = data["hidden"][i, real[-1] if real else 0].astype("float64")
        prior = np.exp(_proj(layer.prior_projection, h))
        prior /= prior.sum()
        queries = np.tanh(_proj(layer.component_projection, h))
        queries = queries.reshape(layer.num_components, D)
        probs = np.zeros(N)
        for k in range(layer.num_components):
            logits = table @ queries[k] + bias
            if layer.mask_padding:
                logits[0] = -np.inf
            p = np.exp(logits - logits.max())
            probs += prior[k] * p / p.sum()
        with np.errstate(divide="ignore"):
            out[i] = np.log(probs)
        if layer.mask_padding:
            out[i, 0] = NEG
    return out


@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("mask_padding", [True, False])
def test_matches_numpy_reference(use_bias, mask_padding):
    data = head_data(seed=1)
    layer = MixtureOfSoftmax(K, mask_padding=mask_padding)
    log_probs = call_head(layer, data, use_bias=use_bias)
    assert log_probs.dtype == tf.float32 and log_probs.shape == (3, N)
    expected = reference(layer, data, use_bias=use_bias)
    np.testing.assert_allclose(
        log_probs.numpy(), expected, rtol=1e-5, atol=1e-5
    )
    # Log-probabilities: they normalise, so logsumexp is 0.
    np.testing.assert_allclose(
        tf.reduce_logsumexp(log_probs, axis=-1).numpy(), 0.0, atol=1e-5
    )


def test_one_component_is_a_plain_softmax_of_tanh_query():
    data = head_data(seed=2)
    layer = MixtureOfSoftmax(1)
    log_probs = call_head(layer, data).numpy()
    np.testing.assert_allclose(log_probs, reference(layer, data), atol=1e-5)


def test_candidate_scores_equal_full_log_probs():
    data = head_data(seed=3)
    layer = MixtureOfSoftmax(K)
    full = call_head(layer, data).numpy()
    shared = np.array([0, 3, 7, 3], "int32")
    np.testing.assert_array_equal(
        call_head(layer, data, candidate_ids=tf.constant(shared)).numpy(),
        full[:, shared],
    )
    per_example = np.array([[1, 2], [3, 0], [10, 9]], "int32")
    np.testing.assert_array_equal(
        call_head(layer, data, candidate_ids=tf.constant(per_example)).numpy(),
        np.take_along_axis(full, per_example, axis=1),
    )


def test_score_candidates_equal_full_log_probs():
    data = head_data(seed=3)
    layer = MixtureOfSoftmax(K, dropout=0.2)
    # A direct first use builds the layer.
    per_example = np.array([[1, 2, 2], [3, 0, 10], [10, 9, 4]], "int32")
    scores = layer.score_candidates(
        head_inputs(data),
        tf.constant(data["table"]),
        per_example,
        item_bias=tf.constant(data["bias"]),
    ).numpy()
    full = call_head(layer, data).numpy()
    np.testing.assert_array_equal(
        scores, np.take_along_axis(full, per_example, axis=1)
    )
    shared = layer.score_candidates(
        head_inputs(data), tf.constant(data["table"]), tf.constant([0, 3, 7])
    )
    np.testing.assert_array_equal(
        shared.numpy(),
        call_head(layer, data, use_bias=False).numpy()[:, [0, 3, 7]],
    )


def test_same_call_api_as_softmax_cpr():
    data = head_data(seed=4)
    for head in (MixtureOfSoftmax(2), SoftmaxCPR(reranker_ks=(3,))):
        assert call_head(head, data).shape == (3, N)
        every_item = tf.range(N)
        scores = head.score_candidates(
            head_inputs(data), tf.constant(data["table"]), every_item
        )
        assert scores.shape == (3, N)


def test_gradients_reach_prior_and_components_and_table():
    data = head_data(seed=5)
    layer = MixtureOfSoftmax(K, dropout=0.1)
    table = tf.Variable(data["table"])
    with tf.GradientTape() as tape:
        log_probs = layer(head_inputs(data), table, training=True)
        loss = -tf.reduce_mean(tf.gather(log_probs, [1, 2, 3], batch_dims=1))
    grads = tape.gradient(loss, [table, *layer.trainable_weights])
    for grad in grads:
        grad = tf.convert_to_tensor(grad).numpy()
        assert np.all(np.isfinite(grad)) and np.abs(grad).sum() > 0
    assert np.all(tf.convert_to_tensor(grads[0]).numpy()[0] == 0)


def test_run_layer_test():
    data = head_data(seed=6)
    testing.run_layer_test(
        MixtureOfSoftmax,
        {
            "num_components": K,
            "dropout": 0.1,
            "output_dim": D,
            "kernel_initializer": "he_normal",
        },
        head_inputs(data),
        expected_output_shape=(3, N),
        expected_output_dtype="float32",
        call_kwargs={
            "item_embeddings": tf.constant(data["table"]),
            "item_bias": tf.constant(data["bias"]),
        },
        expected_num_trainable_weights=4,
        run_functional=False,
    )


@pytest.mark.slow
def test_saved_model_in_fresh_process():
    data = head_data(seed=7)
    layer = MixtureOfSoftmax(K)
    table = tf.Variable(data["table"])

    class Head(tf.keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.mos = layer
            self.table = table

        def call(self, inputs):
            return self.mos(inputs, self.table)

    served = testing.assert_saved_model_in_fresh_process(
        Head(), head_inputs(data)
    )
    assert served["output_0"].shape == (3, N)


def test_mixed_precision_output_is_float32_and_finite():
    data = head_data(seed=8)
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        log_probs = call_head(MixtureOfSoftmax(K), data)
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)
    assert log_probs.dtype == tf.float32
    assert np.all(np.isfinite(log_probs.numpy()))
    np.testing.assert_allclose(
        tf.reduce_logsumexp(log_probs, axis=-1).numpy(), 0.0, atol=1e-3
    )


def test_config_round_trip():
    layer = MixtureOfSoftmax(4, dropout=0.3, mask_padding=False, name="mos")
    config = layer.get_config()
    json.dumps(config)
    assert MixtureOfSoftmax.from_config(config).get_config() == config
    serialized = tf.keras.utils.serialize_keras_object(layer)
    assert isinstance(
        tf.keras.utils.deserialize_keras_object(serialized),
        tfrec_tricks.heads.MixtureOfSoftmax,
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_components=0), "Received: num_components=0"),
        (dict(num_components=2.5), "Received: num_components=2.5"),
        (dict(num_components=2, dropout=-0.1), "Received: dropout=-0.1"),
        (dict(num_components=2, output_dim=-3), "Received: output_dim=-3"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MixtureOfSoftmax(**kwargs)


def test_bad_call_arguments():
    data = head_data(seed=9)
    bad = dict(data, ids=np.where(HISTORY == 4, 11, HISTORY).astype("int32"))
    with pytest.raises(ValueError, match="Received: history_ids containing 11"):
        call_head(MixtureOfSoftmax(2), bad)
    with pytest.raises(ValueError, match="candidate_ids containing -1"):
        call_head(MixtureOfSoftmax(2), data, candidate_ids=tf.constant([-1]))
