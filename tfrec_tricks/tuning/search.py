"""A whole KerasTuner search, as ``tfrec-tricks tune`` runs it.

``run_search`` loads and prepares the data of a ``TrainConfig``, builds a
``SequentialRetrievalHyperModel`` and a tuner (``tfrec_tricks.tuning.
tuners``: Hyperband, Bayesian or random, the defaults as the first trial),
checks the budget, searches, retrains the best few configurations and the
defaults (``tfrec_tricks.tuning.selection``), and writes into
``<output_dir>/<name>/``:

* ``search/``: KerasTuner's project (``oracle.json``, one ``trial_*``
  folder per trial with its best checkpoint and ``timing.json``). Running
  the same search again resumes it: completed trials are kept, the
  interrupted one is redone. ``overwrite=True`` starts afresh.
* ``search.json``: the search's fingerprint (``tfrec_tricks.tuning.
  search_directory``), written before the first trial: a search with
  another space, data or budget is refused in this folder, naming the
  differences, unless ``overwrite=True``.
* ``tensorboard/``: one log folder per trial, with KerasTuner's hparams
  (``tensorboard --logdir <output_dir>/<name>/tensorboard``, HPARAMS tab).
* ``trials.md``: trial, status, validation NDCG@10, epochs, minutes and
  the hyperparameters that vary; ``trials.png``: each trial's score and the
  best so far against wall time.
* ``selection/`` and ``selection.md``: the retrained candidates' runs and
  their validation and test NDCG@10 beside the defaults'.
* ``best_config.json``: the chosen configuration as ``{"train": ...,
  "model": ...}``, the format of a run's ``config.json``: ``tfrec-tricks
  train --config best_config.json`` trains it. Written atomically by the
  search that ran; ``search.json`` records its SHA-256.

Distributed: with ``KERASTUNER_ORACLE_IP``, ``KERASTUNER_ORACLE_PORT`` and
``KERASTUNER_TUNER_ID`` set, the process whose tuner id contains "chief"
serves the oracle (and, when the search ends, retrains the candidates and
writes the reports); the others run trials.
"""

import contextlib
import dataclasses
import json
import os
import sys
import time

from tfrec_tricks.tuning.keras_tuner_binding import import_keras_tuner

keras_tuner = import_keras_tuner()

import tensorflow as tf  # noqa: E402
from keras_tuner.src.distribute import utils as distribute_utils  # noqa: E402

from tfrec_tricks.config_fields import check_finite  # noqa: E402
from tfrec_tricks.layers.common import is_integer  # noqa: E402
from tfrec_tricks.output_targets import check_target, target_lock  # noqa: E402
from tfrec_tricks.runs.run_directory import data_identity  # noqa: E402
from tfrec_tricks.runs.train_config import TrainConfig  # noqa: E402
from tfrec_tricks.runs.training import load_data  # noqa: E402
from tfrec_tricks.runs.training_data import data_files  # noqa: E402
from tfrec_tricks.tuning import selection  # noqa: E402
from tfrec_tricks.tuning.search_budget import (  # noqa: E402
    DEFAULT_RETRAIN_TOP,
    DEFAULT_TUNER,
)
from tfrec_tricks.tuning.search_directory import (  # noqa: E402
    SEARCH_FOLDER,
    open_search,
    search_fingerprint,
    start_search,
    wait_for_search_file,
    write_best_config,
)
from tfrec_tricks.tuning.search_reports import (  # noqa: E402
    format_summary,
    plot_trials,
    trial_rows,
    write_table,
)
from tfrec_tricks.tuning.sequential_retrieval_hypermodel import (  # noqa: E402
    SequentialRetrievalHyperModel,
)
from tfrec_tricks.tuning.tuners import (  # noqa: E402
    build_tuner,
    check_tuner_budget,
)

PROJECT = "search"


@dataclasses.dataclass
class SearchResult:
    """What ``run_search`` returns.

    Attributes:
        output_dir: str. The search's folder.
        role: str. "local", "chief" or "worker".
        best_config: dict or None. The chosen configuration
            (``{"train": ..., "model": ...}``); None on a worker or when no
            trial completed.
        trials: list of dict. One row per trial (id, status, score,
            hyperparameters, timing); empty on a worker.
        selection: list of dict. The retrained candidates, the defaults
            first (see ``selection.retrain``); empty without retraining.
        seconds: float. Wall time of the search over every session of it
            (this session's on a worker; retraining not included).
        tuner: the ``keras_tuner.Tuner``.
        hypermodel: the ``SequentialRetrievalHyperModel``.
    """

    output_dir: str
    role: str
    best_config: dict | None
    trials: list
    selection: list
    seconds: float
    tuner: object
    hypermodel: SequentialRetrievalHyperModel


