"""models.item_tables: the item tables one step reads."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.models.item_tables import embed_items, item_tables
from tfrec_tricks.objectives.item_rows import ItemRows

FEATURES = [
    {
        "name": "genre",
        "kind": "token_seq",
        "width": 2,
        "vocabulary_size": 4,
        "mean": 0.0,
        "variance": 1.0,
    },
    {
        "name": "year",
        "kind": "float",
        "width": 1,
        "vocabulary_size": 0,
        "mean": 1990.0,
        "variance": 100.0,
    },
]


def _values(num_items=5):
    genre = np.array([[0, 0], [2, 3], [2, 0], [3, 0], [1, 2]], np.int32)
    year = np.array([[np.nan], [1990], [1995], [np.nan], [2000]], np.float32)
    known = np.array([0, 1, 1, 1, 0], np.float32)  # item 4 is cold
    return {"values": {"genre": genre, "year": year}, "id_known": known}


def _feature_model(**settings):
    """A 5-item model with FEATURES and ``_values()``; ``settings`` are
    the other ``ModelConfig`` fields."""
    config = ModelConfig(
        num_items=5,
        max_len=4,
        embedding_dim=8,
        item_features=FEATURES,
        **settings,
    )
    return SequentialRetrievalModel(config, item_feature_values=_values())


def _model(tie=True, fusion="concat"):
    return _feature_model(feature_fusion=fusion, tie_embeddings=tie)


def test_without_item_features_the_tables_are_the_id_embedding_s():
    model = SequentialRetrievalModel(ModelConfig(num_items=5, max_len=4))
    tables = model.item_tables()
    assert tables.input_table is None
    assert tables.output_table is model.item_embedding.output_embeddings
    ids = tf.constant([[1, 2, 0]])
    np.testing.assert_array_equal(
        embed_items(model.item_embedding, tables, ids),
        model.item_embedding.lookup(ids),
    )


def test_tied_tables_are_the_fused_table():
    model = _model()
    tables = item_tables(model.item_embedding, model.item_features)
    fused = model.item_features(model.item_embedding.embeddings)
    np.testing.assert_allclose(tables.input_table, fused)
    np.testing.assert_allclose(tables.output_table, fused)
    rows = embed_items(model.item_embedding, tables, tf.constant([[3, 0]]))
    np.testing.assert_allclose(rows[0, 0], fused[3])
    np.testing.assert_array_equal(rows[0, 1], np.zeros(8))


def test_an_untied_output_table_stays_the_id_only_one():
    model = _model(tie=False)
    tables = model.item_tables()
    assert tables.output_table is model.item_embedding.output_embeddings


def test_a_cold_item_s_bias_is_the_trained_items_mean():
    model = _model()
    bias = model.item_embedding.output_bias
    bias.assign([0.0, 1.0, 2.0, 6.0, -50.0])
    tables = model.item_tables()
    # Padding's (row 0) is never served: the heads mask it.
    np.testing.assert_allclose(tables.output_bias[1:], [1.0, 2.0, 6.0, 3.0])


def test_a_model_with_item_features_trains_and_round_trips(tmp_path):
    model = _model()
    model.compile(optimizer="adam")
    batch = {
        "history": tf.constant([[1, 2, 0, 0], [3, 1, 2, 0]]),
        "target": tf.constant([3, 4]),
    }
    model.fit(tf.data.Dataset.from_tensors(batch), epochs=2, verbose=0)
    before = model(batch)
    again = SequentialRetrievalModel.from_config(model.get_config())
    again(batch)
    again.set_weights(model.get_weights())
    np.testing.assert_allclose(again(batch), before, rtol=1e-6)
    # The items' values travel in the weights.
    np.testing.assert_array_equal(
        again.item_features.get_weights()[0],
        model.item_features.get_weights()[0],
    )


def _batch():
    return {
        "history": tf.constant([[1, 2, 0, 0], [3, 1, 2, 0], [2, 0, 0, 0]]),
        "target": tf.constant([3, 4, 1]),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "settings",
    [
        {"head": "softmax"},
        {"head": "softmax_no_dup"},
        {"head": "cpr", "cpr_reranker_ks": (2,), "cpr_mi": True},
        {"head": "mos", "mos_components": 2},
        {"objective": "sampled"},
        {"objective": "sampled", "num_sampled_negatives": 2},
        {"head": "cpr", "cpr_reranker_ks": (2,), "objective": "sampled"},
        {"sse_item_probability": 0.5, "sse_label_probability": 0.5},
        {"encoder": "sasrec", "num_heads": 1},
        {"encoder": "hstu", "num_heads": 1},
        {"feature_fusion": "concat"},
    ],
    ids=lambda s: "-".join(f"{k}={v}" for k, v in s.items()),
)
def test_every_head_objective_and_encoder_trains_on_the_fused_table(settings):
    model = _feature_model(**settings)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05))
    before = [w.numpy().copy() for w in model.item_features.trainable_weights]
    history = model.fit(
        tf.data.Dataset.from_tensors(_batch()), epochs=2, verbose=0
    )
    assert np.isfinite(history.history["loss"]).all()
    after = model.item_features.trainable_weights
    # The attribute embeddings train through every head and objective.
    assert any(not np.array_equal(b, a.numpy()) for b, a in zip(before, after))
    history_ids, states = model.encode(_batch())
    ids, _ = model.top_k(history_ids, states, 4)
    assert (ids.numpy() > 0).all()  # padding is never served
    if model.has_index:
        indexed, _ = model.top_k(history_ids, states, 4, use_index=True)
        np.testing.assert_array_equal(indexed, ids)


def test_training_windows_train_on_the_fused_table():
    model = _model()
    model.compile(optimizer="adam")
    batch = {
        "history": tf.constant([[1, 2, 3, 0]]),
        "target": tf.constant([0]),
        "position_targets": tf.constant([[2, 3, 4, 0]]),
    }
    history = model.fit(tf.data.Dataset.from_tensors(batch), verbose=0)
    assert np.isfinite(history.history["loss"]).all()


def _step(model, batch):
    """One training step's loss and gradients (dense), from seed 0 (and
    the SSE layers' call counters at 0)."""
    tf.keras.utils.set_random_seed(0)
    for sse in (model.item_sse, model.label_sse):
        if sse is not None:
            sse.seed_state.assign(0)
    # Keras 3's dropout draws from each layer's seed state, which
    # set_random_seed leaves as it is (tf-keras' draws follow the global
    # seed, and it has no such state).
    seed_states = [
        variable
        for variable in model.variables
        if getattr(variable, "path", "").endswith("seed_generator_state")
    ]
    for index, state in enumerate(seed_states):
        state.assign(tf.constant([index, 0], dtype=state.dtype))
    with tf.GradientTape() as tape:
        loss = model.compute_loss(batch, training=True)
    gradients = tape.gradient(loss, model.trainable_variables)
    return float(loss), [
        None if g is None else tf.convert_to_tensor(g).numpy()
        for g in gradients
    ]


