"""A run directory that is one consistent thing.

``run.json`` holds the run's *fingerprint*: everything that determines it
(the training options, the resolved model config, the data files' sizes
and SHA-256 hashes, the tfrec_tricks version). It is written when a run
starts, before anything else, and every later use of the directory is
checked against it:

- the same command after an interruption resumes (same fingerprint);
- the same command after the run finished reuses it;
- anything else is refused before anything is written, naming the
  differences, unless the caller asks to overwrite.

When the run finishes, its model is published in one rename (written to
``.model-<random>/`` first) and ``run.json`` becomes a manifest: the status
``finished`` and the SHA-256 of ``config.json``, ``vocabulary.json``,
``metrics.json`` and every file of ``model/``. ``check_finished_run`` (used
by ``export``) refuses a run that has not finished or whose parts do not
belong together.

A run that stops on an error it cannot resume from (its loss diverged, it
ran out of memory) is marked ``failed`` with the reason (``fail_run``):
``train`` then refuses the directory, naming the reason, until
``--overwrite`` starts afresh, and ``export`` refuses it.
"""

import json
import os
from collections.abc import Callable
from typing import Any

import tfrec_tricks
from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import (
    file_sha256,
    publish_directory,
    write_text_atomic,
)
from tfrec_tricks.data.sources.loaders import readable_file
from tfrec_tricks.data.sources.named_sources import resolved_path
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.output_folders import TargetKind

RUN_FILE = "run.json"
RUN_FORMAT = 1
MODEL_DIR = "model"
# Training options that place a run rather than determine it.
PLACEMENT_OPTIONS = ("output_dir", "name")
# What an older tfrec_tricks left in a run directory (no run.json).
LEGACY_RUN_FILES = ("config.json", "history.csv", "backup", MODEL_DIR)


def check_run_name(name: str) -> str:
    """Returns ``name`` if it is one path component, else raises ValueError.

    Run and model names become folder names under a parent folder: a
    separator, ``..`` or an absolute path would write outside it.

    Example:

    >>> check_run_name("ml-1m-sasrec")
    'ml-1m-sasrec'
    >>> check_run_name("../x")
    Traceback (most recent call last):
    ...
    ValueError: `name` must be a single folder name (no '/', '\\', '.' or '..'). Received: name='../x'
    """  # noqa: E501
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or "/" in name
        or "\\" in name
        or "\0" in name
        or os.path.isabs(name)
    ):
        raise ValueError(
            "`name` must be a single folder name (no '/', '\\', '.' or "
            f"'..'). Received: name={name!r}"
        )
    return name


def data_identity(paths: list[str]) -> list[dict]:
    """Name, size and SHA-256 of each data file (missing files: None).

    A pipe (``<(...)``, a FIFO) is identified by what it held: it is read
    once into a copy (``loaders.readable_file``) that the loader reads too.
    """
    identity = []
    for path in paths:
        entry = {"file": os.path.basename(path), "bytes": None, "sha256": None}
        readable = readable_file(path)
        if os.path.isfile(readable):
            entry["bytes"] = os.path.getsize(readable)
            entry["sha256"] = file_sha256(readable)
        identity.append(entry)
    return identity


# Training options that name data by a path.
DATA_PATH_OPTIONS = (
    "data_path",
    "prepared",
    "tfds_data_dir",
    "tfds_manual_dir",
)


def resolved_data_paths(train: dict) -> dict:
    """``train`` (training options as a dict) with its data paths resolved
    (``resolved_path``): the same file written relative, absolute or from
    another folder is one run, or one search."""
    return {
        name: resolved_path(value)
        if name in DATA_PATH_OPTIONS and isinstance(value, str)
        else value
        for name, value in train.items()
    }


