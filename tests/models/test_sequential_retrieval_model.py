"""SequentialRetrievalModel: every switch builds, trains and behaves."""

import numpy as np
import pytest
import tensorflow as tf

from tests.keras_env import KERAS3
from tests.models.model_helpers import make_config, make_model
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.layers import SoftmaxCPR
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.objectives.remove_accidental_hits import MIN_FLOAT

# The sizes of the tiny data of conftest.py.
MAX_LEN = 10
DIM = 8

SWITCHES = {
    "gru4rec": {},
    "sasrec": {"encoder": "sasrec", "num_layers": 2},
    "untied": {"tie_embeddings": False, "output_bias": False},
    "hidden_dim": {"hidden_dim": 12},
    "sse": {
        "sse_item_probability": 0.2,
        "sse_label_probability": 0.1,
        "sse_seed": 1,
    },
    "sse_graph": {
        "sse_item_probability": 0.2,
        "sse_graph_rho": 20.0,
        "sse_seed": 1,
    },
    "features": {"features": ("time_gap",)},
    "cpr": {"head": "cpr", "cpr_reranker_ks": (5,)},
    "cpr_mi": {
        "head": "cpr",
        "cpr_reranker_ks": (3, 8),
        "cpr_mi": True,
        "num_layers": 2,
        "cpr_merge": "add",
    },
    "cpr_mi_one_layer": {"head": "cpr", "cpr_reranker_ks": (), "cpr_mi": True},
    "mos": {"head": "mos", "mos_components": 3},
    "softmax_no_dup": {"head": "softmax_no_dup"},
    "sampled": {"objective": "sampled"},
    "sampled_hard": {"objective": "sampled", "num_hard_negatives": 4},
    "sampled_negatives": {
        "objective": "sampled",
        "num_sampled_negatives": 6,
        "head": "softmax_no_dup",
        "cosine_temperature": 0.1,
    },
    "sampled_cpr": {
        "objective": "sampled",
        "head": "cpr",
        "cpr_reranker_ks": (5,),
        "encoder": "sasrec",
    },
    "cpr_base_loss": {
        "head": "cpr",
        "cpr_reranker_ks": (5,),
        "cpr_base_loss": 1.0,
    },
    "sampled_cpr_base_loss": {
        "objective": "sampled",
        "head": "cpr",
        "cpr_reranker_ks": (5,),
        "cpr_base_loss": 0.5,
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SWITCHES))
def test_switch_builds_trains_and_scores_the_catalogue(
    name, data, raw_item_graph, batch, small_train
):
    model = make_model(data, raw_item_graph, **SWITCHES[name])
    history = model.fit(small_train, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    logits = model(batch).numpy()
    assert logits.shape == (16, data.num_items)
    assert logits.dtype == np.float32
    np.testing.assert_array_equal(logits[:, 0], -1e9)
    assert np.isfinite(logits).all()
    assert (logits[:, 1:].max(axis=1) > -1e8).all()
    values = model.evaluate(
        tf.data.Dataset.from_tensors(batch), return_dict=True, verbose=0
    )
    assert np.isfinite(values["loss"])
    assert 0.0 <= values["ndcg@10"] <= 1.0


def test_tied_has_n_times_d_fewer_parameters(data, batch):
    tied = make_model(data)
    untied = make_model(data, tie_embeddings=False)
    tied(batch)
    untied(batch)
    difference = untied.count_params() - tied.count_params()
    assert difference == data.num_items * DIM
    assert untied.item_embedding.output_embeddings is not (
        untied.item_embedding.embeddings
    )


def _copy_trainable(source, target):
    assert len(source.trainable_weights) == len(target.trainable_weights)
    for a, b in zip(source.trainable_weights, target.trainable_weights):
        b.assign(a)


def test_sse_is_the_identity_at_inference(data, raw_item_graph, batch):
    with_sse = make_model(
        data,
        raw_item_graph,
        sse_item_probability=0.5,
        sse_label_probability=0.5,
        sse_seed=0,
        dropout=0.0,
    )
    without = make_model(data, dropout=0.0)
    with_sse(batch)
    without(batch)
    assert with_sse.item_sse.num_edges  # SSE-Graph is on
    _copy_trainable(with_sse, without)
    np.testing.assert_array_equal(
        with_sse(batch, training=False), without(batch, training=False)
    )
    # ...and not the identity in training.
    assert not np.array_equal(
        with_sse(batch, training=True), without(batch, training=True)
    )


def test_features_change_the_output_and_missing_values_are_finite(data, batch):
    model = make_model(data, features=("time_gap",), dropout=0.0)
    plain = model(batch).numpy()
    history = batch["history"].numpy()
    gaps = batch["time_gap"].numpy()
    changed = np.where(history > 0, gaps * 50.0 + 7.0, 0.0)
    other = model({**batch, "time_gap": tf.constant(changed)}).numpy()
    assert np.abs(other - plain)[:, 1:].max() > 1e-4
    missing = np.where(history > 0, np.nan, 0.0).astype(np.float32)
    with_nan = model({**batch, "time_gap": tf.constant(missing)}).numpy()
    assert np.isfinite(with_nan).all()
    # Values at padding positions are ignored.
    padded = np.where(history > 0, gaps, 1e6).astype(np.float32)
    np.testing.assert_array_equal(
        model({**batch, "time_gap": tf.constant(padded)}), plain
    )


@pytest.mark.parametrize("encoder", ["gru4rec", "sasrec", "hstu"])
def test_one_item_histories_keep_their_own_features(data, encoder):
    # A batch whose longest history has one item is cut to width 1; its
    # [B, 1] features must stay per row (not read as [B] scalars and
    # broadcast across the batch).
    model = make_model(
        data, features=("time_gap",), dropout=0.0, encoder=encoder
    )
    history = np.zeros([3, MAX_LEN], np.int32)
    history[:, 0] = [3, 5, 7]
    gaps = np.zeros([3, MAX_LEN], np.float32)
    gaps[:, 0] = [10.0, 1e4, 1e6]
    batch = {"history": history, "time_gap": gaps}
    together = model(batch).numpy()
    for row in range(3):
        alone = model({k: v[row : row + 1] for k, v in batch.items()})
        np.testing.assert_allclose(alone[0], together[row], atol=1e-5)
    history, states = model.encode(batch)
    assert history.shape[1] == 1 and states[-1].shape[1] == 1


def test_standardised_features_use_the_training_statistics(data):
    model = SequentialRetrievalModel(
        make_config(data, features=("time_gap", "rating")),
        feature_statistics={"rating": (3.5, 1.2)},
    )
    encoder = model.feature_encoders["rating"]
    assert encoder.normalization == "standardize"
    assert (encoder.mean, encoder.variance) == (3.5, 1.2)
    gap = model.feature_encoders["time_gap"]
    assert gap.normalization == "log1p_standardize"
    assert (gap.mean, gap.variance) == (None, None)  # not in the statistics
    model = SequentialRetrievalModel.from_data(
        make_config(data, features=("time_gap",)), data
    )
    real = data.train.history > 0
    gaps = data.train.features["time_gap"][real]
    logs = np.log1p(gaps[np.isfinite(gaps)])
    gap = model.feature_encoders["time_gap"]
    assert gap.mean == pytest.approx(logs.mean(), rel=1e-5)
    assert gap.variance == pytest.approx(logs.var(), rel=1e-5)


def test_missing_feature_key_is_an_error(data, batch):
    with pytest.raises(ValueError, match="rating"):
        make_model(data, features=("rating",))  # from_data checks the data
    model = SequentialRetrievalModel(make_config(data, features=("rating",)))
    with pytest.raises(ValueError, match="rating"):
        model(batch)


def test_cpr_logits_equal_softmax_cpr_on_the_same_hidden_states(data, batch):
    model = make_model(
        data, head="cpr", cpr_reranker_ks=(5,), cpr_mi=True, num_layers=2
    )
    logits = model(batch).numpy()
    history, states = model.encode(batch)
    head = SoftmaxCPR.from_config(model.head.get_config())
    inputs = {
        "hidden_states": states[-1],
        "history_ids": history,
        "layer_hidden_states": states,
    }
    table = model.item_embedding.embeddings
    bias = model.item_embedding.output_bias
    head(inputs, table, item_bias=bias)
    head.set_weights(model.head.get_weights())
    np.testing.assert_allclose(
        head(inputs, table, item_bias=bias), logits, rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "overrides",
    [{"head": "cpr", "cpr_reranker_ks": (5,)}, {"head": "mos"}],
    ids=["cpr", "mos"],
)
def test_head_dropout_reaches_the_head_and_acts_in_training_only(
    data, batch, overrides
):
    model = make_model(data, dropout=0.0, head_dropout=0.5, **overrides)
    assert model.head.dropout == 0.5
    np.testing.assert_array_equal(model(batch), model(batch))
    tf.random.set_seed(0)
    first = model(batch, training=True).numpy()
    second = model(batch, training=True).numpy()
    assert not np.allclose(first, second)
    # None (the default): 0.3 for cpr, measured; 0 for mos.
    default = make_model(data, dropout=0.0, **overrides).head.dropout
    assert default == {"cpr": 0.3, "mos": 0.0}[overrides["head"]]
    off = make_model(data, dropout=0.0, head_dropout=0.0, **overrides)
    assert off.head.dropout == 0.0


@pytest.mark.parametrize("encoder", ["gru4rec", "sasrec"])
def test_cpr_start_as_softmax_starts_with_the_softmax_logits(
    data, batch, encoder
):
    softmax_model = make_model(data, encoder=encoder, num_layers=2)
    softmax = softmax_model(batch).numpy()[:, 1:]  # padding aside

    def cpr_logits(**overrides):
        model = make_model(
            data,
            encoder=encoder,
            num_layers=2,
            head="cpr",
            cpr_reranker_ks=(5,),
            cpr_mi=True,
            **overrides,
        )
        model(batch)  # builds
        # The softmax model's encoder and item table: only the head
        # differs (a seed alone gives both the same weights under tf-keras,
        # not under Keras 3, whose heads draw their seeds in another order).
        model.item_embedding.set_weights(
            softmax_model.item_embedding.get_weights()
        )
        model.encoder.set_weights(softmax_model.encoder.get_weights())
        return model(batch).numpy()[:, 1:]

    np.testing.assert_allclose(cpr_logits(), softmax, atol=1e-5)  # default
    random = cpr_logits(cpr_start_as_softmax=False)
    assert np.abs(random - softmax).max() > 0.01


def test_ffn_dim_sets_the_sasrec_feed_forward_size(data, batch):
    def parameters(**overrides):
        model = make_model(data, encoder="sasrec", num_layers=2, **overrides)
        model(batch)
        return model.count_params()

    # Two layers, each an inner Dense DIM -> n and an outer n -> DIM.
    extra = 2 * ((DIM + 1) * 24 + 24 * DIM) - 2 * ((DIM + 1) * DIM + DIM * DIM)
    assert parameters(ffn_dim=24) - parameters() == extra


def test_softmax_no_dup_removes_history_items_at_inference_only(data, batch):
    model = make_model(data, head="softmax_no_dup", dropout=0.0)
    logits = model(batch).numpy()
    history = batch["history"].numpy()
    rows = np.repeat(np.arange(len(history)), history.shape[1])
    np.testing.assert_array_equal(logits[rows, history.ravel()], -1e9)
    training = model(batch, training=True).numpy()
    real = history.ravel() > 0
    assert (training[rows, history.ravel()][real] > -1e8).all()


def test_mos_outputs_log_probabilities(data, batch):
    model = make_model(data, head="mos")
    total = np.exp(model(batch).numpy().astype(np.float64)).sum(axis=1)
    np.testing.assert_allclose(total, 1.0, rtol=1e-4)


def _hand_sampled_loss(logits, targets, probability, hard=None):
    scores = logits[:, targets].astype(np.float64)  # [B, B]
    scores = scores - np.log(np.clip(probability[targets], 1e-6, 1.0))
    same = targets[:, None] == targets[None, :]
    scores = scores + (same & ~np.eye(len(targets), dtype=bool)) * MIN_FLOAT
    losses = []
    for i, row in enumerate(scores):
        if hard is not None:
            negatives = np.sort(np.delete(row, i))[::-1][:hard]
            row = np.concatenate([[row[i]], negatives])
            positive = 0
        else:
            positive = i
        shifted = row - row.max()
        losses.append(np.log(np.exp(shifted).sum()) - shifted[positive])
    return float(np.mean(losses))


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"num_hard_negatives": 2},
        # The paper's CPR: the loss of its logits alone.
        {"head": "cpr", "cpr_reranker_ks": (4,), "cpr_base_loss": 0.0},
    ],
    ids=["softmax", "hard_negatives", "cpr"],
)
def test_sampled_loss_matches_a_hand_computation(data, overrides):
    counts = np.arange(data.num_items, dtype=np.float64)
    model = SequentialRetrievalModel(
        make_config(
            data,
            objective="sampled",
            dropout=0.0,
            head_dropout=0.0,
            **overrides,
        ),
        item_frequencies=counts,
    )
    # Targets 5 and 9 repeat: accidental hits to remove.
    batch = {
        "history": tf.constant(
            [
                [1, 2, 3, 0],
                [4, 5, 0, 0],
                [6, 5, 7, 8],
                [9, 0, 0, 0],
                [2, 9, 3, 0],
            ]
        ),
        "target": tf.constant([5, 9, 5, 7, 9]),
    }
    logits = model(batch).numpy()
    expected = _hand_sampled_loss(
        logits,
        batch["target"].numpy(),
        counts / counts.sum(),
        hard=overrides.get("num_hard_negatives"),
    )
    # Evaluation gathers the candidates from its full logits; training
    # scores only the candidates: both give the hand-computed loss.
    loss = float(model.compute_loss(batch, training=False))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    trained = float(model.compute_loss(batch, training=True))
    np.testing.assert_allclose(trained, expected, rtol=1e-5)
    # Without the logQ correction the loss differs.
    assert model.config.logq_correction
    uncorrected = _hand_sampled_loss(
        logits,
        batch["target"].numpy(),
        np.ones(data.num_items),
        hard=overrides.get("num_hard_negatives"),
    )
    assert abs(uncorrected - loss) > 1e-3


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"tie_embeddings": False},
        {"head": "cpr", "cpr_reranker_ks": (4,)},
        {"head": "cpr", "cpr_reranker_ks": (3, 8), "cpr_mi": True},
        {
            "head": "cpr",
            "cpr_reranker_ks": (3, 8),
            "cpr_rerank_within_candidates": True,
        },
    ],
    ids=["softmax", "untied", "cpr", "cpr_cascade_mi", "cpr_within"],
)
def test_a_sampled_step_touches_only_the_batchs_item_rows(
    data, batch, overrides
):
    # Otherwise every step costs O(N d) beyond the optimizer: a dense
    # [N, d] gradient and a dense update of the table.
    model = make_model(data, objective="sampled", **overrides)
    model(batch)
    tables = [model.item_embedding.embeddings, model.item_embedding.output_bias]
    if not model.item_embedding.tie:
        tables.append(model.item_embedding.untied_output_embeddings)
    with tf.GradientTape() as tape:
        loss = model.compute_loss(batch, training=True)
    grads = tape.gradient(loss, tables)
    for variable, grad in zip(tables, grads):
        assert isinstance(grad, tf.IndexedSlices), variable.name
    rows = set(batch["history"].numpy().ravel()) | set(batch["target"].numpy())
    touched = set(grads[0].indices.numpy()) | set(grads[1].indices.numpy())
    assert touched <= rows


