"""A whole KerasTuner search, as ``tfrec-tricks tune`` runs it.

``run_search`` loads and prepares the data of a ``TrainConfig``, builds a
``SequentialRetrievalHyperModel`` and a tuner (``tfrec_tricks.tuning.
tuners``: Hyperband, Bayesian or random, the defaults as the first trial),
checks the budget, searches, retrains the best few configurations and the
defaults (``tfrec_tricks.tuning.selection``), and writes into
``<output_dir>/<name>/``. Its ``SearchOptions`` (``tfrec_tricks.tuning.
search_options``, also importable from here) choose the tuner, budget,
space and folder:

>>> from tfrec_tricks.tuning.search import SearchOptions, run_search
>>> options = SearchOptions(tuner="random", max_trials=20, max_minutes=60)
>>> result = run_search(TrainConfig(data="ml-100k"), options)  # doctest: +SKIP


* ``search/``: KerasTuner's project (``oracle.json``, one ``trial_*``
  folder per trial with its best checkpoint and ``timing.json``). Running
  the same search again resumes it: completed trials are kept, the
  interrupted one is redone. ``SearchOptions(overwrite=True)`` starts
  afresh.
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

With item attributes (``--item-features``, or a built-in MovieLens
dataset's metadata: ``tfrec_tricks.tuning.item_feature_space``) the space
also chooses which of them the model fuses and how; the data is loaded
without them and each trial joins those it fuses.

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
from tfrec_tricks.output_folders import check_target, target_lock  # noqa: E402
from tfrec_tricks.training.run_directory import data_identity  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402
from tfrec_tricks.training.training_data import (  # noqa: E402
    data_files,
    prepare_source,
)
from tfrec_tricks.tuning import selection  # noqa: E402
from tfrec_tricks.tuning.item_feature_space import (  # noqa: E402
    ItemFeatureSpace,
    search_item_features,
)
from tfrec_tricks.tuning.search_directory import (  # noqa: E402
    SEARCH_FOLDER,
    check_token_features,
    open_search,
    recorded_without_item_features,
    search_fingerprint,
    start_search,
    wait_for_search_file,
    with_token_features,
    write_best_config,
)
from tfrec_tricks.tuning.search_options import SearchOptions  # noqa: E402
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
    config: TrainConfig, options: SearchOptions | None = None
) -> SearchResult:
    """Runs a search, retrains its best, and writes the reports.

    Each trial trains for ``config.epochs`` epochs at most (Hyperband: its
    largest budget), with early stopping after ``config.patience`` epochs
    without a better validation NDCG@10. ``config.batch_size`` and
    ``config.learning_rate`` are tuned unless ``options.fixed`` names them.
    The first trial is the defaults: ``config`` as ``train`` would train it.

    The steps, in order:

    1. Check the request: a prepared dataset or a tuner that cannot use its
       budget is refused before anything is read or written.
    2. Fill in the options' run-time defaults (``verbose``,
       ``compile_options``).
    3. Lock the search folder (the chief or a local search only), read the
       item attributes the search chooses among, fingerprint the search
       and open its folder: resume, start afresh, or refuse another
       search's folder.
    4. Load the data and build the search space; refuse a space with
       nothing to search or a time budget shorter than one epoch.
    5. Start the search folder and build the tuner.
    6. Run the trials, within the time budget. A worker stops here.
    7. Write the trial table and chart; retrain the best trials and the
       defaults and write the chosen configuration; print the summary.

    Args:
        config: ``TrainConfig`` with the data options, the epochs, the
            patience and the seed (its ``model`` entries are fixed values).
            It is also the defaults that the selection compares against.
        options: ``SearchOptions`` or None. The tuner, budget, space and
            output folder. Defaults to None: ``SearchOptions()``.

    Returns:
        A ``SearchResult``.

    Raises:
        ValueError: before any trial, for a prepared dataset, a space with
            nothing to search, a tuner that cannot use its budget, or a
            time budget shorter than one epoch.
        RunDirectoryError: (a ValueError) before any trial and before the
            data is loaded: the folder holds a search with another
            fingerprint (space, fixed settings, data, budget), named
            difference by difference, unless ``options.overwrite``.
    """
    if options is None:
        options = SearchOptions()
    _check_request(config, options)
    options = _with_run_defaults(config, options)
    part = role()
    search_dir = os.path.join(options.output_dir, config.run_name)
    with _search_lock(config, search_dir, part):
        space = _item_feature_space(config, options, search_dir, part)
        fingerprint = _fingerprint(config, options, space)
        action = _open_search_folder(
            search_dir, fingerprint, part, options.overwrite
        )
        hypermodel = _build_search_space(config, options, part, space)
        fingerprint = with_token_features(
            fingerprint, list(hypermodel.data.token_feature_names)
        )
        # The chief's check (a worker joins the search the chief runs).
        if action == "resume" and part != "worker":
            check_token_features(search_dir, fingerprint)
        tuner = _start_tuner(
            config, options, hypermodel, part, search_dir, fingerprint, action
        )
        seconds = _run_trials(config, options, tuner, hypermodel, search_dir)
        # A worker only runs trials: the chief reports on the whole search.
        best, trials, rows = None, [], []
        if part != "worker":
            best, trials, rows = _write_reports(
                config, options, tuner, hypermodel, search_dir, seconds
            )
        return SearchResult(
            search_dir, part, best, trials, rows, seconds, tuner, hypermodel
        )


def _check_request(config: TrainConfig, options: SearchOptions) -> None:
    """Refuses, before anything is read, what no search of ``config`` runs.

    The options' own values are checked by ``SearchOptions``; here, those
    that depend on ``config``.

    Raises:
        ValueError: a prepared dataset, or a tuner that cannot use its
            budget at ``config.epochs`` (see ``check_tuner_budget``).
    """
    if config.prepared:
        raise ValueError(
            "search loads its data in memory; a prepared dataset on disk is "
            "for train. Received: config.prepared=" + repr(config.prepared)
        )
    check_tuner_budget(
        options.tuner,
        options.max_trials,
        config.epochs,
        num_initial_points=(options.tuner_options or {}).get(
            "num_initial_points"
        ),
    )


def _with_run_defaults(
    config: TrainConfig, options: SearchOptions
) -> SearchOptions:
    """``options`` with ``verbose`` and ``compile_options`` filled in.

    They depend on the terminal and on ``config``, so they are filled in
    when the search runs, not when the options are built.
    """
    verbose = options.verbose
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    compile_options = options.compile_options
    if compile_options is None:
        compile_options = {"steps_per_execution": config.steps_per_execution}
    return dataclasses.replace(
        options, verbose=verbose, compile_options=compile_options
    )


def _item_feature_space(
    config: TrainConfig, options: SearchOptions, search_dir: str, part: str
) -> ItemFeatureSpace | None:
    """The item attributes the search chooses among
    (``search_item_features``), or None.

    A search of a built-in dataset recorded without its metadata (before
    it was searched: ``recorded_without_item_features``) resumes with the
    space it started with, without them; ``overwrite`` starts afresh with
    them.

    Raises:
        DataError: the attributes cannot be read.
        RunDirectoryError: the folder's ``search.json`` is damaged.
    """
    space = search_item_features(config)
    if space is None or config.item_features is not None or options.overwrite:
        return space
    if part == "worker":
        wait_for_search_file(search_dir)
    if not recorded_without_item_features(search_dir):
        return space
    if options.verbose:
        print(
            f"{search_dir} holds a search started before the item features "
            f"({', '.join(space.names())}) were searched: it resumes "
            "without them (--overwrite starts afresh with them).",
            flush=True,
        )
    return None


def _fingerprint(
    config: TrainConfig,
    options: SearchOptions,
    space: ItemFeatureSpace | None = None,
) -> dict:
    """The search's fingerprint (``search.json``): space, data, budget."""
    return search_fingerprint(
        config,
        options.fixed,
        options.hyperparameters,
        {
            "tuner": options.tuner,
            "max_trials": options.max_trials,
            "max_minutes": options.max_minutes,
            "retrain_top": options.retrain_top,
            "seeds": options.seeds,
            "tuner_options": options.tuner_options or {},
            "compile_options": options.compile_options,
        },
        data_identity(data_files(config)),
        item_features=None if space is None else space.fingerprint(),
    )


