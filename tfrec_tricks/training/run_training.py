"""Training runs: data -> model.fit -> metrics, all saved in a run directory.

``train`` is the whole run, one phase per module: open the run directory
(``resumption``: a new run, an interrupted one to resume, a finished one
to reuse, another one to refuse), load the data (``training_data``) and
choose the head (``head_choice``), fit (``fit``), evaluate (``evaluate``)
and save (``persistence``).

A run directory holds ``run.json`` (the run's fingerprint, then its
manifest: see ``tfrec_tricks.training.run_directory``), ``config.json``
(everything needed to repeat the run), ``vocabulary.json`` (contiguous id
-> raw id), ``history.csv`` (per epoch), ``metrics.json`` (validation and
test metrics, timings), ``checkpoints/best`` (weights of the best epoch by
validation NDCG@10), ``model/`` (the final model: config and weights, see
``persistence.load_model``), ``tensorboard/`` (per-epoch scalars and the
run's settings as HParams) and, while a run is in progress, ``backup/``:
an interrupted run resumes from it when the same command runs again, its
early stopping and best checkpoint continuing from the epochs already in
``history.csv``.
"""

import sys

import tensorflow as tf

from tfrec_tricks.errors import writes_named
from tfrec_tricks.keras_version import require_model_keras
from tfrec_tricks.output_folders import check_target, target_lock
from tfrec_tricks.training.distribution import is_chief, make_strategy
from tfrec_tricks.training.evaluate import evaluate_run
from tfrec_tricks.training.fit import build_model, fit
from tfrec_tricks.training.head_choice import with_chosen_head
from tfrec_tricks.training.persistence import (
    RunResult,
    reused_result,
    run_facts,
    save_results,
    start_run_files,
)
from tfrec_tricks.training.prepare_dataset import (
    prepared_read_lock,
    resolved_config,
)
from tfrec_tricks.training.resumption import (
    failures_recorded,
    finished_before_loading,
    open_run_directory,
    run_directory,
)
from tfrec_tricks.training.run_directory import RUN_DIRECTORY, data_identity
from tfrec_tricks.training.run_keras import check_keras_3_distribution
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import (
    data_files,
    input_paths,
    load_training_data,
)


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
    # Under tf-keras or Keras 3 (TensorFlow backend); the run records which
    # (run_keras), and the other one refuses it (docs/keras-versions.md).
    require_model_keras("tfrec_tricks.training (training runs)")
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    config = resolved_config(config)
    run_dir = run_directory(config)
    check_keras_3_distribution(config.distribute)
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
    if finished_before_loading(config, run_dir, files, overwrite):
        return reused_result(run_dir, verbose)
    config, data, head_choice = _load(config, verbose)
    opened = open_run_directory(
        config, run_dir, data, files, strategy, overwrite
    )
    if opened.action == "finished":
        return reused_result(run_dir, verbose)
    start_run_files(config, opened, data, head_choice)
    model, inputs = build_model(config, opened.model_config, data, strategy)
    outcome = fit(model, inputs, config, opened, verbose, callbacks)
    results = evaluate_run(model, inputs, data, config, verbose)
    results.update(
        run_facts(model, data, outcome.done, outcome.timer, strategy)
    )
    save_results(model, results, opened, verbose)
    return RunResult(run_dir, results, outcome.history, model)


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
    model_config = config.model_config(data.num_items, data.prepared)
    return build_model(config, model_config, data, None)


def _log(verbose: int, message: str) -> None:
    if verbose:
        print(message, flush=True)