def fixed_negatives(model, ids):
    """The model's objective draws ``ids`` as its sampled negatives."""
    model.objective.sample_negatives = lambda: tf.constant(ids, tf.int32)


@pytest.mark.parametrize("hard", [None, 2])
def test_sampled_negatives_loss_matches_numpy_reference(data, batch, hard):
    model = make_model(
        data,
        objective="sampled",
        num_sampled_negatives=5,
        num_hard_negatives=hard,
        dropout=0.0,
    )
    targets = batch["target"].numpy()
    # A repeated negative, and one that is the first rows' target (an
    # accidental hit, left out for those rows).
    ids = [3, 1, 7, 3, int(targets[0])]
    fixed_negatives(model, ids)
    logits = model(batch).numpy().astype("float64")
    expected = []
    for row, target in zip(logits, targets):
        negatives = np.where(np.array(ids) == target, -1e9, row[ids])
        if hard is not None:
            negatives = np.sort(negatives)[-hard:]
        scores = np.concatenate([[row[target]], negatives])
        top = scores.max()
        expected.append(top + np.log(np.exp(scores - top).sum()) - scores[0])
    loss = model.compute_loss(batch, training=True)
    np.testing.assert_allclose(loss.numpy(), np.mean(expected), rtol=1e-5)
    # Evaluation's loss is the same objective, read off the full logits.
    model.loss_tracker.reset_state()
    model.compute_loss(batch, training=False)
    np.testing.assert_allclose(
        model.loss_tracker.result().numpy(), np.mean(expected), rtol=1e-5
    )


