"""A whole KerasTuner search, as ``tfrec-tricks tune`` runs it.

``run_search`` loads and prepares the data of a ``TrainConfig``, builds a
``SequentialRetrievalHyperModel`` and a tuner (random, Bayesian or
Hyperband), searches, and writes into ``<output_dir>/<name>/``:

* ``search/``: KerasTuner's project (``oracle.json``, one ``trial_*``
  folder per trial with its best checkpoint). Running the same search
  again resumes it: completed trials are kept, the interrupted one is
  redone. ``overwrite=True`` starts afresh.
* ``tensorboard/``: one log folder per trial, with KerasTuner's hparams
  (``tensorboard --logdir <output_dir>/<name>/tensorboard``, HPARAMS tab).
* ``best_config.json``: the best trial as ``{"train": ..., "model": ...}``,
  the format of a run's ``config.json``: ``tfrec-tricks train --config
  best_config.json`` trains it.
* ``trials.md``: trial, status, validation NDCG@10 and the hyperparameters
  that vary; ``trials.png``: the score per trial and the best so far.

Distributed: with ``KERASTUNER_ORACLE_IP``, ``KERASTUNER_ORACLE_PORT`` and
``KERASTUNER_TUNER_ID`` set, the process whose tuner id contains "chief"
serves the oracle (and writes the reports when the search ends); the
others run trials.
"""

import dataclasses
import json
import os
import sys
import time

from tfrec_tricks.tuning.keras_tuner_binding import import_keras_tuner

keras_tuner = import_keras_tuner()

import tensorflow as tf  # noqa: E402
from keras_tuner.src.distribute import utils as distribute_utils  # noqa: E402

from tfrec_tricks.runs.train_config import (  # noqa: E402
    DERIVED_MODEL_FIELDS,
    TrainConfig,
)
from tfrec_tricks.runs.training import load_data  # noqa: E402
from tfrec_tricks.tuning.sequential_retrieval_hypermodel import (  # noqa: E402
    SequentialRetrievalHyperModel,
)

TUNERS = ("random", "bayesian", "hyperband")
PROJECT = "search"
# ModelConfig fields that a run's TrainConfig sets (see training.train).


@dataclasses.dataclass
class SearchResult:
    """What ``run_search`` returns.

    Attributes:
        output_dir: str. The search's folder.
        role: str. "local", "chief" or "worker".
        best_config: dict or None. The best configuration
            (``{"train": ..., "model": ...}``); None on a worker.
        trials: list of dict. One row per trial (id, status, score,
            hyperparameters); empty on a worker.
        seconds: float. Wall time of the search.
        tuner: the ``keras_tuner.Tuner``.
        hypermodel: the ``SequentialRetrievalHyperModel``.
    """

    output_dir: str
    role: str
    best_config: dict | None
    trials: list
    seconds: float
    tuner: object
    hypermodel: SequentialRetrievalHyperModel


def role() -> str:
    """This process' part in a search: "local", "chief" or "worker"."""
    if not distribute_utils.has_chief_oracle():
        return "local"
    return "chief" if distribute_utils.is_chief_oracle() else "worker"


