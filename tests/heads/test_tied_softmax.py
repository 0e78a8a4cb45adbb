"""Tests of TiedSoftmax against a NumPy reference, and its index."""

import numpy as np
import pytest
import tensorflow as tf

import tfrec_tricks.heads
from tests.heads.head_inputs import (
    D,
    L,
    N,
    call_head,
    head_data,
    head_inputs,
)
from tfrec_tricks import testing
from tfrec_tricks.heads import MixtureOfSoftmax, SoftmaxCPR, TiedSoftmax
from tfrec_tricks.layers.top_k import top_k_positions

NEG = -1e9


@pytest.fixture(autouse=True)
def _seeded():
    # The projection comes from unseeded initializers: fix it per test.
    tf.keras.utils.set_random_seed(1234)


def reference(layer, data, use_bias=True, exclude=False):
    """h E^T + b at each row's last real position (position 0 if none);
    cos(h, E) / t + b with a cosine temperature t."""
    table = data["table"].astype("float64")
    if layer.cosine_temperature is not None:
        norms = np.linalg.norm(table, axis=1, keepdims=True)
        table = table / np.maximum(norms, 1e-6)
    bias = data["bias"].astype("float64") if use_bias else np.zeros(N)
    out = np.zeros((3, N))
    for i, ids in enumerate(data["ids"]):
        real = [t for t in range(L) if ids[t] != 0]
        h = data["hidden"][i, real[-1] if real else 0].astype("float64")
        if layer.projection is not None:
            kernel, b = (
                w.astype("float64") for w in layer.projection.get_weights()
            )
            h = h @ kernel + b
        if layer.cosine_temperature is not None:
            h = h / np.linalg.norm(h) / layer.cosine_temperature
        out[i] = table @ h + bias
        if layer.mask_padding:
            out[i, 0] = NEG
        if exclude:
            out[i, [x for x in ids if x != 0]] = NEG
    return out


