"""The built-in heads' specs: what each tells the rest of the toolkit."""

import pytest

from tfrec_tricks.heads.head_specs import CPR_HEAD_DROPOUT, reranker_choices
from tfrec_tricks.heads.registry import head_spec, tied_softmax_heads
from tfrec_tricks.models.config import HEADS, ModelConfig


def test_the_built_in_heads_in_their_recorded_order():
    # The order of --head's choices and of a search's head choice, which
    # recorded searches hold.
    assert tuple(HEADS)[:4] == ("softmax", "cpr", "mos", "softmax_no_dup")
    assert tied_softmax_heads()[:2] == ("softmax", "softmax_no_dup")


@pytest.mark.parametrize(
    "num_items, expected",
    [
        (2, ["none"]),
        (21, ["none", "20"]),
        (101, ["none", "20", "100"]),
        (501, ["none", "20", "100", "500", "20,100,500"]),
    ],
)
def test_reranker_choices_are_below_the_catalogue_size(num_items, expected):
    assert reranker_choices(num_items, "none") == expected


def test_head_dropout_defaults():
    assert head_spec("cpr").default_dropout == CPR_HEAD_DROPOUT == 0.3
    assert ModelConfig(num_items=10, head="mos").head_dropout_rate() == 0.0
    assert ModelConfig(num_items=200, head="cpr").head_dropout_rate() == 0.3


def test_reports_name_each_head_and_its_settings():
    cpr = ModelConfig(num_items=200, head="cpr", cpr_mi=True)
    assert head_spec("cpr").describe(cpr) == (
        "CPR (context, pointer, 100, Mi, base loss 1)"
    )
    mos = ModelConfig(num_items=10, head="mos", mos_components=2)
    assert head_spec("mos").describe(mos) == "MoS 2"
    assert head_spec("softmax").describe(ModelConfig(num_items=10)) == "softmax"


def test_which_heads_a_served_catalogue_can_grow_under():
    def refusal(**settings):
        config = ModelConfig(num_items=200, **settings)
        return head_spec(config.head).extension_refusal(config)

    assert refusal(head="softmax") is None
    assert refusal(head="softmax_no_dup") is None
    assert refusal(head="cpr", cpr_reranker_ks=()) is None
    assert "with rerankers" in refusal(head="cpr")
    assert "mixture of softmaxes" in refusal(head="mos")


def test_cpr_refuses_reranker_sizes_above_the_catalogue():
    with pytest.raises(ValueError, match=r"Received: cpr_reranker_ks=\(100,\)"):
        ModelConfig(num_items=50, head="cpr")
    ModelConfig(num_items=50, head="softmax")  # not the softmax's setting


def test_parameter_and_logit_estimates():
    config = ModelConfig(num_items=10, embedding_dim=8, mos_components=3)
    assert head_spec("softmax").parameters(config, 8) == 0
    assert head_spec("softmax").parameters(config, 16) == 16 * 8
    assert head_spec("cpr").parameters(config, 8) == 8 * 8
    assert head_spec("mos").parameters(config, 8) == 3 * (8 * 8 + 8)
    assert head_spec("mos").logit_copies(config) == 3
    assert head_spec("cpr").logit_copies(config) == 1