def test_a_sampled_negatives_step_touches_the_targets_and_negatives(
    data, batch
):
    # K shared negatives instead of the catalogue: the step reads and
    # updates only the targets' and the negatives' rows of the output side.
    model = make_model(data, objective="sampled", num_sampled_negatives=4)
    model(batch)
    ids = [2, 5, 5, 9]
    fixed_negatives(model, ids)
    bias = model.item_embedding.output_bias
    with tf.GradientTape() as tape:
        loss = model.compute_loss(batch, training=True)
    grad = tape.gradient(loss, bias)
    assert isinstance(grad, tf.IndexedSlices)
    touched = set(grad.indices.numpy())
    assert touched <= set(batch["target"].numpy()) | set(ids)
    assert set(ids) <= touched


@pytest.mark.parametrize("encoder", ["gru4rec", "sasrec", "hstu"])
def test_appending_padding_columns_keeps_the_logits(encoder, data, batch):
    model = make_model(
        data,
        encoder=encoder,
        features=("time_gap",),
        head="cpr",
        cpr_reranker_ks=(5,),
    )
    logits = model(batch).numpy()
    longer = {
        k: tf.pad(v, [[0, 0], [0, 3]]) if v.shape.rank == 2 else v
        for k, v in batch.items()
    }
    assert longer["history"].shape[1] == MAX_LEN + 3
    np.testing.assert_allclose(model(longer), logits, rtol=1e-6, atol=1e-6)
    # Without the trimming, causality alone keeps the states at the last
    # real positions.
    history = batch["history"]
    x = model.item_embedding.lookup(history)
    lengths = (history.numpy() > 0).sum(axis=1)
    width, last = int(lengths.max()), np.maximum(lengths - 1, 0)
    full = model.encoder(x)[-1].numpy()
    trimmed = model.encoder(x[:, :width])[-1].numpy()
    rows = np.arange(len(last))
    np.testing.assert_allclose(
        full[rows, last], trimmed[rows, last], rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("head", ["softmax", "cpr", "mos"])
def test_empty_history_scores_do_not_depend_on_the_batch(data, batch, head):
    model = make_model(
        data, head=head, cpr_reranker_ks=(5,), cpr_mi=head == "cpr"
    )
    alone = model({"history": tf.zeros([1, 1], tf.int32)}).numpy()
    history = batch["history"].numpy().copy()
    history[0] = 0
    assert (history[1:] > 0).sum(axis=1).max() > 2  # a wide batch
    in_batch = model({"history": tf.constant(history)}).numpy()
    np.testing.assert_allclose(in_batch[0], alone[0], rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_weights_and_config_round_trip(
    data, raw_item_graph, batch, small_train, tmp_path
):
    model = make_model(
        data,
        raw_item_graph,
        encoder="sasrec",
        head="cpr",
        cpr_reranker_ks=(5,),
        features=("time_gap",),
        sse_item_probability=0.1,
        sse_label_probability=0.1,
        objective="sampled",
    )
    model.fit(small_train, epochs=1, verbose=0)
    expected = model(batch).numpy()
    # Each Keras' own weight format (docs/keras-versions.md).
    path = str(tmp_path / ("model.weights.h5" if KERAS3 else "weights"))
    model.save_weights(path)

    config = model.get_config()
    assert config["item_graph_num_edges"] == model.item_sse.num_edges > 0
    revived = SequentialRetrievalModel.from_config(config)
    revived(batch)
    status = revived.load_weights(path)
    if not KERAS3:  # Keras 3 raises on a mismatch instead
        status.assert_existing_objects_matched()
    np.testing.assert_array_equal(revived(batch), expected)
    np.testing.assert_array_equal(
        revived.item_sse.graph_indices, model.item_sse.graph_indices
    )
    np.testing.assert_array_equal(
        revived.candidate_probability, model.candidate_probability
    )
    assert revived.get_config() == config


def test_from_data_maps_the_raw_graph_and_counts_targets(data, raw_item_graph):
    model = make_model(
        data, raw_item_graph, sse_item_probability=0.1, objective="sampled"
    )
    counts = np.bincount(data.train.target, minlength=data.num_items)
    np.testing.assert_allclose(
        model.candidate_probability.numpy(), counts / counts.sum(), rtol=1e-6
    )
    # Every raw edge joins two items of the vocabulary: 2 CSR entries each.
    assert model.item_sse.num_edges == 2 * len(raw_item_graph)


@pytest.mark.slow
@pytest.mark.parametrize("every_position", [False, True])
def test_reported_loss_is_the_mean_over_the_epochs_examples(
    data, every_position
):
    # Batches of 7 leave a short last batch; the reported loss must weigh
    # it by its examples, not report the last batch's loss (tfrs.Model's).
    model = make_model(
        data, encoder="sasrec", dropout=0.0, attention_dropout=0.0
    )
    model.compile(optimizer=tf.keras.optimizers.SGD(0.0))
    examples = data.train.as_dict()
    logits = model(examples)
    expected = float(
        tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.cast(examples["target"], tf.int32), logits
            )
        )
    )
    train = make_dataset(data.train, 7, every_position=every_position)
    history = model.fit(train, epochs=2, verbose=0, validation_data=train)
    for key in ("loss", "val_loss"):
        # Two epochs: the mean restarts with each epoch.
        assert history.history[key] == pytest.approx([expected] * 2, 1e-5)
    # Without regularization losses, each epoch line shows the loss once.
    for key in ("total_loss", "regularization_loss"):
        assert (
            key not in history.history and f"val_{key}" not in history.history
        )
    values = model.evaluate(
        make_dataset(data.validation, 7), return_dict=True, verbose=0
    )
    validation = data.validation.as_dict()
    assert values["loss"] == pytest.approx(
        float(
            tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    tf.cast(validation["target"], tf.int32),
                    model(validation),
                )
            )
        ),
        1e-5,
    )


