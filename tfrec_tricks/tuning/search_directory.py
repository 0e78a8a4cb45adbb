"""A search directory that holds one search.

``search.json`` holds the search's *fingerprint*: everything that
determines it (the training options, the fixed settings, the search space
with its ``--choices``, the budget, the data files' sizes and SHA-256s,
the item attributes searched if any, the tfrec_tricks version, and under
Keras 3 the Keras: ``run_keras.with_keras``), as ``run.json`` does for a
training run
(``tfrec_tricks.training.run_directory``). It is written before the first
trial, and every later search in the directory is checked against it:

- the same search again resumes it (KerasTuner reloads its project:
  completed trials are kept, finished retraining runs reused);
- a search of the other Keras is refused, naming both (its trials'
  checkpoints are in the other Keras' format), as a run of it is;
- anything else is refused before any trial, naming the differences,
  unless the caller asks to overwrite: then the whole folder is removed
  and the search starts afresh.

``best_config.json`` is written atomically, by the search that ran only,
and ``search.json`` then records its SHA-256 beside the fingerprint's
hash: the configuration and the search that chose it belong together.
"""

import hashlib
import json
import os
import time
from typing import Any

import tfrec_tricks
from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import file_sha256, write_text_atomic
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.output_folders import TargetKind
from tfrec_tricks.training.resumption import LATER_OPTIONS
from tfrec_tricks.training.run_directory import (
    PLACEMENT_OPTIONS,
    differences,
    read_fingerprint_file,
    resolved_data_paths,
)
from tfrec_tricks.training.run_keras import check_run_keras, with_keras

SEARCH_FILE = "search.json"
# The fingerprint's record of the item attributes a search chooses among;
# absent from a search without them (and from those recorded before they
# were searched), so that its fingerprint is as it was.
ITEM_FEATURES_KEY = "item_features"
# The data's categorical per-interaction features, which the `features`
# choices offer ("all" takes them too). Known once the data is read, so
# recorded and compared then (``with_token_features``,
# ``check_token_features``); absent for data without them.
TOKEN_FEATURES_KEY = "token_features"
SEARCH_FORMAT = 1
BEST_CONFIG_FILE = "best_config.json"
# What a search of an older tfrec_tricks left (no search.json).
LEGACY_SEARCH_FILES = (
    "search",
    "selection",
    BEST_CONFIG_FILE,
    "trials.md",
    "selection.md",
)


def search_space(hyperparameters: Any) -> dict:
    """``--choices`` (a ``keras_tuner.HyperParameters``) as JSON: each
    setting's name -> its definition (values, default, conditions)."""
    if hyperparameters is None:
        return {}
    space = {}
    for hp in hyperparameters.space:
        config = dict(hp.get_config())
        config.pop("name", None)
        space[hp.name] = {"class": type(hp).__name__, **config}
    return space


def search_fingerprint(
    train: Any,
    fixed: dict | None,
    hyperparameters: Any,
    budget: dict,
    data: list[dict],
    item_features: dict | None = None,
) -> dict:
    """What determines a search, as JSON.

    Args:
        train: the search's ``TrainConfig`` (data options, epochs,
            patience, seed, the defaults' batch size and learning rate, its
            model entries); those that only place it are left out.
        fixed: dict or None. Settings fixed beyond ``train.model`` (e.g.
            ``batch_size`` given on the command line).
        hyperparameters: ``keras_tuner.HyperParameters`` or None: the
            ``--choices``.
        budget: dict. The tuner and its budget (``max_trials``,
            ``max_minutes``, ``retrain_top``, ``seeds``, tuner and compile
            options).
        data: ``data_identity`` of the files the data source reads.
        item_features: dict or None. The item attributes the space
            chooses among (``ItemFeatureSpace.fingerprint``), recorded
            under ``ITEM_FEATURES_KEY``. Defaults to None: none, and no
            such key.

    Returns:
        dict. Under Keras 3 it also records ``"keras": "keras-3"``
        (``run_keras.with_keras``); a tf-keras search records no Keras.

    Example:

    >>> from tfrec_tricks.training.train_config import TrainConfig
    >>> a = search_fingerprint(TrainConfig(), None, None, {"seeds": 1}, [])
    >>> b = search_fingerprint(TrainConfig(), None, None, {"seeds": 2}, [])
    >>> differences(a, b)
    ['budget.seeds: 1 -> 2']
    """
    values = resolved_data_paths(train.to_dict())
    values = {k: v for k, v in values.items() if k not in PLACEMENT_OPTIONS}
    fingerprint = {
        "train": values,
        "fixed": dict(fixed or {}),
        "space": search_space(hyperparameters),
        "budget": budget,
        "data": data,
        "tfrec_tricks": tfrec_tricks.__version__,
    }
    if item_features is not None:
        fingerprint[ITEM_FEATURES_KEY] = item_features
    # Through JSON, so that tuples and lists compare equal to a reread;
    # objects (a callback in the tuner options) by their repr.
    fingerprint = json.loads(json.dumps(fingerprint, default=repr))
    # The trials' checkpoints are in the format of the Keras that trained
    # them: a Keras 3 search records it, as a run does; a tf-keras search
    # records nothing, so that every search on disk keeps its fingerprint.
    return with_keras(fingerprint)


