"""search_budget: the tuner and trial-cap checks shared with SearchOptions."""

import pytest

from tfrec_tricks.tuning.search_budget import TUNERS, check_tuner_choice


@pytest.mark.parametrize("tuner", TUNERS)
@pytest.mark.parametrize("max_trials", [None, 1, 50])
def test_known_tuners_and_positive_caps_pass(tuner, max_trials):
    check_tuner_choice(tuner, max_trials)


@pytest.mark.parametrize(
    "tuner, max_trials, message",
    [
        ("grid", None, r"tuner must be one of .* Received: tuner='grid'"),
        ("Hyperband", 3, "Received: tuner='Hyperband'"),
        ("random", 0, "max_trials must be positive. Received: max_trials=0"),
        ("bayesian", -2, "Received: max_trials=-2"),
    ],
)
def test_unknown_tuners_and_caps_below_one_are_refused(
    tuner, max_trials, message
):
    with pytest.raises(ValueError, match=message):
        check_tuner_choice(tuner, max_trials)
