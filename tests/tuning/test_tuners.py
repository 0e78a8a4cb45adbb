"""The tuners: budget checks, Hyperband's iterations (the oracles' and
trials' additions: test_search_oracle.py, test_trial_log.py)."""

import pytest
from tuning_helpers import build_test_tuner

from tfrec_tricks.tuning import import_keras_tuner
from tfrec_tricks.tuning.tuners import (
    UNTIL_BUDGET,
    check_tuner_budget,
)

keras_tuner = import_keras_tuner()


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
    budgeted = build_test_tuner(
        hypermodel, tmp_path, "hyperband", max_epochs=3, max_seconds=60.0
    )
    assert budgeted.oracle.hyperband_iterations == UNTIL_BUDGET
    assert budgeted.oracle.max_seconds == 60.0
    once = build_test_tuner(
        hypermodel, tmp_path / "once", "hyperband", max_epochs=3
    )
    assert once.oracle.hyperband_iterations == 1
    capped = build_test_tuner(
        hypermodel,
        tmp_path / "capped",
        "hyperband",
        max_epochs=3,
        max_trials=8,
        max_seconds=60.0,
    )
    assert capped.oracle.hyperband_iterations == 1