def make_fingerprint(train: dict, model: dict, data: list[dict]) -> dict:
    """What determines a run, as JSON.

    Args:
        train: the training options (``TrainConfig`` as a dict); those that
            only place the run (``PLACEMENT_OPTIONS``) are left out.
        model: the resolved model config (``ModelConfig.to_dict()``).
        data: ``data_identity`` of the files the data source reads.
    """
    train = {k: v for k, v in train.items() if k not in PLACEMENT_OPTIONS}
    # Through JSON, so that tuples and lists compare equal to a reread.
    return json.loads(
        json.dumps(
            {
                "train": train,
                "model": model,
                "data": data,
                "tfrec_tricks": tfrec_tricks.__version__,
            }
        )
    )


def differences(before: Any, now: Any, path: str = "") -> list[str]:
    """Lines ``key: before -> now`` for every leaf that differs."""
    if isinstance(before, dict) and isinstance(now, dict):
        lines = []
        for key in sorted(set(before) | set(now), key=str):
            where = f"{path}.{key}" if path else str(key)
            lines += differences(
                before.get(key, "<unset>"), now.get(key, "<unset>"), where
            )
        return lines
    if (
        isinstance(before, list)
        and isinstance(now, list)
        and len(before) == len(now)
    ):
        return [
            line
            for index, (old, new) in enumerate(zip(before, now))
            for line in differences(old, new, f"{path}.{index}")
        ]
    if before != now:
        return [f"{path or '<root>'}: {_short(before)} -> {_short(now)}"]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 70 else text[:67] + "..."


def read_fingerprint_file(
    path: str, what: str, file_format: int, remedy: str
) -> dict | None:
    """A ``run.json``-like file: its JSON, or None when there is none.

    Args:
        path: str. The file (``run.json``, a search's ``search.json``).
        what: str. What it belongs to, for messages: "run", "search".
        file_format: int. The ``format`` this version reads.
        remedy: str. What to do about a damaged file, e.g. "retrain it
            with --overwrite".

    Raises:
        RunDirectoryError: the file is unreadable, has no fingerprint
            object, or another format; the message names the file.
    """
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (ValueError, UnicodeDecodeError) as error:
        raise RunDirectoryError(
            f"{path} is damaged ({error}); move the {what} folder away or "
            f"{remedy}."
        ) from None
    if not isinstance(document, dict) or not isinstance(
        document.get("fingerprint"), dict
    ):
        raise RunDirectoryError(
            f"{path} is not a tfrec-tricks {what} file; move the {what} "
            f"folder away or {remedy}."
        )
    if document.get("format") != file_format:
        raise RunDirectoryError(
            f"{path} has format {document.get('format')!r}, this version "
            f"reads format {file_format}; {remedy}."
        )
    return document


def read_run_file(run_dir: str) -> dict | None:
    """The run's ``run.json``, or None when the directory has none."""
    return read_fingerprint_file(
        os.path.join(run_dir, RUN_FILE),
        "run",
        RUN_FORMAT,
        "retrain it with --overwrite",
    )


def run_state(run_dir: str) -> str:
    """What ``run_dir`` holds.

    Returns:
        ``"absent"``, ``"empty"``, ``"running"``, ``"finished"``,
        ``"failed"`` (training stopped on an error it cannot resume from,
        ``fail_run``), ``"damaged"`` (an unreadable ``run.json``),
        ``"legacy"`` (written
        by an older version: no ``run.json``) or ``"foreign"`` (a
        non-empty folder that is no run directory).
    """
    if not os.path.exists(run_dir):
        return "absent"
    if not os.path.isdir(run_dir):
        return "foreign"
    entries = _entries(run_dir)
    if not entries:
        return "empty"
    if RUN_FILE in entries:
        try:
            status = read_run_file(run_dir).get("status")
        except RunDirectoryError:
            return "damaged"
        if status in ("finished", "failed"):
            return status
        return "running"
    if entries & set(LEGACY_RUN_FILES):
        return "legacy"
    return "foreign"


def _entries(folder: str) -> set[str]:
    """The folder's entries but for the tool's record (``ownership``): a
    folder holding only a record is empty."""
    return {
        name
        for name in os.listdir(folder)
        if not name.startswith(ownership.RECORD_FILE)
    }


