"""Tests of ItemFeatureEncoder against a NumPy reference."""

import json

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks import testing
from tfrec_tricks.features import (
    CategoricalFeatureEmbedding,
    FeatureFusion,
    ItemFeatureEncoder,
)
from tfrec_tricks.layers import SoftOneHotEncoding

N, D, BUCKETS = 8, 4, 5
FEATURES = [
    {"name": "brand", "kind": "token", "width": 1, "vocabulary_size": 4},
    {"name": "genres", "kind": "token_seq", "width": 3, "vocabulary_size": 6},
    {
        "name": "price",
        "kind": "float",
        "width": 1,
        "mean": 10.0,
        "variance": 25.0,
    },
    {
        "name": "sizes",
        "kind": "float_seq",
        "width": 2,
        "mean": 0.0,
        "variance": 4.0,
    },
]
NAN, INF = np.nan, np.inf
VALUES = {
    # Item 4 has no brand (padding only), item 3 an out-of-vocabulary one.
    "brand": np.array([[0], [2], [3], [1], [0], [2], [3], [2]]),
    "genres": np.array(
        [
            [0, 0, 0],
            [2, 5, 0],
            [3, 0, 0],
            [0, 0, 0],
            [4, 4, 2],
            [0, 5, 1],
            [2, 3, 4],
            [5, 0, 0],
        ]
    ),
    "price": np.array(
        [[NAN], [9.0], [NAN], [30.0], [0.5], [INF], [12.0], [10.0]],
        "float32",
    ),
    "sizes": np.array(
        [
            [NAN, NAN],
            [1.0, NAN],
            [NAN, NAN],
            [-2.0, 3.0],
            [0.0, 0.0],
            [NAN, 5.0],
            [NAN, -INF],
            [2.5, 1.0],
        ],
        "float32",
    ),
}
# Items 3 and 5 are cold: their ids were never trained.
ID_KNOWN = np.array([1, 1, 1, 0, 1, 0, 1, 1])
KERAS3 = not tf.keras.layers.Layer.__module__.startswith("tf_keras")
ID_TABLE = np.random.default_rng(7).normal(size=(N, D)).astype("float32")


def make_encoder(fusion="concat", features=FEATURES, seed=0, values=True):
    """A built encoder with random trainable weights and, unless
    ``values`` is false, VALUES and ID_KNOWN set."""
    encoder = ItemFeatureEncoder(
        N, D, features, fusion=fusion, soft_one_hot_buckets=BUCKETS
    )
    encoder.build((N, D))
    rng = np.random.default_rng(seed)
    for weight in encoder.trainable_weights:
        weight.assign(rng.normal(size=weight.shape).astype("float32"))
    if values:
        names = [f["name"] for f in features]
        encoder.set_item_values(
            {k: v for k, v in VALUES.items() if k in names}, ID_KNOWN
        )
    return encoder


def soft_one_hot_reference(x, encoder, mean, variance):
    """SoftOneHotEncoding of one scalar (float64), from its weights."""
    if not np.isfinite(x):
        return encoder.missing_embedding.numpy().astype(np.float64)
    z = (x - mean) / np.sqrt(variance)
    logits = z * encoder.kernel.numpy()[0] + encoder.bias.numpy()
    weights = np.exp(logits - logits.max())
    return (weights / weights.sum()) @ encoder.embeddings.numpy()


def feature_reference(feature, encoder, values):
    """``[N, D]`` vectors of one feature, item by item."""
    out = np.zeros((N, D))
    for item, row in enumerate(values):
        if feature["kind"].startswith("token"):
            table = encoder.embeddings.numpy().astype(np.float64)
            ids = [i for i in row if i != 0]
            out[item] = np.mean(table[ids], axis=0) if ids else 0.0
        else:
            finite = [x for x in row if np.isfinite(x)]
            encoded = [
                soft_one_hot_reference(
                    x, encoder, feature["mean"], feature["variance"]
                )
                for x in finite or [np.nan]
            ]
            out[item] = np.mean(encoded, axis=0)
    return out


def id_rows_reference(id_table, id_known):
    table = np.asarray(id_table, np.float64)
    known = [i for i in range(1, N) if id_known[i] == 1]
    mean = table[known].mean(axis=0)
    return np.array([table[i] if id_known[i] else mean for i in range(N)])


