"""Whether a run directory holds this run, and what is left of it to do.

Before a run trains, its run directory is opened (``open_run_directory``):
a new run starts; the same run (same fingerprint: ``fingerprint``) after
an interruption resumes from ``backup/``, its early stopping continuing
from the epochs in ``history.csv``; the same run, finished, is reused
(``finished_before_loading`` sees it before the data is loaded); another
run is refused, naming the differences. A run that cannot go on (its
loss diverged, it ran out of memory) is recorded as failed
(``failures_recorded``), so that no rerun resumes it.
"""

import contextlib
import dataclasses
import json
import os
import tempfile

import tensorflow as tf

from tfrec_tricks.callbacks import epochs_since_best, monitor_history
from tfrec_tricks.config_fields import field_default
from tfrec_tricks.errors import TrainingFailedError, write_failure
from tfrec_tricks.heads.registry import head_spec
from tfrec_tricks.models.config import (
    AUTO_HEAD,
    ENCODERS,
    HEADS,
    OBJECTIVES,
    ModelConfig,
    as_trained,
)
from tfrec_tricks.models.encoder_registry import encoder_spec
from tfrec_tricks.objectives.objective_registry import objective_spec
from tfrec_tricks.training.distribution import is_chief
from tfrec_tricks.training.memory_budget import check_training_memory
from tfrec_tricks.training.model_options import DERIVED_MODEL_FIELDS
from tfrec_tricks.training.prepare_dataset import resolved_config
from tfrec_tricks.training.run_directory import (
    data_identity,
    differences,
    fail_run,
    make_fingerprint,
    open_run,
    read_run_file,
    resolved_data_paths,
    run_state,
)
from tfrec_tricks.training.run_keras import (
    check_run_keras,
    weights_saved,
    with_keras,
)
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import TrainingData, data_files

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
    "item_features": None,
    "min_feature_count": 1,
}


# The same for ModelConfig fields: name -> (that value, (the field and
# the value, or values, the option applies to), or None where it applies
# to every model). Left out of the resolved model config when it has that
# value or does not apply, and out of the ``model`` overrides when they
# set that value: runs that differ only there are the same run.
# The heads' own later settings are their specs' (``HeadSpec.
# later_options``; ``model_later_options`` joins them).
MODEL_LATER_OPTIONS = {
    "train_metrics": (True, None),
    "item_features": ((), None),
    "token_features": ((), None),
    "feature_fusion": ("sum", None),
    "item_id_dropout": (0.0, None),
}


# The defaults of the ModelConfig fields a run may give (ModelOptions),
# as a fingerprint holds them (JSON: lists).
_MODEL_DEFAULTS = json.loads(
    json.dumps(
        {
            field.name: field_default(ModelConfig, field.name)
            for field in dataclasses.fields(ModelConfig)
            if field.name not in DERIVED_MODEL_FIELDS
        }
    )
)