# Everything ``train`` writes in a run directory, recorded (``ownership``)
# when the run starts, before it is written; the folders Keras and
# TensorBoard write (``LIBRARY_FOLDERS``) are owned as a whole from then.
#: A run's item features: ``ItemFeatureSpec.to_dict()`` of each, in order
#: (their vocabularies encode the items ``export --add-items`` adds).
ITEM_FEATURES_FILE = "item_features.json"
#: A run's categorical per-interaction features: ``InteractionTokenSpec.
#: to_dict()`` of each (name, vocabulary, coverage).
INTERACTION_FEATURES_FILE = "interaction_features.json"
RUN_ENTRIES = frozenset(
    (RUN_FILE, "config.json", "vocabulary.json", "history.csv")
    + (ITEM_FEATURES_FILE, INTERACTION_FEATURES_FILE)
    + ("metrics.json", "backup/", "checkpoints/", MODEL_DIR + "/")
    + ("tensorboard/",)
)
# The run's folders whose files Keras, TensorBoard or tf.train name: owned
# as a whole (``ownership.WHOLE``), whatever a crash leaves in them.
LIBRARY_FOLDERS = ("backup", "checkpoints", "tensorboard")
# Per-epoch scalars and the run's settings (``tensorboard --logdir``).
TENSORBOARD_DIR = "tensorboard"

# A search retrains its best configurations as runs in its ``selection/``.
RUN_DIRECTORY = TargetKind(
    "run directory",
    "--name or --output-dir",
    nests_in=(("search folder", "selection"),),
)


def is_run_directory(path: str) -> bool:
    """Whether the folder ``path`` is a run directory by record: only then
    may ``--overwrite`` replace it. A folder of someone's files, or a run
    directory holding someone's file (``notes.txt``, ``model/x``), is not;
    what its library folders hold (``checkpoints/``) is the run's.
    """
    return RUN_DIRECTORY.recognise(path)


def open_run(
    run_dir: str,
    fingerprint: dict,
    overwrite: bool = False,
    as_compared: Callable[[dict], dict] | None = None,
) -> str:
    """Decides what to do with ``run_dir`` for a run of ``fingerprint``.

    Nothing is written, except that ``overwrite`` removes an earlier run.
    ``as_compared`` maps both the recorded and the new fingerprint to what
    is compared (a default recorded as None and the same value given
    explicitly are one run); None compares them as they are.

    Returns:
        ``"new"`` (start the run), ``"resume"`` (same fingerprint, not
        finished) or ``"finished"`` (same fingerprint, finished: reuse it).

    Raises:
        RunDirectoryError: the directory holds another run (its
            differences named), a failed run (its reason named), a run of
            an older version, or something that is not a run directory.
    """
    state = run_state(run_dir)
    if state in ("absent", "empty"):
        return "new"
    if state == "foreign":
        raise RunDirectoryError(
            f"{run_dir} exists and is not a run directory; choose another "
            "--name or --output-dir (it is never overwritten)."
        )
    if overwrite:
        # Only what the run recorded; someone's file in it is refused.
        ownership.remove_owned(run_dir, RUN_DIRECTORY.name)
        return "new"
    if state == "damaged":
        read_run_file(run_dir)  # raises, naming the problem
    if state == "failed":
        # Resuming would start from the state that failed (a diverged
        # model's backup), whatever the settings: only afresh.
        raise RunDirectoryError(
            f"{run_dir} holds a run that failed: {failure_reason(run_dir)}\n"
            "Pass --overwrite to discard it and start afresh (with the "
            "changes the reason suggests), or choose another --name."
        )
    if state == "legacy":
        raise RunDirectoryError(
            f"{run_dir} holds a run of an older tfrec-tricks (it has no "
            f"{RUN_FILE}), which cannot be checked against this one, and "
            "no record of its files, so it is never replaced: move it away "
            "or choose another --name."
        )
    recorded = read_run_file(run_dir)["fingerprint"]
    if as_compared is not None:
        recorded, fingerprint = as_compared(recorded), as_compared(fingerprint)
    changed = differences(recorded, fingerprint)
    if changed:
        what = "a finished" if state == "finished" else "an interrupted"
        raise RunDirectoryError(
            f"{run_dir} holds {what} run with other settings, which this "
            "run would mix with or replace. Differences (run -> now):\n  "
            + "\n  ".join(changed)
            + "\nChoose another --name, run the original command, or pass "
            "--overwrite to discard the old run."
        )
    return "finished" if state == "finished" else "resume"