def recorded_without_item_features(search_dir: str) -> bool:
    """Whether ``search_dir`` holds a search whose fingerprint records no
    item attributes (``ITEM_FEATURES_KEY``): one without them, or one of a
    built-in dataset started before their metadata was searched.

    Raises:
        RunDirectoryError: ``search.json`` is damaged (``read_search_file``).
    """
    document = read_search_file(search_dir)
    return (
        document is not None
        and ITEM_FEATURES_KEY not in document["fingerprint"]
    )


def fingerprint_hash(fingerprint: dict) -> str:
    """SHA-256 of the fingerprint's canonical JSON."""
    text = json.dumps(fingerprint, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_search_file(search_dir: str) -> dict | None:
    """The search's ``search.json``, or None when the folder has none.

    Raises:
        RunDirectoryError: ``search.json`` is unreadable, not a search
            file, or of another format.
    """
    return read_fingerprint_file(
        os.path.join(search_dir, SEARCH_FILE),
        "search",
        SEARCH_FORMAT,
        "start afresh with --overwrite",
    )


def search_state(search_dir: str) -> str:
    """What ``search_dir`` holds.

    Returns:
        ``"absent"``, ``"empty"``, ``"search"`` (it has ``search.json``),
        ``"legacy"`` (a search of an older tfrec_tricks: no
        ``search.json``) or ``"foreign"`` (a file, or a non-empty folder
        that is no search).
    """
    if not os.path.exists(search_dir):
        return "absent"
    if not os.path.isdir(search_dir):
        return "foreign"
    # A folder holding only the tool's record (``ownership``) is empty.
    entries = {
        name
        for name in os.listdir(search_dir)
        if not name.startswith(ownership.RECORD_FILE)
    }
    if not entries:
        return "empty"
    if SEARCH_FILE in entries:
        return "search"
    if entries & set(LEGACY_SEARCH_FILES):
        return "legacy"
    return "foreign"


# Everything ``tune`` writes in a search folder (``tuning.search``),
# recorded (``ownership``) before it is written; the folders KerasTuner and
# TensorBoard write (``LIBRARY_FOLDERS``) are owned as a whole from then.
# ``selection/`` holds run directories, each with its own record.
SEARCH_ENTRIES = frozenset(
    (SEARCH_FILE, BEST_CONFIG_FILE, "search/", "selection/", "selection.md")
    + ("tensorboard/", "trials.md", "trials.png")
)
# The search's folders whose files KerasTuner and TensorBoard name: owned
# as a whole (``ownership.WHOLE``), whatever a crash leaves in them.
LIBRARY_FOLDERS = ("search", "tensorboard")

SEARCH_FOLDER = TargetKind("search folder", "--name or --output-dir")


def is_search_folder(path: str) -> bool:
    """Whether the folder ``path`` is a search folder by record: only then
    may ``--overwrite`` replace it."""
    return SEARCH_FOLDER.recognise(path)


def open_search(
    search_dir: str, fingerprint: dict, overwrite: bool = False
) -> str:
    """Decides what to do with ``search_dir`` for a search of ``fingerprint``.

    Writes nothing (``start_search`` does, once every check has passed).

    Returns:
        ``"new"`` (nothing there: start), ``"resume"`` (the same search:
        continue it) or ``"overwrite"`` (``overwrite`` and an earlier
        search there: discard it and start).

    Raises:
        RunDirectoryError: the folder holds another search (its
            differences named), a search of the other Keras (both named:
            ``run_keras.check_run_keras``), a search of an older version
            or a damaged one (without ``overwrite``), or something that is
            not a search (even with ``overwrite``: it is never removed).
    """
    state = search_state(search_dir)
    if state in ("absent", "empty"):
        return "new"
    if state == "foreign":
        raise RunDirectoryError(
            f"{search_dir} exists and is not a search folder (no "
            f"{SEARCH_FILE}); choose another --name or --output-dir (it is "
            "never overwritten)."
        )
    if overwrite:
        return "overwrite"
    if state == "legacy":
        raise RunDirectoryError(
            f"{search_dir} holds a search of an older tfrec-tricks (it has "
            f"no {SEARCH_FILE}), which cannot be checked against this one; "
            "pass --overwrite to start afresh (only a folder holding "
            "tfrec-tricks' record of what it wrote is replaced: move an "
            "older version's away), or choose another --name."
        )
    recorded = read_search_file(search_dir)["fingerprint"]
    # Before the differences: the other Keras is named as such, not as a
    # `keras` field that differs.
    check_run_keras(search_dir, recorded, "resumed", kind="search")
    # Compared once the data is read (check_token_features): the
    # fingerprint here is the one before it.
    recorded.pop(TOKEN_FEATURES_KEY, None)
    if isinstance(recorded.get("train"), dict):
        # Searches recorded their data paths as written, before they were
        # resolved: resolved now (from this folder), they still resume.
        recorded["train"] = resolved_data_paths(recorded["train"])
    changed = differences(recorded, _as_recorded(recorded, fingerprint))
    if changed:
        raise RunDirectoryError(
            f"{search_dir} holds a search with another space, data or "
            "budget, which this one would mix with or replace. Differences "
            "(search -> now):\n  "
            + "\n  ".join(changed)
            + "\nChoose another --name or --output-dir, run the original "
            "command to resume it, or pass --overwrite to discard it."
        )
    return "resume"


def with_token_features(fingerprint: dict, names: list[str]) -> dict:
    """``fingerprint`` with the data's token features recorded (as it is
    without any).

    >>> with_token_features({"budget": 1}, ["device"])
    {'budget': 1, 'token_features': ['device']}
    >>> with_token_features({"budget": 1}, [])
    {'budget': 1}
    """
    if not names:
        return fingerprint
    return {**fingerprint, TOKEN_FEATURES_KEY: list(names)}


def check_token_features(search_dir: str, fingerprint: dict) -> None:
    """Refuses to resume a search whose ``features`` choices offered other
    token features than the data's now (``with_token_features``).

    The data files are in the fingerprint, so the names differ only for a
    search started before token features were searched: its trials'
    ``features`` "all" took the float features only, and the trials to
    come would take the token ones too, under the same name.

    Raises:
        RunDirectoryError: the recorded names differ from those now.
    """
    recorded = read_search_file(search_dir)["fingerprint"]
    before = recorded.get(TOKEN_FEATURES_KEY, [])
    now = fingerprint.get(TOKEN_FEATURES_KEY, [])
    if before == now:
        return
    raise RunDirectoryError(
        f"{search_dir} holds a search whose `features` choices offered the "
        f"token features {before or 'none'}; the data's are now "
        f"{now or 'none'} (a search started before token features were "
        "searched: its 'all' took the float features only). Its trials "
        "and the next ones would differ under the same names: pass "
        "--overwrite to start afresh, or choose another --name."
    )


def wait_for_search_file(
    search_dir: str, timeout: float = 600.0, poll: float = 0.5
) -> None:
    """Waits until the chief has written ``search.json`` (a distributed
    search's workers write nothing before it, so that the chief never
    finds their files in a folder without one).

    Raises:
        RunDirectoryError: none appeared within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while read_search_file(search_dir) is None:
        if time.monotonic() > deadline:
            raise RunDirectoryError(
                f"{search_dir}: the chief did not start the search (no "
                f"{SEARCH_FILE}) within {timeout:.0f} s. Start the chief "
                "(KERASTUNER_TUNER_ID=chief) with the same command."
            )
        time.sleep(poll)


def _as_recorded(recorded: dict, fingerprint: dict) -> dict:
    """``fingerprint`` without the training options that ``recorded``
    lacks and that hold the value which behaves as before they existed
    (``LATER_OPTIONS``, as for runs): such a search is the same search. An
    option added later at any other value is a difference."""
    before = recorded.get("train")
    if not isinstance(before, dict):
        return fingerprint

    earlier = json.loads(json.dumps(LATER_OPTIONS))
    train = {
        name: value
        for name, value in fingerprint["train"].items()
        if name in before or name not in earlier or value != earlier[name]
    }
    return {**fingerprint, "train": train}


def start_search(search_dir: str, fingerprint: dict, action: str) -> None:
    """Prepares ``search_dir`` for the search ``open_search`` allowed.

    ``"overwrite"`` removes the old folder first; ``"new"`` and
    ``"overwrite"`` write ``search.json`` (status ``running``) before
    anything else; ``"resume"`` leaves it as it is.
    """
    if action == "resume":
        return
    if action == "overwrite" and os.path.isdir(search_dir):
        # Only what the search recorded; someone's file in it is refused.
        ownership.remove_owned(search_dir, SEARCH_FOLDER.name)
    # KerasTuner's and TensorBoard's folders are the search's before they
    # write there: a crash in a trial leaves nothing unowned.
    ownership.start_record(
        search_dir, SEARCH_FOLDER.name, whole=LIBRARY_FOLDERS
    )
    ownership.claim(os.path.join(search_dir, name) for name in SEARCH_ENTRIES)
    document = {
        "format": SEARCH_FORMAT,
        "status": "running",
        "fingerprint_sha256": fingerprint_hash(fingerprint),
        "fingerprint": fingerprint,
    }
    write_text_atomic(
        os.path.join(search_dir, SEARCH_FILE), json.dumps(document, indent=2)
    )


def write_best_config(search_dir: str, best: dict) -> str:
    """Writes ``best_config.json`` atomically; ``search.json`` records its
    SHA-256 and the status ``finished``.

    Returns:
        The path of ``best_config.json``.
    """
    path = os.path.join(search_dir, BEST_CONFIG_FILE)
    write_text_atomic(path, json.dumps(best, indent=2))
    document = read_search_file(search_dir)
    if document is not None:
        document["status"] = "finished"
        document["best_config_sha256"] = file_sha256(path)
        write_text_atomic(
            os.path.join(search_dir, SEARCH_FILE),
            json.dumps(document, indent=2),
        )
    return path
