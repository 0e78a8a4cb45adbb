"""Fitting a run's model: its inputs, its optimizer and its callbacks.

``build_model`` compiles the model (``--optimizer``, ``--lr-schedule``)
and builds it on a first batch of the inputs ``fit_inputs`` makes
(distributed under a strategy); ``fit`` trains it with early stopping, a
best-epoch checkpoint and a backup to resume from, continuing the epochs
of an interrupted run.
"""

import contextlib
import dataclasses
import os
from typing import Any

import tensorflow as tf

from tfrec_tricks.callbacks import (
    EpochTimer,
    PublishWeights,
    ResumableCSVLogger,
    ResumableEarlyStopping,
    StopOnDivergence,
)
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.training.compiled_steps import steps_per_call
from tfrec_tricks.training.evaluate import eval_batch_size
from tfrec_tricks.training.optimizers import (
    learning_rate_schedule,
    make_optimizer,
)
from tfrec_tricks.training.resumption import (
    OpenedRun,
    backup_directory,
    best_checkpoint,
    epochs_before_interruption,
    finished_fit,
    resumes_from_backup,
)
from tfrec_tricks.training.run_directory import TENSORBOARD_DIR
from tfrec_tricks.training.run_keras import (
    TF_KERAS,
    backup_and_restore,
    keras_in_use,
    load_weights,
    settle_keras3_backup,
    weights_path,
)
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import TrainingData


@dataclasses.dataclass
class FitInputs:
    """``model.fit``'s training and validation data, and steps per epoch."""

    train: Any
    validation: Any
    steps_per_epoch: int | None = None
    validation_steps: int | None = None
    local_train: tf.data.Dataset | None = None


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


def training_schedule(config: TrainConfig, inputs: FitInputs) -> Any:
    """The run's learning rate per step (``--lr-schedule``,
    ``--warmup-epochs``): ``learning_rate_schedule`` over ``epochs`` epochs
    of ``inputs``' steps."""
    if config.lr_schedule == "constant" and not config.warmup_epochs:
        return config.training_learning_rate()
    steps = _steps_per_epoch(inputs)
    if steps < 0:
        # Unknown (files read as a stream): counted in one pass.
        steps = int(inputs.train.reduce(0, lambda count, _: count + 1))
    return learning_rate_schedule(
        config.lr_schedule,
        config.training_learning_rate(),
        total_steps=config.epochs * steps,
        warmup_steps=config.warmup_epochs * steps,
    )


def _steps_per_epoch(inputs: FitInputs) -> int:
    """The training steps of an epoch; negative when unknown."""
    return inputs.steps_per_epoch or int(inputs.train.cardinality())


def build_model(
    config: TrainConfig,
    model_config: ModelConfig,
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
            # about as long as a whole step on short-session batches (one
            # when an epoch is shorter: see compiled_steps).
            steps_per_execution=steps_per_call(
                config.steps_per_execution, _steps_per_epoch(inputs)
            ),
        )
        # Built before fit so that BackupAndRestore can restore into it
        # (under a strategy, from a local batch of the same shape).
        first = inputs.train if strategy is None else inputs.local_train
        model(next(iter(first)))
    return model, inputs


def fit_callbacks(
    config: TrainConfig, opened: OpenedRun, monitor: str, verbose: int
) -> tuple:
    """The run's Keras callbacks, continuing an interrupted run's epochs.

    Returns:
        ``(done, timer, callbacks)``: the monitored values of the epochs
        run before an interruption, the ``EpochTimer`` and the callbacks.
    """
    resuming = resumes_from_backup(opened)
    backup_dir = backup_directory(opened.run_dir)
    done = epochs_before_interruption(opened, monitor)
    if resuming:
        _log(
            verbose,
            f"Resuming the interrupted run from {backup_dir} after "
            f"{len(done)} epochs",
        )
    # checkpoints/best (tf-keras) or checkpoints/best.weights.h5 (Keras 3).
    best_weights = weights_path(best_checkpoint(opened.write_dir))
    # Keras 3 writes the best epoch's weights in place: aside, then
    # renamed (tf-keras' TensorFlow checkpoints are renamed by TensorFlow).
    best_staging, publish_best = None, []
    if keras_in_use() != TF_KERAS:
        best_staging = best_weights.replace(".weights.h5", ".saving.weights.h5")
        publish_best = [PublishWeights(best_staging, best_weights)]
    timer = EpochTimer()
    callbacks = [
        # First: a NaN or inf loss raises before the others save the epoch.
        StopOnDivergence(
            hint="lower --learning-rate (this run: "
            f"{config.training_learning_rate():g})"
        ),
        # On every worker: the chief's backup is what all of them resume.
        backup_and_restore(backup_dir),
        ResumableEarlyStopping(
            done,
            best_weights,
            monitor=monitor,
            mode="max",
            patience=config.patience,
            restore_best_weights=True,
        ),
        tf.keras.callbacks.ModelCheckpoint(
            best_staging or best_weights,
            monitor=monitor,
            mode="max",
            save_best_only=True,
            save_weights_only=True,
            initial_value_threshold=max(done) if done else None,
        ),
        *publish_best,
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
    ]
    return done, timer, callbacks