def _search_lock(
    config: TrainConfig, search_dir: str, part: str
) -> contextlib.AbstractContextManager:
    """The lock the search holds on its folder while it runs.

    Raises:
        ValueError: (chief or local) ``search_dir`` is a folder of another
            kind or one of the search's inputs (see ``check_target``).
    """
    # Only the chief (or a local search) writes the folder and holds its
    # lock: not a folder of another kind or an input, one writer at a time.
    if part == "worker":
        return contextlib.nullcontext()
    check_target(search_dir, SEARCH_FOLDER, inputs=data_files(config))
    return target_lock(search_dir, SEARCH_FOLDER)


def _open_search_folder(
    search_dir: str, fingerprint: dict, part: str, overwrite: bool
) -> str:
    """How the search takes its folder (``open_search``'s action).

    Raises:
        RunDirectoryError: the folder holds a search with another
            fingerprint (unless ``overwrite``, on the chief or locally).
    """
    # Checked before the data is loaded: a refusal is quick and writes
    # nothing. Only the chief (or a local search) discards an old search
    # or starts one; workers wait for it, then check it is theirs.
    if part == "worker" and overwrite:
        return "resume"
    if part == "worker":
        wait_for_search_file(search_dir)
        return open_search(search_dir, fingerprint)
    return open_search(search_dir, fingerprint, overwrite)


