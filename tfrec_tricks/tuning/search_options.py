"""``SearchOptions``: how ``run_search`` searches, beside its ``TrainConfig``.

Imports no KerasTuner (only ``tfrec_tricks.tuning.search_budget``), so the
options of a search can be built and checked before the search binds it.
"""

import dataclasses
from typing import Any

from tfrec_tricks.tuning.search_budget import (
    DEFAULT_RETRAIN_TOP,
    DEFAULT_TUNER,
    check_tuner_choice,
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchOptions:
    """The tuner, budget, space and output of a search (``run_search``).

    Values that no search could use are refused when the options are built,
    before any data is read; those that depend on the ``TrainConfig`` (a
    tuner's budget against its epochs) are checked by ``run_search``.

    Attributes:
        tuner: str. "hyperband", "bayesian" or "random". Defaults to
            "hyperband".
        max_trials: int or None. None: one whole Hyperband iteration, or
            10 trials. Defaults to None.
        output_dir: str. Parent folder; the search is in
            ``<output_dir>/<config.run_name>``. Defaults to "tuning".
        fixed: dict or None. Fixed values (see
            ``SequentialRetrievalHyperModel``). Defaults to None.
        hyperparameters: ``keras_tuner.HyperParameters`` or None. Custom
            definitions. Defaults to None.
        overwrite: bool. Start afresh instead of resuming. Defaults to
            False.
        verbose: int or None. 0 silent; 1 progress bars; 2 one line per
            epoch. Above 0, a line per trial with its score and the best so
            far. Defaults to 1 on a terminal, else 2.
        compile_options: dict or None. See
            ``SequentialRetrievalHyperModel``. Defaults to None:
            ``{"steps_per_execution": config.steps_per_execution}``.
        callbacks: list or None. More Keras callbacks for every trial.
            Defaults to None.
        tuner_options: dict or None. More tuner arguments. Defaults to
            None.
        max_minutes: float or None. Start no trial after this many minutes
            of search (resumed searches continue their clock). Defaults to
            None: no limit.
        retrain_top: int. Retrain this many of the best distinct trials and
            the defaults with the final protocol and choose on validation;
            0 takes the best trial as it is. Defaults to 3.
        seeds: int. Seeds per retrained candidate (``config.seed``,
            ``config.seed + 1``, ...). Defaults to 1.

    Raises:
        ValueError: ``retrain_top`` below 0 or ``seeds`` below 1,
            ``max_minutes`` not positive, a ``tuner`` that is not one of
            ``TUNERS``, or ``max_trials`` not positive; the message names
            the value received.

    Example:

    >>> options = SearchOptions(tuner="random", max_trials=20)
    >>> options.output_dir, options.retrain_top, options.seeds
    ('tuning', 3, 1)
    >>> SearchOptions(seeds=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: retrain_top must be at least 0 and seeds at least 1. ...
    """

    tuner: str = DEFAULT_TUNER
    max_trials: int | None = None
    output_dir: str = "tuning"
    fixed: dict | None = None
    # keras_tuner.HyperParameters: not imported here, as that binds it.
    hyperparameters: Any = None
    overwrite: bool = False
    verbose: int | None = None
    compile_options: dict | None = None
    callbacks: list | None = None
    tuner_options: dict | None = None
    max_minutes: float | None = None
    retrain_top: int = DEFAULT_RETRAIN_TOP
    seeds: int = 1

    def __post_init__(self) -> None:
        # In the order run_search checked them before they lived here, so
        # that options wrong in several ways are refused with the same
        # message as before.
        if self.retrain_top < 0 or self.seeds < 1:
            raise ValueError(
                "retrain_top must be at least 0 and seeds at least 1. "
                f"Received: retrain_top={self.retrain_top}, seeds={self.seeds}"
            )
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ValueError(
                "max_minutes must be positive. Received: "
                f"max_minutes={self.max_minutes}"
            )
        check_tuner_choice(self.tuner, self.max_trials)
