"""Training runs: data -> model.fit -> metrics, all saved in a run directory.

A run directory holds ``run.json`` (the run's fingerprint, then its
manifest: see ``tfrec_tricks.training.run_directory``), ``config.json``
(everything needed to repeat the run), ``vocabulary.json`` (contiguous id
-> raw id), ``history.csv`` (per epoch), ``metrics.json`` (validation and
test metrics, timings), ``checkpoints/best`` (weights of the best epoch by
validation NDCG@10), ``model/`` (the final model: config and weights, see
``load_model``), ``tensorboard/`` (per-epoch scalars and the run's settings
as HParams) and, while a run is in progress, ``backup/``: an interrupted
run resumes from it when the same command runs again, its early stopping
and best checkpoint continuing from the epochs already in
``history.csv``.
"""

import contextlib
import csv
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.atomic_files import write_text_atomic
from tfrec_tricks.callbacks import (
    ClaimWrittenFiles,
    EpochTimer,
    ResumableCSVLogger,
    ResumableEarlyStopping,
    StopOnDivergence,
    epochs_since_best,
    monitor_history,
)
from tfrec_tricks.data.prepared_format import read_metadata
from tfrec_tricks.errors import (
    TrainingFailedError,
    write_failure,
    writes_named,
)
from tfrec_tricks.evaluation.full_ranking import (
    metrics_by_target_kind,
    metrics_from_ranks,
    tf_target_ranks,
)
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.models.config import (
    AUTO_HEAD,
    HEADS,
    SOFTMAX_HEADS,
    as_trained,
)
from tfrec_tricks.output_targets import check_target, target_lock
from tfrec_tricks.training.distribution import is_chief, make_strategy
from tfrec_tricks.training.head_choice import requested_head, with_chosen_head
from tfrec_tricks.training.memory_budget import check_training_memory
from tfrec_tricks.training.optimizers import (
    learning_rate_schedule,
    make_optimizer,
)
from tfrec_tricks.training.prepare_dataset import (
    prepared_read_lock,
    prepared_train_config,
)
from tfrec_tricks.training.run_directory import (
    LIBRARY_FOLDERS,
    RUN_DIRECTORY,
    check_finished_run,
    data_identity,
    differences,
    fail_run,
    finish_run,
    make_fingerprint,
    open_run,
    publish_model,
    read_run_file,
    resolved_data_paths,
    start_run,
)
from tfrec_tricks.training.sampled_evaluation import (
    history_kept_metrics,
    sampled_metrics,
    seen_excluded_metrics,
    seen_items,
)
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import (
    TrainingData,
    data_files,
    input_paths,
    load_training_data,
    prepare_in_memory,  # noqa: F401 (part of this module's API)
)

EVAL_BATCH_SIZE = 512
# Evaluation scores a batch against the whole catalogue: its [B, N] float32
# logits are kept near this many values (256 MB), so a large catalogue
# evaluates in smaller batches rather than running out of memory.
EVAL_LOGITS_BUDGET = 1 << 26


