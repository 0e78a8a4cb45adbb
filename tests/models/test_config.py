"""ModelConfig: JSON round trip and bad values."""

import json

import pytest

from tfrec_tricks.models import ModelConfig


def test_json_round_trip_keeps_every_field():
    config = ModelConfig(
        num_items=50,
        encoder="sasrec",
        num_heads=4,
        embedding_dim=16,
        features=("time_gap", "rating"),
        head="cpr",
        cpr_reranker_ks=(5, 20),
        cpr_mi=True,
        objective="sampled",
        num_hard_negatives=3,
        sse_item_probability=0.1,
        sse_seed=3,
    )
    text = config.to_json()
    restored = ModelConfig.from_dict(json.loads(text))
    assert restored == config
    assert ModelConfig.from_json(text) == config
    assert isinstance(restored.cpr_reranker_ks, tuple)
    assert isinstance(restored.features, tuple)


def test_defaults_are_the_plain_model():
    config = ModelConfig(num_items=10)
    assert (config.encoder, config.head, config.objective) == (
        "gru4rec",
        "softmax",
        "full",
    )
    assert config.tie_embeddings and config.output_bias
    assert config.sse_item_probability == config.sse_label_probability == 0
    assert config.features == ()


@pytest.mark.parametrize(
    "field, value",
    [
        ("encoder", "lstm"),
        ("head", "sampled_softmax"),
        ("objective", "bpr"),
        ("cpr_merge", "mean"),
        ("dropout", 1.0),
        ("attention_dropout", -0.1),
        ("ffn_dim", 0),
        ("head_dropout", 1.0),
        ("sse_item_probability", 1.0),
        ("sse_label_probability", -0.5),
        ("sse_graph_rho", 0.5),
        ("soft_one_hot_buckets", 0),
        ("mos_components", 0),
        ("num_hard_negatives", 0),
        ("cosine_temperature", 0.0),
        ("num_sampled_negatives", 0),
        ("cosine_temperature", -0.05),
        ("num_heads", 0),
        ("features", ("time_gap", "time_gap")),
        ("cpr_reranker_ks", (0,)),
        ("metric_ks", (0,)),
    ],
)
def test_bad_values_raise_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        ModelConfig(num_items=10, **{field: value})


def test_cross_field_checks():
    with pytest.raises(ValueError, match="num_heads"):
        ModelConfig(
            num_items=10, encoder="sasrec", embedding_dim=10, num_heads=3
        )
    with pytest.raises(ValueError, match="cpr_reranker_ks"):
        ModelConfig(num_items=10, head="cpr", cpr_reranker_ks=(10,))
    # Too large a k matters only for the CPR head.
    ModelConfig(num_items=10, head="softmax", cpr_reranker_ks=(100,))
    # Cosine scores are the softmax heads' h E^T + b, normalised.
    for head in ("cpr", "mos"):
        with pytest.raises(ValueError, match="head='" + head):
            ModelConfig(
                num_items=10,
                head=head,
                cpr_reranker_ks=(2,),
                cosine_temperature=0.05,
            )
    for head in ("softmax", "softmax_no_dup"):
        config = ModelConfig(num_items=10, head=head, cosine_temperature=0.05)
        assert ModelConfig.from_json(config.to_json()) == config
    # Sampled negatives: the sampled objective, a softmax head.
    for wrong in ({"objective": "full"}, {"head": "cpr"}, {"head": "mos"}):
        values = {"objective": "sampled", **wrong}
        with pytest.raises(ValueError, match="num_sampled_negatives applies"):
            ModelConfig(
                num_items=10,
                cpr_reranker_ks=(2,),
                num_sampled_negatives=4,
                **values,
            )
    ModelConfig(num_items=10, objective="sampled", num_sampled_negatives=4)


def test_head_dropout_defaults_to_the_heads_measured_rate():
    assert ModelConfig(num_items=9).head_dropout is None
    assert ModelConfig(num_items=200, head="cpr").head_dropout_rate() == 0.3
    assert ModelConfig(num_items=9, head="mos").head_dropout_rate() == 0.0
    assert ModelConfig(num_items=9).head_dropout_rate() == 0.0
    given = ModelConfig(num_items=200, head="cpr", head_dropout=0.0)
    assert given.head_dropout_rate() == 0.0
    # None survives the JSON round trip: the run keeps the head's default.
    assert ModelConfig.from_json(given.to_json()) == given
    assert ModelConfig.from_json(ModelConfig(num_items=9).to_json()) == (
        ModelConfig(num_items=9)
    )


def test_unknown_keys_are_rejected():
    with pytest.raises(ValueError, match="Unknown model config keys"):
        ModelConfig.from_dict({"num_items": 10, "tied": True})


def test_fusion_modes_are_the_fusion_layers():
    # Written out in models.config, which must not import TensorFlow.
    from tfrec_tricks.features.feature_fusion import FUSION_MODES
    from tfrec_tricks.models import config

    assert config.FUSION_MODES == FUSION_MODES
