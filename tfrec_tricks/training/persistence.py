"""What a run writes and reads back: its settings, model and metrics.

A run starts by writing its claim (``start_run_files``: ``run.json``,
``config.json``, ``vocabulary.json``, the TensorBoard hparams) and ends by
publishing its model and ``metrics.json`` and marking itself finished
(``save_results``). ``load_model``, ``read_history`` and
``reused_result`` read a finished run back.
"""

import csv
import dataclasses
import json
import math
import os
import shutil
import statistics

import tensorflow as tf

from tfrec_tricks.atomic_files import write_text_atomic
from tfrec_tricks.callbacks import EpochTimer
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.models.config import AUTO_HEAD
from tfrec_tricks.training.evaluate import format_results
from tfrec_tricks.training.head_choice import HeadChoice
from tfrec_tricks.training.resumption import OpenedRun
from tfrec_tricks.training.run_directory import (
    INTERACTION_FEATURES_FILE,
    ITEM_FEATURES_FILE,
    TENSORBOARD_DIR,
    check_finished_run,
    finish_run,
    publish_model,
    read_run_file,
    start_run,
)
from tfrec_tricks.training.run_keras import (
    KERAS_3,
    TF_KERAS,
    check_run_keras,
    keras_in_use,
    load_weights,
    weights_path,
)
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import (
    TrainingData,
    item_feature_facts,
    token_feature_facts,
)


@dataclasses.dataclass
class RunResult:
    """What ``train`` returns: where the run is, its metrics and its model."""

    run_dir: str
    metrics: dict
    history: dict
    model: tf.keras.Model


def start_run_files(
    config: TrainConfig,
    opened: OpenedRun,
    data: TrainingData,
    head_choice: HeadChoice | None,
) -> None:
    """Writes the run's claim (``start_run``: run.json, config.json,
    vocabulary.json, with item features ``ITEM_FEATURES_FILE``, their
    specs and vocabularies, with token features
    ``INTERACTION_FEATURES_FILE``, theirs) and, for a new run, its TensorBoard
    hparams."""
    if not opened.chief:
        return
    settings = {
        "train": config.to_dict(),
        "model": opened.model_config.to_dict(),
    }
    if head_choice is not None:
        settings["head_choice"] = {
            "requested": AUTO_HEAD,
            **dataclasses.asdict(head_choice),
        }
    files = {
        "config.json": json.dumps(settings, indent=2),
        "vocabulary.json": data.vocabulary.to_json(),
    }
    item_features = getattr(data.prepared, "item_features", None)
    if item_features is not None:
        # The vocabularies: export --add-items encodes new items with them.
        files[ITEM_FEATURES_FILE] = json.dumps(
            [spec.to_dict() for spec in item_features.specs], indent=2
        )
    token_features = getattr(data.prepared, "token_features", ())
    if token_features:
        files[INTERACTION_FEATURES_FILE] = json.dumps(
            [spec.to_dict() for spec in token_features], indent=2
        )
    start_run(opened.run_dir, opened.fingerprint, files)
    if opened.action == "new":
        write_hparams(
            os.path.join(opened.run_dir, TENSORBOARD_DIR),
            config.run_name,
            settings,
        )


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


def run_facts(
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
        **item_feature_facts(data.prepared),
        **token_feature_facts(data.prepared),
    }


def count_trainable_parameters(model: tf.keras.Model) -> int:
    """Trainable parameters (the SSE graph and counters are not parameters)."""
    # math.prod: a Keras 3 variable's shape is a tuple, not a TensorShape.
    return int(sum(math.prod(w.shape) for w in model.trainable_weights))


def save_results(
    model: tf.keras.Model, results: dict, opened: OpenedRun, verbose: int
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


def save_model(model: tf.keras.Model, run_dir: str) -> str:
    """Publishes ``<run_dir>/model/``: ``config.json`` and the final weights
    (``weights.index`` and its data file under tf-keras,
    ``weights.weights.h5`` under Keras 3: ``run_keras.weights_path``).

    Written aside and renamed (``run_directory.publish_model``), so a
    reader never sees half a model. ``load_model(run_dir)`` rebuilds the
    model from them (the weights are those of the best epoch: early
    stopping restored them).
    """

    def write(folder: str) -> None:
        with open(os.path.join(folder, "config.json"), "w") as handle:
            json.dump(model.get_config(), handle, indent=2)
        model.save_weights(weights_path(os.path.join(folder, "weights")))

    return publish_model(run_dir, write)


def load_model(run_dir: str) -> SequentialRetrievalModel:
    """Rebuilds a trained model from a run directory (see ``save_model``).

    Under the Keras that trained the run (its fingerprint's ``keras``,
    ``run_keras``): the other Keras cannot read its weights.

    Raises:
        RunDirectoryError: the run was trained under the other Keras.
        FileNotFoundError: the model or its weights are missing.
        ValueError: the weights cannot be read.
    """
    model_dir = os.path.join(run_dir, "model")
    try:
        run = read_run_file(run_dir)
    except RunDirectoryError:
        run = None  # a damaged run.json: the callers that need it check it
    if run is not None:
        check_run_keras(run_dir, run["fingerprint"], "loaded")
    config_path = os.path.join(model_dir, "config.json")
    if not os.path.isfile(config_path):
        raise FileNotFoundError(
            f"No trained model in {run_dir!r}: {config_path} is missing (was "
            "the run interrupted before it finished?)."
        )
    weights = weights_path(os.path.join(model_dir, "weights"))
    expected = {TF_KERAS: weights + ".index", KERAS_3: weights}
    if not os.path.isfile(expected[keras_in_use()]):
        raise FileNotFoundError(
            f"No weights in {model_dir!r}: "
            f"{os.path.basename(expected[keras_in_use()])} is missing (the "
            "run directory is incomplete; retrain it with --overwrite)."
        )
    with open(config_path) as handle:
        model = SequentialRetrievalModel.from_config(json.load(handle))
    if keras_in_use() == KERAS_3:
        # Keras 3 loads weights into built layers only (tf-keras restores
        # them when the layers are built); before compile, so that the
        # saved optimizer's slots are not offered to an unbuilt optimizer.
        _build(model)
    unreadable = (tf.errors.OpError, ValueError)
    if keras_in_use() == KERAS_3:
        unreadable += (OSError,)  # h5py's error for a damaged file
    try:
        load_weights(model, weights)
    except unreadable as error:
        raise ValueError(
            f"Cannot read the weights in {model_dir!r} ({error}); retrain "
            "the run with --overwrite."
        ) from None
    model.compile(
        optimizer=tf.keras.optimizers.Adam(model.config.learning_rate)
    )
    return model


def _build(model: SequentialRetrievalModel) -> None:
    """Creates the model's weights with a call on a one-item history."""
    model(
        {
            "history": tf.ones([1, 1], tf.int32),
            **{f: tf.zeros([1, 1]) for f in model.config.position_inputs},
        },
        training=False,
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


def reused_result(run_dir: str, verbose: int) -> RunResult:
    """The ``RunResult`` of a finished run of the same fingerprint."""
    check_finished_run(run_dir)
    with open(os.path.join(run_dir, "metrics.json")) as handle:
        results = json.load(handle)
    if verbose:
        print(
            f"{run_dir} finished before with the same settings and data: "
            "reusing it (--overwrite trains it again).",
            flush=True,
        )
        print(format_results(results, run_dir))
    return RunResult(
        run_dir, results, read_history(run_dir), load_model(run_dir)
    )
