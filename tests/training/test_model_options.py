"""training.model_options: the model fields a run sets, checked by name."""

import json

import pytest

from tfrec_tricks.models.config import AUTO_HEAD, ModelConfig
from tfrec_tricks.training.model_options import (
    DERIVED_MODEL_FIELDS,
    ModelOptions,
    data_model_fields,
)


def test_options_read_as_the_dict_a_run_records():
    options = ModelOptions({"head": "cpr", "cpr_reranker_ks": [20]})
    assert options == {"head": "cpr", "cpr_reranker_ks": [20]}
    assert {**options} == options.to_dict()
    assert json.dumps(options.to_dict()) == (
        '{"head": "cpr", "cpr_reranker_ks": [20]}'
    )


def test_a_field_left_out_keeps_the_model_default():
    options = ModelOptions({"encoder": "sasrec"})
    assert options.value("encoder") == "sasrec"
    assert options.value("embedding_dim") == ModelConfig(2).embedding_dim
    assert "embedding_dim" not in options


def test_no_head_is_auto():
    assert ModelOptions().head == AUTO_HEAD
    assert ModelOptions({"head": "mos"}).head == "mos"


def test_with_values_leaves_the_options_unchanged():
    options = ModelOptions({"dropout": 0.1})
    changed = options.with_values(head="cpr", dropout=0.2)
    assert options == {"dropout": 0.1}
    assert changed == {"dropout": 0.2, "head": "cpr"}


@pytest.mark.parametrize("name", [*DERIVED_MODEL_FIELDS, "embeding_dim"])
def test_unknown_and_derived_fields_are_refused(name):
    with pytest.raises(ValueError, match=f"Unknown model options \\['{name}"):
        ModelOptions({name: 8})


def test_a_value_of_the_wrong_type_is_refused():
    with pytest.raises(ValueError, match="`embedding_dim` must be int"):
        ModelOptions({"embedding_dim": "8"})


def test_resolve_gives_the_model_config():
    config = ModelOptions({"head": "cpr"}).resolve(500, 20, 0.01)
    assert config == ModelConfig(
        num_items=500, max_len=20, learning_rate=0.01, head="cpr"
    )


def test_auto_does_not_resolve_before_the_data_chooses():
    with pytest.raises(ValueError, match="head must be one of"):
        ModelOptions({"head": AUTO_HEAD}).resolve(500, 20, 0.01)


def test_data_model_fields_are_the_datas_features():
    import types

    from tfrec_tricks.data.interaction_tokens import InteractionTokenSpec

    spec = InteractionTokenSpec("device", ("web", "app"), 0.5)
    items = types.SimpleNamespace(spec_dicts=lambda: [{"name": "genres"}])
    data = types.SimpleNamespace(item_features=items, token_features=(spec,))
    assert data_model_fields(data) == {
        "item_features": ({"name": "genres"},),
        "token_features": (spec.model_dict(),),
    }
    # Id-only data sets neither.
    assert data_model_fields(types.SimpleNamespace(item_features=None)) == {}