def _build_search_space(
    config: TrainConfig,
    options: SearchOptions,
    part: str,
    space: ItemFeatureSpace | None = None,
) -> SequentialRetrievalHyperModel:
    """Loads the data and builds the space; checks it and the time budget.

    The data is loaded without item attributes, with every per-interaction
    feature (``prepare_source``): each trial joins the attributes it
    fuses (``space``) and keeps the token features it names.

    Raises:
        ValueError: nothing to search, or (chief or local) a time budget
            shorter than one epoch of the defaults.
    """
    tf.keras.utils.set_random_seed(config.seed)
    source, data = prepare_source(config)
    if options.verbose:
        print(f"Prepared: {data.summary()}", flush=True)
        if space is not None:
            print(
                f"Item features searched: {', '.join(space.names())} "
                f"(first trial: {space.default_choice()}), fused by "
                "concat or sum.",
                flush=True,
            )
    fixed_values = {**config.model, **(options.fixed or {})}
    hypermodel = SequentialRetrievalHyperModel(
        data,
        item_graph=source.item_graph,
        fixed=fixed_values,
        hyperparameters=options.hyperparameters,
        seed=config.seed,
        compile_options=options.compile_options,
        bucket_by_length=config.bucket_by_length,
        every_position=config.every_position,
        window_stride=config.training_window_stride(),
        optimizer=config.optimizer,
        item_feature_space=space,
    )
    check_search_space(hypermodel)
    max_minutes = options.max_minutes
    if max_minutes is not None and part != "worker":
        epoch_seconds = check_time_budget(hypermodel, max_minutes)
        if options.verbose:
            print(
                f"One epoch of the defaults: about {epoch_seconds:.0f} s; "
                f"budget {max_minutes:g} min.",
                flush=True,
            )
    return hypermodel


def _start_tuner(
    config: TrainConfig,
    options: SearchOptions,
    hypermodel: SequentialRetrievalHyperModel,
    part: str,
    search_dir: str,
    fingerprint: dict,
    action: str,
):
    """Starts the search folder and builds the tuner over ``hypermodel``."""
    if part == "worker":
        os.makedirs(search_dir, exist_ok=True)
    else:
        start_search(search_dir, fingerprint, action)
    max_minutes = options.max_minutes
    return build_tuner(
        hypermodel,
        options.tuner,
        max_trials=options.max_trials,
        max_epochs=config.epochs,
        directory=search_dir,
        project_name=PROJECT,
        overwrite=options.overwrite,
        seed=config.seed,
        max_seconds=None if max_minutes is None else max_minutes * 60,
        log_trials=bool(options.verbose),
        **(options.tuner_options or {}),
    )


