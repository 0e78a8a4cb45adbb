"""The tuners of ``tfrec-tricks tune`` and the checks of their budgets.

Each is one of KerasTuner's (Hyperband, Bayesian optimisation, random
search) with two mixins: ``SearchOracle`` (the defaults are the first trial;
a wall-time budget) and ``TrialLog`` (each trial's times; a progress line).
"""

from typing import Any

from tfrec_tricks.errors import write_failure
from tfrec_tricks.tuning.keras_tuner_binding import import_keras_tuner

keras_tuner = import_keras_tuner()

from tfrec_tricks.tuning.search_budget import (  # noqa: E402
    DEFAULT_MAX_TRIALS,
    DEFAULT_TUNER,
    HYPERBAND_FACTOR,
    check_tuner_choice,
)
from tfrec_tricks.tuning.search_oracle import SearchOracle  # noqa: E402
from tfrec_tricks.tuning.trial_log import TrialLog  # noqa: E402


class _RandomOracle(SearchOracle, keras_tuner.oracles.RandomSearchOracle):
    pass


class _BayesianOracle(
    SearchOracle, keras_tuner.oracles.BayesianOptimizationOracle
):
    pass


class _HyperbandOracle(SearchOracle, keras_tuner.oracles.HyperbandOracle):
    pass


class _WriteFailuresStop:
    """Tuner mixin: a trial that cannot write (a full disk, a folder that
    is not writable) stops the search, as Ctrl-C does.

    KerasTuner records a trial that raises as failed, and the search goes
    on to fail every trial after it; raised as a ``FatalError`` instead,
    the trial stays unfinished, and the same command runs it again once
    space is freed or the permissions restored.
    """

    def _run_and_update_trial(self, trial: Any, *args: Any, **kwargs: Any):
        try:
            return super()._run_and_update_trial(trial, *args, **kwargs)
        except Exception as error:
            if write_failure(error) is None:
                raise
            raise keras_tuner.errors.FatalError(str(error)) from error


class _Tuner(_WriteFailuresStop, TrialLog, keras_tuner.Tuner):
    pass


class _Hyperband(_WriteFailuresStop, TrialLog, keras_tuner.Hyperband):
    # keras_tuner.Hyperband builds its own oracle; this one takes ours and
    # keeps Hyperband's run_trial (epochs per round, resumed checkpoints).
    def __init__(self, oracle: Any, hypermodel: Any, **kwargs: Any):
        keras_tuner.Tuner.__init__(
            self, oracle=oracle, hypermodel=hypermodel, **kwargs
        )


def hyperband_rounds(oracle: Any, bracket: int) -> list[tuple[int, int]]:
    """``(trials, epochs)`` of each round of one Hyperband bracket."""
    return [
        (oracle._get_size(bracket, r), oracle._get_epochs(bracket, r))
        for r in range(oracle._get_num_rounds(bracket))
    ]


def hyperband_iteration_trials(oracle: Any) -> int:
    """Trials in one Hyperband iteration (every bracket once)."""
    return sum(
        trials
        for bracket in range(oracle._get_num_brackets())
        for trials, _ in hyperband_rounds(oracle, bracket)
    )


def check_tuner_budget(
    tuner: str,
    max_trials: int | None,
    max_epochs: int,
    factor: int = HYPERBAND_FACTOR,
    num_initial_points: int | None = None,
) -> None:
    """Refuses, before any trial, a tuner that cannot use its budget.

    Args:
        tuner: str. One of ``TUNERS``.
        max_trials: int or None. The trial cap (None: the tuner's own).
        max_epochs: int. Epochs per trial at most (Hyperband's largest
            budget).
        factor: int. Hyperband's halving factor. Defaults to 3.
        num_initial_points: int or None. Bayesian optimisation's random
            trials before its Gaussian process.

    Raises:
        ValueError: Hyperband with fewer epochs than ``factor`` (nothing to
            halve) or too few trials to train any configuration for
            ``max_epochs``; Bayesian optimisation with no trial left after
            its random ones. The message names the option and the value.
    """
    check_tuner_choice(tuner, max_trials)
    if tuner == "hyperband":
        if max_epochs < factor:
            raise ValueError(
                f"Hyperband trains trials for max_epochs / {factor}^k epochs "
                f"and keeps the best 1/{factor}; with max_epochs={max_epochs} "
                f"(--epochs) below {factor} it has one budget and is a random "
                f"search. Give --epochs of at least {factor}, or --tuner "
                "random or bayesian."
            )
        oracle = keras_tuner.oracles.HyperbandOracle(
            keras_tuner.Objective("score", "max"),
            max_epochs=max_epochs,
            factor=factor,
        )
        first = hyperband_rounds(oracle, oracle._get_num_brackets() - 1)
        needed = sum(trials for trials, _ in first)
        if max_trials is not None and max_trials < needed:
            rounds = ", then ".join(f"{t} x {e} epochs" for t, e in first)
            raise ValueError(
                f"Hyperband's first bracket at max_epochs={max_epochs} "
                f"(--epochs) runs {needed} trials ({rounds}) before any "
                f"configuration trains {max_epochs} epochs; "
                f"max_trials={max_trials} (--max-trials) stops it before. "
                f"Give at least {needed}, or no --max-trials (one whole "
                f"Hyperband iteration: {hyperband_iteration_trials(oracle)} "
                "trials)."
            )
    if tuner == "bayesian" and max_trials is not None:
        initial = (
            initial_points(max_trials)
            if num_initial_points is None
            else num_initial_points
        )
        if max_trials <= initial:
            raise ValueError(
                f"Bayesian optimisation draws its first {initial} trials at "
                f"random; max_trials={max_trials} (--max-trials) leaves none "
                "for its Gaussian process. Give more trials, or --tuner "
                "random."
            )