def role() -> str:
    """This process' part in a search: "local", "chief" or "worker"."""
    if not distribute_utils.has_chief_oracle():
        return "local"
    return "chief" if distribute_utils.is_chief_oracle() else "worker"


def check_search_space(hypermodel: SequentialRetrievalHyperModel) -> None:
    """Refuses a search space in which every setting is fixed.

    Raises:
        ValueError: nothing has two values to choose from.
    """
    if not hypermodel.searched_names():
        raise ValueError(
            "Nothing to search: every setting has one value. Leave a model "
            "option or --batch-size / --learning-rate unset, or give "
            "--choices NAME=V1,V2. Received fixed settings: "
            f"{sorted(hypermodel.fixed)}"
        )


def check_time_budget(
    hypermodel: SequentialRetrievalHyperModel, max_minutes: float
) -> float:
    """Refuses a time budget shorter than one epoch of the defaults.

    Returns:
        float. The estimated seconds of one epoch of the defaults.

    Raises:
        ValueError: ``max_minutes`` is below that estimate.
    """
    seconds = hypermodel.estimate_epoch_seconds()
    if max_minutes * 60 < seconds:
        raise ValueError(
            f"max_minutes={max_minutes:g} (--max-minutes) is shorter than "
            f"one epoch of the defaults ({seconds / 60:.2f} min, timed on a "
            "few steps): no trial could finish. Give more minutes."
        )
    return seconds


