"""ItemFeatureEncoder with ragged tables (``num_values``): values and row
offsets, a segment mean; the same numbers as the padded tables."""

import json
import time

import numpy as np
import pytest
import tensorflow as tf

from tests.features.test_item_feature_encoder import (
    BUCKETS,
    FEATURES,
    ID_KNOWN,
    ID_TABLE,
    KERAS3,
    VALUES,
    D,
    N,
    make_encoder,
    reference,
)
from tfrec_tricks import testing
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows
from tfrec_tricks.features import (
    CategoricalFeatureEmbedding,
    ItemFeatureEncoder,
)

ROWS = {name: RaggedRows.from_dense(array) for name, array in VALUES.items()}
RAGGED = [
    {**f, "num_values": int(ROWS[f["name"]].values.size)} for f in FEATURES
]


def ragged_encoder(fusion="concat", seed=0, values=True, features=RAGGED):
    """``make_encoder``'s encoder (same random weights) with ragged
    tables."""
    return make_encoder(fusion, features, seed, values)


def test_layer_test_with_ragged_tables():
    testing.run_layer_test(
        ItemFeatureEncoder,
        {
            "num_items": N,
            "output_dim": D,
            "features": RAGGED,
            "fusion": "concat",
            "soft_one_hot_buckets": BUCKETS,
        },
        ID_TABLE,
        expected_output_shape=(N, D),
        expected_output_dtype="float32",
        expected_num_trainable_weights=12,
    )


@pytest.mark.parametrize("fusion", ["concat", "sum"])
def test_same_numbers_as_the_padded_tables(fusion):
    padded, ragged = make_encoder(fusion), ragged_encoder(fusion)
    outputs = ragged(ID_TABLE).numpy()
    np.testing.assert_allclose(outputs, padded(ID_TABLE), atol=1e-6)
    np.testing.assert_allclose(outputs, reference(ragged, ID_TABLE), atol=1e-5)
    graph = tf.function(lambda table: ragged(table))(ID_TABLE)
    np.testing.assert_allclose(graph, outputs, atol=1e-6)


def test_same_gradients_as_the_padded_tables():
    grads = []
    target = np.random.default_rng(3).normal(size=(N, D)).astype("float32")
    for encoder in (make_encoder("concat"), ragged_encoder("concat")):
        table = tf.Variable(ID_TABLE)
        weights = [table, *encoder.trainable_weights]
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(encoder(table) - target))
        grads.append(
            [
                tf.convert_to_tensor(g).numpy()
                for g in tape.gradient(loss, weights)
            ]
        )
    for padded, ragged in zip(*grads):
        np.testing.assert_allclose(ragged, padded, atol=1e-5)