@dataclasses.dataclass
class FitOutcome:
    """What ``fit`` leaves besides the trained weights.

    Attributes:
        done: the monitored value of each epoch run before an
            interruption.
        timer: the ``EpochTimer`` of the epochs this process ran.
        history: Keras' ``History.history`` of those epochs.
    """

    done: list
    timer: EpochTimer
    history: dict


def fit(
    model: tf.keras.Model,
    inputs: FitInputs,
    config: TrainConfig,
    opened: OpenedRun,
    verbose: int,
    callbacks: list[tf.keras.callbacks.Callback] | None = None,
) -> FitOutcome:
    """Trains ``model`` for the opened run: afresh, from an interrupted
    run's backup, or not at all when the interrupted run had finished
    training (``finished_fit``: its best epoch's weights are loaded).

    Early stopping on the validation NDCG at the first of ``metric_ks``
    restores the best epoch's weights.
    """
    monitor = f"val_ndcg@{opened.model_config.metric_ks[0]}"
    done = finished_fit(config, opened, monitor)
    if done:
        # Training had ended before the interruption (in the evaluation or
        # the saving): its best weights are evaluated, not trained over.
        _log(
            verbose,
            f"The interrupted run had finished training ({len(done)} "
            "epochs): evaluating its best epoch",
        )
        load_weights(model, weights_path(best_checkpoint(opened.run_dir)))
        return FitOutcome(done, EpochTimer(), {})
    check_backup(opened)
    done, timer, run_callbacks = fit_callbacks(config, opened, monitor, verbose)
    if isinstance(inputs.train, tf.data.Dataset):
        replay_shuffles(inputs.train, len(done))
    # The datasets shuffle themselves: Keras 3 warns that its default
    # shuffle=True is ignored for them (tf-keras ignores it silently).
    keras_3 = {"shuffle": False} if keras_in_use() != TF_KERAS else {}
    history = model.fit(
        inputs.train,
        steps_per_epoch=inputs.steps_per_epoch,
        validation_data=inputs.validation,
        validation_steps=inputs.validation_steps,
        epochs=config.epochs,
        callbacks=[*run_callbacks, *(callbacks or [])],
        verbose=verbose,
        **keras_3,
    ).history
    return FitOutcome(done, timer, history)


def check_backup(opened: OpenedRun) -> None:
    """Refuses to resume from a backup that cannot be read whole.

    A kill never leaves one (TensorFlow writes a checkpoint aside and
    renames it into place), but a power loss or a failing disk may cut
    short what had not reached the disk: ``BackupAndRestore`` would then
    fail with TensorFlow's error, or start over from epoch 0 under the
    history of the epochs before.

    Raises:
        RunDirectoryError: a checkpoint of ``backup/`` is unreadable; the
            message names it and ``--overwrite``.
    """
    if not resumes_from_backup(opened):
        return
    if keras_in_use() != TF_KERAS:
        # Keras 3's backup: .weights.h5 files and the epoch in JSON,
        # written in place; a failed write's state is settled, the rest
        # named.
        backup = backup_directory(opened.run_dir)
        problem = settle_keras3_backup(backup)
        if problem is not None:
            _refuse_backup(opened, backup, problem)
        return
    for root, _, files in os.walk(backup_directory(opened.run_dir)):
        if "checkpoint" not in files:
            continue
        try:
            latest = tf.train.latest_checkpoint(root)
            if latest is None:
                raise ValueError("its 'checkpoint' file names no checkpoint")
            reader = tf.train.load_checkpoint(latest)
            for name in reader.get_variable_to_shape_map():
                reader.get_tensor(name)
        except (tf.errors.OpError, ValueError, IndexError) as error:
            # IndexError: TensorFlow's reader of a data file cut short.
            reason = str(getattr(error, "message", error)).splitlines()[0]
            _refuse_backup(opened, root, reason)


def _refuse_backup(opened: OpenedRun, where: str, reason: str) -> None:
    """Raises the ``RunDirectoryError`` of a backup that cannot be read."""
    raise RunDirectoryError(
        f"{opened.run_dir} cannot be resumed: the state it resumes "
        f"from, in {where}, cannot be read ({reason}). A power loss "
        "or a failing disk cut it short. Pass --overwrite to train "
        "the run afresh, or choose another --name."
    ) from None


def replay_shuffles(train: tf.data.Dataset, epochs: int) -> None:
    """Draws the shuffle orders of the ``epochs`` run before an
    interruption, so that the resumed epochs read the training data in the
    order an uninterrupted run reads it.

    Each pass over ``train`` (Keras starts one per epoch) draws the next
    order from the dataset's seeded generators: tf.data's reshuffling
    ``shuffle`` ops, or the NumPy generator of length bucketing, which
    runs when the first batch is read. Reading one batch of each skipped
    pass advances both as the skipped epochs did; it costs a shuffle
    buffer's fill per skipped epoch (measured: about 3 s for 982,089 rows
    of 200 ids, ml-1m's training examples without windows). Dropout
    masks and sampled negatives (TensorFlow's stateful random ops) are
    drawn afresh, so a resumed run with them is another draw of the same
    run, not a bit-identical one (docs/run-directories.md#resuming).
    """
    for _ in range(epochs):
        next(iter(train))


def _log(verbose: int, message: str) -> None:
    if verbose:
        print(message, flush=True)
