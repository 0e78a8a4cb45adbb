import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks import testing
from tfrec_tricks.layers import TiedItemEmbedding

N, D = 12, 4
IDS = np.array([[3, 1, 0], [11, 2, 2]], "int32")
RNG = np.random.default_rng(0)
HIDDEN = RNG.normal(size=(2, D)).astype("float32")


def make_layer(seed=0, **kwargs):
    """A built layer whose weights are random (the bias is not zero)."""
    layer = TiedItemEmbedding(N, D, **kwargs)
    layer.build(None)
    rng = np.random.default_rng(seed)
    layer.set_weights(
        [rng.normal(size=w.shape).astype("float32") for w in layer.weights]
    )
    return layer


def reference_logits(hidden, table, bias, mask_padding=True):
    logits = hidden.astype(np.float64) @ table.T.astype(np.float64)
    if bias is not None:
        logits = logits + bias
    if mask_padding:
        logits[..., 0] = -1e9
    return logits


def test_run_layer_test_lookup():
    testing.run_layer_test(
        TiedItemEmbedding,
        {"num_items": N, "output_dim": D, "use_bias": False},
        IDS,
        expected_output_shape=(2, 3, D),
        expected_output_dtype="float32",
        expected_num_trainable_weights=1,
    )


def test_run_layer_test_logits_tied():
    testing.run_layer_test(
        TiedItemEmbedding,
        {"num_items": N, "output_dim": D},
        HIDDEN,
        call_kwargs={"reverse": True},
        expected_output_shape=(2, N),
        expected_output_dtype="float32",
        expected_num_trainable_weights=2,
    )


def test_run_layer_test_logits_untied():
    # In one direction an untied layer leaves the other table unused, so
    # the every-weight-gets-a-gradient check does not apply.
    testing.run_layer_test(
        TiedItemEmbedding,
        {
            "num_items": N,
            "output_dim": D,
            "tie": False,
            "mask_padding": False,
            "embeddings_initializer": "ones",
        },
        HIDDEN[:, None, :],
        call_kwargs={"reverse": True},
        expected_output_shape=(2, 1, N),
        expected_num_trainable_weights=3,
        run_training_step=False,
    )


def test_lookup_matches_table():
    layer = make_layer()
    np.testing.assert_array_equal(layer(IDS), layer.embeddings.numpy()[IDS])
    np.testing.assert_array_equal(
        layer.lookup(IDS.astype("int64")), layer.embeddings.numpy()[IDS]
    )


@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("use_bias", [True, False])
def test_logits_match_numpy(tie, use_bias):
    layer = make_layer(tie=tie, use_bias=use_bias)
    table = layer.output_embeddings.numpy()
    if tie:
        assert layer.output_embeddings is layer.embeddings
    else:
        assert not np.array_equal(table, layer.embeddings.numpy())
    bias = layer.output_bias.numpy() if use_bias else None
    assert (layer.output_bias is None) == (not use_bias)
    expected = reference_logits(HIDDEN, table, bias)
    logits = layer(HIDDEN, reverse=True)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)
    assert logits.numpy()[:, 0].tolist() == [-1e9, -1e9]
    # Padding can never win the argmax.
    assert (np.argmax(logits, axis=-1) != 0).all()


def test_padding_not_masked_when_disabled():
    layer = make_layer(mask_padding=False)
    expected = reference_logits(
        HIDDEN,
        layer.embeddings.numpy(),
        layer.output_bias.numpy(),
        mask_padding=False,
    )
    np.testing.assert_allclose(
        layer.logits(HIDDEN), expected, rtol=1e-5, atol=1e-5
    )


def test_logits_over_sequences():
    layer = make_layer()
    hidden = RNG.normal(size=(2, 5, D)).astype("float32")
    expected = reference_logits(
        hidden, layer.embeddings.numpy(), layer.output_bias.numpy()
    )
    np.testing.assert_allclose(
        layer(hidden, reverse=True), expected, rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "param_kwargs, expected",
    [
        ({}, N * D + N),
        ({"tie": False}, 2 * N * D + N),
        ({"use_bias": False}, N * D),
        ({"tie": False, "use_bias": False}, 2 * N * D),
    ],
)
def test_parameter_count(param_kwargs, expected):
    layer = TiedItemEmbedding(N, D, **param_kwargs)
    layer.build(None)
    assert layer.count_params() == expected


@pytest.mark.parametrize("tie", [True, False])
def test_candidate_logits_equal_full_logits_at_the_ids(tie):
    layer = make_layer(tie=tie)
    full = layer.logits(HIDDEN).numpy()

    shared = np.array([5, 0, 11, 5], "int32")
    scores = layer.logits(HIDDEN, candidate_ids=shared).numpy()
    assert scores.shape == (2, 4)
    np.testing.assert_allclose(scores, full[:, shared], rtol=1e-6)
    assert scores[0, 1] == -1e9

    per_example = np.array([[1, 2, 0], [11, 7, 3]], "int64")
    scores = layer(HIDDEN, reverse=True, candidate_ids=per_example).numpy()
    assert scores.shape == (2, 3)
    np.testing.assert_allclose(
        scores, np.take_along_axis(full, per_example, axis=1), rtol=1e-6
    )

    # Per-example candidates also work for per-position hidden states.
    hidden = RNG.normal(size=(2, 5, D)).astype("float32")
    full = layer.logits(hidden).numpy()
    scores = layer.logits(hidden, candidate_ids=per_example).numpy()
    assert scores.shape == (2, 5, 3)
    np.testing.assert_allclose(
        scores,
        np.take_along_axis(full, per_example[:, None, :], axis=2),
        rtol=1e-6,
    )