def eval_batch_size(num_items: int) -> int:
    """Evaluation rows per batch for a catalogue of ``num_items``.

    >>> eval_batch_size(3_000), eval_batch_size(1_000_001)
    (512, 67)
    """
    return max(1, min(EVAL_BATCH_SIZE, EVAL_LOGITS_BUDGET // max(num_items, 1)))


# Training options added after run fingerprints existed, with the value
# that means what runs before them did: left out of the fingerprint then.
LATER_OPTIONS = {
    "prepared": None,
    "distribute": "auto",
    "train_windows": False,
    "window_stride": 0,
    "eval_negatives": 0,
    "optimizer": "adam",
    "eval_seen_excluded": False,
    # Runs from before it kept duplicate rows: they are --no-drop-duplicates
    # runs (the same data wherever a dataset has no duplicates).
    "drop_duplicates": False,
    "lr_schedule": "constant",
    "warmup_epochs": 0,
}
# The same for ModelConfig fields: name -> (that value, (the field and
# the value, or values, the option applies to), or None where it applies
# to every model). Left out of the resolved model config when it has that
# value or does not apply, and out of the ``model`` overrides when they
# set that value: runs that differ only there are the same run.
MODEL_LATER_OPTIONS = {
    "cpr_base_loss": (0.0, ("head", "cpr")),
    "sasrec_norm": ("post", ("encoder", "sasrec")),
    "cpr_rerank_within_candidates": (False, ("head", "cpr")),
    "cosine_temperature": (None, ("head", SOFTMAX_HEADS)),
    "num_sampled_negatives": (None, ("objective", "sampled")),
    "train_metrics": (True, None),
}
TENSORBOARD_DIR = "tensorboard"


@dataclasses.dataclass
class RunResult:
    """What ``train`` returns: where the run is, its metrics and its model."""

    run_dir: str
    metrics: dict
    history: dict
    model: tf.keras.Model


def fingerprint(
    config: TrainConfig, num_items: int, data: list[dict] | None = None
) -> dict:
    """What determines ``config``'s run on a catalogue of ``num_items``.

    ``data`` is the data files' ``data_identity`` when already computed
    (hashing a large file twice is what it saves); None computes it.

    See ``tfrec_tricks.training.run_directory``: the training options, the
    resolved model config, the data files' hashes and the package version.
    """
    if data is None:
        data = data_identity(data_files(config))
    train = resolved_data_paths(dataclasses.asdict(config))
    # The rate trained with: None (the protocol's default) and the same rate
    # given explicitly are one run, as before the default depended on it.
    train["learning_rate"] = config.training_learning_rate()
    for name, default in LATER_OPTIONS.items():
        # Runs from before the option existed keep their fingerprint.
        if train[name] == default:
            del train[name]
    model = config.model_config(num_items).to_dict()
    overrides = dict(train["model"])
    for name, (before, condition) in MODEL_LATER_OPTIONS.items():
        if model[name] == before or not _applies(model, condition):
            del model[name]
        if name in overrides and overrides[name] == before:
            del overrides[name]
    train["model"] = overrides
    return make_fingerprint(train, model, data)


def _applies(model: dict, condition: tuple | None) -> bool:
    """Whether a ``MODEL_LATER_OPTIONS`` condition holds for ``model``."""
    if condition is None:
        return True
    field, applies = condition
    if not isinstance(applies, tuple):
        applies = (applies,)
    return model[field] in applies


def as_trained_fingerprint(run_fingerprint: dict) -> dict:
    """``run_fingerprint`` with its model as trained (``as_trained``).

    Fingerprints record the model config as given: runs from before the
    head dropout's default became None hold 0.0 for the softmax, and those
    since hold None. Both train the same model, so they are compared with
    the effective rate; a cpr run recorded at 0.0 stays apart from today's
    default (0.3).
    """
    train = run_fingerprint.get("train")
    if isinstance(train, dict):
        # Runs recorded their data paths as written, before they were
        # resolved: resolved now (from this folder), they still resume.
        run_fingerprint = {
            **run_fingerprint,
            "train": resolved_data_paths(train),
        }
    model = run_fingerprint.get("model")
    if not isinstance(model, dict):
        return run_fingerprint
    return {**run_fingerprint, "model": as_trained(model)}


def resolved_config(config: TrainConfig) -> TrainConfig:
    """``config``, with a prepared dataset's data options when it has one.

    A prepared dataset is checked here (missing, half-written or of
    another version: ``DataError``), before anything else happens.
    """
    if not config.prepared:
        return config
    return prepared_train_config(config, read_metadata(config.prepared))


def run_directory(config: TrainConfig) -> str:
    """``<output_dir>/<run_name>``."""
    return os.path.join(config.output_dir, config.run_name)


def finished_metrics(config: TrainConfig) -> dict | None:
    """The metrics of a finished run of exactly ``config``, else None.

    Exactly: the run directory's fingerprint equals ``config``'s (data
    files included). A rerun of an interrupted ablation or benchmark thus
    trains only what is missing, without loading the data of the rest.
    """
    run_dir = run_directory(config)
    try:
        config = resolved_config(config)
        run = read_run_file(run_dir)
    except ValueError:
        return None
    if run is None or run.get("status") != "finished":
        return None
    try:
        same = _is_run_of(run["fingerprint"], run_dir, config)
    except (KeyError, TypeError, ValueError):
        return None
    if not same:
        return None
    with open(os.path.join(run_dir, "metrics.json")) as handle:
        return json.load(handle)


def with_recorded_head(config: TrainConfig, run_dir: str) -> TrainConfig:
    """``config`` with the head that ``run_dir``'s run chose by ``--head
    auto``, when ``config`` asks for auto (or names no head): known before
    the data is loaded.

    The choice is a function of the data and the settings, which the
    fingerprint holds too: if they all match, so would the choice. A run
    that named its head (recorded no ``head_choice``) is left to the check
    after loading, where auto's choice is known.
    """
    if requested_head(config.model) != AUTO_HEAD:
        return config
    try:
        with open(os.path.join(run_dir, "config.json")) as handle:
            head = json.load(handle).get("head_choice", {}).get("head")
    except (OSError, ValueError, AttributeError):
        return config
    if head not in HEADS:
        return config
    return dataclasses.replace(config, model={**config.model, "head": head})


def train(
    config: TrainConfig,
    verbose: int | None = None,
    callbacks: list[tf.keras.callbacks.Callback] | None = None,
    overwrite: bool = False,
) -> RunResult:
    """Runs one training run and writes its run directory.

    The run directory is one consistent thing (``run.json`` holds its
    fingerprint, see ``tfrec_tricks.training.run_directory``):

    - a new run writes ``run.json`` first, then trains;
    - the same configuration after an interruption resumes from the last
      completed epoch (``BackupAndRestore`` in ``<run_dir>/backup``);
    - the same configuration after the run finished reuses it: nothing
      is trained, the saved model and metrics are returned;
    - another configuration (or other data) in the same directory is
      refused before anything is written, unless ``overwrite``.

    Args:
        config: the run's ``TrainConfig``.
        verbose: Keras verbosity; defaults to a progress bar on a terminal
            and one line per epoch otherwise.
        callbacks: extra Keras callbacks for ``model.fit``.
        overwrite: discard a run of other settings (or a finished run of
            the same) in the run directory and train afresh.

    Returns:
        A ``RunResult`` with the run directory and the final metrics.

    Raises:
        RunDirectoryError: the run directory holds another run, names the
            differences.
        OutputError: the run directory is something else (a file, a
            folder that is no run directory, one of the data's inputs), or
            another process is writing it.
        WriteFailedError: the disk is full or the run directory is not
            writable: the run is not recorded as failed, and the same
            call resumes it once space is freed or permissions restored.
    """
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    config = resolved_config(config)
    run_dir = run_directory(config)
    strategy = make_strategy(config.distribute)
    with writes_named(run_dir):
        if not is_chief(strategy):
            # Only the chief writes (and locks) the run directory.
            with failures_recorded(run_dir, config, record=False):
                return _train(
                    config, run_dir, strategy, verbose, callbacks, False
                )
        check_target(run_dir, RUN_DIRECTORY, input_paths(config))
        # The prepared dataset read is locked shared: not replaced while
        # this run reads it.
        with prepared_read_lock(config), target_lock(run_dir, RUN_DIRECTORY):
            with failures_recorded(run_dir, config):
                return _train(
                    config, run_dir, strategy, verbose, callbacks, overwrite
                )


@contextlib.contextmanager
def failures_recorded(run_dir: str, config: TrainConfig, record: bool = True):
    """Records a run that cannot go on as failed, and says why.

    A diverged loss (``TrainingDivergedError``) or an allocation that does
    not fit (``tf.errors.ResourceExhaustedError``, ``MemoryError``) marks
    ``run_dir``'s run failed with the reason (``fail_run``: neither a
    rerun nor ``export`` then takes its backup or checkpoints for a
    result) when ``record`` and the directory holds this run, and is
    raised again as a ``TrainingFailedError`` (a ``ValueError``: the CLI
    prints it and exits 1).

    A full disk is no failure of the run: TensorFlow reports ENOSPC as a
    ``ResourceExhaustedError`` too, told apart by its message
    (``errors.write_failure``) and raised as it is, the run left to
    resume.
    """
    try:
        yield
    except (tf.errors.ResourceExhaustedError, MemoryError) as error:
        if write_failure(error) is not None:
            raise
        failure = TrainingFailedError(out_of_memory_reason(error))
    except TrainingFailedError as error:
        failure = error
    else:
        return
    if record and _holds_run_of(run_dir, config):
        fail_run(run_dir, str(failure))
        failure = type(failure)(
            f"{failure}\nThe run in {run_dir} is recorded as failed; the "
            "same command with --overwrite starts it afresh."
        )
    raise failure from None


def out_of_memory_reason(error: BaseException) -> str:
    """The message of an allocation that failed while training.

    >>> out_of_memory_reason(MemoryError())
    'Out of memory while training (MemoryError). Lower --embedding-dim, \
--batch-size or --max-len (or use --objective sampled for a large catalogue).'
    """
    detail = str(getattr(error, "message", "") or error).strip()
    detail = detail.splitlines()[0][:200] if detail else ""
    what = type(error).__name__ + (f": {detail}" if detail else "")
    return (
        f"Out of memory while training ({what}). Lower --embedding-dim, "
        "--batch-size or --max-len (or use --objective sampled for a large "
        "catalogue)."
    )


def _holds_run_of(run_dir: str, config: TrainConfig) -> bool:
    """Whether ``run_dir`` holds a run of ``config`` that has not finished
    (its fingerprint equals ``config``'s)."""
    try:
        run = read_run_file(run_dir)
        if run is None or run.get("status") == "finished":
            return False
        return _is_run_of(run["fingerprint"], run_dir, config)
    except (KeyError, TypeError, ValueError, OSError):
        return False


def _is_run_of(recorded: dict, run_dir: str, config: TrainConfig) -> bool:
    """Whether the fingerprint ``run_dir`` recorded is ``config``'s, before
    the data is loaded: a config that asks for ``--head auto`` takes the
    head the run chose (``with_recorded_head``); against a run that named
    its head it is not known yet (False).

    Raises:
        KeyError, TypeError, ValueError: a malformed record.
    """
    config = with_recorded_head(config, run_dir)
    if requested_head(config.model) == AUTO_HEAD:
        return False
    current = fingerprint(config, recorded["model"]["num_items"])
    return not differences(
        as_trained_fingerprint(recorded), as_trained_fingerprint(current)
    )


@dataclasses.dataclass
class _OpenedRun:
    """Where an opened run writes, and what it builds.

    Attributes:
        run_dir: the run directory.
        write_dir: where this process writes: the run directory on the
            chief, a scratch folder on other workers (Keras' callbacks
            write on every worker).
        chief: whether this process writes the run directory.
        action: ``"new"`` or ``"resume"`` (``open_run``).
        model_config: the resolved ``ModelConfig``.
        fingerprint: the run's fingerprint (``fingerprint``).
    """

    run_dir: str
    write_dir: str
    chief: bool
    action: str
    model_config: Any
    fingerprint: dict


def _train(
    config: TrainConfig,
    run_dir: str,
    strategy: tf.distribute.Strategy | None,
    verbose: int,
    callbacks: list[tf.keras.callbacks.Callback] | None,
    overwrite: bool,
) -> RunResult:
    """One run, in phases: reuse a finished run of the same settings; load
    the data (and choose the head); open the run directory; build the
    model; fit; evaluate; save."""
    # Hashed once: the check before and after loading the data share it.
    files = data_identity(data_files(config))
    if _finished_before_loading(config, run_dir, files, overwrite):
        return _reuse(run_dir, verbose)
    config, data, head_choice = _load(config, verbose)
    opened = _open(config, run_dir, data, files, strategy, overwrite)
    if opened.action == "finished":
        return _reuse(run_dir, verbose)
    _start(config, opened, data, head_choice)
    model, inputs = _build(config, opened.model_config, data, strategy)
    monitor = f"val_ndcg@{opened.model_config.metric_ks[0]}"
    done = _finished_fit(config, opened, monitor)
    if done:
        # Training had ended before the interruption (in the evaluation or
        # the saving): its best weights are evaluated, not trained over.
        _log(
            verbose,
            f"The interrupted run had finished training ({len(done)} "
            "epochs): evaluating its best epoch",
        )
        model.load_weights(_best_checkpoint(opened.run_dir)).expect_partial()
        timer, history = EpochTimer(), {}
    else:
        done, timer, fit_callbacks = _fit_callbacks(
            config, opened, monitor, verbose
        )
        history = model.fit(
            inputs.train,
            steps_per_epoch=inputs.steps_per_epoch,
            validation_data=inputs.validation,
            validation_steps=inputs.validation_steps,
            epochs=config.epochs,
            callbacks=[*fit_callbacks, *(callbacks or [])],
            verbose=verbose,
        ).history
    results = _results(model, inputs, data, config, opened, verbose)
    results.update(_run_facts(model, data, done, timer, strategy))
    _save(model, results, opened, verbose)
    return RunResult(run_dir, results, history, model)


def _best_checkpoint(directory: str) -> str:
    """The best epoch's weights (``ModelCheckpoint``) of a run's folder."""
    return os.path.join(directory, "checkpoints", "best")


def _finished_fit(
    config: TrainConfig, opened: _OpenedRun, monitor: str
) -> list:
    """The monitored values of an interrupted run whose fit had ended.

    ``BackupAndRestore`` empties ``backup/`` when ``fit`` returns, so a
    run interrupted after that (while evaluating or saving) has no backup
    to resume; trained afresh, its first epoch would overwrite the best
    epoch's weights. Such a run is recognised by its ``history.csv``: the
    epochs it records meet the stopping rule (``config.epochs`` run, or
    ``patience`` epochs after the best), and ``checkpoints/best`` exists.
    The files read are the run directory's, so every worker of a cluster
    takes the same branch.

    Returns:
        The monitored value of each epoch run, or [] (a new run, one to
        resume from its backup, or one that had not finished its fit).
    """
    if opened.action != "resume":
        return []
    backup = os.path.join(opened.run_dir, "backup")
    if os.path.isdir(backup) and os.listdir(backup):
        return []
    if not tf.io.gfile.exists(_best_checkpoint(opened.run_dir) + ".index"):
        return []
    values = monitor_history(
        os.path.join(opened.run_dir, "history.csv"), monitor
    )
    if not values:
        return []
    _, waited = epochs_since_best(values)
    if len(values) >= config.epochs or waited >= config.patience:
        return values
    return []


def _finished_before_loading(
    config: TrainConfig, run_dir: str, files: list, overwrite: bool
) -> bool:
    """Whether the run directory holds this run, finished, by what it
    recorded: a refusal (another run) or a reuse is then quick, before
    the data is loaded. ``--head auto`` (no head) takes the head the run
    recorded (``with_recorded_head``)."""
    recorded = None if overwrite else read_run_file(run_dir)
    if recorded is None:
        return False
    num_items = recorded["fingerprint"].get("model", {}).get("num_items")
    if not isinstance(num_items, int):
        return False
    config = with_recorded_head(config, run_dir)
    if requested_head(config.model) == AUTO_HEAD:
        return False
    action = open_run(
        run_dir,
        fingerprint(config, num_items, files),
        as_compared=as_trained_fingerprint,
    )
    return action == "finished"


def _load(config: TrainConfig, verbose: int) -> tuple:
    """Seeds, loads the data and resolves ``--head auto``.

    Returns:
        ``(config, data, head_choice)``: the config with its head chosen,
        the ``TrainingData`` and the ``HeadChoice`` (None for a named
        head).
    """
    tf.keras.utils.set_random_seed(config.seed)
    data = load_training_data(config)
    for line in data.description:
        _log(verbose, line)
    config, head_choice = with_chosen_head(
        config, data.prepared.statistics, data.num_items
    )
    if head_choice is not None:
        _log(verbose, f"Head: {head_choice.head} ({head_choice.reason})")
    return config, data, head_choice


def _open(
    config: TrainConfig,
    run_dir: str,
    data: TrainingData,
    files: list,
    strategy: tf.distribute.Strategy | None,
    overwrite: bool,
) -> _OpenedRun:
    """Checks the model against the catalogue and the memory, then opens
    the run directory (``open_run``): new, resumed or finished."""
    chief = is_chief(strategy)
    # Invalid settings (e.g. a CPR reranker larger than the catalogue)
    # stop here, before the run directory is touched.
    model_config = config.model_config(data.num_items)
    # A model that cannot fit is refused here too (InsufficientMemoryError).
    check_training_memory(
        config,
        model_config,
        strategy.num_replicas_in_sync if strategy else 1,
    )
    run_fingerprint = fingerprint(config, data.num_items, files)
    if chief:
        action = open_run(
            run_dir,
            run_fingerprint,
            overwrite=overwrite,
            as_compared=as_trained_fingerprint,
        )
    else:
        action = "resume" if read_run_file(run_dir) else "new"
    # Workers other than the chief write their files (Keras' callbacks
    # write on every worker) to a scratch folder.
    write_dir = run_dir if chief else tempfile.mkdtemp(prefix="tfrec-worker-")
    return _OpenedRun(
        run_dir, write_dir, chief, action, model_config, run_fingerprint
    )


def _start(
    config: TrainConfig,
    opened: _OpenedRun,
    data: TrainingData,
    head_choice: Any,
) -> None:
    """Writes the run's claim (``start_run``: run.json, config.json,
    vocabulary.json) and, for a new run, its TensorBoard hparams."""
    if not opened.chief:
        return
    settings = {
        "train": dataclasses.asdict(config),
        "model": opened.model_config.to_dict(),
    }
    if head_choice is not None:
        settings["head_choice"] = {
            "requested": AUTO_HEAD,
            **dataclasses.asdict(head_choice),
        }
    start_run(
        opened.run_dir,
        opened.fingerprint,
        {
            "config.json": json.dumps(settings, indent=2),
            "vocabulary.json": data.vocabulary.to_json(),
        },
    )
    if opened.action == "new":
        write_hparams(
            os.path.join(opened.run_dir, TENSORBOARD_DIR),
            config.run_name,
            settings,
        )


def _build(
    config: TrainConfig,
    model_config: Any,
    data: TrainingData,
    strategy: tf.distribute.Strategy | None,
) -> tuple:
    """The compiled model, built on a first batch, and the fit inputs."""
    inputs = fit_inputs(data, config, strategy)
    with strategy.scope() if strategy else contextlib.nullcontext():
        model = SequentialRetrievalModel.from_data(
            model_config, data.prepared, item_graph=data.item_graph
        )
        model.compile(
            optimizer=make_optimizer(
                config.optimizer, training_schedule(config, inputs)
            ),
            # Several steps per tf.function call: the per-call overhead is
            # about as long as a whole step on short-session batches.
            steps_per_execution=config.steps_per_execution,
        )
        # Built before fit so that BackupAndRestore can restore into it
        # (under a strategy, from a local batch of the same shape).
        first = inputs.train if strategy is None else inputs.local_train
        model(next(iter(first)))
    return model, inputs


def training_model(config: TrainConfig) -> tuple:
    """The compiled model and fit inputs of ``config``'s run, without a run
    directory: what ``train`` fits, for timing its steps (benchmarks).

    Seeds, loads the data and resolves ``--head auto`` as ``train`` does.

    Returns:
        ``(model, inputs)``: the ``SequentialRetrievalModel``, built and
        compiled, and its ``FitInputs`` (``inputs.train``, the shuffled
        training batches of one epoch).
    """
    config, data, _ = _load(config, verbose=0)
    model_config = config.model_config(data.num_items)
    return _build(config, model_config, data, None)


def _fit_callbacks(
    config: TrainConfig, opened: _OpenedRun, monitor: str, verbose: int
) -> tuple:
    """The run's Keras callbacks, continuing an interrupted run's epochs.

    Returns:
        ``(done, timer, callbacks)``: the monitored values of the epochs
        run before an interruption, the ``EpochTimer`` and the callbacks.
    """
    backup_dir = os.path.join(opened.run_dir, "backup")
    history_path = os.path.join(opened.run_dir, "history.csv")
    resuming = (
        opened.action == "resume"
        and os.path.isdir(backup_dir)
        and bool(os.listdir(backup_dir))
    )
    # The epochs run before the interruption: early stopping and the
    # best-epoch checkpoint continue from their best value.
    done = monitor_history(history_path, monitor) if resuming else []
    if resuming:
        _log(
            verbose,
            f"Resuming the interrupted run from {backup_dir} after "
            f"{len(done)} epochs",
        )
    best_checkpoint = _best_checkpoint(opened.write_dir)
    timer = EpochTimer()
    callbacks = [
        # First: a NaN or inf loss raises before the others save the epoch.
        StopOnDivergence(
            hint="lower --learning-rate (this run: "
            f"{config.training_learning_rate():g})"
        ),
        # On every worker: the chief's backup is what all of them resume.
        tf.keras.callbacks.BackupAndRestore(backup_dir),
        ResumableEarlyStopping(
            done,
            best_checkpoint,
            monitor=monitor,
            mode="max",
            patience=config.patience,
            restore_best_weights=True,
        ),
        tf.keras.callbacks.ModelCheckpoint(
            best_checkpoint,
            monitor=monitor,
            mode="max",
            save_best_only=True,
            save_weights_only=True,
            initial_value_threshold=max(done) if done else None,
        ),
        # A resumed run continues its history, under its header; a new
        # one starts it afresh.
        ResumableCSVLogger(
            os.path.join(opened.write_dir, "history.csv"), append=resuming
        ),
        # Per-epoch scalars; `tensorboard --logdir <run_dir>/tensorboard`.
        tf.keras.callbacks.TensorBoard(
            os.path.join(opened.write_dir, TENSORBOARD_DIR),
            write_graph=False,
            profile_batch=0,
        ),
        timer,
        # Last: records what the callbacks above wrote under names they
        # choose (``ownership``; the run's own names are recorded first).
        ClaimWrittenFiles(opened.write_dir, LIBRARY_FOLDERS),
    ]
    return done, timer, callbacks


def _results(
    model: tf.keras.Model,
    inputs: Any,
    data: TrainingData,
    config: TrainConfig,
    opened: _OpenedRun,
    verbose: int,
) -> dict:
    """Validation and test metrics of the trained model (full ranking, by
    target kind, and the sampled or seen-excluded protocols if asked)."""
    metric_ks = opened.model_config.metric_ks
    results = {
        "validation": _evaluate(
            model, inputs.validation, inputs.validation_steps
        )
    }
    results["test"], results["test_by_target"] = _test_metrics(
        model,
        data.batches(
            "test",
            eval_batch_size(data.num_items),
            bucket_by_length=config.bucket_by_length,
        ),
        metric_ks,
    )
    if config.eval_negatives or config.eval_seen_excluded:
        results.update(
            _seen_item_results(model, data, config, metric_ks, verbose)
        )
    return results


def _run_facts(
    model: tf.keras.Model,
    data: TrainingData,
    done: list,
    timer: EpochTimer,
    strategy: tf.distribute.Strategy | None,
) -> dict:
    """Epochs, time per epoch, size and replicas of the run."""
    return {
        # Every epoch of the run, those before an interruption too.
        "epochs_run": len(done) + len(timer.seconds),
        "seconds_per_epoch_median": (
            statistics.median(timer.seconds) if timer.seconds else None
        ),
        "num_parameters": count_trainable_parameters(model),
        "num_train_examples": data.num_examples("train"),
        "num_replicas": strategy.num_replicas_in_sync if strategy else 1,
    }


def _save(
    model: tf.keras.Model, results: dict, opened: _OpenedRun, verbose: int
) -> None:
    """Saves the model and metrics and marks the run finished (chief);
    other workers remove their scratch folder."""
    save_model(model, opened.write_dir)
    if opened.chief:
        # In one rename: a full disk leaves no half-written metrics.json.
        write_text_atomic(
            os.path.join(opened.run_dir, "metrics.json"),
            json.dumps(results, indent=2),
        )
        finish_run(opened.run_dir)
    else:
        shutil.rmtree(opened.write_dir, ignore_errors=True)
    if verbose:
        print(format_results(results, opened.run_dir))


@dataclasses.dataclass
class FitInputs:
    """``model.fit``'s training and validation data, and steps per epoch."""

    train: Any
    validation: Any
    steps_per_epoch: int | None = None
    validation_steps: int | None = None
    local_train: tf.data.Dataset | None = None


def training_schedule(config: TrainConfig, inputs: FitInputs) -> Any:
    """The run's learning rate per step (``--lr-schedule``,
    ``--warmup-epochs``): ``learning_rate_schedule`` over ``epochs`` epochs
    of ``inputs``' steps."""
    if config.lr_schedule == "constant" and not config.warmup_epochs:
        return config.training_learning_rate()
    steps = inputs.steps_per_epoch or int(inputs.train.cardinality())
    if steps < 0:
        # Unknown (files read as a stream): counted in one pass.
        steps = int(inputs.train.reduce(0, lambda count, _: count + 1))
    return learning_rate_schedule(
        config.lr_schedule,
        config.training_learning_rate(),
        total_steps=config.epochs * steps,
        warmup_steps=config.warmup_epochs * steps,
    )


def fit_inputs(
    data: TrainingData,
    config: TrainConfig,
    strategy: tf.distribute.Strategy | None,
) -> FitInputs:
    """The datasets ``model.fit`` reads, distributed when there is a strategy.

    Under a strategy every replica reads batches of ``batch_size /
    replicas`` rows (a step trains one global batch): the training data
    split between the workers and repeated (every worker then runs the
    same number of steps, one global batch count per epoch, as collective
    operations need), the validation data whole on every worker (summed
    over replicas, the metrics are those of the validation set).
    """
    bucket = config.bucket_by_length
    train_options = {
        "shuffle": True,
        "seed": config.seed,
        "bucket_by_length": bucket,
        "every_position": config.every_position,
        "window_stride": config.training_window_stride(),
    }
    if strategy is None:
        return FitInputs(
            data.batches("train", config.batch_size, **train_options),
            data.batches(
                "validation",
                eval_batch_size(data.num_items),
                bucket_by_length=bucket,
            ),
        )
    replicas = strategy.num_replicas_in_sync
    local_train = data.batches("train", config.batch_size, **train_options)
    steps = int(local_train.cardinality())

    def train_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        size = context.get_per_replica_batch_size(config.batch_size)
        return data.batches(
            "train", size, input_context=context, **train_options
        ).repeat()

    def validation_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        return data.batches(
            "validation",
            max(1, eval_batch_size(data.num_items) // replicas),
            bucket_by_length=bucket,
        )

    validation_steps = int(validation_fn(None).cardinality())

    return FitInputs(
        strategy.distribute_datasets_from_function(train_fn),
        strategy.distribute_datasets_from_function(validation_fn),
        steps_per_epoch=max(1, steps),
        validation_steps=validation_steps,
        local_train=local_train,
    )


def _reuse(run_dir: str, verbose: int) -> RunResult:
    """The ``RunResult`` of a finished run of the same fingerprint."""
    check_finished_run(run_dir)
    with open(os.path.join(run_dir, "metrics.json")) as handle:
        results = json.load(handle)
    _log(
        verbose,
        f"{run_dir} finished before with the same settings and data: "
        "reusing it (--overwrite trains it again).",
    )
    if verbose:
        print(format_results(results, run_dir))
    return RunResult(
        run_dir, results, read_history(run_dir), load_model(run_dir)
    )


def read_history(run_dir: str) -> dict:
    """``history.csv`` as Keras' ``History.history``: name -> per-epoch."""
    path = os.path.join(run_dir, "history.csv")
    if not os.path.isfile(path):
        return {}
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {
        name: [float(row[name]) for row in rows]
        for name in (rows[0] if rows else {})
        if name != "epoch"
    }


def save_model(model: tf.keras.Model, run_dir: str) -> str:
    """Publishes ``<run_dir>/model/``: ``config.json`` and the final weights.

    Written aside and renamed (``run_directory.publish_model``), so a
    reader never sees half a model. ``load_model(run_dir)`` rebuilds the
    model from them (the weights are those of the best epoch: early
    stopping restored them).
    """

    def write(folder: str) -> None:
        with open(os.path.join(folder, "config.json"), "w") as handle:
            json.dump(model.get_config(), handle, indent=2)
        model.save_weights(os.path.join(folder, "weights"))

    return publish_model(run_dir, write)


def load_model(run_dir: str) -> SequentialRetrievalModel:
    """Rebuilds a trained model from a run directory (see ``save_model``)."""
    model_dir = os.path.join(run_dir, "model")
    config_path = os.path.join(model_dir, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(
            f"No trained model in {run_dir!r}: {config_path} is missing (was "
            "the run interrupted before it finished?)."
        )
    if not os.path.isfile(os.path.join(model_dir, "weights.index")):
        raise FileNotFoundError(
            f"No weights in {model_dir!r}: weights.index is missing (the "
            "run directory is incomplete; retrain it with --overwrite)."
        )
    with open(config_path) as handle:
        model = SequentialRetrievalModel.from_config(json.load(handle))
    try:
        status = model.load_weights(os.path.join(model_dir, "weights"))
    except (tf.errors.OpError, ValueError) as error:
        raise ValueError(
            f"Cannot read the weights in {model_dir!r} ({error}); retrain "
            "the run with --overwrite."
        ) from None
    status.expect_partial()
    model.compile(
        optimizer=tf.keras.optimizers.Adam(model.config.learning_rate)
    )
    return model


def count_trainable_parameters(model: tf.keras.Model) -> int:
    """Trainable parameters (the SSE graph and counters are not parameters)."""
    return int(sum(w.shape.num_elements() for w in model.trainable_weights))


def _evaluate(
    model: tf.keras.Model, dataset: Any, steps: int | None = None
) -> dict:
    values = model.evaluate(dataset, steps=steps, return_dict=True, verbose=0)
    names = [m.name for m in model.ranking_metrics]
    return {name: float(values[name]) for name in names}


def _test_metrics(
    model: tf.keras.Model, test_ds: tf.data.Dataset, ks: tuple
) -> tuple[dict, dict]:
    """Overall and repeat / new test metrics, from one pass over the test set.

    Both come from the same full-catalogue target ranks (what
    ``model.evaluate`` averages), so the two kinds weight back exactly into
    the overall metric.
    """

    # The ranks come from the logits in the graph: only [B] ranks leave
    # it, not [B, N] logits (at 1M items, 268 MB per batch of 67 rows).
    @tf.function(reduce_retracing=True)
    def batch_ranks(batch):
        return tf_target_ranks(model(batch, training=False), batch["target"])

    ranks, histories, targets = [], [], []
    for batch in test_ds:
        ranks.append(batch_ranks(batch).numpy().astype(np.int64))
        histories.append(batch["history"].numpy())
        targets.append(batch["target"].numpy().reshape(-1))
    ranks = np.concatenate(ranks)
    by_kind = metrics_by_target_kind(
        ranks, np.concatenate(histories), np.concatenate(targets), ks
    )
    return metrics_from_ranks(ranks, ks), by_kind


def _seen_item_results(
    model: tf.keras.Model,
    data: TrainingData,
    config: TrainConfig,
    ks: tuple,
    verbose: int = 1,
) -> dict:
    """The protocols that need each user's seen items: validation and test
    metrics against ``config.eval_negatives`` sampled negatives, and with
    the seen items ranked last (``config.eval_seen_excluded``)."""
    batch_size = eval_batch_size(data.num_items)
    seen = seen_items(data.batches("train", batch_size))
    results = {}
    if config.eval_negatives:
        results["eval_negatives"] = config.eval_negatives
        for split in ("validation", "test"):
            results[f"{split}_sampled"] = sampled_metrics(
                model,
                data.batches(split, batch_size),
                seen,
                config.eval_negatives,
                config.seed,
                ks,
                log=lambda line, split=split: _log(verbose, f"{split}: {line}"),
            )
    if config.eval_seen_excluded:
        for split in ("validation", "test"):
            results[f"{split}_seen_excluded"] = seen_excluded_metrics(
                model, data.batches(split, batch_size), seen, ks
            )
        if model.head.excludes_history(False):
            # Its full ranking already ranks the history last: the plain
            # ranking of the same weights is the third protocol to show.
            for split in ("validation", "test"):
                results[f"{split}_history_kept"] = history_kept_metrics(
                    model, data.batches(split, batch_size), ks
                )
    return results


def hparams_values(settings: dict) -> dict:
    """Flat ``"model.head"`` -> value pairs TensorBoard's HParams accepts.

    Tuples and lists become comma-joined strings, None ``"none"``.
    """
    values = {}
    for part, options in settings.items():
        for name, value in options.items():
            if isinstance(value, dict):
                continue  # ``train.model``: its resolved form is ``model``
            if isinstance(value, (tuple, list)):
                value = ",".join(map(str, value)) or "none"
            elif value is None:
                value = "none"
            values[f"{part}.{name}"] = value
    return values


def write_hparams(log_dir: str, run_name: str, settings: dict) -> None:
    """Writes the run's settings to TensorBoard's HParams dashboard."""
    from tensorboard.plugins.hparams import api as hparams

    with tf.summary.create_file_writer(log_dir).as_default():
        hparams.hparams(hparams_values(settings), trial_id=run_name)


def _log(verbose: int, message: str) -> None:
    if verbose:
        print(message, flush=True)


def training_minutes(results: dict) -> float:
    """A run's training minutes from its metrics: epochs times their
    median (an estimate that needs no clock around a reused run; 0 for a
    run without epoch times)."""
    seconds = results.get("seconds_per_epoch_median") or 0.0
    return seconds * (results.get("epochs_run") or 0) / 60


def format_results(results: dict, run_dir: str) -> str:
    """The final table printed after training."""
    names = list(results["validation"])
    width = max(len(n) for n in names) + 2
    lines = ["", f"{'split':<12}" + "".join(f"{n:>{width}}" for n in names)]
    for split in ("validation", "test"):
        row = "".join(f"{results[split][n]:>{width}.4f}" for n in names)
        lines.append(f"{split:<12}{row}")
    kinds = results.get("test_by_target", {})
    for kind in ("repeat", "new"):
        part = kinds.get(kind, {})
        if len(part) > 1:
            row = "".join(f"{part[n]:>{width}.4f}" for n in names)
            label = f"test {kind}"
            lines.append(f"{label:<12}{row}   ({part['share']:.0%} of test)")
    for split in ("validation", "test"):
        sampled = results.get(f"{split}_sampled")
        if sampled:
            row = "".join(f"{sampled[n]:>{width}.4f}" for n in names)
            lines.append(
                f"{split:<12}{row}   ({results['eval_negatives']} sampled "
                "negatives: not full ranking)"
            )
    for split in ("validation", "test"):
        excluded = results.get(f"{split}_seen_excluded")
        if excluded:
            row = "".join(f"{excluded[n]:>{width}.4f}" for n in names)
            lines.append(f"{split:<12}{row}   (seen items ranked last)")
    for split in ("validation", "test"):
        kept = results.get(f"{split}_history_kept")
        if kept:
            row = "".join(f"{kept[n]:>{width}.4f}" for n in names)
            lines.append(f"{split:<12}{row}   (history kept: plain ranking)")
    seconds = results["seconds_per_epoch_median"]
    # None when this process trained no epoch (its fit had ended before).
    timing = "" if seconds is None else f", median {seconds:.1f} s/epoch"
    lines.append(
        f"\n{results['epochs_run']} epochs{timing}, "
        f"{results['num_parameters']:,} parameters. "
        f"Run directory: {run_dir}"
    )
    return "\n".join(lines)
