"""features.item_fusion: one step's fused items, read whole or by id."""

import numpy as np
import pytest
import tensorflow as tf

from tests.features.test_item_feature_encoder import (
    FEATURES,
    ID_TABLE,
    VALUES,
    D,
    N,
    make_encoder,
)
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows
from tfrec_tricks.features import ItemFeatureEncoder


def _ragged_features():
    """FEATURES with ``num_values``: the values stored ragged."""
    return [
        {
            **f,
            "num_values": RaggedRows.from_dense(VALUES[f["name"]]).values.size,
        }
        for f in FEATURES
    ]


@pytest.mark.parametrize("ragged", [True, False], ids=["ragged", "padded"])
@pytest.mark.parametrize("fusion", ["concat", "sum"])
def test_rows_by_id_are_the_whole_table_s_values_and_gradients(fusion, ragged):
    # The sampled objective reads the fused rows of a step's ids only
    # (ItemFusion.rows): the same draw of the id dropout, the same known
    # means, padding zeros, as the whole table's rows.
    features = _ragged_features() if ragged else FEATURES
    encoder = make_encoder(fusion, features=features)
    assert encoder.ragged == ragged
    encoder.id_dropout, encoder.seed = 0.5, 3
    id_table = tf.Variable(ID_TABLE)
    bias = tf.Variable(np.arange(N, dtype="float32") - 2.0)
    # Cold items 3 and 5, padding, a repeat; every item but 2.
    ids = tf.constant([[3, 0, 5, 6], [1, 1, 7, 4]])
    rng = np.random.default_rng(1)
    row_weights = rng.normal(size=(2, 4, D)).astype("float32")
    bias_weights = rng.normal(size=(2, 4)).astype("float32")
    variables = [id_table, bias, *encoder.trainable_weights]
    with tf.GradientTape(persistent=True) as tape:
        # A step whose draw drops some of the known items read and keeps
        # some (the draws follow the op seeds TensorFlow hands out: under
        # pytest-xdist and Keras 3, one step in eight drops all or none).
        for _ in range(50):
            fusion_step = encoder.fusion_step(id_table, bias, training=True)
            dropped = fusion_step._stand_in.numpy()[[1, 4, 6, 7]]
            if dropped.any() and not dropped.all():
                break
        # One step, one draw: read whole, then by id.
        table, fused_bias = fusion_step.table()
        whole, whole_bias = tf.gather(table, ids), tf.gather(fused_bias, ids)
        by_id, by_id_bias = fusion_step.rows(ids)
        losses = [
            tf.reduce_sum(rows * row_weights)
            + tf.reduce_sum(row_bias * bias_weights)
            for rows, row_bias in ((whole, whole_bias), (by_id, by_id_bias))
        ]
    gradients = [
        [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
        for loss in losses
    ]
    # Some known item read is dropped this step, some is not.
    assert dropped.any() and not dropped.all()
    np.testing.assert_array_equal(by_id, whole)
    np.testing.assert_array_equal(by_id_bias, whole_bias)
    np.testing.assert_array_equal(by_id[0, 1], np.zeros(D))
    for whole_gradient, by_id_gradient in zip(*gradients):
        # A row read twice sums its two gradients in another order.
        np.testing.assert_allclose(
            by_id_gradient, whole_gradient, rtol=1e-6, atol=1e-6
        )
    # Padding's, the cold items' and the dropped items' id rows train
    # nothing; item 2, never read, neither; the other items' rows do.
    id_gradient = gradients[1][0].numpy()
    stand_in = fusion_step._stand_in.numpy()
    for item in range(N):
        trains = item in (1, 4, 6, 7) and not stand_in[item]
        assert id_gradient[item].any() == trains, item


def test_fuse_rows_reads_only_the_rows_of_its_ids():
    # A million items, one value each but a 20,000-value row: the rows
    # of 3 items read 3 values (the whole table's 1,020,000 would not be
    # averaged in the graph at all).
    num_items = 1_000_000
    lengths = np.ones(num_items, np.int64)
    lengths[0], lengths[2] = 0, 20_000
    splits = np.concatenate([[0], np.cumsum(lengths)])
    feature = {
        "name": "tags",
        "kind": "token_seq",
        "width": 20_000,
        "vocabulary_size": 5,
        "num_values": int(splits[-1]),
    }
    encoder = ItemFeatureEncoder(num_items, D, [feature], fusion="sum")
    values = np.full(int(splits[-1]), 2, np.int32)
    values[splits[5]] = 4
    encoder.set_item_values(
        {"tags": (values, splits)}, np.ones(num_items, np.float32)
    )
    id_table = tf.zeros((num_items, D))
    rows, _ = encoder.fuse_rows(id_table, tf.constant([5, 0, 7]))
    table = encoder.feature_encoders[0].embeddings.numpy()
    np.testing.assert_allclose(rows, [table[4], np.zeros(D), table[2]])
    gathered = encoder.item_rows(0, tf.constant([2, 5]))
    assert gathered.row_lengths().numpy().tolist() == [20_000, 1]
