"""objective_registry: an objective of one's own, registered by decorator,
is a config's choice, its settings are its own, and the model trains with
the loss its spec builds."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.models.config import OBJECTIVES
from tfrec_tricks.objectives import (
    FullSoftmax,
    ObjectiveSpec,
    objective_spec,
    register_objective,
    registered_objectives,
    unregister_objective,
)
from tfrec_tricks.objectives.objective_registry import objectives_reading
from tfrec_tricks.training.memory_budget import training_bytes
from tfrec_tricks.training.resumption import model_later_options


class SharpenedSoftmax(FullSoftmax):
    """The full softmax of the logits times 2 (a temperature of 0.5)."""

    @staticmethod
    def loss(logits, labels):
        return FullSoftmax.loss(2.0 * logits, labels)


class SharpenedSpec(ObjectiveSpec):
    name = "sharpened"
    summary = "the full softmax at temperature 0.5"
    settings = ("num_sampled_negatives",)  # read here only to test it
    later_options = {"num_sampled_negatives": None}

    def build(self, config, head, base_loss_weight=0.0):
        return SharpenedSoftmax(base_loss_weight=base_loss_weight)

    def logit_columns(self, config, rows):
        return 7


@pytest.fixture
def sharpened():
    register_objective(SharpenedSpec)
    yield SharpenedSpec.name
    unregister_objective(SharpenedSpec.name)


def test_a_registered_objective_is_a_choice(sharpened):
    assert sharpened in registered_objectives() and sharpened in OBJECTIVES
    assert objectives_reading("num_sampled_negatives") == (
        "sampled",
        sharpened,
    )
    assert model_later_options()["num_sampled_negatives"] == (
        None,
        ("objective", ("sampled", sharpened)),
    )
    config = ModelConfig(num_items=11, objective=sharpened)
    base = training_bytes(ModelConfig(num_items=11, objective="sampled"), 7)
    assert training_bytes(config, batch_size=7)["logits"] == base["logits"]


def test_its_settings_are_refused_with_another_objective(sharpened):
    ModelConfig(num_items=11, objective=sharpened, num_sampled_negatives=3)
    with pytest.raises(
        ValueError,
        match=r"applies to the objectives \('sampled', 'sharpened'\)\. "
        r"Received: num_sampled_negatives=3 with objective='full'",
    ):
        ModelConfig(num_items=11, num_sampled_negatives=3)


def test_the_model_trains_with_the_loss_its_spec_builds(sharpened):
    config = ModelConfig(num_items=9, max_len=4, embedding_dim=8)
    model = SequentialRetrievalModel(
        ModelConfig.from_dict({**config.to_dict(), "objective": sharpened})
    )
    assert type(model.objective) is SharpenedSoftmax
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01))
    data = tf.data.Dataset.from_tensor_slices(
        {
            "history": np.array([[0, 1, 2, 3]] * 8, np.int32),
            "target": np.array([4] * 8, np.int32),
        }
    ).batch(4)
    losses = model.fit(data, epochs=3, verbose=0).history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_an_unknown_objective_names_the_registered_ones():
    with pytest.raises(ValueError, match=r"\('full', 'sampled'\)"):
        objective_spec("sharpened")
    with pytest.raises(ValueError, match="objective='sharpened'"):
        ModelConfig(num_items=11, objective="sharpened")
