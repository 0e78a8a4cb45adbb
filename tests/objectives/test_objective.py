"""Objective, the base class: its weight checks and members, and
softmax_cross_entropy against NumPy."""

import numpy as np
import pytest

from tfrec_tricks.models import ModelConfig
from tfrec_tricks.objectives import FullSoftmax
from tfrec_tricks.objectives.objective import Objective, softmax_cross_entropy


def test_a_negative_base_loss_weight_is_an_error():
    with pytest.raises(ValueError, match="Received: base_loss_weight=-1"):
        FullSoftmax(base_loss_weight=-1)
    with pytest.raises(ValueError, match="Received: base_loss_weight=nan"):
        FullSoftmax(base_loss_weight=float("nan"))


def test_the_base_loss_is_added_only_with_a_positive_weight():
    assert not FullSoftmax().with_base
    assert FullSoftmax(base_loss_weight=0.25).with_base
    assert repr(FullSoftmax(0.5)) == "FullSoftmax(base_loss_weight=0.5)"
    made = FullSoftmax.from_model_config(ModelConfig(num_items=9), 0.5)
    assert type(made) is FullSoftmax and made.base_loss_weight == 0.5


def test_an_objective_must_fill_in_call():
    class Incomplete(Objective):
        pass

    with pytest.raises(TypeError, match="__call__"):
        Incomplete()


def test_softmax_cross_entropy_equals_numpy():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 7)).astype("float32") * 3
    labels = rng.dirichlet(np.ones(7), size=5).astype("float32")  # soft
    log_softmax = scores - np.log(np.exp(scores).sum(-1, keepdims=True))
    expected = -(labels * log_softmax).sum(-1)
    np.testing.assert_allclose(
        softmax_cross_entropy(labels, scores), expected, rtol=1e-5
    )