def run_search(
    config: TrainConfig,
    tuner: str = DEFAULT_TUNER,
    max_trials: int | None = None,
    output_dir: str = "tuning",
    fixed: dict | None = None,
    hyperparameters=None,
    overwrite: bool = False,
    verbose: int | None = None,
    compile_options: dict | None = None,
    callbacks: list | None = None,
    tuner_options: dict | None = None,
    max_minutes: float | None = None,
    retrain_top: int = DEFAULT_RETRAIN_TOP,
    seeds: int = 1,
) -> SearchResult:
    """Runs a search, retrains its best, and writes the reports.

    Each trial trains for ``config.epochs`` epochs at most (Hyperband: its
    largest budget), with early stopping after ``config.patience`` epochs
    without a better validation NDCG@10. ``config.batch_size`` and
    ``config.learning_rate`` are tuned unless ``fixed`` names them. The
    first trial is the defaults: ``config`` as ``train`` would train it.

    Args:
        config: ``TrainConfig`` with the data options, the epochs, the
            patience and the seed (its ``model`` entries are fixed values).
            It is also the defaults that the selection compares against.
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
        tuner_options: dict or None. More tuner arguments.
        max_minutes: float or None. Start no trial after this many minutes
            of search (resumed searches continue their clock). Defaults to
            None: no limit.
        retrain_top: int. Retrain this many of the best distinct trials and
            the defaults with the final protocol and choose on validation;
            0 takes the best trial as it is. Defaults to 3.
        seeds: int. Seeds per retrained candidate (``config.seed``,
            ``config.seed + 1``, ...). Defaults to 1.

    Returns:
        A ``SearchResult``.

    Raises:
        ValueError: before any trial, for a prepared dataset, a space with
            nothing to search, a tuner that cannot use its budget, or a
            time budget shorter than one epoch.
        RunDirectoryError: (a ValueError) before any trial and before the
            data is loaded: the folder holds a search with another
            fingerprint (space, fixed settings, data, budget), named
            difference by difference, unless ``overwrite``.
    """
    if config.prepared:
        raise ValueError(
            "search loads its data in memory; a prepared dataset on disk is "
            "for train. Received: config.prepared=" + repr(config.prepared)
        )
    if retrain_top < 0 or seeds < 1:
        raise ValueError(
            "retrain_top must be at least 0 and seeds at least 1. "
            f"Received: retrain_top={retrain_top}, seeds={seeds}"
        )
    if max_minutes is not None and max_minutes <= 0:
        raise ValueError(
            f"max_minutes must be positive. Received: max_minutes={max_minutes}"
        )
    check_tuner_budget(
        tuner,
        max_trials,
        config.epochs,
        num_initial_points=(tuner_options or {}).get("num_initial_points"),
    )
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    if compile_options is None:
        compile_options = {"steps_per_execution": config.steps_per_execution}
    part = role()
    search_dir = os.path.join(output_dir, config.run_name)
    fingerprint = search_fingerprint(
        config,
        fixed,
        hyperparameters,
        {
            "tuner": tuner,
            "max_trials": max_trials,
            "max_minutes": max_minutes,
            "retrain_top": retrain_top,
            "seeds": seeds,
            "tuner_options": tuner_options or {},
            "compile_options": compile_options,
        },
        data_identity(data_files(config)),
    )
    # Only the chief (or a local search) writes the folder and holds its
    # lock: not a folder of another kind or an input, one writer at a time.
    if part == "worker":
        lock = contextlib.nullcontext()
    else:
        check_target(search_dir, SEARCH_FOLDER, inputs=data_files(config))
        lock = target_lock(search_dir, SEARCH_FOLDER)
    with lock:
        # Checked before the data is loaded: a refusal is quick and writes
        # nothing. Only the chief (or a local search) discards an old search
        # or starts one; workers wait for it, then check it is theirs.
        if part == "worker" and overwrite:
            action = "resume"
        elif part == "worker":
            wait_for_search_file(search_dir)
            action = open_search(search_dir, fingerprint)
        else:
            action = open_search(search_dir, fingerprint, overwrite)
        tf.keras.utils.set_random_seed(config.seed)
        source, data = load_data(config)
        if verbose:
            print(f"Prepared: {data.summary()}", flush=True)
        fixed_values = {**config.model, **(fixed or {})}
        hypermodel = SequentialRetrievalHyperModel(
            data,
            item_graph=source.item_graph,
            fixed=fixed_values,
            hyperparameters=hyperparameters,
            seed=config.seed,
            compile_options=compile_options,
            bucket_by_length=config.bucket_by_length,
            every_position=config.every_position,
            window_stride=config.training_window_stride(),
            optimizer=config.optimizer,
        )
        check_search_space(hypermodel)
        if max_minutes is not None and part != "worker":
            epoch_seconds = check_time_budget(hypermodel, max_minutes)
            if verbose:
                print(
                    f"One epoch of the defaults: about {epoch_seconds:.0f} s; "
                    f"budget {max_minutes:g} min.",
                    flush=True,
                )
        if part == "worker":
            os.makedirs(search_dir, exist_ok=True)
        else:
            start_search(search_dir, fingerprint, action)
        search_tuner = build_tuner(
            hypermodel,
            tuner,
            max_trials=max_trials,
            max_epochs=config.epochs,
            directory=search_dir,
            project_name=PROJECT,
            overwrite=overwrite,
            seed=config.seed,
            max_seconds=None if max_minutes is None else max_minutes * 60,
            log_trials=bool(verbose),
            **(tuner_options or {}),
        )
        monitor = hypermodel.objective.name
        trial_callbacks = [
            tf.keras.callbacks.EarlyStopping(
                monitor=monitor, mode="max", patience=config.patience
            ),
            # KerasTuner gives each trial its own folder and adds the hparams.
            tf.keras.callbacks.TensorBoard(
                os.path.join(search_dir, "tensorboard"), profile_batch=0
            ),
            *(callbacks or []),
        ]
        start = time.perf_counter()
        search_tuner.search(
            **hypermodel.search_data(),
            epochs=config.epochs,
            callbacks=trial_callbacks,
            verbose=verbose,
        )
        seconds = time.perf_counter() - start
        if hasattr(search_tuner.oracle, "search_seconds"):
            # Every session of a resumed search, as its time budget counts.
            seconds = search_tuner.oracle.search_seconds()
        if part == "worker":
            return SearchResult(
                search_dir,
                part,
                None,
                [],
                [],
                seconds,
                search_tuner,
                hypermodel,
            )
        trials = trial_rows(search_tuner)
        write_table(
            trials,
            os.path.join(search_dir, "trials.md"),
            monitor,
            config.epochs,
        )
        plot_trials(trials, os.path.join(search_dir, "trials.png"), monitor)
        best, rows, chosen = None, [], None
        if any(row["status"] == "COMPLETED" for row in trials):
            if retrain_top:
                rows, chosen = _select(
                    search_tuner,
                    hypermodel,
                    config,
                    retrain_top,
                    seeds,
                    verbose,
                )
                winner = chosen["config"]
                selection.write_report(
                    rows, chosen, os.path.join(search_dir, "selection.md")
                )
            else:
                winner = selection.trial_config(
                    search_tuner.get_best_hyperparameters(1)[0],
                    hypermodel,
                    config,
                )
            best = config_file(winner, config, data.num_items)
            write_best_config(search_dir, best)
        if verbose:
            print(
                format_summary(
                    trials,
                    best,
                    search_dir,
                    monitor,
                    seconds,
                    chosen,
                    rows[0] if rows else None,
                    config.epochs,
                )
            )
        return SearchResult(
            search_dir,
            part,
            best,
            trials,
            rows,
            seconds,
            search_tuner,
            hypermodel,
        )