@pytest.mark.parametrize("objective", ["full", "sampled"])
@pytest.mark.parametrize("training", [False, True])
def test_cpr_base_loss_adds_the_weighted_loss_of_the_base_logits(
    data, batch, objective, training
):
    tf.keras.utils.set_random_seed(3)
    config = make_config(
        data,
        head="cpr",
        cpr_reranker_ks=(5,),
        cpr_base_loss=0.5,
        objective=objective,
        dropout=0.0,
        head_dropout=0.0,
        cpr_start_as_softmax=False,  # base and CPR logits differ
    )
    model = SequentialRetrievalModel.from_data(config, data)
    history, states = model.encode(batch, training=False)
    targets = tf.cast(tf.reshape(batch["target"], [-1]), tf.int32)
    logits, base = model._scores(
        history, states, False, return_base_logits=True
    )
    plain = SequentialRetrievalModel.from_data(
        ModelConfig(**{**config.to_dict(), "cpr_base_loss": 0.0}), data
    )
    plain(batch)
    plain.set_weights(model.get_weights())
    if objective == "full":
        cpr = tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)
        base_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
            targets, base
        )
    else:
        probability = model.candidate_probability
        cpr = model.objective.loss(
            tf.gather(logits, targets, axis=1), targets, probability
        )
        base_loss = model.objective.loss(
            tf.gather(base, targets, axis=1), targets, probability
        )
    expected = float(tf.reduce_mean(cpr + 0.5 * base_loss))
    loss = float(model.compute_loss(batch, training=training))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    # Without the option, the loss is CPR's alone.
    assert float(plain.compute_loss(batch, training=training)) == pytest.approx(
        float(tf.reduce_mean(cpr)), rel=1e-5
    )
    assert float(tf.reduce_mean(base_loss)) > 0.1


