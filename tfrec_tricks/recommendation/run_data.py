"""A finished run's own data, read back for its recommendations.

A run's users are ranked with everything its data holds of them: the
source ``train`` read (``config.json``), through the same filters
(``min_user_interactions``, ``min_item_interactions``, exact duplicate
rows, the split's minimum), each user's whole sequence, training,
validation and test interactions alike. The data must still be what the
run trained on: the files' sizes and SHA-256s are compared with the
run's fingerprint (``run.json``) first.
"""

import dataclasses
import json
import os

from tfrec_tricks.errors import DataError
from tfrec_tricks.recommendation.user_histories import (
    PreparedHistories,
    SequenceHistories,
    UserHistories,
)
from tfrec_tricks.training.prepare_dataset import local_sequences
from tfrec_tricks.training.run_directory import (
    DATA_PATH_OPTIONS,
    data_identity,
)
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import (
    data_files,
    item_feature_files,
)


def run_train_config(run_dir: str, run: dict) -> TrainConfig:
    """The run's ``TrainConfig``, its data paths as the run resolved them.

    ``config.json`` holds the paths as written (``../shared/data``,
    relative to where ``train`` ran); the fingerprint in ``run.json``
    holds them resolved, so the run's data is found from any folder.

    Args:
        run_dir: str. A finished run directory.
        run: dict. Its ``run.json`` (``check_finished_run``'s result).

    Returns:
        A ``TrainConfig``.
    """
    with open(os.path.join(run_dir, "config.json"), encoding="utf-8") as f:
        settings = dict(json.load(f)["train"])
    recorded = (run.get("fingerprint") or {}).get("train") or {}
    for name in DATA_PATH_OPTIONS:
        if isinstance(recorded.get(name), str):
            settings[name] = recorded[name]
    # A setting an older version wrote and this one no longer has.
    fields = {field.name for field in dataclasses.fields(TrainConfig)}
    return TrainConfig(**{k: v for k, v in settings.items() if k in fields})


def check_same_data(run_dir: str, config: TrainConfig, run: dict) -> None:
    """Refuses data files that changed since the run trained on them.

    Raises:
        DataError: naming the file that is missing or differs, and what
            it holds: the users' histories, or the item attributes (an
            ``.item`` file, a dataset's metadata).
    """
    recorded = (run.get("fingerprint") or {}).get("data")
    if not isinstance(recorded, list):
        return
    files = data_files(config)
    now = data_identity(files)
    if now == recorded:
        return
    if len(now) != len(recorded):
        raise DataError(
            f"The data of the run in {run_dir} is not what it trained on: "
            f"it read {len(recorded)} files, its settings now name "
            f"{len(now)}. Give the histories with --histories FILE, or "
            f"retrain. Received: {files}"
        )
    attributes = set(item_feature_files(config))
    for path, before, after in zip(files, recorded, now):
        if before == after:
            continue
        state = "is missing" if after["sha256"] is None else "changed"
        if path in attributes:
            # The model holds the attributes it trained with; the file
            # is the run's record of them.
            what = (
                "the item attributes it holds are not those the run's "
                "model learned; restore it, or retrain on it"
            )
        else:
            what = (
                "its users' histories are not what the run knew; restore "
                "it, retrain, or give the histories with --histories FILE"
            )
        raise DataError(
            f"{path} {state} since the run in {run_dir} trained on it, so "
            f"{what}. Received: {after['bytes']} bytes, SHA-256 "
            f"{after['sha256']}; "
            f"trained on {before.get('bytes')} bytes, SHA-256 "
            f"{before.get('sha256')}"
        )


def run_histories(run_dir: str, run: dict, items: list[str]) -> UserHistories:
    """Every user of the run's data with their whole history.

    Args:
        run_dir: str. A finished run directory.
        run: dict. Its ``run.json``.
        items: the run's vocabulary (raw item ids by contiguous id).

    Returns:
        ``PreparedHistories`` for a run trained on a prepared dataset
        (``--prepared``), else ``SequenceHistories`` of its source loaded
        and filtered as ``train`` loads it.

    Raises:
        DataError: the data cannot be read, or changed since the run
            trained (``check_same_data``).
    """
    config = run_train_config(run_dir, run)
    check_same_data(run_dir, config, run)
    if config.prepared:
        return PreparedHistories(config.prepared, items)
    # Read, filtered and ordered as `prepare` and `train` read the data.
    sequences, _ = local_sequences(config)
    return SequenceHistories(
        sequences, items, f"the run's data ({config.data})"
    )
