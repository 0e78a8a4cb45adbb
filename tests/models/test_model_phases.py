"""SequentialRetrievalModel.__init__: what each construction step builds.

The model is only constructed here (never called), so these tests are
fast; ``test_sequential_retrieval_model.py`` checks that the parts work.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.keras_env import KERAS3
from tfrec_tricks.layers import MixtureOfSoftmax, SoftmaxCPR, TiedSoftmax
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder
from tfrec_tricks.models.hstu_encoder import HSTUEncoder
from tfrec_tricks.models.sasrec_encoder import SASRecEncoder
from tfrec_tricks.objectives import (
    FullSoftmax,
    InBatchSampledSoftmax,
    PartitionedSoftmax,
    SampledNegatives,
)

NUM_ITEMS = 6
DIM = 8


def build(
    item_graph=None,
    item_frequencies=None,
    feature_statistics=None,
    item_graph_num_edges=None,
    **overrides,
):
    values = {
        "num_items": NUM_ITEMS,
        "max_len": 4,
        "embedding_dim": DIM,
        "dropout": 0.1,
    }
    values.update(overrides)
    return SequentialRetrievalModel(
        ModelConfig(**values),
        item_graph=item_graph,
        item_frequencies=item_frequencies,
        feature_statistics=feature_statistics,
        item_graph_num_edges=item_graph_num_edges,
    )


# ------------------------------------------------------------ item embedding


@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_item_embedding_is_built_tied_or_not_with_or_without_bias(tie, bias):
    model = build(tie_embeddings=tie, output_bias=bias)
    embedding = model.item_embedding
    # Built at construction: the SSE layers and heads read it before a call.
    assert embedding.built
    assert embedding.embeddings.shape == (NUM_ITEMS, DIM)
    assert (embedding.output_embeddings is embedding.embeddings) == tie
    assert (embedding.output_bias is None) == (not bias)


# ---------------------------------------------------------------- SSE layers


@pytest.mark.parametrize(
    "item_probability, label_probability",
    [(0.0, 0.0), (0.2, 0.0), (0.0, 0.1), (0.2, 0.1)],
)
def test_an_sse_layer_exists_only_for_a_positive_probability(
    item_probability, label_probability
):
    model = build(
        sse_item_probability=item_probability,
        sse_label_probability=label_probability,
        sse_seed=7,
    )
    assert (model.item_sse is None) == (item_probability == 0.0)
    assert (model.label_sse is None) == (label_probability == 0.0)
    # Different seeds, so that items and labels are not replaced alike.
    if model.item_sse is not None:
        assert model.item_sse.seed == 7
        assert model.item_sse.probability == pytest.approx(item_probability)
    if model.label_sse is not None:
        assert model.label_sse.seed == 8
        assert model.label_sse.probability == pytest.approx(label_probability)


GRAPH = np.array([[1, 2], [2, 3], [4, 5]])


@pytest.mark.parametrize(
    "overrides",
    [{"sse_item_probability": 0.2}, {"sse_label_probability": 0.1}],
    ids=["item_sse", "label_sse_only"],
)
def test_the_graph_size_comes_from_the_sse_layer_that_exists(overrides):
    model = build(item_graph=GRAPH, **overrides)
    # Two CSR entries per undirected edge.
    assert model.item_graph_num_edges == 2 * len(GRAPH)


def test_without_sse_there_is_no_graph_size():
    model = build(item_graph=GRAPH, item_graph_num_edges=6)
    assert model.item_sse is None and model.label_sse is None
    assert model.item_graph_num_edges is None
    assert model.get_config()["item_graph_num_edges"] is None


def test_a_saved_graph_size_creates_the_graph_weights_to_load():
    model = build(item_graph_num_edges=6, sse_item_probability=0.2)
    assert model.item_graph_num_edges == 6
    assert model.item_sse.graph_indices.shape == (6,)


# -------------------------------------------------------- feature statistics


def test_statistics_of_a_feature_the_config_does_not_use_are_an_error():
    with pytest.raises(ValueError, match=r"\['rating'\]"):
        build(
            features=("time_gap",),
            feature_statistics={"time_gap": (1.0, 2.0), "rating": (3.0, 1.0)},
        )


def test_the_given_statistics_are_not_changed():
    statistics = {"time_gap": (1.0, 2.0)}
    build(features=("time_gap", "rating"), feature_statistics=statistics)
    assert statistics == {"time_gap": (1.0, 2.0)}


# ---------------------------------------------------------- feature encoders


def test_no_features_no_encoders():
    assert dict(build().feature_encoders) == {}


def test_each_feature_gets_its_own_soft_one_hot_encoder():
    model = build(
        features=("time_gap", "rating"),
        soft_one_hot_buckets=5,
        feature_statistics={"time_gap": (1.5, 4.0)},
    )
    encoders = model.feature_encoders
    assert sorted(encoders) == ["rating", "time_gap"]
    gap, rating = encoders["time_gap"], encoders["rating"]
    assert gap.name == "feature_time_gap" and rating.name == "feature_rating"
    # time_gap is heavy-tailed: standardised after a log1p.
    assert gap.normalization == "log1p_standardize"
    assert (gap.mean, gap.variance) == (1.5, 4.0)
    # No statistics: the encoder's own default.
    assert rating.normalization == "standardize"
    assert rating.mean is None and rating.variance is None
    for encoder in (gap, rating):
        assert encoder.num_embeddings == 5
        assert encoder.output_dim == DIM
        assert encoder.missing == "learned"


# ------------------------------------------------------------------ encoder


@pytest.mark.parametrize(
    "encoder, cls",
    [
        ("gru4rec", GRU4RecEncoder),
        ("sasrec", SASRecEncoder),
        ("hstu", HSTUEncoder),
    ],
)
@pytest.mark.parametrize("hidden_dim", [None, 12])
def test_the_encoder_has_the_configured_type_and_width(
    encoder, cls, hidden_dim
):
    model = build(encoder=encoder, hidden_dim=hidden_dim, dropout=0.25)
    assert type(model.encoder) is cls
    assert model.encoder.name == "encoder"
    assert model.encoder.hidden_dim == (hidden_dim or DIM)
    assert model.embedding_dropout.rate == 0.25
    assert model.output_dropout.rate == 0.25
    assert model.embedding_dropout is not model.output_dropout


def test_sasrec_gets_the_sasrec_options():
    model = build(
        encoder="sasrec", num_layers=3, num_heads=2, ffn_dim=20, max_len=7
    )
    encoder = model.encoder
    assert (encoder.num_layers, encoder.num_heads) == (3, 2)
    assert (encoder.ffn_dim, encoder.max_len) == (20, 7)


# -------------------------------------------------------------- output head


@pytest.mark.parametrize(
    "overrides, head_type, has_projection",
    [
        ({}, TiedSoftmax, False),
        ({"head": "softmax_no_dup"}, TiedSoftmax, False),
        ({"hidden_dim": 12}, TiedSoftmax, True),
        ({"hidden_dim": DIM}, TiedSoftmax, False),
        ({"head": "softmax_no_dup", "hidden_dim": 12}, TiedSoftmax, True),
        ({"head": "cpr", "cpr_reranker_ks": (2,)}, SoftmaxCPR, False),
        (
            {"head": "cpr", "cpr_reranker_ks": (2,), "hidden_dim": 12},
            SoftmaxCPR,
            False,
        ),
        ({"head": "mos"}, MixtureOfSoftmax, False),
        ({"head": "mos", "hidden_dim": 12}, MixtureOfSoftmax, False),
    ],
    ids=[
        "softmax",
        "softmax_no_dup",
        "softmax_wide",
        "softmax_same_width",
        "softmax_no_dup_wide",
        "cpr",
        "cpr_wide",
        "mos",
        "mos_wide",
    ],
)
def test_the_head_and_projection_built_for_each_config(
    overrides, head_type, has_projection
):
    model = build(**overrides)
    assert type(model.head) is head_type
    if head_type is TiedSoftmax:
        # Projected only when the encoder is wider than the item table.
        assert model.head.output_dim == (DIM if has_projection else None)
        assert model.head.cosine_temperature is None
        assert model.head.exclude_history == (
            overrides.get("head") == "softmax_no_dup"
        )
    else:
        # The other heads map the states to the table's width themselves.
        assert model.head.output_dim == DIM
    if has_projection:
        # The head's own projection, under the model's name too (the key
        # checkpoints have always had).
        assert model.projection is model.head.projection
        assert isinstance(model.projection, tf.keras.layers.Dense)
        assert model.projection.units == DIM
        assert model.projection.name == "projection"
    else:
        assert model.projection is None


def test_the_softmax_head_scores_cosines_at_the_configs_temperature():
    model = build(head="softmax_no_dup", cosine_temperature=0.05)
    assert model.head.cosine_temperature == 0.05
    logits = model({"history": tf.constant([[1, 2, 0], [3, 0, 0]])})
    bias = model.item_embedding.output_bias.numpy()
    real = logits.numpy()[:, 1:] - bias[1:]
    # Cosines within [-1, 1], so the scores less the bias within 1 / t;
    # the history's items ranked last.
    shown = real[real > -1e8]
    assert shown.size and abs(shown).max() <= 20 + 1e-4
    assert logits.numpy()[0, 1] < -1e8 and logits.numpy()[1, 3] < -1e8


@pytest.mark.skipif(
    KERAS3,
    reason="TensorFlow checkpoint keys are tf-keras runs' format; a Keras 3 "
    "run saves .weights.h5 by layer (docs/keras-versions.md)",
)
def test_a_projection_keeps_its_checkpoint_key(tmp_path):
    model = build(hidden_dim=12)
    model({"history": tf.constant([[1, 2, 0]])})
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    keys = [name for name, _ in tf.train.list_variables(path)]
    assert "model/projection/kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert not any("head/projection" in key for key in keys)


@pytest.mark.parametrize(
    "head, weight", [("cpr", 0.5), ("softmax", 0.0), ("mos", 0.0)]
)
def test_only_cpr_weighs_a_base_loss(head, weight):
    model = build(head=head, cpr_reranker_ks=(2,), cpr_base_loss=0.5)
    assert model.base_loss_weight == weight


@pytest.mark.parametrize("num_layers, mi_layers", [(1, 1), (2, 2), (3, 2)])
def test_cpr_mixes_at_most_two_encoder_layers(num_layers, mi_layers):
    model = build(
        head="cpr", cpr_reranker_ks=(2, 4), cpr_mi=True, num_layers=num_layers
    )
    head = model.head
    assert head.name == "cpr_head"
    assert head.use_mi and head.mi_layers == mi_layers
    assert head.reranker_ks == (2, 4)


@pytest.mark.parametrize(
    "head, head_dropout, rate",
    [("cpr", None, 0.3), ("cpr", 0.1, 0.1), ("mos", 0.2, 0.2)],
)
def test_the_head_gets_the_effective_head_dropout(head, head_dropout, rate):
    model = build(head=head, head_dropout=head_dropout, cpr_reranker_ks=(2,))
    assert model.head.dropout == pytest.approx(rate)


# -------------------------------------------------------- sampled objective


@pytest.mark.parametrize(
    "overrides, objective",
    [
        ({}, FullSoftmax),
        ({"head": "cpr", "cpr_reranker_ks": (2,)}, PartitionedSoftmax),
        ({"objective": "sampled"}, InBatchSampledSoftmax),
        (
            {"objective": "sampled", "num_sampled_negatives": 3},
            SampledNegatives,
        ),
    ],
    ids=["full", "partitioned", "in_batch", "negatives"],
)
def test_the_objective_is_the_configs(overrides, objective):
    model = build(**overrides)
    assert type(model.objective) is objective
    # Only the sampled objectives keep candidate probabilities.
    assert (model.candidate_probability is None) == (
        not objective.samples_candidates
    )


def test_the_objective_gets_the_base_loss_weight():
    model = build(head="cpr", cpr_reranker_ks=(2,), cpr_base_loss=0.5)
    assert model.objective.base_loss_weight == 0.5


def test_the_full_objective_has_no_sampled_parts():
    model = build(objective="full", num_hard_negatives=2)
    assert model.candidate_probability is None
    for name in ("logq_correction", "accidental_hits", "hard_negatives"):
        assert not hasattr(model, name)


def test_without_frequencies_the_candidates_are_uniform_over_the_items():
    model = build(objective="sampled")
    probability = model.candidate_probability
    assert not probability.trainable
    assert probability.dtype == tf.float32
    np.testing.assert_array_equal(
        probability.numpy(), np.full(NUM_ITEMS, 1 / (NUM_ITEMS - 1), "f4")
    )


def test_the_candidate_probabilities_are_the_normalised_frequencies():
    counts = [0, 1, 2, 3, 0, 4]
    model = build(objective="sampled", item_frequencies=counts)
    np.testing.assert_allclose(
        model.candidate_probability.numpy(), np.array(counts) / 10, rtol=1e-7
    )


@pytest.mark.parametrize(
    "counts",
    [[1, 2, 3], [0, 1, -1, 1, 1, 1], [0] * NUM_ITEMS],
    ids=["wrong_length", "negative", "zero_sum"],
)
def test_bad_frequencies_are_an_error(counts):
    with pytest.raises(ValueError, match="item_frequencies must be"):
        build(objective="sampled", item_frequencies=counts)


# ------------------------------------------------------------------ metrics


def test_the_metrics_are_every_kind_at_every_k_and_the_mean_loss():
    model = build(metric_ks=(5, 10))
    assert [m.name for m in model.ranking_metrics] == [
        "ndcg@5",
        "hr@5",
        "mrr@5",
        "ndcg@10",
        "hr@10",
        "mrr@10",
    ]
    assert isinstance(model.loss_tracker, tf.keras.metrics.Mean)
    assert model.loss_tracker.name == "loss"


# ------------------------------------------------------------ the step order


def test_the_layers_are_tracked_in_the_order_of_the_steps():
    # The order of the steps is that of the weights of saved models and of
    # seeded initialisation, so it must not change. The objective is no
    # layer: it owns no weight.
    model = build(
        features=("time_gap",),
        head="cpr",
        cpr_reranker_ks=(2,),
        objective="sampled",
        num_hard_negatives=2,
        sse_item_probability=0.1,
        sse_label_probability=0.1,
    )
    # By identity: Keras names some of these layers automatically.
    expected = [
        model.item_embedding,
        model.item_sse,
        model.label_sse,
        model.feature_encoders["time_gap"],
        model.embedding_dropout,
        model.encoder,
        model.output_dropout,
        model.head,
    ]
    assert [id(layer) for layer in model.layers] == [
        id(layer) for layer in expected
    ]


@pytest.mark.parametrize(
    "head, has_index",
    [
        ("softmax", True),
        ("softmax_no_dup", True),
        ("cpr", True),
        ("mos", False),
    ],
)
def test_the_model_has_an_index_when_its_head_has(head, has_index):
    # The serving module asks the model, which asks its head.
    assert build(head=head, cpr_reranker_ks=(2,)).has_index is has_index


@pytest.mark.parametrize("within", [False, True])
def test_cpr_gets_where_its_rerankers_choose_in_training(within):
    model = build(
        head="cpr", cpr_reranker_ks=(2,), cpr_rerank_within_candidates=within
    )
    assert model.head.rerank_within_candidates is within
