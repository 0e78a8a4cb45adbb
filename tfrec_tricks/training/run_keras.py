"""Which Keras trains a run, and the run files that differ between the two.

A run is trained under tf-keras (the default) or under Keras 3
(TensorFlow backend), and the two write weights the other cannot read:
tf-keras TensorFlow-format checkpoints (``model/weights.index``,
``checkpoints/best.index``, ``backup/chief/``), Keras 3 ``.weights.h5``
files (``model/weights.weights.h5``, ``checkpoints/best.weights.h5``,
``backup/latest.weights.h5``). So a run records its Keras in its
fingerprint (``with_keras``): ``"keras": "keras-3"`` for a Keras 3 run,
nothing for a tf-keras run. A fingerprint without the field is a tf-keras
run, as every run recorded before Keras 3 runs existed is: their
fingerprints stay byte-identical. Resuming, reusing or loading a run under
the other Keras is refused, naming both (``check_run_keras``).
"""

import json
import os
import shutil

import tensorflow as tf

from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.keras_version import keras_3_in_use
from tfrec_tricks.training.distribution import num_cluster_tasks

#: The fingerprint field that names a run's Keras (absent: ``TF_KERAS``).
KERAS_FIELD = "keras"
TF_KERAS = "tf-keras"
KERAS_3 = "keras-3"
# Keras 3 saves weights only to files of this suffix.
_KERAS_3_SUFFIX = ".weights.h5"


def keras_in_use() -> str:
    """The Keras of this process, as a run records it.

    Returns:
        str. ``"keras-3"`` under Keras 3, else ``"tf-keras"``.
    """
    return KERAS_3 if keras_3_in_use() else TF_KERAS


def with_keras(fingerprint: dict) -> dict:
    """``fingerprint`` with the Keras of this process recorded.

    Only a Keras 3 run records it: a tf-keras run's fingerprint is the one
    recorded before the field existed, so that runs on disk keep their
    identity.

    Args:
        fingerprint: dict. A run's fingerprint (``make_fingerprint``).

    Returns:
        dict. The fingerprint, with ``"keras": "keras-3"`` under Keras 3.
    """
    if keras_in_use() == TF_KERAS:
        return fingerprint
    return {**fingerprint, KERAS_FIELD: KERAS_3}


def recorded_keras(fingerprint: dict) -> str:
    """The Keras a fingerprint's run was trained with.

    >>> recorded_keras({"train": {}})
    'tf-keras'
    >>> recorded_keras({"keras": "keras-3"})
    'keras-3'
    """
    return fingerprint.get(KERAS_FIELD, TF_KERAS)


def check_run_keras(
    run_dir: str, fingerprint: dict, doing: str, kind: str = "run"
) -> None:
    """Refuses a run (or a search) trained under the other Keras.

    Its weights (checkpoints, backup, model; a search's trial checkpoints)
    are in the other Keras' format: resumed or loaded here they would not
    be read.

    Args:
        run_dir: str. The run directory, named in the message.
        fingerprint: dict. The run's recorded fingerprint.
        doing: str. What was asked, for the message: "resumed",
            "reused", "loaded".
        kind: str. What the folder holds, for the message: "run", or
            "search" (``tuning.search_directory``, whose fingerprint
            records its Keras as a run's does). Defaults to "run".

    Raises:
        RunDirectoryError: the run's Keras is not this process's.
    """
    trained, here = recorded_keras(fingerprint), keras_in_use()
    if trained == here:
        return
    setting = "1" if trained == TF_KERAS else "0"
    raise RunDirectoryError(
        f"{run_dir} holds a {kind} trained under {_named(trained)}, but "
        f"this process uses {_named(here)}: the {kind} cannot be {doing} "
        "under another Keras (its weights are in its own Keras' format). "
        f"Run the command under {_named(trained)} (TF_USE_LEGACY_KERAS="
        f"{setting} before TensorFlow is imported), choose another --name, "
        f"or pass --overwrite to train the {kind} afresh."
    )


def check_keras_3_distribution(mode: str) -> None:
    """Refuses a multi-worker run under Keras 3, whose ``fit`` fails there.

    ``--distribute mirrored`` (one process, its local devices) trains
    under either Keras. A ``TF_CONFIG`` cluster does not under Keras 3
    (3.15, TensorFlow 2.21): its ``fit`` averages a step's scalar logs
    across workers with ``strategy.reduce("MEAN", value, axis=0)``, which
    fails ("Invalid reduction dimension 0 for input with 0 dimensions",
    tensorflow/tensorflow#72388), and, past that, its loop over a
    multi-worker iterator fails in graph execution ("You must feed a value
    for placeholder tensor"). The refusal comes before anything is written.

    Args:
        mode: str. The run's ``--distribute``.

    Raises:
        ValueError: under Keras 3, with a ``TF_CONFIG`` cluster of two
            tasks or more that ``auto`` would train on.
    """
    if keras_in_use() == TF_KERAS or mode != "auto":
        return
    # TF_CONFIG is read only here: `off` and `mirrored` ignore it, and
    # make_strategy names a malformed one.
    cluster_tasks = num_cluster_tasks()
    if cluster_tasks >= 2:
        raise ValueError(
            f"Multi-worker training (a TF_CONFIG cluster of {cluster_tasks} "
            "tasks) needs tf-keras: Keras 3's fit fails under "
            "MultiWorkerMirroredStrategy (tensorflow/tensorflow#72388). Set "
            "TF_USE_LEGACY_KERAS=1 before TensorFlow is imported, or pass "
            "--distribute mirrored (this machine's devices) or off."
        )