def reference(encoder, id_table, values=VALUES, id_known=ID_KNOWN):
    """The fused table, from the encoder's weights, in NumPy."""
    vectors = [id_rows_reference(id_table, id_known)]
    for feature, sub in zip(encoder.features, encoder.feature_encoders):
        vectors.append(feature_reference(feature, sub, values[feature["name"]]))
    if encoder.fusion == "sum":
        fused = np.sum(vectors, axis=0)
    else:
        kernel, bias = encoder.fusion_layer.projection.get_weights()
        fused = np.concatenate(vectors, axis=1) @ kernel + bias
    fused[0] = 0.0
    return fused


@pytest.mark.parametrize(
    "fusion, features, num_weights",
    [
        # Dense (2) + brand, genres (1 each) + price, sizes (4 each).
        ("concat", FEATURES, 12),
        ("sum", FEATURES, 10),
        ("concat", [], 2),
        ("sum", FEATURES[1:3], 5),
    ],
)
def test_run_layer_test(fusion, features, num_weights):
    testing.run_layer_test(
        ItemFeatureEncoder,
        {
            "num_items": N,
            "output_dim": D,
            "features": features,
            "fusion": fusion,
            "soft_one_hot_buckets": BUCKETS,
        },
        ID_TABLE,
        expected_output_shape=(N, D),
        expected_output_dtype="float32",
        expected_num_trainable_weights=num_weights,
    )


@pytest.mark.parametrize("fusion", ["concat", "sum"])
def test_matches_numpy_reference(fusion):
    encoder = make_encoder(fusion)
    outputs = encoder(ID_TABLE).numpy()
    assert np.isfinite(outputs).all()
    np.testing.assert_allclose(outputs, reference(encoder, ID_TABLE), atol=1e-5)
    graph = tf.function(lambda table: encoder(table))(ID_TABLE)
    np.testing.assert_allclose(graph, outputs, atol=1e-6)


def test_cold_rows_get_the_known_mean_and_row_zero_is_zeros():
    encoder = make_encoder("sum", features=[])
    outputs = encoder(ID_TABLE).numpy()
    known_mean = ID_TABLE[[1, 2, 4, 6, 7]].mean(axis=0)  # row 0 left out
    np.testing.assert_allclose(outputs[3], known_mean, atol=1e-6)
    np.testing.assert_allclose(outputs[5], known_mean, atol=1e-6)
    np.testing.assert_allclose(
        outputs[[1, 2, 4, 6, 7]], ID_TABLE[[1, 2, 4, 6, 7]]
    )
    np.testing.assert_array_equal(outputs[0], np.zeros(D))
    # No known item at all: cold rows are zeros, not NaN.
    encoder.set_item_values({}, np.zeros(N))
    np.testing.assert_array_equal(encoder(ID_TABLE), np.zeros((N, D)))


def test_id_dropout_treats_a_random_share_of_known_items_as_cold():
    encoder = make_encoder("sum", features=[])
    encoder.id_dropout, encoder.seed = 0.5, 3
    known = [1, 2, 4, 6, 7]
    known_mean = ID_TABLE[known].mean(axis=0)
    dropped = set()
    for _ in range(20):
        outputs = encoder(ID_TABLE, training=True).numpy()
        for item in known:
            if np.allclose(outputs[item], known_mean, atol=1e-6):
                dropped.add(item)
            else:
                np.testing.assert_allclose(outputs[item], ID_TABLE[item])
        # The mean stays the known items' own, and padding stays zeros.
        np.testing.assert_allclose(outputs[3], known_mean, atol=1e-6)
        np.testing.assert_array_equal(outputs[0], np.zeros(D))
    assert dropped == set(known)  # each is dropped some step
    # Inference drops nothing.
    np.testing.assert_allclose(
        encoder(ID_TABLE).numpy()[known], ID_TABLE[known]
    )
    assert (
        ItemFeatureEncoder.from_config(encoder.get_config()).id_dropout == 0.5
    )