def start_run(run_dir: str, fingerprint: dict, files: dict[str, str]) -> None:
    """Writes ``run.json`` (status ``running``) first, then ``files``.

    Args:
        run_dir: the run directory (created if missing).
        fingerprint: see ``make_fingerprint``.
        files: name -> text of the files the run writes when it starts
            (``config.json``, ``vocabulary.json``), each written atomically.
    """
    # The library folders are the run's before Keras or TensorBoard can
    # write there: a crash at any moment leaves nothing unowned.
    ownership.start_record(run_dir, RUN_DIRECTORY.name, whole=LIBRARY_FOLDERS)
    ownership.claim(os.path.join(run_dir, name) for name in RUN_ENTRIES)
    run = {"format": RUN_FORMAT, "status": "running"}
    run["fingerprint"] = fingerprint
    write_text_atomic(
        os.path.join(run_dir, RUN_FILE), json.dumps(run, indent=2)
    )
    for name, text in files.items():
        write_text_atomic(os.path.join(run_dir, name), text)


def publish_model(run_dir: str, write: Callable[[str], None]) -> str:
    """Writes the model with ``write(folder)`` aside, then renames it.

    A reader sees the old ``model/`` or the new one, never half of one.

    Returns:
        The path of ``<run_dir>/model``.
    """
    # A run killed after publishing and before finishing, rerun, replaces
    # the model it published.
    return publish_directory(
        os.path.join(run_dir, MODEL_DIR), write, replace=True, kind="model"
    )


def _manifest_files(run_dir: str) -> list[str]:
    names = ["config.json", "vocabulary.json", "metrics.json"]
    for extra in (ITEM_FEATURES_FILE, INTERACTION_FEATURES_FILE):
        if os.path.isfile(os.path.join(run_dir, extra)):
            names.append(extra)
    model_dir = os.path.join(run_dir, MODEL_DIR)
    names += sorted(
        f"{MODEL_DIR}/{entry}"
        for entry in os.listdir(model_dir)
        if os.path.isfile(os.path.join(model_dir, entry))
        and not entry.startswith(ownership.RECORD_FILE)
    )
    return names


def finish_run(run_dir: str) -> None:
    """Marks the run finished: ``run.json`` gets the files' SHA-256s."""
    run = read_run_file(run_dir)
    run["status"] = "finished"
    run["files"] = {
        name: file_sha256(os.path.join(run_dir, name))
        for name in _manifest_files(run_dir)
    }
    write_text_atomic(
        os.path.join(run_dir, RUN_FILE), json.dumps(run, indent=2)
    )


def fail_run(run_dir: str, reason: str) -> None:
    """Marks the run failed: ``run.json`` gets ``"status": "failed"`` and
    ``reason``, so that neither ``train`` (without ``--overwrite``) nor
    ``export`` takes its backup or checkpoints for a result.

    Nothing happens when ``run_dir`` holds no ``run.json`` (the run failed
    before it started).
    """
    run = read_run_file(run_dir)
    if run is None:
        return
    run["status"] = "failed"
    run["reason"] = reason
    write_text_atomic(
        os.path.join(run_dir, RUN_FILE), json.dumps(run, indent=2)
    )


def failure_reason(run_dir: str) -> str:
    """The ``reason`` a failed run recorded (``fail_run``)."""
    run = read_run_file(run_dir) or {}
    return str(run.get("reason") or "no reason recorded")