def _run_trials(
    config: TrainConfig,
    options: SearchOptions,
    search_tuner,
    hypermodel: SequentialRetrievalHyperModel,
    search_dir: str,
) -> float:
    """Runs the trials with early stopping and TensorBoard logs.

    Returns:
        float. The search's seconds: over every session of a resumed search
        when the oracle keeps them, else this session's.
    """
    trial_callbacks = [
        tf.keras.callbacks.EarlyStopping(
            monitor=hypermodel.objective.name,
            mode="max",
            patience=config.patience,
        ),
        # KerasTuner gives each trial its own folder and adds the hparams.
        tf.keras.callbacks.TensorBoard(
            os.path.join(search_dir, "tensorboard"),
            profile_batch=0,
        ),
        *(options.callbacks or []),
    ]
    start = time.perf_counter()
    search_tuner.search(
        **hypermodel.search_data(),
        epochs=config.epochs,
        callbacks=trial_callbacks,
        verbose=options.verbose,
    )
    seconds = time.perf_counter() - start
    if hasattr(search_tuner.oracle, "search_seconds"):
        # Every session of a resumed search, as its time budget counts.
        seconds = search_tuner.oracle.search_seconds()
    return seconds


def _write_reports(
    config: TrainConfig,
    options: SearchOptions,
    search_tuner,
    hypermodel: SequentialRetrievalHyperModel,
    search_dir: str,
    seconds: float,
) -> tuple[dict | None, list, list]:
    """Reports on a finished search (chief or local search).

    Writes ``trials.md`` and ``trials.png``, chooses the configuration
    (``_choose_best``) and, when verbose, prints the summary.

    Returns:
        ``(best, trials, rows)``: ``best_config.json``'s content (None when
        no trial completed), a row per trial, and the retrained candidates'
        rows (empty without retraining).
    """
    monitor = hypermodel.objective.name
    trials = trial_rows(search_tuner)
    write_table(
        trials,
        os.path.join(search_dir, "trials.md"),
        monitor,
        config.epochs,
    )
    plot_trials(trials, os.path.join(search_dir, "trials.png"), monitor)
    best, rows, chosen = _choose_best(
        config, options, search_tuner, hypermodel, trials, search_dir
    )
    if options.verbose:
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
    return best, trials, rows


def _choose_best(
    config: TrainConfig,
    options: SearchOptions,
    search_tuner,
    hypermodel: SequentialRetrievalHyperModel,
    trials: list,
    search_dir: str,
) -> tuple[dict | None, list, dict | None]:
    """Chooses the configuration and writes ``best_config.json``.

    With ``options.retrain_top``, retrains the best trials and the defaults
    and writes ``selection.md``; else takes the best trial as scored.

    Returns:
        ``(best, rows, chosen)``: ``best_config.json``'s content, the
        retrained rows and the chosen one; ``(None, [], None)`` when no
        trial completed, ``rows`` empty and ``chosen`` None without
        retraining.
    """
    if not any(row["status"] == "COMPLETED" for row in trials):
        return None, [], None
    rows, chosen = [], None
    if options.retrain_top:
        rows, chosen = _select(
            search_tuner,
            hypermodel,
            config,
            options.retrain_top,
            options.seeds,
            options.verbose,
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
    best = config_file(winner, config, _catalogue_size(winner, hypermodel))
    write_best_config(search_dir, best)
    return best, rows, chosen


def _catalogue_size(
    winner: TrainConfig, hypermodel: SequentialRetrievalHyperModel
) -> int:
    """The catalogue ``winner`` trains on: the cold-start items join it
    when it fuses item attributes."""
    space = hypermodel.item_feature_space
    if space is None:
        return hypermodel.data.num_items
    _, item = space.split(
        winner.model.value("features"),
        hypermodel.data.feature_names,
        winner.item_features is not None,
        hypermodel.data.token_feature_names,
    )
    return hypermodel.joined_data(item).num_items


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
        "train": train_config.to_dict(),
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