def test_id_dropout_drops_the_bias_of_the_items_whose_row_it_drops():
    # DropoutNet: a dropped item must stand where a new item stands, id
    # row and bias both replaced (before, its trained bias stayed).
    encoder = make_encoder("sum", features=[])
    encoder.id_dropout, encoder.seed = 0.5, 7
    # No known item's bias equals the known mean (4.8).
    bias = np.array([0, 1, 3, -2, 7, 4, 11, 2], "float32")
    known = [1, 2, 4, 6, 7]
    known_mean_row = ID_TABLE[known].mean(axis=0)
    known_mean_bias = bias[known].mean()
    seen_dropped = set()
    for _ in range(20):
        table, fused_bias = encoder.fuse(ID_TABLE, bias, training=True)
        table, fused_bias = table.numpy(), fused_bias.numpy()
        for item in known:
            row_dropped = np.allclose(table[item], known_mean_row, atol=1e-6)
            bias_dropped = np.isclose(fused_bias[item], known_mean_bias)
            assert row_dropped == bias_dropped, item
            seen_dropped |= {item} if row_dropped else set()
        assert np.isclose(fused_bias[3], known_mean_bias)  # cold
    assert seen_dropped == set(known)
    # Inference: only the cold items, as fused_bias.
    _, inference = encoder.fuse(ID_TABLE, bias)
    np.testing.assert_allclose(inference, encoder.fused_bias(bias))
    assert encoder.fuse(ID_TABLE, None, training=True)[1] is None


def test_float_feature_takes_the_mean_of_its_finite_values():
    encoder = make_encoder("sum", features=FEATURES[3:])
    sizes = encoder.feature_encoders[0]
    outputs = encoder(np.zeros((N, D), "float32")).numpy()

    def encode(x):
        return soft_one_hot_reference(x, sizes, 0.0, 4.0)

    missing = sizes.missing_embedding.numpy()
    np.testing.assert_allclose(outputs[1], encode(1.0), atol=1e-5)
    np.testing.assert_allclose(outputs[2], missing, atol=1e-6)  # all NaN
    np.testing.assert_allclose(
        outputs[3], (encode(-2.0) + encode(3.0)) / 2, atol=1e-5
    )
    np.testing.assert_allclose(outputs[5], encode(5.0), atol=1e-5)
    np.testing.assert_allclose(outputs[6], missing, atol=1e-6)  # NaN, -inf


def test_token_features_mask_padding():
    encoder = make_encoder("sum", features=FEATURES[:2])
    brand, genres = encoder.feature_encoders
    outputs = encoder(np.zeros((N, D), "float32")).numpy()
    b, g = brand.embeddings.numpy(), genres.embeddings.numpy()
    np.testing.assert_allclose(outputs[1], b[2] + (g[2] + g[5]) / 2, atol=1e-5)
    np.testing.assert_allclose(outputs[3], b[1], atol=1e-6)  # no genre
    np.testing.assert_allclose(
        outputs[4], (2 * g[4] + g[2]) / 3, atol=1e-5
    )  # no brand