def build_tuner(
    hypermodel: SequentialRetrievalHyperModel,
    tuner: str = "random",
    max_trials: int = 10,
    max_epochs: int = 10,
    directory: str = "tuning",
    project_name: str = PROJECT,
    overwrite: bool = False,
    seed: int | None = 0,
    **options,
):
    """A KerasTuner tuner over ``hypermodel``, maximising its objective.

    Args:
        hypermodel: a ``SequentialRetrievalHyperModel``.
        tuner: str. "random" (``RandomSearch``), "bayesian"
            (``BayesianOptimization``, 2 or ``max_trials // 3`` random
            trials first unless ``num_initial_points`` is given) or
            "hyperband" (``Hyperband`` with ``max_epochs``, at most
            ``max_trials`` trials). Defaults to "random".
        max_trials: int. Trials to run. Defaults to 10.
        max_epochs: int. Hyperband's largest epoch budget. Defaults to 10.
        directory: str. Parent folder of the project. Defaults to "tuning".
        project_name: str. Defaults to "search".
        overwrite: bool. False resumes an existing project. Defaults to
            False.
        seed: int or None. The oracle's seed. Defaults to 0.
        **options: more arguments of the tuner class.

    Returns:
        A ``keras_tuner.Tuner``.
    """
    if tuner not in TUNERS:
        raise ValueError(
            f"tuner must be one of {TUNERS}. Received: tuner={tuner!r}"
        )
    if max_trials <= 0:
        raise ValueError(
            f"max_trials must be positive. Received: max_trials={max_trials}"
        )
    common = {
        "objective": hypermodel.objective,
        "directory": directory,
        "project_name": project_name,
        "overwrite": overwrite,
        "seed": seed,
        **options,
    }
    if tuner == "random":
        return keras_tuner.RandomSearch(
            hypermodel, max_trials=max_trials, **common
        )
    if tuner == "bayesian":
        common.setdefault("num_initial_points", max(2, max_trials // 3))
        return keras_tuner.BayesianOptimization(
            hypermodel, max_trials=max_trials, **common
        )
    result = keras_tuner.Hyperband(hypermodel, max_epochs=max_epochs, **common)
    # Hyperband has no max_trials of its own; the oracle's cap applies.
    result.oracle.max_trials = max_trials
    return result


def run_search(
    config: TrainConfig,
    tuner: str = "random",
    max_trials: int = 10,
    output_dir: str = "tuning",
    fixed: dict | None = None,
    hyperparameters=None,
    overwrite: bool = False,
    verbose: int | None = None,
    compile_options: dict | None = None,
    callbacks: list | None = None,
    tuner_options: dict | None = None,
) -> SearchResult:
    """Runs a search and writes its reports (see the module docstring).

    Each trial trains for ``config.epochs`` epochs at most (Hyperband: its
    largest budget), with early stopping after ``config.patience`` epochs
    without a better validation NDCG@10. ``config.batch_size`` and
    ``config.learning_rate`` are tuned unless ``fixed`` names them.

    Args:
        config: ``TrainConfig`` with the data options, the epochs, the
            patience and the seed (its ``model`` entries are fixed values).
        tuner: str. "random", "bayesian" or "hyperband". Defaults to
            "random".
        max_trials: int. Defaults to 10.
        output_dir: str. Parent folder; the search is in
            ``<output_dir>/<config.run_name>``. Defaults to "tuning".
        fixed: dict or None. Fixed values (see
            ``SequentialRetrievalHyperModel``). Defaults to None.
        hyperparameters: ``keras_tuner.HyperParameters`` or None. Custom
            definitions. Defaults to None.
        overwrite: bool. Start afresh instead of resuming. Defaults to
            False.
        verbose: int or None. 0 silent; 1 KerasTuner's per-trial display
            and progress bars; 2 the display and one line per epoch.
            Defaults to 1 on a terminal, else 2.
        compile_options: dict or None. See
            ``SequentialRetrievalHyperModel``. Defaults to None:
            ``{"steps_per_execution": config.steps_per_execution}``.
        callbacks: list or None. More Keras callbacks for every trial.
        tuner_options: dict or None. More tuner arguments.

    Returns:
        A ``SearchResult``.
    """
    if config.prepared:
        raise ValueError(
            "search loads its data in memory; a prepared dataset on disk is "
            "for train. Received: config.prepared=" + repr(config.prepared)
        )
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
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
        compile_options=(
            {"steps_per_execution": config.steps_per_execution}
            if compile_options is None
            else compile_options
        ),
        bucket_by_length=config.bucket_by_length,
        every_position=config.every_position,
        window_stride=config.training_window_stride(),
        optimizer=config.optimizer,
    )
    search_dir = os.path.join(output_dir, config.run_name)
    os.makedirs(search_dir, exist_ok=True)
    search_tuner = build_tuner(
        hypermodel,
        tuner,
        max_trials=max_trials,
        max_epochs=config.epochs,
        directory=search_dir,
        project_name=PROJECT,
        overwrite=overwrite,
        seed=config.seed,
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
    part = role()
    if part == "worker":
        return SearchResult(
            search_dir, part, None, [], seconds, search_tuner, hypermodel
        )
    trials = trial_rows(search_tuner)
    best = None
    if any(row["status"] == "COMPLETED" for row in trials):
        best = best_config(search_tuner, hypermodel, config)
        with open(os.path.join(search_dir, "best_config.json"), "w") as f:
            json.dump(best, f, indent=2)
    write_table(trials, os.path.join(search_dir, "trials.md"), monitor)
    plot_trials(trials, os.path.join(search_dir, "trials.png"), monitor)
    if verbose:
        print(format_summary(trials, best, search_dir, monitor, seconds))
    return SearchResult(
        search_dir, part, best, trials, seconds, search_tuner, hypermodel
    )


def best_config(
    tuner, hypermodel: SequentialRetrievalHyperModel, config: TrainConfig
) -> dict:
    """The best trial as a run's ``config.json`` (``train --config``).

    Args:
        tuner: a tuner after its search.
        hypermodel: its ``SequentialRetrievalHyperModel``.
        config: the search's ``TrainConfig`` (data options, epochs, seed).

    Returns:
        ``{"train": TrainConfig fields, "model": ModelConfig fields}``.
    """
    hp = tuner.get_best_hyperparameters(1)[0]
    model_config = hypermodel.model_config(hp)
    model = model_config.to_dict()
    overrides = {
        k: v for k, v in model.items() if k not in DERIVED_MODEL_FIELDS
    }
    train_config = dataclasses.replace(
        config,
        batch_size=hypermodel.batch_size(hp),
        learning_rate=model_config.learning_rate,
        name=f"{config.run_name}-tuned",
        model=overrides,
    )
    return {"train": dataclasses.asdict(train_config), "model": model}


def trial_rows(tuner) -> list[dict]:
    """One dict per trial in start order: id, status, score, values."""
    oracle = tuner.oracle
    order = list(getattr(oracle, "start_order", [])) or sorted(oracle.trials)
    rows = []
    for number, trial_id in enumerate(order, 1):
        trial = oracle.trials[trial_id]
        values = {
            k: v
            for k, v in trial.hyperparameters.values.items()
            if not k.startswith("tuner/")
        }
        rows.append(
            {
                "number": number,
                "trial_id": trial_id,
                "status": str(trial.status),
                "score": trial.score,
                "best_step": trial.best_step,
                "hyperparameters": values,
            }
        )
    return rows


def _format(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write_table(rows: list[dict], path: str, metric: str) -> str:
    """Writes the trials as a markdown table; returns the text.

    Hyperparameters with one value in every trial are listed above the
    table; the others get a column each ("–" where inactive).
    """
    names = []
    for row in rows:
        names += [n for n in row["hyperparameters"] if n not in names]
    constant = {}
    for name in names:
        seen = {repr(r["hyperparameters"].get(name)) for r in rows}
        if len(seen) == 1 and all(name in r["hyperparameters"] for r in rows):
            constant[name] = rows[0]["hyperparameters"][name]
    varying = [n for n in names if n not in constant]
    scores = [r["score"] for r in rows if r["score"] is not None]
    best = max(scores) if scores else None
    lines = [f"# Search trials ({len(rows)}), objective {metric} (max)", ""]
    if constant:
        lines.append(
            "Same in every trial: "
            + ", ".join(f"{k}={_format(v)}" for k, v in constant.items())
        )
        lines.append("")
    header = ["trial", "status", metric, *varying]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in rows:
        score = _format(row["score"])
        if row["score"] is not None and row["score"] == best:
            score = f"**{score}**"
        cells = [str(row["number"]), row["status"], score]
        cells += [_format(row["hyperparameters"].get(n)) for n in varying]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    with open(path, "w") as handle:
        handle.write(text)
    return text


def plot_trials(rows: list[dict], path: str, metric: str) -> None:
    """Saves a PNG of the score per trial and the best score so far."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    numbers = [r["number"] for r in rows if r["score"] is not None]
    scores = [r["score"] for r in rows if r["score"] is not None]
    best, running = [], None
    for score in scores:
        running = score if running is None else max(running, score)
        best.append(running)
    figure, axes = pyplot.subplots(figsize=(7, 4))
    axes.plot(numbers, scores, "o", label="trial")
    axes.step(numbers, best, where="post", label="best so far")
    axes.set_xlabel("trial")
    axes.set_ylabel(metric)
    axes.set_title(f"{metric} per trial")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def format_summary(
    rows: list[dict],
    best: dict | None,
    search_dir: str,
    metric: str,
    seconds: float,
) -> str:
    """The lines printed at the end of a search."""
    done = sum(r["status"] == "COMPLETED" for r in rows)
    scores = [r["score"] for r in rows if r["score"] is not None]
    lines = [
        "",
        f"{len(rows)} trials ({done} completed) in {seconds:.0f} s.",
    ]
    if best is not None and scores:
        lines.append(f"Best {metric}: {max(scores):.4f}")
        lines.append(
            "Train it: tfrec-tricks train --config "
            f"{os.path.join(search_dir, 'best_config.json')}"
        )
    lines.append(
        f"Table: {os.path.join(search_dir, 'trials.md')}; plot: "
        f"{os.path.join(search_dir, 'trials.png')}; TensorBoard: "
        f"tensorboard --logdir {os.path.join(search_dir, 'tensorboard')}"
    )
    return "\n".join(lines)


def parse_choices(items: list[str] | None):
    """``["name=v1,v2", ...]`` as ``keras_tuner.HyperParameters`` choices.

    Values are read as JSON where they parse (numbers, true/false), else
    as strings. Tuple fields take ``;`` between choices instead of ``,``:
    ``cpr_reranker_ks=none;20;20,100,500``.

    Args:
        items: list of str or None.

    Returns:
        ``keras_tuner.HyperParameters`` or None when ``items`` is empty.
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
        parts = text.split(";" if name in TUPLE_FIELDS else ",")
        values = []
        for part in parts:
            part = part.strip()
            try:
                value = json.loads(part)
            except json.JSONDecodeError:
                value = part
            if name in TUPLE_FIELDS:
                value = part
            values.append(value)
        if len(set(map(repr, values))) != len(values):
            raise ValueError(f"Repeated values. Received: --choices {item!r}")
        hp.Choice(name, values, ordered=False)
    return hp