def _named(keras: str) -> str:
    return "Keras 3" if keras == KERAS_3 else "tf-keras (Keras 2)"


def weights_path(stem: str) -> str:
    """Where the weights saved under ``stem`` are, for this Keras.

    tf-keras writes a TensorFlow checkpoint at ``stem`` (``stem.index``
    and its data files); Keras 3 writes ``stem.weights.h5``, the only
    format its ``save_weights`` writes and its ``load_weights`` reads.
    """
    if keras_in_use() == TF_KERAS:
        return stem
    return stem + _KERAS_3_SUFFIX


def weights_saved(stem: str) -> bool:
    """Whether the weights ``weights_path(stem)`` names exist."""
    path = weights_path(stem)
    if keras_in_use() == TF_KERAS:
        path += ".index"
    return tf.io.gfile.exists(path)


def load_weights(model: tf.keras.Model, path: str) -> None:
    """``model.load_weights(path)``, under either Keras.

    tf-keras returns a restore status, told to expect a partial restore
    (the optimizer's slots are not read); Keras 3 returns None.
    """
    status = model.load_weights(path)
    if status is not None:
        status.expect_partial()


def backup_and_restore(backup_dir: str) -> tf.keras.callbacks.Callback:
    """The ``BackupAndRestore`` callback of this Keras.

    Under Keras 3 with ``double_checkpoint``: the backup is written in
    place (``latest.weights.h5``), and a kill while it is written leaves
    it unreadable; Keras 3 then restores the copy of the epoch before
    (``latest.weights.h5.bkp``).
    """
    if keras_in_use() == TF_KERAS:
        return tf.keras.callbacks.BackupAndRestore(backup_dir)
    return tf.keras.callbacks.BackupAndRestore(
        backup_dir, double_checkpoint=True
    )


def settle_keras3_backup(backup_dir: str) -> str | None:
    """Puts back the state a Keras 3 backup resumes from after a write of
    it failed (a full disk, a kill), as Keras 3 itself means to; returns
    why what is left cannot be resumed from (``keras3_backup_problem``),
    or None.

    Keras 3 writes ``latest.weights.h5`` in place, after copying the
    epoch before to ``.bkp``, and then ``training_metadata.json``. When
    ``latest.weights.h5`` does not read whole: with a ``.bkp`` that does,
    the ``.bkp`` files are put back (Keras 3 does so only for the errors
    it expects, and h5py raises others for some damage); with no ``.bkp``
    and no ``training_metadata.json``, the first backup's write never
    finished and nothing was backed up: the file goes, and the run starts
    from its first epoch. Anything else is left, named.

    In the usual case (``latest.weights.h5`` reads whole) each file is
    read once, not once here and once more by ``keras3_backup_problem``.
    """
    weights = os.path.join(backup_dir, "latest" + _KERAS_3_SUFFIX)
    metadata = os.path.join(backup_dir, "training_metadata.json")
    if not os.path.exists(weights) or _h5_problem(weights) is None:
        return _metadata_problem(metadata)
    previous = weights + ".bkp"
    if os.path.exists(previous) and _h5_problem(previous) is None:
        shutil.copy2(previous, weights)
        if os.path.exists(metadata + ".bkp"):
            shutil.copy2(metadata + ".bkp", metadata)
        elif os.path.exists(metadata):
            os.remove(metadata)
    elif not os.path.exists(previous) and not os.path.exists(metadata):
        os.remove(weights)
    return keras3_backup_problem(backup_dir)


def keras3_backup_problem(backup_dir: str) -> str | None:
    """Why a Keras 3 ``backup_dir`` cannot be resumed from, or None.

    Resumable: one of ``latest.weights.h5`` and its copy of the epoch
    before (``.bkp``, which Keras 3 falls back to) reads whole, and
    ``training_metadata.json`` (the epoch to resume after) is JSON.
    """
    weights = os.path.join(backup_dir, "latest" + _KERAS_3_SUFFIX)
    problems = []
    for path in (weights, weights + ".bkp"):
        if not os.path.exists(path):
            continue
        problem = _h5_problem(path)
        if problem is None:
            break
        problems.append(f"{os.path.basename(path)}: {problem}")
    else:
        if problems:
            return "; ".join(problems)
    return _metadata_problem(os.path.join(backup_dir, "training_metadata.json"))


def _metadata_problem(metadata: str) -> str | None:
    """Why Keras 3's ``training_metadata.json`` does not read (the epoch
    to resume after), or None; None when there is none."""
    if os.path.exists(metadata):
        try:
            with open(metadata) as handle:
                int(json.load(handle)["epoch"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            return f"training_metadata.json: {error!r}"
    return None


def _h5_problem(path: str) -> str | None:
    """Why the HDF5 file at ``path`` does not read whole, or None."""
    import h5py

    try:
        with h5py.File(path, "r") as handle:
            handle.visititems(_read_dataset)
    except (OSError, ValueError, KeyError, RuntimeError) as error:
        # RuntimeError: h5py on some damage ("Object visitation failed").
        return str(error)
    return None


def _read_dataset(name: str, item: object) -> None:
    import h5py

    if isinstance(item, h5py.Dataset):
        item[()]  # reads it: a file cut short fails here