@pytest.mark.parametrize(
    "settings",
    [
        {"objective": "sampled"},
        {
            "objective": "sampled",
            "num_sampled_negatives": 3,
            "head": "softmax_no_dup",
            "cosine_temperature": 0.5,
        },
        {
            "objective": "sampled",
            "num_sampled_negatives": 2,
            "feature_fusion": "sum",
            "item_id_dropout": 0.5,
            "sse_seed": 3,
            "sse_item_probability": 0.3,
            "sse_label_probability": 0.3,
            "encoder": "sasrec",
            "num_heads": 1,
        },
        {"objective": "sampled", "windows": True},
    ],
    ids=["in-batch", "negatives-no-dup-cosine", "dropout-sse", "windows"],
)
def test_a_sampled_step_fuses_only_its_rows_with_the_whole_table_s_numbers(
    settings, monkeypatch
):
    # The sampled objective scores its candidates only: the step fuses
    # the rows of its histories' and candidates' items (ItemRows), not the
    # whole catalogue, and its loss and gradients are the whole table's.
    settings = dict(settings)
    batch = _batch()
    if settings.pop("windows", False):
        batch = {
            "history": tf.constant([[1, 2, 3, 0], [4, 3, 0, 0]]),
            "target": tf.constant([0, 0]),
            "position_targets": tf.constant([[2, 3, 4, 0], [3, 1, 0, 0]]),
        }
    model = _feature_model(**settings)
    # Builds every layer before the steps: Keras 3 creates a dropout's
    # seed state in its build (``_step``).
    model.compute_loss(batch, training=False)
    with monkeypatch.context() as patch:
        # The whole table is never fused.
        patch.setattr(model.item_features, "fuse", None)
        loss, gradients = _step(model, batch)
    with monkeypatch.context() as patch:
        patch.setattr(
            model,
            "item_tables",
            lambda training=False, by_row=False: item_tables(
                model.item_embedding, model.item_features, training
            ),
        )
        whole_loss, whole_gradients = _step(model, batch)
    assert np.isfinite(loss)
    # Equal but for the order of float sums (a row read twice sums its
    # gradients in another order).
    np.testing.assert_allclose(loss, whole_loss, rtol=1e-6)
    assert len(gradients) == len(whole_gradients)
    for gradient, whole in zip(gradients, whole_gradients):
        assert (gradient is None) == (whole is None)
        if gradient is not None:
            np.testing.assert_allclose(gradient, whole, rtol=1e-5, atol=1e-6)
    # Evaluation, and full-softmax steps, still read the whole table.
    tables = model.item_tables(True, by_row=False)
    assert not isinstance(tables.output_table, ItemRows)
    assert isinstance(
        model.item_tables(True, by_row=True).input_table, ItemRows
    )
    assert not isinstance(
        model.item_tables(False, by_row=True).input_table, ItemRows
    )