def test_training_moves_feature_weights_and_not_cold_id_rows():
    encoder = make_encoder("concat")
    id_table = tf.Variable(ID_TABLE)
    weights = [id_table, *encoder.trainable_weights]
    before = [w.numpy().copy() for w in weights]
    target = np.random.default_rng(3).normal(size=(N, D)).astype("float32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(encoder(id_table) - target))
    grads = tape.gradient(loss, weights)
    table_grad = tf.convert_to_tensor(grads[0]).numpy()
    np.testing.assert_array_equal(table_grad[[0, 3, 5]], np.zeros((3, D)))
    assert (np.abs(table_grad[[1, 2, 4, 6, 7]]).sum(axis=1) > 0).all()
    tf.keras.optimizers.SGD(0.1).apply_gradients(zip(grads, weights))
    moved = {
        id(w): not np.array_equal(old, w.numpy())
        for w, old in zip(weights, before)
    }
    for sub in encoder.feature_encoders:
        for weight in sub.trainable_weights:
            assert moved[id(weight)], weight.name
    genres = encoder.feature_encoders[1].embeddings
    start = next(old for w, old in zip(weights, before) if w is genres)
    # Row 0 of a token table is padding: never trained.
    np.testing.assert_array_equal(genres.numpy()[0], start[0])


def test_cold_items_never_move_the_known_id_rows():
    for fusion in ("concat", "sum"):
        encoder = make_encoder(fusion)
        id_table = tf.Variable(ID_TABLE)
        with tf.GradientTape() as tape:
            fused = encoder(id_table)
            loss = tf.reduce_sum(tf.gather(fused, [3, 5]))
        grad = tape.gradient(loss, id_table)
        assert grad is None or not np.any(tf.convert_to_tensor(grad).numpy())


def test_fused_bias():
    encoder = make_encoder("sum", features=[])
    bias = tf.Variable(np.arange(N, dtype="float32") * 2.0 + 1.0)
    with tf.GradientTape() as tape:
        fused = encoder.fused_bias(bias)
        loss = tf.reduce_sum(fused * np.arange(1, N + 1, dtype="float32"))
    known_mean = np.mean([3.0, 5.0, 9.0, 13.0, 15.0])  # items 1 2 4 6 7
    expected = np.array(
        [1.0, 3.0, 5.0, known_mean, 9.0, known_mean, 13.0, 15.0]
    )
    np.testing.assert_allclose(fused, expected, atol=1e-6)
    grad = tf.convert_to_tensor(tape.gradient(loss, bias)).numpy()
    np.testing.assert_array_equal(grad, [1, 2, 3, 0, 5, 0, 7, 8])
    assert encoder.fused_bias(None) is None
    with pytest.raises(ValueError, match=r"bias.shape=\(8, 1\)"):
        encoder.fused_bias(np.zeros((N, 1)))


def test_initial_values_and_weight_names():
    encoder = ItemFeatureEncoder(N, D, FEATURES)
    encoder.build(None)
    brand, genres, price, sizes = encoder.item_values
    assert genres.dtype == tf.int32 and genres.shape == (N, 3)
    assert sizes.dtype == tf.float32 and sizes.shape == (N, 2)
    np.testing.assert_array_equal(brand.numpy(), np.zeros((N, 1)))
    assert np.isnan(price.numpy()).all()
    np.testing.assert_array_equal(encoder.id_known.numpy(), np.ones(N))
    assert not any(
        w.trainable for w in [*encoder.item_values, encoder.id_known]
    )
    names = [getattr(w, "path", w.name) for w in encoder.weights]
    for feature in ("brand", "genres", "price", "sizes"):
        assert any(f"values_{feature}" in n for n in names), names
        assert sum(feature in n for n in names) >= 2, names
    assert isinstance(encoder.feature_encoders[0], CategoricalFeatureEmbedding)
    assert isinstance(encoder.feature_encoders[2], SoftOneHotEncoding)
    assert encoder.feature_encoders[2].normalization == "standardize"
    assert encoder.feature_encoders[2].mean == 10.0
    assert encoder.feature_encoders[2].variance == 25.0
    assert encoder.feature_encoders[3].num_embeddings == 10
    assert isinstance(encoder.fusion_layer, FeatureFusion)
    # Defaults: an untouched encoder has no feature value, all ids known.
    assert np.isfinite(encoder(ID_TABLE).numpy()).all()


def test_config_and_weights_round_trip():
    encoder = make_encoder("concat")
    config = json.loads(json.dumps(encoder.get_config()))
    assert config["features"][0] == {
        **FEATURES[0],
        "mean": 0.0,
        "variance": 1.0,
    }
    assert config["features"][2] == {**FEATURES[2], "vocabulary_size": 0}
    revived = ItemFeatureEncoder.from_config(config)
    assert revived.get_config() == encoder.get_config()
    revived.build(None)
    revived.set_weights(encoder.get_weights())
    np.testing.assert_allclose(revived(ID_TABLE), encoder(ID_TABLE), atol=1e-6)
    np.testing.assert_array_equal(revived.id_known.numpy(), ID_KNOWN)


@pytest.mark.skipif(
    KERAS3,
    reason="tf.train.Checkpoint does not follow Keras 3's lists of "
    "sublayers and weights; Keras 3 saves through its weights files",
)
def test_checkpoint_carries_the_item_values(tmp_path):
    encoder = make_encoder("sum")
    expected = encoder(ID_TABLE).numpy()
    path = tf.train.Checkpoint(encoder=encoder).write(str(tmp_path / "ckpt"))
    restored = make_encoder("sum", seed=5, values=False)
    tf.train.Checkpoint(encoder=restored).read(path).assert_consumed()
    np.testing.assert_allclose(restored(ID_TABLE), expected, atol=1e-6)


def test_weights_file_carries_the_item_values(tmp_path):
    def model(encoder):
        inputs = tf.keras.Input((D,), batch_size=N)
        return tf.keras.Model(inputs, encoder(inputs))

    encoder = make_encoder("concat")
    expected = encoder(ID_TABLE).numpy()
    path = str(tmp_path / "encoder.weights.h5")
    model(encoder).save_weights(path)
    restored = make_encoder("concat", seed=5, values=False)
    model(restored).load_weights(path)
    np.testing.assert_array_equal(restored.id_known.numpy(), ID_KNOWN)
    np.testing.assert_allclose(restored(ID_TABLE), expected, atol=1e-6)


def test_mixed_precision():
    expected = make_encoder("concat")(ID_TABLE).numpy()
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = make_encoder("concat")
        outputs = mixed(ID_TABLE)
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)
    assert outputs.dtype == tf.float16
    np.testing.assert_allclose(outputs, expected, atol=2e-2, rtol=2e-2)


