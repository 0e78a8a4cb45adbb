"""objective_for: exactly one objective per valid model config."""

import pytest

from tests.objectives.objective_helpers import cpr_head
from tfrec_tricks.layers import MixtureOfSoftmax, TiedSoftmax
from tfrec_tricks.models import ModelConfig
from tfrec_tricks.objectives import (
    OBJECTIVES,
    FullSoftmax,
    InBatchSampledSoftmax,
    PartitionedSoftmax,
    SampledNegatives,
    objective_for,
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
    assert sum(cls.trains(config, HEADS[head]()) for cls in OBJECTIVES) == 1


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


def test_a_config_no_objective_trains_is_an_error():
    class Config:
        objective = "nonsense"
        num_sampled_negatives = None

    with pytest.raises(ValueError, match="objective='nonsense'"):
        objective_for(Config, TiedSoftmax())


def test_every_objective_is_registered_once():
    assert len(set(OBJECTIVES)) == len(OBJECTIVES)
    names = {cls.__name__ for cls in OBJECTIVES}
    assert names == {
        "FullSoftmax",
        "PartitionedSoftmax",
        "InBatchSampledSoftmax",
        "SampledNegatives",
    }
    # The pairs above cover every objective.
    assert {cls for cls in EXPECTED.values()} == set(OBJECTIVES)