@pytest.mark.parametrize("base_loss", [0.0, 1.0])
@pytest.mark.parametrize("every_position", [False, True])
def test_cpr_training_loss_is_the_cross_entropy_of_its_logits(
    data, base_loss, every_position
):
    # Training reads SoftmaxCPR.cross_entropy, which never writes the
    # logits: its loss and metrics are those of the written-out logits.
    model = make_model(
        data,
        head="cpr",
        cpr_reranker_ks=(4,),
        cpr_mi=True,
        cpr_base_loss=base_loss,
        dropout=0.0,
        head_dropout=0.0,
    )
    history = tf.constant([[1, 2, 3, 2], [4, 5, 0, 0], [6, 5, 7, 8]])
    batch = {"history": history, "target": tf.constant([5, 9, 2])}
    if every_position:
        batch["position_targets"] = tf.constant(
            [[2, 3, 2, 5], [5, 9, 0, 0], [5, 7, 8, 2]]
        )
        batch["target"] = tf.constant([5, 9, 2])
    loss = model.compute_loss(batch, training=True)
    ranks = {m.name: float(m.result()) for m in model.ranking_metrics}
    for metric in model.metrics:
        metric.reset_state()
    # The written-out path: what evaluation runs, on the same weights.
    expected = model.compute_loss(batch, training=False)
    np.testing.assert_allclose(float(loss), float(expected), rtol=1e-5)
    assert ranks == {m.name: float(m.result()) for m in model.ranking_metrics}


