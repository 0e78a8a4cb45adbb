"""Defaults of a KerasTuner search's budget (``tfrec-tricks tune``).

Plain constants that import nothing, so that the command line's parser can
show them without importing KerasTuner (``tfrec_tricks.tuning`` binds
KerasTuner only when one of its names is first used).
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