def check_finished_run(run_dir: str) -> dict:
    """Checks that ``run_dir`` holds a finished run whose parts belong together.

    Returns:
        The run's ``run.json``.

    Raises:
        RunDirectoryError: naming what is wrong: no run directory, a run
            that has not finished, a missing file, a file that changed
            after the run finished (e.g. ``vocabulary.json`` of another
            run), or a ``run.json`` without a complete record of the files
            (``config.json``, ``vocabulary.json``, ``metrics.json`` and
            every file of ``model/``): such a run is retrained, not
            exported unverified.
    """
    if not os.path.isdir(run_dir):
        raise RunDirectoryError(f"No run directory at {run_dir!r}.")
    state = run_state(run_dir)
    if state == "legacy":
        raise RunDirectoryError(
            f"{run_dir} was written by an older tfrec-tricks (no {RUN_FILE}), "
            "so its parts cannot be checked; retrain it under another "
            "--name, then export that run."
        )
    if state in ("empty", "foreign"):
        raise RunDirectoryError(
            f"{run_dir} is not a training run directory (no {RUN_FILE})."
        )
    if state == "damaged":
        read_run_file(run_dir)  # raises, naming the problem
    if state == "failed":
        raise RunDirectoryError(
            f"The run in {run_dir} failed, so it has no model to export: "
            f"{failure_reason(run_dir)}\nRetrain it with `tfrec-tricks "
            "train ... --overwrite`, then export."
        )
    if state == "running":
        raise RunDirectoryError(
            f"The run in {run_dir} has not finished (interrupted, or still "
            "training): run the same `tfrec-tricks train` command again to "
            "resume it, then export."
        )
    run = read_run_file(run_dir)
    files = run.get("files")
    # Verified or retrained: a finished run without a whole record of its
    # files (an older or edited run.json) cannot be checked, so it is not
    # exported as it is.
    if not isinstance(files, dict) or not all(
        isinstance(name, str) and isinstance(digest, str)
        for name, digest in files.items()
    ):
        _refuse_incomplete_record(run_dir, "it lists no files")
    for name, digest in sorted(files.items()):
        path = os.path.join(run_dir, name)
        if not os.path.isfile(path):
            raise RunDirectoryError(
                f"{path} is missing: the run directory is incomplete; "
                "retrain it with --overwrite."
            )
        if file_sha256(path) != digest:
            raise RunDirectoryError(
                f"{path} changed after the run finished, so the run's parts "
                "no longer belong together; retrain it with --overwrite."
            )
    model_dir = os.path.join(run_dir, MODEL_DIR)
    if not os.path.isdir(model_dir):
        raise RunDirectoryError(
            f"{model_dir} is missing: the run directory is incomplete; "
            "retrain it with --overwrite."
        )
    expected = _manifest_files(run_dir)
    unlisted = [name for name in expected if name not in files]
    _refuse_foreign_files(run_dir, unlisted)
    if unlisted or not any(n.startswith(f"{MODEL_DIR}/") for n in expected):
        _refuse_incomplete_record(
            run_dir,
            f"it does not list {', '.join(unlisted)}"
            if unlisted
            else f"{MODEL_DIR}/ holds no file",
        )
    return run


def _refuse_foreign_files(run_dir: str, unlisted: list[str]) -> None:
    """Raises RunDirectoryError naming the files of ``unlisted`` that
    tfrec-tricks did not write (a ``model/.DS_Store``): moved out, the
    run is whole again, while a retraining would refuse the same files
    (``--overwrite`` never removes them)."""
    foreign = set(ownership.foreign_entries(run_dir))
    found = [name for name in unlisted if name in foreign]
    if not found:
        return
    paths = ownership.describe([os.path.join(run_dir, n) for n in found])
    it = "it" if len(found) == 1 else "them"
    raise RunDirectoryError(
        f"The run in {run_dir} holds {paths}, which tfrec-tricks did not "
        f"write and cannot verify as part of the run. Move {it} out of "
        "the run directory, then run the command again."
    )


def _refuse_incomplete_record(run_dir: str, what: str) -> None:
    """Raises RunDirectoryError: the run has no complete file record."""
    raise RunDirectoryError(
        f"The run in {run_dir} has no complete record of its files "
        f"({RUN_FILE}: {what}), so its parts cannot be verified to belong "
        "together. Retrain it with `tfrec-tricks train ... --overwrite`."
    )