def fingerprint(
    config: TrainConfig, num_items: int, data: list[dict] | None = None
) -> dict:
    """What determines ``config``'s run on a catalogue of ``num_items``.

    ``data`` is the data files' ``data_identity`` when already computed
    (hashing a large file twice is what it saves); None computes it.

    See ``tfrec_tricks.training.run_directory``: the training options, the
    resolved model config, the data files' hashes and the package version,
    and under Keras 3 the Keras (``run_keras.with_keras``: a tf-keras run
    records none, as runs did before).
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
    model, train["model"] = _without_later_options(
        config.model_config(num_items).to_dict(), train["model"]
    )
    return with_keras(make_fingerprint(train, model, data))


def model_later_options() -> dict:
    """``MODEL_LATER_OPTIONS`` and the registered heads', encoders' and
    objectives' later settings (``HeadSpec.later_options``,
    ``EncoderSpec.later_options``, ``ObjectiveSpec.later_options``), each
    applying to the members that name it: ``{name: (value of older runs,
    ("head", heads))}``.

    >>> model_later_options()["cpr_base_loss"]
    (0.0, ('head', ('cpr',)))
    """
    options = dict(MODEL_LATER_OPTIONS)
    for field, names, spec_of in (
        ("head", HEADS, head_spec),
        ("encoder", ENCODERS, encoder_spec),
        ("objective", OBJECTIVES, objective_spec),
    ):
        found: dict = {}
        for member in names:
            for name, before in spec_of(member).later_options.items():
                found.setdefault(name, (before, []))[1].append(member)
        for name, (before, members) in found.items():
            options[name] = (before, (field, tuple(members)))
    return options


def _without_later_options(model: dict, overrides: dict) -> tuple:
    """``(model, overrides)`` without the ``model_later_options`` that
    hold their earlier value (or, in ``model``, do not apply): a run that
    recorded such a value explicitly is the run that left it out."""
    model, overrides = dict(model), dict(overrides)
    for name, (before, condition) in model_later_options().items():
        if name in model and (
            model[name] == before or not _applies(model, condition)
        ):
            del model[name]
        if name in overrides and overrides[name] == before:
            del overrides[name]
    return model, overrides


def _applies(model: dict, condition: tuple | None) -> bool:
    """Whether a ``MODEL_LATER_OPTIONS`` condition holds for ``model``."""
    if condition is None:
        return True
    field, applies = condition
    if not isinstance(applies, tuple):
        applies = (applies,)
    return model.get(field) in applies


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
    model = as_trained(model)
    train = run_fingerprint.get("train")
    if isinstance(train, dict) and isinstance(train.get("model"), dict):
        model, overrides = _without_later_options(model, train["model"])
        run_fingerprint = {
            **run_fingerprint,
            "train": {**train, "model": _without_defaults(overrides)},
        }
    return {**run_fingerprint, "model": model}


def _without_defaults(overrides: dict) -> dict:
    """The model options a run gave (a fingerprint's ``train.model``)
    without those given at ``ModelConfig``'s default.

    A field left out keeps the default (``ModelOptions``), so giving it
    changes nothing: a run repeated from its ``config.json`` (which gives
    every field) or with a flag at its default is the run that left them
    out. The resolved model, compared beside, holds every value trained.

    >>> _without_defaults({"dropout": 0.2, "metric_ks": [10], "head": "cpr"})
    {'head': 'cpr'}
    """
    return {
        name: value
        for name, value in overrides.items()
        if name not in _MODEL_DEFAULTS or value != _MODEL_DEFAULTS[name]
    }


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
    if config.model.head != AUTO_HEAD:
        return config
    try:
        with open(os.path.join(run_dir, "config.json")) as handle:
            head = json.load(handle).get("head_choice", {}).get("head")
    except (OSError, ValueError, AttributeError):
        return config
    if head not in HEADS:
        return config
    return dataclasses.replace(
        config, model=config.model.with_values(head=head)
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
    if config.model.head == AUTO_HEAD:
        return False
    current = fingerprint(config, recorded["model"]["num_items"])
    return not differences(
        as_trained_fingerprint(recorded), as_trained_fingerprint(current)
    )


@dataclasses.dataclass
class OpenedRun:
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
    model_config: ModelConfig
    fingerprint: dict


def finished_before_loading(
    config: TrainConfig, run_dir: str, files: list, overwrite: bool
) -> bool:
    """Whether the run directory holds this run, finished, by what it
    recorded: a refusal (another run) or a reuse is then quick, before
    the data is loaded. ``--head auto`` (no head) takes the head the run
    recorded (``with_recorded_head``)."""
    recorded = None if overwrite else read_run_file(run_dir)
    if recorded is None:
        return False
    check_same_keras(run_dir, overwrite)
    num_items = recorded["fingerprint"].get("model", {}).get("num_items")
    if not isinstance(num_items, int):
        return False
    config = with_recorded_head(config, run_dir)
    if config.model.head == AUTO_HEAD:
        return False
    action = open_run(
        run_dir,
        fingerprint(config, num_items, files),
        as_compared=as_trained_fingerprint,
    )
    return action == "finished"


def open_run_directory(
    config: TrainConfig,
    run_dir: str,
    data: TrainingData,
    files: list,
    strategy: tf.distribute.Strategy | None,
    overwrite: bool,
) -> OpenedRun:
    """Checks the model against the catalogue and the memory, then opens
    the run directory (``open_run``): new, resumed or finished."""
    chief = is_chief(strategy)
    # Invalid settings (e.g. a CPR reranker larger than the catalogue)
    # stop here, before the run directory is touched.
    model_config = config.model_config(data.num_items, data.prepared)
    # A model that cannot fit is refused here too (InsufficientMemoryError).
    check_training_memory(
        config,
        model_config,
        strategy.num_replicas_in_sync if strategy else 1,
    )
    run_fingerprint = fingerprint(config, data.num_items, files)
    if chief:
        check_same_keras(run_dir, overwrite)
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
    return OpenedRun(
        run_dir, write_dir, chief, action, model_config, run_fingerprint
    )


def check_same_keras(run_dir: str, overwrite: bool) -> None:
    """Refuses to resume or reuse a run of the other Keras, naming both
    (``run_keras.check_run_keras``), before the settings are compared:
    its weights are in the other Keras' format. ``overwrite`` discards
    the run, whatever trained it; ``open_run`` judges what is no run."""
    state = run_state(run_dir)
    if overwrite or state not in ("running", "finished"):
        return
    doing = "reused" if state == "finished" else "resumed"
    check_run_keras(run_dir, read_run_file(run_dir)["fingerprint"], doing)


def backup_directory(run_dir: str) -> str:
    """Where ``BackupAndRestore`` keeps the state an interrupted run
    resumes from."""
    return os.path.join(run_dir, "backup")


def resumes_from_backup(opened: OpenedRun) -> bool:
    """Whether ``opened`` resumes an interrupted fit from its backup
    (``BackupAndRestore`` empties it when ``fit`` returns)."""
    backup = backup_directory(opened.run_dir)
    return (
        opened.action == "resume"
        and os.path.isdir(backup)
        and bool(os.listdir(backup))
    )


def epochs_before_interruption(opened: OpenedRun, monitor: str) -> list:
    """The monitored value of each epoch an interrupted fit ran (from
    ``history.csv``), or [] for a fit that does not resume: early stopping
    and the best-epoch checkpoint continue from their best value."""
    if not resumes_from_backup(opened):
        return []
    return monitor_history(os.path.join(opened.run_dir, "history.csv"), monitor)


def best_checkpoint(directory: str) -> str:
    """The best epoch's weights (``ModelCheckpoint``) of a run's folder:
    the stem ``run_keras.weights_path`` completes for the Keras in use."""
    return os.path.join(directory, "checkpoints", "best")


def finished_fit(config: TrainConfig, opened: OpenedRun, monitor: str) -> list:
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
    if opened.action != "resume" or resumes_from_backup(opened):
        return []
    if not weights_saved(best_checkpoint(opened.run_dir)):
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
