"""What every oracle of ``tfrec-tricks tune`` adds to KerasTuner's."""

import time
from typing import Any

from tfrec_tricks.tuning.keras_tuner_binding import import_keras_tuner

keras_tuner = import_keras_tuner()


def default_values(hyperparameters: Any) -> dict:
    """The active hyperparameters' default values (``hp.default``).

    Args:
        hyperparameters: ``keras_tuner.HyperParameters``: the search space.

    Returns:
        dict of name to default value, conditional entries only where
        their parents' defaults make them active.
    """
    values = keras_tuner.HyperParameters()
    for hp in hyperparameters.space:
        values.merge([hp])
        if values.is_active(hp):
            values.values[hp.name] = hp.default
    return values.values


class SearchOracle:
    """Oracle mixin: the defaults first, then a wall-time budget.

    Mixed in before one of KerasTuner's oracles (random, Bayesian,
    Hyperband), it changes two things:

    - **The defaults are the first trial.** The first configuration the
      oracle draws is every hyperparameter's default, which the search
      space sets to what ``tfrec-tricks train`` trains. Later draws are the
      oracle's own (random, or the Gaussian process's). Why:
      docs/decisions.md#defaults-first.
    - **A time budget.** With ``max_seconds`` set, no trial starts once the
      search has run that long. The time spent survives a resume: it is
      part of the oracle's saved state (``oracle.json``), so an
      interrupted search continues its budget rather than restarting it.
      In a distributed search the oracle lives on the chief, which applies
      the budget for every worker.

    Attributes:
        max_seconds: float or None. The budget; None for none.
    """

    max_seconds: float | None = None

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._seconds_before = 0.0
        self._session_start = time.monotonic()

    def search_seconds(self) -> float:
        """Wall time spent searching, over every session of this search."""
        return self._seconds_before + time.monotonic() - self._session_start

    def _random_values(self) -> dict | None:
        defaults = default_values(self.hyperparameters)
        if not self._duplicate(defaults):
            return defaults
        return super()._random_values()

    def populate_space(self, trial_id: str) -> dict:
        if (
            self.max_seconds is not None
            and self.search_seconds() >= self.max_seconds
        ):
            return {"status": keras_tuner.engine.trial.TrialStatus.STOPPED}
        return super().populate_space(trial_id)

    def get_state(self) -> dict:
        state = super().get_state()
        state["search_seconds"] = self.search_seconds()
        return state

    def set_state(self, state: dict) -> None:
        super().set_state(state)
        self._seconds_before = float(state.get("search_seconds", 0.0))
        self._session_start = time.monotonic()