def test_gradient_reaches_the_table_from_both_directions():
    layer = make_layer()
    ids = np.array([[3, 4]], "int32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(ids))
    grad = tf.convert_to_tensor(tape.gradient(loss, layer.embeddings)).numpy()
    assert set(np.flatnonzero(np.abs(grad).sum(axis=1))) == {3, 4}

    with tf.GradientTape() as tape:
        logits = layer(HIDDEN, reverse=True)
        loss = tf.reduce_mean(
            tf.keras.losses.sparse_categorical_crossentropy(
                tf.constant([1, 2]), logits, from_logits=True
            )
        )
    grad_table, grad_bias = tape.gradient(
        loss, [layer.embeddings, layer.output_bias]
    )
    grad_table = tf.convert_to_tensor(grad_table).numpy()
    assert np.abs(grad_table[1:]).sum(axis=1).min() > 0
    # The masked padding logit has probability 0: no gradient.
    np.testing.assert_array_equal(grad_table[0], 0.0)
    assert np.isfinite(grad_bias.numpy()).all()


def test_mixed_precision_logits_are_float32():
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = TiedItemEmbedding(N, D)
        vectors = layer(IDS)
        logits = layer(tf.reduce_mean(vectors, axis=1), reverse=True)
        candidates = layer.logits(vectors[:, 0], candidate_ids=[0, 3])
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)
    assert vectors.dtype == tf.float16
    assert layer.embeddings.dtype == tf.float32
    assert logits.dtype == tf.float32
    assert candidates.dtype == tf.float32
    assert logits.numpy()[0, 0] == -1e9
    assert candidates.numpy()[0, 0] == -1e9
    assert np.isfinite(logits.numpy()).all()


class NextItemModel(tf.keras.Model):
    """Mean of the history embeddings, projected, scored by the same table."""

    def __init__(self, num_items, dim, hidden_dim, tie=True, **kwargs):
        super().__init__(**kwargs)
        self.items = TiedItemEmbedding(num_items, dim, tie=tie)
        self.encoder = tf.keras.layers.Dense(hidden_dim, activation="tanh")
        # The encoder's size differs from the embedding size: project.
        self.projection = tf.keras.layers.Dense(dim)

    def call(self, history):
        vectors = self.items(history)
        mask = tf.cast(history > 0, vectors.dtype)[..., None]
        pooled = tf.reduce_sum(vectors * mask, 1) / tf.maximum(
            tf.reduce_sum(mask, 1), 1.0
        )
        hidden = self.projection(self.encoder(pooled))
        return self.items(hidden, reverse=True)


@pytest.mark.slow
def test_subclassed_model_trains_and_reloads_weights(tmp_path):
    rng = np.random.default_rng(0)
    history = rng.integers(1, N, size=(64, 5)).astype("int32")
    history[:, -1] = 0
    target = history[:, 0]
    model = NextItemModel(N, D, 16)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(0.05),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history_ = model.fit(history, target, epochs=5, batch_size=16, verbose=0)
    losses = history_.history["loss"]
    assert losses[-1] < losses[0]
    tied_params = model.count_params()
    untied = NextItemModel(N, D, 16, tie=False)
    untied(history)
    assert untied.count_params() - tied_params == N * D

    path = str(tmp_path / "model.weights.h5")
    model.save_weights(path)
    restored = NextItemModel(N, D, 16)
    restored(history)
    restored.load_weights(path)
    np.testing.assert_allclose(restored(history), model(history), atol=1e-5)


@pytest.mark.slow
def test_saved_model_in_fresh_process():
    model = NextItemModel(N, D, 8)
    model(IDS)
    served = testing.assert_saved_model_in_fresh_process(model, IDS)
    assert served["output_0"].shape == (2, N)
    assert (served["output_0"][:, 0] == -1e9).all()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_items": 1}, "num_items=1"),
        ({"num_items": 0}, "num_items=0"),
        ({"output_dim": 0}, "output_dim=0"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TiedItemEmbedding(**{"num_items": N, "output_dim": D, **kwargs})


def test_bad_candidate_ids():
    layer = make_layer()
    with pytest.raises(ValueError, match="reverse=False"):
        layer(IDS, candidate_ids=np.array([1, 2]))
    with pytest.raises(ValueError, match=r"candidate_ids.shape=\(1, 1, 2\)"):
        layer.logits(HIDDEN, candidate_ids=np.ones((1, 1, 2), "int32"))
