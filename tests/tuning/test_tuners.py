"""The tuners' additions: defaults first, time budget, timing, budget checks."""

import json
import time

import pytest
from tuning_helpers import search_data

from tfrec_tricks.tuning import import_keras_tuner
from tfrec_tricks.tuning.search_oracle import default_values
from tfrec_tricks.tuning.search_reports import best_so_far, trial_rows
from tfrec_tricks.tuning.tuners import (
    UNTIL_BUDGET,
    build_tuner,
    check_tuner_budget,
)

keras_tuner = import_keras_tuner()


def _tuner(hypermodel, tmp_path, tuner="random", **options):
    return build_tuner(
        hypermodel,
        tuner,
        directory=str(tmp_path),
        project_name=tuner,
        seed=1,
        **options,
    )


def _run(search_tuner, hypermodel, epochs=1):
    search_tuner.search(**search_data(hypermodel), epochs=epochs, verbose=0)


@pytest.mark.slow
@pytest.mark.parametrize("tuner", ["random", "bayesian", "hyperband"])
def test_the_first_trial_is_the_defaults(hypermodel, tmp_path, tuner):
    options = {"max_epochs": 3} if tuner == "hyperband" else {}
    search_tuner = _tuner(hypermodel, tmp_path, tuner, max_trials=4, **options)
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
def test_trials_log_their_times_and_a_progress_line(
    hypermodel, tmp_path, capsys
):
    search_tuner = _tuner(hypermodel, tmp_path, max_trials=2)
    _run(search_tuner, hypermodel)
    lines = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("Trial ")
    ]
    assert len(lines) == 2, lines
    assert "val_ndcg@10 " in lines[1] and "; best " in lines[1]
    rows = trial_rows(search_tuner)
    for row in rows:
        timing = row["timing"]
        assert timing["ended"] >= timing["started"]
        assert timing["seconds"] == pytest.approx(
            timing["ended"] - timing["started"]
        )
    x, scores, best, label = best_so_far(rows)
    assert label == "minutes since the search started"
    assert x == sorted(x) and best[-1] == max(scores)


def test_best_so_far_falls_back_to_trial_numbers():
    rows = [
        {"number": 1, "score": 0.2, "timing": None},
        {"number": 2, "score": None, "timing": None},
        {"number": 3, "score": 0.3, "timing": None},
        {"number": 4, "score": 0.1, "timing": None},
    ]
    assert best_so_far(rows) == ([1, 3, 4], [0.2, 0.3, 0.1], [0.2, 0.3, 0.3],
                                 "trial")  # fmt: skip


@pytest.mark.slow
def test_the_time_budget_stops_new_trials_and_survives_a_resume(
    hypermodel, tmp_path
):
    search_tuner = _tuner(hypermodel, tmp_path, max_trials=1)
    _run(search_tuner, hypermodel)
    # Make the search look 100 s old, and stop after 50 s: no new trial.
    search_tuner.oracle.max_trials = 5
    search_tuner.oracle._seconds_before = 100.0
    search_tuner.oracle.max_seconds = 50.0
    assert search_tuner.oracle.create_trial("tuner0").status == "STOPPED"
    search_tuner.oracle.save()
    state = json.loads((tmp_path / "random" / "oracle.json").read_text())
    assert state["search_seconds"] >= 100.0

    resumed = _tuner(hypermodel, tmp_path, max_trials=5, max_seconds=50.0)
    assert resumed.oracle.search_seconds() >= 100.0
    assert resumed.oracle.create_trial("tuner0").status == "STOPPED"
    again = _tuner(hypermodel, tmp_path, max_trials=5, max_seconds=1e6)
    start = time.monotonic()
    assert again.oracle.create_trial("tuner0").status == "RUNNING"
    assert time.monotonic() - start < 5


@pytest.mark.parametrize(
    "args, message",
    [
        (("hyperband", None, 2), "max_epochs=2 \\(--epochs\\) below 3"),
        (("hyperband", 5, 20), "runs 18 trials .* max_trials=5"),
        (("bayesian", 2, 10), "first 2 trials at random; max_trials=2"),
        (("grid", 3, 10), "tuner must be one of"),
        (("random", 0, 10), "max_trials must be positive"),
    ],
)
def test_budgets_a_tuner_cannot_use_are_refused(args, message):
    with pytest.raises(ValueError, match=message):
        check_tuner_budget(*args)


def test_budgets_a_tuner_can_use_pass():
    check_tuner_budget("hyperband", None, 3)
    check_tuner_budget("hyperband", 18, 20)
    check_tuner_budget("bayesian", 4, 10)
    check_tuner_budget("bayesian", 3, 10, num_initial_points=1)
    check_tuner_budget("random", 1, 1)


@pytest.mark.slow
def test_hyperband_iterates_until_the_time_budget(hypermodel, tmp_path):
    budgeted = _tuner(
        hypermodel, tmp_path, "hyperband", max_epochs=3, max_seconds=60.0
    )
    assert budgeted.oracle.hyperband_iterations == UNTIL_BUDGET
    assert budgeted.oracle.max_seconds == 60.0
    once = _tuner(hypermodel, tmp_path / "once", "hyperband", max_epochs=3)
    assert once.oracle.hyperband_iterations == 1
    capped = _tuner(
        hypermodel,
        tmp_path / "capped",
        "hyperband",
        max_epochs=3,
        max_trials=8,
        max_seconds=60.0,
    )
    assert capped.oracle.hyperband_iterations == 1