def test_tables_hold_the_values_and_row_offsets():
    encoder = ragged_encoder()
    brand, genres, price, sizes = encoder.item_values
    assert genres.dtype == tf.int32 and genres.shape == (12,)
    assert sizes.dtype == tf.float32 and sizes.shape == (8,)
    np.testing.assert_array_equal(genres.numpy(), ROWS["genres"].values)
    splits = encoder.item_row_splits[1].numpy()
    assert splits.dtype == np.int64
    np.testing.assert_array_equal(splits, [0, 0, 2, 3, 3, 6, 8, 11, 12])
    # Padding and no value are not stored (the inf price, NaN sizes).
    np.testing.assert_array_equal(price.numpy(), [9, 30, 0.5, 12, 10])
    names = [getattr(w, "path", w.name) for w in encoder.non_trainable_weights]
    assert any("row_splits_sizes" in name for name in names), names
    assert not any(w.trainable for w in encoder.item_row_splits)
    # Ragged input gives the same tables as padded input.
    again = ragged_encoder(values=False)
    again.set_item_values(
        {
            "brand": ROWS["brand"],
            "genres": (ROWS["genres"].values, ROWS["genres"].row_splits),
            "price": tf.RaggedTensor.from_row_splits(
                ROWS["price"].values, ROWS["price"].row_splits
            ),
            "sizes": ROWS["sizes"],
        },
        ID_KNOWN,
    )
    for a, b in zip(again.weights, encoder.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_a_20000_value_row_costs_its_values_not_a_padded_table():
    # Padded, one row of 20,000 made a [200, 20,000] table; ragged it holds
    # the values (20,000 + 199 x 4) and 201 row offsets.
    num_items, widest = 200, 20_000
    lengths = np.full(num_items, 4)
    lengths[[0, 7]] = 0, widest
    splits = np.concatenate([[0], np.cumsum(lengths)])
    ids = np.random.default_rng(0).integers(1, 6, splits[-1])
    feature = {**FEATURES[1], "width": widest, "num_values": int(splits[-1])}
    encoder = ItemFeatureEncoder(num_items, D, [feature], fusion="sum")
    encoder.set_item_values({"genres": (ids, splits)}, np.ones(num_items))
    stored = sum(
        w.numpy().nbytes
        for w in [*encoder.item_values, *encoder.item_row_splits]
    )
    assert stored == int(splits[-1]) * 4 + (num_items + 1) * 8
    table = encoder.feature_encoders[0].embeddings.numpy()
    outputs = encoder(np.zeros((num_items, D), "float32")).numpy()
    np.testing.assert_allclose(
        # 20,000 float32 terms: summed in another order than NumPy's.
        outputs[7],
        table[ids[splits[7] : splits[8]]].mean(axis=0),
        rtol=1e-3,
        atol=1e-5,
    )


def test_config_round_trip_keeps_the_ragged_tables():
    encoder = ragged_encoder()
    config = json.loads(json.dumps(encoder.get_config()))
    assert [f["num_values"] for f in config["features"]] == [6, 12, 5, 8]
    revived = ItemFeatureEncoder.from_config(config)
    revived.build(None)
    revived.set_weights(encoder.get_weights())
    np.testing.assert_allclose(revived(ID_TABLE), encoder(ID_TABLE), atol=1e-6)


@pytest.mark.skipif(
    KERAS3,
    reason="tf.train.Checkpoint does not follow Keras 3's lists of "
    "sublayers and weights; Keras 3 saves through its weights files",
)
def test_checkpoint_carries_the_ragged_tables(tmp_path):
    encoder = ragged_encoder("sum")
    expected = encoder(ID_TABLE).numpy()
    path = tf.train.Checkpoint(encoder=encoder).write(str(tmp_path / "ckpt"))
    restored = ragged_encoder("sum", seed=5, values=False)
    tf.train.Checkpoint(encoder=restored).read(path).assert_consumed()
    np.testing.assert_allclose(restored(ID_TABLE), expected, atol=1e-6)
    # A padded checkpoint (saved before ragged tables) is refused by a
    # ragged layer, loudly (never read as empty tables).
    padded = tf.train.Checkpoint(encoder=make_encoder("sum")).write(
        str(tmp_path / "padded")
    )
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tf.train.Checkpoint(encoder=ragged_encoder("sum", values=False)).read(
            padded
        )


def rows_of(change):
    values = dict(ROWS)
    values.update(change)
    return values


@pytest.mark.parametrize(
    "change, match",
    [
        (
            {"genres": (ROWS["genres"].values[:-1], ROWS["genres"].row_splits)},
            r"`row_splits` must start at 0 and end at len\(values\) = 11",
        ),
        (
            {"genres": RaggedRows.from_lists([[2]] * 12 + [[]] * 0, np.int32)},
            r"row_splits must have shape \(9,\).*shape=\(13,\)",
        ),
        (
            {
                "genres": RaggedRows.from_lists(
                    [[2, 3]] * 5 + [[]] * 3, np.int32
                )
            },
            r"num_values=12.*Received: 10 values",
        ),
        (
            {"genres": RaggedRows.from_lists([[2] * 4] + [[2]] * 7 + [], int)},
            r"a row holds 4 values, more than the feature's width 3",
        ),
        (
            {
                "genres": RaggedRows(
                    np.zeros(12, int), ROWS["genres"].row_splits
                )
            },
            r"ids in \[1, 6\).*Received: an id 0",
        ),
        (
            {
                "sizes": RaggedRows(
                    np.full(8, np.nan, "float32"), ROWS["sizes"].row_splits
                )
            },
            r"values\['sizes'\]` holds a NaN or infinite value",
        ),
        (
            {"genres": (ROWS["genres"].values,)},
            r"as a tuple is \(values, row_splits\)",
        ),
        (
            {"sizes": np.zeros((N + 1, 2), "float32")},
            r"ragged \(values, row_splits\) or padded \[num_items=8",
        ),
    ],
)
def test_ragged_values_errors(change, match):
    encoder = ragged_encoder("sum", values=False)
    with pytest.raises(ValueError, match=match):
        encoder.set_item_values(rows_of(change), ID_KNOWN)
    # Nothing was assigned.
    assert not encoder.item_values[1].numpy().any()
    assert not encoder.item_row_splits[1].numpy().any()


def test_every_feature_or_none_gives_num_values():
    with pytest.raises(ValueError, match=r"num_values for \['brand'\] only"):
        ItemFeatureEncoder(N, D, [RAGGED[0], FEATURES[1]])
    with pytest.raises(ValueError, match="num_values=-1"):
        ItemFeatureEncoder(N, D, [{**RAGGED[0], "num_values": -1}])


def test_categorical_embedding_of_ragged_rows():
    layer = CategoricalFeatureEmbedding(6, D)
    padded = np.array([[2, 5, 0], [0, 3, 0], [0, 0, 0], [4, 4, 1]])
    ragged = tf.ragged.constant([[2, 5], [0, 3], [], [4, 4, 1]])
    np.testing.assert_allclose(layer(ragged), layer(padded), atol=1e-6)
    with pytest.raises(ValueError, match="rows"):
        layer(tf.ragged.constant([[[1]], [[2, 3]]]))


@pytest.mark.parametrize(
    "lengths",
    [[0, 2, 0, 0, 3, 1, 0], [0, 0, 0], [0, 4], [0, 1, 1, 0, 0]],
    ids=["empty-rows-between", "no-value", "one-row", "trailing-empty"],
)
def test_row_ids_of_the_values(lengths):
    num_items = len(lengths)
    splits = np.concatenate([[0], np.cumsum(lengths)])
    feature = {**FEATURES[1], "width": 4, "num_values": int(splits[-1])}
    encoder = ItemFeatureEncoder(num_items, D, [feature])
    ids = np.arange(int(splits[-1])) % 5 + 1
    encoder.set_item_values({"genres": (ids, splits)}, np.ones(num_items))
    rows = encoder.item_rows(0)
    np.testing.assert_array_equal(
        rows.value_rowids(), np.repeat(np.arange(num_items), lengths)
    )
    np.testing.assert_array_equal(rows.row_lengths(), lengths)
    np.testing.assert_array_equal(rows.values, ids)


def test_a_wide_row_costs_its_values_not_rows_times_width():
    # Row ids by tf.repeat (RaggedTensor.value_rowids of row splits) build
    # a [rows, widest] mask: 20,000 x 50,000, seconds and a gigabyte.
    # Computed from the offsets they cost the values: milliseconds.
    num_items, widest = 20_000, 50_000
    lengths = np.ones(num_items, np.int64)
    lengths[[0, 3]] = 0, widest
    splits = np.concatenate([[0], np.cumsum(lengths)])
    feature = {**FEATURES[1], "width": widest, "num_values": int(splits[-1])}
    encoder = ItemFeatureEncoder(num_items, D, [feature], fusion="sum")
    ids = np.full(int(splits[-1]), 2)
    encoder.set_item_values({"genres": (ids, splits)}, np.ones(num_items))
    call = tf.function(lambda table: encoder(table))
    table = tf.zeros((num_items, D))
    call(table)  # traced
    start = time.perf_counter()
    outputs = call(table).numpy()
    assert time.perf_counter() - start < 5.0
    embedding = encoder.feature_encoders[0].embeddings.numpy()
    # The mean of 50,000 float32 copies: rounding of the sum.
    np.testing.assert_allclose(outputs[3], embedding[2], rtol=1e-3, atol=1e-6)