def test_the_whole_catalogue_is_vectorised():
    # 200k items in one graph call: a Python loop over items would not
    # finish; the graph has no loop op either.
    num_items = 200_000
    encoder = ItemFeatureEncoder(num_items, D, FEATURES, fusion="sum")
    function = tf.function(lambda table: encoder(table))
    concrete = function.get_concrete_function(
        tf.TensorSpec((num_items, D), tf.float32)
    )
    op_types = {op.type for op in concrete.graph.get_operations()}
    assert not op_types & {"While", "StatelessWhile"}, op_types
    outputs = function(tf.zeros((num_items, D)))
    assert outputs.shape == (num_items, D)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda v, k: v.pop("genres"), r"keys=\['brand', 'price', 'sizes'\]"),
        (
            lambda v, k: v.update(color=np.zeros((N, 1))),
            r"keys=\['brand', 'color'",
        ),
        (
            lambda v, k: v.update(genres=np.zeros((N, 2), "int32")),
            r"values\['genres'\].*\(8, 3\).*Received: shape=\(8, 2\)",
        ),
        (
            lambda v, k: v.update(brand=np.zeros((N - 1, 1), "int32")),
            r"values\['brand'\].*\(8, 1\).*Received: shape=\(7, 1\)",
        ),
        (
            lambda v, k: v.update(genres=np.zeros((N, 3), "float32")),
            r"values\['genres'\].*integer ids.*dtype=float32",
        ),
        (
            lambda v, k: v.update(genres=np.full((N, 3), 6)),
            r"values\['genres'\].*\[1, 6\).*Received: an id 6",
        ),
        (
            lambda v, k: v.update(brand=-np.ones((N, 1), "int64")),
            r"values\['brand'\].*Received: an id -1",
        ),
        (
            lambda v, k: v.update(price=np.full((N, 1), "a")),
            r"values\['price'\].*numbers.*dtype=<U1",
        ),
        (
            lambda v, k: v.update(sizes=np.zeros((N,), "float32")),
            r"values\['sizes'\].*\(8, 2\).*Received: shape=\(8,\)",
        ),
        (
            lambda v, k: k.__setitem__(0, np.ones(N - 1)),
            r"id_known.*\(8,\).*Received: shape=\(7,\)",
        ),
        (
            lambda v, k: k.__setitem__(0, np.full(N, 0.5)),
            r"id_known.*Received: values \[0.5\]",
        ),
    ],
)
def test_set_item_values_errors(change, match):
    encoder = make_encoder("sum", values=False)
    values, known = dict(VALUES), [ID_KNOWN]
    change(values, known)
    with pytest.raises(ValueError, match=match):
        encoder.set_item_values(values, known[0])
    # Nothing was assigned.
    np.testing.assert_array_equal(encoder.id_known.numpy(), np.ones(N))
    assert np.isnan(encoder.item_values[2].numpy()).all()


