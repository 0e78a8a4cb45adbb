"""The built-in objectives' specs: which loss each config trains with,
what reaches it, what each refuses and what it costs."""

import pytest

from tests.objectives.objective_helpers import cpr_head
from tfrec_tricks.layers import MixtureOfSoftmax, TiedSoftmax
from tfrec_tricks.models import ModelConfig
from tfrec_tricks.objectives import (
    FullSoftmax,
    InBatchSampledSoftmax,
    PartitionedSoftmax,
    SampledNegatives,
    objective_for,
    objective_spec,
)

HEADS = {
    "softmax": TiedSoftmax,
    "cpr": cpr_head,
    "mos": lambda: MixtureOfSoftmax(2),
}
EXPECTED = {
    ("full", None, "softmax"): FullSoftmax,
    ("full", None, "mos"): FullSoftmax,
    ("full", None, "cpr"): PartitionedSoftmax,
    ("sampled", None, "softmax"): InBatchSampledSoftmax,
    ("sampled", None, "mos"): InBatchSampledSoftmax,
    ("sampled", None, "cpr"): InBatchSampledSoftmax,
    ("sampled", 4, "softmax"): SampledNegatives,
}


@pytest.mark.parametrize("key", list(EXPECTED), ids=str)
def test_each_config_gets_its_objective(key):
    objective, negatives, head = key
    config = ModelConfig(
        num_items=10,
        objective=objective,
        num_sampled_negatives=negatives,
        head=head,
        cpr_reranker_ks=(2,),
        num_hard_negatives=2,
    )
    got = objective_for(config, HEADS[head](), base_loss_weight=0.0)
    assert type(got) is EXPECTED[key]


def test_the_config_options_reach_the_objective():
    config = ModelConfig(
        num_items=10,
        objective="sampled",
        num_hard_negatives=3,
        logq_correction=False,
        remove_accidental_hits=False,
    )
    objective = objective_for(config, TiedSoftmax(), base_loss_weight=0.25)
    assert objective.num_hard_negatives == 3
    assert not objective.logq_correction
    assert not objective.remove_accidental_hits
    assert objective.base_loss_weight == 0.25
    negatives = objective_for(
        ModelConfig(num_items=10, objective="sampled", num_sampled_negatives=6),
        TiedSoftmax(),
    )
    assert (negatives.num_items, negatives.num_negatives) == (10, 6)


def test_an_unregistered_objective_is_named():
    class Config:
        objective = "nonsense"

    with pytest.raises(ValueError, match="objective='nonsense'"):
        objective_for(Config, TiedSoftmax())


def test_the_pairs_above_cover_every_loss():
    assert set(EXPECTED.values()) == {
        FullSoftmax,
        PartitionedSoftmax,
        InBatchSampledSoftmax,
        SampledNegatives,
    }


@pytest.mark.parametrize(
    "model, columns",
    [
        ({}, 500),
        ({"objective": "sampled"}, 64),
        ({"objective": "sampled", "num_sampled_negatives": 9}, 10),
    ],
)
def test_each_spec_says_how_wide_a_steps_logits_are(model, columns):
    config = ModelConfig(num_items=500, **model)
    spec = objective_spec(config.objective)
    assert spec.logit_columns(config, rows=64) == columns


def test_sampled_negatives_need_a_softmax_head():
    with pytest.raises(ValueError, match="head='mos'"):
        ModelConfig(
            num_items=10, objective="sampled", num_sampled_negatives=4,
            head="mos",
        )  # fmt: skip
