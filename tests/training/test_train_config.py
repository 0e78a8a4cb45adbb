"""training.train_config: a run's options, their checks and their JSON."""

import dataclasses

import pytest

from tfrec_tricks.training.model_options import ModelOptions
from tfrec_tricks.training.train_config import TrainConfig


def test_bad_budget_is_rejected():
    with pytest.raises(
        ValueError, match="epochs must be positive. Received: epochs=0"
    ):
        TrainConfig(epochs=0)
    with pytest.raises(
        ValueError,
        match="steps_per_execution must be positive. "
        "Received: steps_per_execution=0",
    ):
        TrainConfig(steps_per_execution=0)
    with pytest.raises(ValueError, match="Received: split='last'"):
        TrainConfig(split="last")


def test_a_dict_of_model_settings_becomes_model_options():
    config = TrainConfig(model={"head": "cpr"})
    assert isinstance(config.model, ModelOptions)
    assert config == TrainConfig(model=ModelOptions({"head": "cpr"}))
    replaced = dataclasses.replace(config, model={"head": "mos"})
    assert replaced.model.head == "mos"


def test_to_dict_is_asdict_with_the_model_as_a_dict():
    # config.json's "train" and the fingerprint are made from it: the same
    # keys in the same order as before ``model`` was typed.
    config = TrainConfig(epochs=3, model={"encoder": "sasrec"})
    values = config.to_dict()
    assert list(values) == [f.name for f in dataclasses.fields(TrainConfig)]
    assert values["model"] == {"encoder": "sasrec"}
    assert type(values["model"]) is dict
    assert TrainConfig(**values) == config


def test_an_unknown_model_setting_is_refused_when_the_config_is_made():
    with pytest.raises(ValueError, match="Unknown model options"):
        TrainConfig(model={"num_items": 5})