def test_set_item_values_accepts_bools_and_any_int():
    encoder = make_encoder("sum", values=False)
    values = {
        k: v.astype("int64") if k in ("brand", "genres") else v
        for k, v in VALUES.items()
    }
    values["price"] = np.array([[1], [2], [3], [4], [5], [6], [7], [8]])
    encoder.set_item_values(values, ID_KNOWN.astype(bool))
    np.testing.assert_array_equal(encoder.id_known.numpy(), ID_KNOWN)
    assert encoder.item_values[2].dtype == tf.float32
    np.testing.assert_array_equal(
        encoder.item_values[2].numpy()[:, 0], range(1, 9)
    )
    with pytest.raises(ValueError, match="dict of feature name"):
        encoder.set_item_values([VALUES], ID_KNOWN)


def test_bad_id_table():
    encoder = ItemFeatureEncoder(N, D, FEATURES)
    with pytest.raises(ValueError, match=r"id_table.shape=\(8, 5\)"):
        encoder(np.zeros((N, D + 1), "float32"))


def feature(**changes):
    return [{**FEATURES[1], **changes}]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_items": 1}, "num_items=1"),
        ({"output_dim": 0}, "output_dim=0"),
        ({"fusion": "mean"}, r"\('concat', 'sum'\).*fusion='mean'"),
        ({"soft_one_hot_buckets": 0}, "soft_one_hot_buckets=0"),
        ({"id_dropout": 1.0}, "id_dropout=1.0"),
        ({"id_dropout": -0.1}, "id_dropout=-0.1"),
        ({"features": {"name": "genres"}}, "list of dicts"),
        ({"features": ["genres"]}, r"features\[0\].*str"),
        ({"features": feature(kind="tag")}, r"features\[0\].*kind='tag'"),
        ({"features": feature(width=0)}, "width=0"),
        ({"features": feature(width=2.0)}, "width=2.0"),
        ({"features": feature(vocabulary_size=1)}, "vocabulary_size=1"),
        (
            {"features": [{"name": "a", "kind": "token", "width": 1}]},
            "vocabulary_size=0",
        ),
        (
            {"features": [{**FEATURES[2], "vocabulary_size": 5}]},
            "vocabulary_size=5",
        ),
        ({"features": [{**FEATURES[0], "width": 2}]}, "'token_seq'.*width=2"),
        ({"features": [{**FEATURES[2], "variance": -1.0}]}, "variance=-1.0"),
        ({"features": [{**FEATURES[2], "mean": "x"}]}, "mean='x'"),
        ({"features": feature(name="a/b")}, "name='a/b'"),
        ({"features": feature(name="")}, "name=''"),
        ({"features": feature(unit="cm")}, r"keys=\[.*'unit'"),
        (
            {"features": [{"name": "a", "kind": "float"}]},
            r"features\[0\].*keys",
        ),
        (
            {"features": [FEATURES[0], {**FEATURES[1], "name": "brand"}]},
            r"\['brand'\] more than once",
        ),
    ],
)
def test_bad_arguments(kwargs, match):
    arguments = {"num_items": N, "output_dim": D, "features": FEATURES}
    with pytest.raises(ValueError, match=match):
        ItemFeatureEncoder(**{**arguments, **kwargs})


@pytest.mark.slow
def test_saved_model_in_fresh_process():
    encoder = make_encoder("concat")
    served = testing.assert_saved_model_in_fresh_process(encoder, ID_TABLE)
    np.testing.assert_allclose(
        served["output_0"], reference(encoder, ID_TABLE), atol=1e-5
    )


@pytest.mark.slow
def test_trains_inside_a_model_with_a_tied_output():
    class Model(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.items = tf.keras.layers.Embedding(N, D)
            self.items.build(None)
            self.encoder = ItemFeatureEncoder(N, D, FEATURES, fusion="sum")

        def call(self, ids, training=None):
            table = self.encoder(self.items.embeddings, training=training)
            return tf.matmul(tf.gather(table, ids), table, transpose_b=True)

    model = Model()
    model(np.array([1]))
    model.encoder.set_item_values(VALUES, ID_KNOWN)
    rng = np.random.default_rng(0)
    x = rng.choice([1, 2, 4, 6, 7], size=64)
    y = rng.choice([1, 2, 4, 6, 7], size=64)
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