@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("mask_padding", [True, False])
def test_matches_numpy_reference(use_bias, mask_padding):
    data = head_data(seed=1)
    layer = TiedSoftmax(mask_padding=mask_padding)
    logits = call_head(layer, data, use_bias=use_bias)
    assert logits.dtype == tf.float32 and logits.shape == (3, N)
    np.testing.assert_allclose(
        logits.numpy(), reference(layer, data, use_bias), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("temperature", [0.05, 1.0])
def test_cosine_scores_match_numpy_reference(temperature):
    data = head_data(seed=2, width=6)
    layer = TiedSoftmax(output_dim=D, cosine_temperature=temperature)
    logits = call_head(layer, data)
    np.testing.assert_allclose(
        logits.numpy(), reference(layer, data), rtol=1e-4, atol=1e-4
    )
    # Cosines lie in [-1, 1]: the scores without the bias within 1 / t.
    real = logits.numpy()[:, 1:] - data["bias"][1:]
    assert np.abs(real).max() <= 1 / temperature + 1e-4
    # The table's scale no longer matters; the state's neither.
    scaled = dict(data, table=3 * data["table"], hidden=2 * data["hidden"])
    np.testing.assert_allclose(
        call_head(layer, scaled).numpy(), logits.numpy(), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("temperature", [0, -1.0, True, "0.1"])
def test_a_bad_cosine_temperature_is_an_error(temperature):
    with pytest.raises(ValueError, match="Received: cosine_temperature="):
        TiedSoftmax(cosine_temperature=temperature)


def test_a_wider_encoder_is_projected_to_the_table():
    data = head_data(seed=2, width=7)
    layer = TiedSoftmax(output_dim=D)
    logits = call_head(layer, data)
    assert layer.projection.kernel.shape == (7, D)
    np.testing.assert_allclose(
        logits.numpy(), reference(layer, data), rtol=1e-5, atol=1e-5
    )


def test_without_output_dim_there_is_no_projection():
    layer = TiedSoftmax()
    call_head(layer, head_data())
    assert layer.projection is None and not layer.weights


def test_history_is_ranked_last_at_inference_only():
    data = head_data(seed=3)
    layer = TiedSoftmax(exclude_history=True)
    np.testing.assert_allclose(
        call_head(layer, data, training=False).numpy(),
        reference(layer, data, exclude=True),
        rtol=1e-5,
        atol=1e-5,
    )
    kept = reference(layer, data)
    for overrides in ({"training": True}, {"exclude_history": False}):
        np.testing.assert_allclose(
            call_head(layer, data, **overrides).numpy(), kept, atol=1e-5
        )
    # And a plain head excludes on request.
    plain = TiedSoftmax()
    np.testing.assert_array_equal(
        call_head(plain, data, exclude_history=True).numpy(),
        call_head(layer, data).numpy(),
    )


@pytest.mark.parametrize("exclude_history", [False, True])
def test_candidate_logits_equal_the_full_logits(exclude_history):
    data = head_data(seed=4)
    layer = TiedSoftmax(exclude_history=exclude_history)
    full = call_head(layer, data).numpy()
    shared = np.array([0, 3, 4, 3], "int32")
    np.testing.assert_array_equal(
        call_head(layer, data, candidate_ids=tf.constant(shared)).numpy(),
        full[:, shared],
    )
    per_example = np.array([[1, 2], [3, 0], [10, 9]], "int32")
    expected = np.take_along_axis(full, per_example, axis=1)
    np.testing.assert_array_equal(
        call_head(layer, data, candidate_ids=tf.constant(per_example)).numpy(),
        expected,
    )
    scores = layer.score_candidates(
        head_inputs(data),
        tf.constant(data["table"]),
        per_example,
        item_bias=tf.constant(data["bias"]),
    )
    np.testing.assert_array_equal(scores.numpy(), expected)


@pytest.mark.parametrize(
    "exclude_history, temperature", [(False, None), (True, None), (True, 0.1)]
)
@pytest.mark.parametrize("k", [1, 4, 10])
def test_the_index_serves_the_exact_top_k(exclude_history, temperature, k):
    data = head_data(seed=5)
    # Ties: the index breaks them by the lower id, as the full ranking.
    data["table"][7] = data["table"][5]
    data["bias"][7] = data["bias"][5]
    layer = TiedSoftmax(
        exclude_history=exclude_history, cosine_temperature=temperature
    )
    table, bias = tf.constant(data["table"]), tf.constant(data["bias"])
    ids, base = layer.top_k_candidates(head_inputs(data), table, k, bias)
    scores = layer.score_candidates(
        head_inputs(data), table, ids, item_bias=bias, base_logits=base
    )
    # Without the base logits the table is read again: the same scores
    # (up to the rounding of another product).
    np.testing.assert_allclose(
        scores.numpy(),
        layer.score_candidates(head_inputs(data), table, ids, item_bias=bias),
        rtol=1e-5,
        atol=1e-5,
    )
    full = call_head(layer, data)
    count = min(k, int(ids.shape[1]))
    served = tf.gather(
        ids, top_k_positions(scores, ids, count), batch_dims=1
    ).numpy()
    expected = tf.math.top_k(full, count).indices.numpy()
    for row, (got, want) in enumerate(zip(served, expected)):
        # Beyond the items left, both hold fillers (0 or excluded ids).
        real = full.numpy()[row][want] > NEG
        np.testing.assert_array_equal(got[real], want[real])


def test_the_index_appends_extra_ids_and_scores_them():
    data = head_data(seed=6)
    layer = TiedSoftmax()
    table, bias = tf.constant(data["table"]), tf.constant(data["bias"])
    extra = tf.constant([[9], [1], [0]])
    ids, base = layer.top_k_candidates(head_inputs(data), table, 2, bias, extra)
    assert ids.shape == (3, 3)
    np.testing.assert_array_equal(ids.numpy()[:, 2], [9, 1, 0])
    # The rows' last states: positions 1, 4 and 0 (the empty row).
    last = tf.gather(tf.constant(data["hidden"]), [1, 4, 0], batch_dims=1)
    full = tf.matmul(last, table, transpose_b=True) + bias
    np.testing.assert_allclose(
        base.numpy(),
        np.take_along_axis(full.numpy(), ids.numpy(), axis=1),
        rtol=1e-6,
    )
    only_extra, _ = layer.top_k_candidates(
        head_inputs(data), table, 0, bias, extra
    )
    np.testing.assert_array_equal(only_extra.numpy(), extra.numpy())


def test_training_reads_candidate_rows_sparsely():
    data = head_data(seed=7)
    layer = TiedSoftmax()
    table = tf.Variable(data["table"])
    with tf.GradientTape() as tape:
        logits = layer(
            head_inputs(data), table, candidate_ids=[1, 2, 3], training=True
        )
        loss = tf.reduce_sum(logits[:, 1:])
    assert isinstance(tape.gradient(loss, table), tf.IndexedSlices)


def test_interface_members():
    layer = TiedSoftmax(exclude_history=True)
    assert layer.has_index and not layer.has_cross_entropy
    assert layer.excludes_history(False) and not layer.excludes_history(True)
    # Excluding reads every history id; otherwise the last state is enough.
    assert not layer.reads_last_state_only(False)
    assert layer.reads_last_state_only(True)
    assert TiedSoftmax().reads_last_state_only(False)


def test_the_heads_share_one_interface():
    data = head_data(seed=8)
    table = tf.constant(data["table"])
    heads = (TiedSoftmax(), SoftmaxCPR(reranker_ks=(3,)), MixtureOfSoftmax(2))
    for head in heads:
        assert call_head(head, data).shape == (3, N)
        assert head.excludes_history(False) in (True, False)
        ids = tf.constant([[0, 1, 2, 4], [1, 3, 5, 6], [1, 2, 3, 4]])
        if head.has_index:
            ids, base = head.top_k_candidates(head_inputs(data), table, 2)
            scores = head.score_candidates(
                head_inputs(data), table, ids, base_logits=base
            )
        else:
            with pytest.raises(ValueError, match="one query vector"):
                head.top_k_candidates(head_inputs(data), table, 2)
            scores = head.score_candidates(head_inputs(data), table, ids)
        np.testing.assert_allclose(
            scores.numpy(),
            np.take_along_axis(
                call_head(head, data, use_bias=False).numpy(),
                np.asarray(ids),
                1,
            ),
            rtol=1e-5,
            atol=1e-5,
        )


@pytest.mark.parametrize("output_dim", [0, -2, 2.5, True])
def test_bad_output_dim_is_an_error(output_dim):
    with pytest.raises(ValueError, match="Received: output_dim="):
        TiedSoftmax(output_dim=output_dim)


def test_history_ids_outside_the_table_are_an_error():
    data = head_data()
    data["ids"] = np.array([[2, N, 0, 0, 0]] * 3, "int32")
    with pytest.raises(ValueError, match="Received: history_ids containing"):
        call_head(TiedSoftmax(), data)


def test_config_round_trip_and_registration():
    layer = TiedSoftmax(
        exclude_history=True,
        output_dim=3,
        mask_padding=False,
        cosine_temperature=0.05,
    )
    config = layer.get_config()
    names = ("exclude_history", "output_dim", "cosine_temperature")
    assert {k: config[k] for k in names} == {
        "exclude_history": True,
        "output_dim": 3,
        "cosine_temperature": 0.05,
    }
    clone = TiedSoftmax.from_config(config)
    assert clone.get_config() == config
    restored = tf.keras.layers.deserialize(
        tf.keras.layers.serialize(layer),
        custom_objects={"TiedSoftmax": tfrec_tricks.heads.TiedSoftmax},
    )
    assert restored.exclude_history and not restored.mask_padding
    assert restored.cosine_temperature == 0.05


def test_run_layer_test():
    data = head_data(seed=9, width=6)
    testing.run_layer_test(
        TiedSoftmax,
        {"exclude_history": True, "output_dim": D},
        head_inputs(data),
        expected_output_shape=(3, N),
        expected_output_dtype="float32",
        call_kwargs={
            "item_embeddings": tf.constant(data["table"]),
            "item_bias": tf.constant(data["bias"]),
        },
        expected_num_trainable_weights=2,
        run_functional=False,
    )


@pytest.mark.slow
def test_saved_model_in_fresh_process():
    data = head_data(seed=10, width=6)
    layer = TiedSoftmax(exclude_history=True, output_dim=D)
    table = tf.Variable(data["table"])

    class Head(tf.keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.softmax = layer
            self.table = table

        def call(self, inputs):
            return self.softmax(inputs, self.table)

    served = testing.assert_saved_model_in_fresh_process(
        Head(), head_inputs(data)
    )
    assert served["output_0"].shape == (3, N)
