"""Defaults of a KerasTuner search's budget (``tfrec-tricks tune``).

Plain constants (and the checks of them that need nothing else) that import
nothing, so that the command line's parser and ``SearchOptions`` can use
them without importing KerasTuner (``tfrec_tricks.tuning`` binds KerasTuner
only when one of its names is first used).
"""

TUNERS = ("hyperband", "bayesian", "random")
# Hyperband trains the configurations that keep improving as long as the
# final model. Random search with short trials (five epochs each) rewarded
# the configurations that learn fastest at first, not those that end best
# (docs/decisions.md#hyperband).
DEFAULT_TUNER = "hyperband"
# Hyperband keeps the best 1/factor of each round for factor times the
# epochs; 3 is the Hyperband paper's and KerasTuner's choice (not measured
# here).
HYPERBAND_FACTOR = 3
# Trials of random search and Bayesian optimisation when none are given
# (not measured: docs/decisions.md#search-budget).
DEFAULT_MAX_TRIALS = 10
# How many of the best trials are retrained beside the defaults
# (docs/decisions.md#defaults-first).
DEFAULT_RETRAIN_TOP = 3


def check_tuner_choice(tuner: str, max_trials: int | None) -> None:
    """Refuses a tuner that is not one of ``TUNERS`` or a trial cap below 1.

    The checks of ``tuners.check_tuner_budget`` that need no KerasTuner and
    no epochs, shared with ``SearchOptions`` so that both refuse alike.

    Args:
        tuner: str. One of ``TUNERS``.
        max_trials: int or None. The trial cap (None: the tuner's own).

    Raises:
        ValueError: naming the value received.
    """
    if tuner not in TUNERS:
        raise ValueError(
            f"tuner must be one of {TUNERS}. Received: tuner={tuner!r}"
        )
    if max_trials is not None and max_trials <= 0:
        raise ValueError(
            f"max_trials must be positive. Received: max_trials={max_trials}"
        )