@pytest.mark.slow
@pytest.mark.parametrize("head", ["softmax_no_dup", "cpr"])
def test_without_train_metrics_training_logs_no_ranks_and_trains_the_same(
    data, batch, head
):
    train = make_dataset(data.train, 32).take(3)
    ranked, unranked = (
        make_model(
            data,
            encoder="sasrec",
            head=head,
            cpr_reranker_ks=(5,),
            dropout=0.0,
            attention_dropout=0.0,
            head_dropout=0.0,
            train_metrics=train_metrics,
        )
        for train_metrics in (True, False)
    )
    ranked(batch), unranked(batch)
    _copy_trainable(ranked, unranked)
    logs = [
        model.fit(train, epochs=2, verbose=0, validation_data=train).history
        for model in (ranked, unranked)
    ]
    metrics = {"ndcg@10", "hr@10", "mrr@10"}
    assert metrics <= set(logs[0])
    # No training ranks (not a 0 that reads as a score); validation ranks.
    assert set(logs[0]) - set(logs[1]) == metrics
    for key, values in logs[1].items():
        # The ranks were a side computation: the same weights and scores.
        np.testing.assert_allclose(values, logs[0][key], rtol=1e-6)
    assert logs[1]["val_ndcg@10"][-1] > 0


@pytest.mark.slow
@pytest.mark.parametrize("negatives", [None, 8])
def test_sampled_objective_training_logs_no_ranks(data, negatives):
    # It scores only its candidates in training: no ranks, so no metric
    # that stays at 0 in the progress bar; validation ranks the catalogue.
    train = make_dataset(data.train, 32).take(2)
    model = make_model(
        data, objective="sampled", num_sampled_negatives=negatives
    )
    assert not model.ranks_in_training
    logs = model.fit(train, epochs=1, verbose=0, validation_data=train).history
    assert not {"ndcg@10", "hr@10", "mrr@10"} & set(logs)
    assert {"loss", "val_ndcg@10", "val_hr@10", "val_mrr@10"} <= set(logs)
    assert make_model(data).ranks_in_training