def initial_points(max_trials: int) -> int:
    """Bayesian optimisation's random trials: 2, or a third of the trials."""
    return max(2, max_trials // 3)


def build_tuner(
    hypermodel: Any,
    tuner: str = DEFAULT_TUNER,
    max_trials: int | None = None,
    max_epochs: int = 10,
    directory: str = "tuning",
    project_name: str = "search",
    overwrite: bool = False,
    seed: int | None = 0,
    max_seconds: float | None = None,
    factor: int = HYPERBAND_FACTOR,
    log_trials: bool = True,
    **options: Any,
) -> Any:
    """A KerasTuner tuner over ``hypermodel``, maximising its objective.

    The first trial trains the search space's defaults; the search stops
    starting trials after ``max_seconds`` (see ``SearchOracle``); each
    trial's times land in its folder and, with ``log_trials``, a line per
    trial is printed (see ``TrialLog``).

    Args:
        hypermodel: a ``SequentialRetrievalHyperModel``.
        tuner: str. "hyperband" (KerasTuner's ``Hyperband``: trials of
            ``max_epochs / factor^k`` epochs, the best ``1/factor``
            continued from their checkpoints up to ``max_epochs``),
            "bayesian" (``BayesianOptimization``; ``initial_points``
            random trials first unless ``num_initial_points`` is given) or
            "random" (``RandomSearch``). Defaults to "hyperband".
        max_trials: int or None. Trials to run at most. None: one whole
            Hyperband iteration (as many as ``max_seconds`` allows when it
            is set), or 10 for the others. Defaults to None.
        max_epochs: int. Hyperband's largest budget. Defaults to 10.
        directory: str. Parent folder of the project. Defaults to
            "tuning".
        project_name: str. Defaults to "search".
        overwrite: bool. False resumes an existing project. Defaults to
            False.
        seed: int or None. The oracle's seed. Defaults to 0.
        max_seconds: float or None. Wall-time budget of the search.
            Defaults to None: none.
        factor: int. Hyperband's halving factor. Defaults to 3.
        log_trials: bool. Print a line per trial. Defaults to True.
        **options: more arguments of the oracle (e.g.
            ``num_initial_points``) or of ``keras_tuner.Tuner``.

    Returns:
        A ``keras_tuner.Tuner``.

    Raises:
        ValueError: see ``check_tuner_budget``.
    """
    check_tuner_budget(
        tuner,
        max_trials,
        max_epochs,
        factor,
        options.get("num_initial_points"),
    )
    oracle_options = {
        "objective": hypermodel.objective,
        "seed": seed,
        **{k: options.pop(k) for k in _ORACLE_OPTIONS if k in options},
    }
    if tuner == "hyperband":
        if max_seconds is not None and max_trials is None:
            # The time budget ends the search: iterate until it does.
            oracle_options.setdefault("hyperband_iterations", UNTIL_BUDGET)
        oracle = _HyperbandOracle(
            max_epochs=max_epochs, factor=factor, **oracle_options
        )
        # Hyperband has no max_trials of its own; the oracle's cap applies.
        oracle.max_trials = max_trials
        tuner_class = _Hyperband
    else:
        max_trials = max_trials or DEFAULT_MAX_TRIALS
        if tuner == "bayesian":
            oracle_options.setdefault(
                "num_initial_points", initial_points(max_trials)
            )
            oracle = _BayesianOracle(max_trials=max_trials, **oracle_options)
        else:
            oracle = _RandomOracle(max_trials=max_trials, **oracle_options)
        tuner_class = _Tuner
    oracle.max_seconds = max_seconds
    result = tuner_class(
        oracle=oracle,
        hypermodel=hypermodel,
        directory=directory,
        project_name=project_name,
        overwrite=overwrite,
        **options,
    )
    result.log_trials = log_trials
    return result


# Hyperband iterations when only the time budget bounds the search.
UNTIL_BUDGET = 1000
_ORACLE_OPTIONS = (
    "hyperparameters",
    "allow_new_entries",
    "tune_new_entries",
    "max_retries_per_trial",
    "max_consecutive_failed_trials",
    "num_initial_points",
    "alpha",
    "beta",
    "hyperband_iterations",
)