def _select(tuner, hypermodel, config, top, seeds, verbose):
    """Retrains the candidates; returns the rows and the chosen one."""
    chosen = selection.candidates(tuner, hypermodel, config, top)
    if verbose:
        print(
            f"Retraining {len(chosen)} configurations (the defaults and the "
            f"best {len(chosen) - 1} trials) x {seeds} seed(s), at most "
            f"{config.epochs} epochs each, to choose on validation.",
            flush=True,
        )
    rows = selection.retrain(
        chosen,
        [config.seed + i for i in range(seeds)],
        os.path.join(
            os.path.dirname(tuner.project_dir), selection.SELECTION_DIR
        ),
        hypermodel.data.num_items,
        verbose=verbose,
    )
    return rows, selection.pick(rows)


def config_file(winner: TrainConfig, config: TrainConfig, num_items: int):
    """A configuration as ``best_config.json`` (``train --config``).

    Args:
        winner: the chosen ``TrainConfig``.
        config: the search's ``TrainConfig`` (its output folder and name).
        num_items: int. The catalogue size.

    Returns:
        ``{"train": TrainConfig fields, "model": ModelConfig fields}``,
        named ``<run name>-tuned``.
    """
    train_config = dataclasses.replace(
        winner,
        seed=config.seed,
        output_dir=config.output_dir,
        name=f"{config.run_name}-tuned",
    )
    return {
        "train": dataclasses.asdict(train_config),
        "model": train_config.model_config(num_items).to_dict(),
    }


def parse_choices(items: list[str] | None):
    """``["name=v1,v2", ...]`` as ``keras_tuner.HyperParameters`` choices.

    Values are read as JSON where they parse (numbers, true/false), else
    as numbers where Python reads them (``.5``), else as strings. Tuple
    fields take ``;`` between choices instead of ``,``:
    ``cpr_reranker_ks=none;20;20,100,500``.

    Args:
        items: list of str or None.

    Returns:
        ``keras_tuner.HyperParameters`` or None when ``items`` is empty.

    Raises:
        ValueError: naming the ``--choices`` item: not ``NAME=V1,...``, a
            value given twice, a setting given twice, or a number that is
            not finite in float32 (``inf``, ``nan``, ``1e39``).
    """
    if not items:
        return None
    from tfrec_tricks.tuning.sequential_retrieval_hypermodel import (
        TUPLE_FIELDS,
    )

    hp = keras_tuner.HyperParameters()
    for item in items:
        name, separator, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not separator or not name or not text:
            raise ValueError(
                f"Expected NAME=V1,V2,... Received: --choices {item!r}"
            )
        if name in hp:
            raise ValueError(
                f"--choices {name} is given twice; give all its values in "
                f"one. Received: --choices {item!r}"
            )
        parts = text.split(";" if name in TUPLE_FIELDS else ",")
        values = []
        for part in parts:
            part = part.strip()
            try:
                if name in TUPLE_FIELDS:
                    for size in part.split(","):
                        _choice_value(name, size.strip(), item)
                    value = part
                else:
                    value = _choice_value(name, part, item)
            except ValueError as error:
                raise ValueError(f"{error} (--choices {item!r})") from None
            values.append(value)
        if len(set(map(repr, values))) != len(values):
            raise ValueError(f"Repeated values. Received: --choices {item!r}")
        hp.Choice(name, values, ordered=False)
    return hp


def _choice_value(name: str, text: str, item: str):
    """One ``--choices`` value: JSON, else a number, else the string.

    Raises:
        ValueError: a number that is not finite in float32 (``inf``,
            ``nan``, ``1e39``), with ``name`` and the value.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                return text  # a string setting (a head, an encoder)
    if isinstance(value, float) or is_integer(value):
        check_finite(name, value)
    return value
