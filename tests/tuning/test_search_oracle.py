"""SearchOracle: the defaults first, the time budget across a resume;
default_values against the search space."""

import json
import time

import pytest
from tuning_helpers import build_test_tuner, run_search

from tfrec_tricks.tuning import import_keras_tuner
from tfrec_tricks.tuning.search_oracle import default_values

keras_tuner = import_keras_tuner()


def test_default_values_keep_only_what_the_defaults_activate():
    hp = keras_tuner.HyperParameters()
    hp.Choice("head", ["softmax", "cpr"], default="cpr")
    with hp.conditional_scope("head", ["cpr"]):
        hp.Int("ks", 5, 50, default=20)
    with hp.conditional_scope("head", ["softmax"]):
        hp.Float("temperature", 0.1, 1.0, default=0.5)
    hp.Float("dropout", 0.0, 0.5, default=0.2)
    assert default_values(hp) == {"head": "cpr", "ks": 20, "dropout": 0.2}


@pytest.mark.slow
@pytest.mark.parametrize("tuner", ["random", "bayesian", "hyperband"])
def test_the_first_trial_is_the_defaults(hypermodel, tmp_path, tuner):
    options = {"max_epochs": 3} if tuner == "hyperband" else {}
    search_tuner = build_test_tuner(
        hypermodel, tmp_path, tuner, max_trials=4, **options
    )
    first = search_tuner.oracle.create_trial("tuner0")
    values = {
        k: v
        for k, v in first.hyperparameters.values.items()
        if not k.startswith("tuner/")
    }
    assert values == default_values(search_tuner.oracle.hyperparameters)
    config = hypermodel.model_config(first.hyperparameters)
    # What train trains: ModelConfig's defaults, the fixed values, no SSE.
    assert (config.head, config.dropout, config.learning_rate) == (
        "softmax",
        0.2,
        1e-3,
    )
    assert config.sse_item_probability == config.sse_label_probability == 0
    assert hypermodel.batch_size(first.hyperparameters) == 128
    search_tuner.oracle.end_trial(first)
    second = search_tuner.oracle.create_trial("tuner0")
    assert second.hyperparameters.values != first.hyperparameters.values


@pytest.mark.slow
def test_the_time_budget_stops_new_trials_and_survives_a_resume(
    hypermodel, tmp_path
):
    search_tuner = build_test_tuner(hypermodel, tmp_path, max_trials=1)
    run_search(search_tuner, hypermodel)
    # Make the search look 100 s old, and stop after 50 s: no new trial.
    search_tuner.oracle.max_trials = 5
    search_tuner.oracle._seconds_before = 100.0
    search_tuner.oracle.max_seconds = 50.0
    assert search_tuner.oracle.create_trial("tuner0").status == "STOPPED"
    search_tuner.oracle.save()
    state = json.loads((tmp_path / "random" / "oracle.json").read_text())
    assert state["search_seconds"] >= 100.0

    resumed = build_test_tuner(
        hypermodel, tmp_path, max_trials=5, max_seconds=50.0
    )
    assert resumed.oracle.search_seconds() >= 100.0
    assert resumed.oracle.create_trial("tuner0").status == "STOPPED"
    again = build_test_tuner(
        hypermodel, tmp_path, max_trials=5, max_seconds=1e6
    )
    start = time.monotonic()
    assert again.oracle.create_trial("tuner0").status == "RUNNING"
    assert time.monotonic() - start < 5
