"""A search under either Keras: its trials, checkpoints, resumption,
selection and record.

These tests run under tf-keras (the default) and under Keras 3
(``TF_USE_LEGACY_KERAS=0``, in CI's Keras 3 job): a tiny search (random,
two trials of one epoch) trains its trials and keeps their checkpoints in
the format of the Keras in use, reloads its best model, retrains its
candidates as runs of that Keras, records a Keras 3 search's Keras in
``search.json``; an interrupted search resumes without redoing its
completed trial and scores as the uninterrupted one; and a search of the
other Keras (started in a process of its own) is refused, naming both.
"""

import json
import os
import signal
import time

import pytest
import tensorflow as tf
from tuning_helpers import COMPILE, FIXED, TINY_FLAGS, cli

from tests.keras_env import KERAS3
from tests.run_helpers import run_in_process, snapshot, tiny_config
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.training import run_keras
from tfrec_tricks.tuning import (
    SequentialRetrievalHyperModel,
    import_keras_tuner,
)
from tfrec_tricks.tuning.search import SearchOptions, run_search
from tfrec_tricks.tuning.search_directory import read_search_file
from tfrec_tricks.tuning.trial_batches import validation_batches

keras_tuner = import_keras_tuner()

pytestmark = pytest.mark.slow

THIS = "keras-3" if KERAS3 else "tf-keras"
OTHER = "tf-keras" if KERAS3 else "keras-3"
NAMES = {"tf-keras": "tf-keras (Keras 2)", "keras-3": "Keras 3"}
# A trial's best checkpoint, in its Keras' format (KerasTuner's names).
CHECKPOINT = {
    "tf-keras": "checkpoint.index",
    "keras-3": "checkpoint.weights.h5",
}
# A finished run's final weights (the retrained candidates are runs).
RUN_WEIGHTS = {
    "tf-keras": "model/weights.index",
    "keras-3": "model/weights.weights.h5",
}


def _space(data):
    """Every setting at its default but the learning rate: two trials,
    the defaults' and one other, as cheap as a trial gets."""
    hp = keras_tuner.HyperParameters()
    SequentialRetrievalHyperModel(data, fixed=FIXED).declare(hp)
    narrow = keras_tuner.HyperParameters()
    for h in hp.space:
        if h.name not in FIXED and h.name != "learning_rate":
            narrow.Fixed(h.name, h.default)
    narrow.Choice("learning_rate", [1e-2, 3e-3])
    return narrow


def _search(folder, space, retrain_top=1, callbacks=()):
    config = tiny_config(".", epochs=1, name="search", model=dict(FIXED))
    options = SearchOptions(
        tuner="random",
        max_trials=2,
        output_dir=str(folder),
        hyperparameters=space,
        verbose=0,
        compile_options=COMPILE,
        retrain_top=retrain_top,
        seeds=1,
        callbacks=list(callbacks),
    )
    return run_search(config, options)


def _scores(result) -> dict:
    return {row["trial_id"]: row["score"] for row in result.trials}


@pytest.fixture(scope="module")
def whole(tmp_path_factory, data):
    """The tiny search, run to its end (selection included)."""
    return _search(tmp_path_factory.mktemp("whole"), _space(data))


def test_the_search_trains_checkpoints_and_selects_under_this_keras(whole):
    from keras_tuner.src.backend import config as tuner_config

    # KerasTuner drives the Keras in use: its multi-backend path under
    # Keras 3, its tf.keras path under tf-keras.
    assert bool(tuner_config.multi_backend()) == KERAS3
    search_dir = whole.output_dir
    scores = _scores(whole)
    assert len(scores) == 2
    assert {row["status"] for row in whole.trials} == {"COMPLETED"}
    for trial_id in scores:
        trial_dir = whole.tuner.get_trial_dir(trial_id)
        assert os.path.isfile(os.path.join(trial_dir, CHECKPOINT[THIS]))
        assert not os.path.exists(os.path.join(trial_dir, CHECKPOINT[OTHER]))
    # The best model, reloaded from its checkpoint, scores as its trial.
    (model,) = whole.tuner.get_best_models(1)
    assert isinstance(model, SequentialRetrievalModel)
    assert isinstance(model, tf.keras.Model)
    validation = validation_batches(
        whole.hypermodel.search_data()["validation_data"],
        whole.hypermodel.bucket_by_length,
    )
    metrics = model.evaluate(validation, return_dict=True, verbose=0)
    assert metrics["ndcg@10"] == pytest.approx(max(scores.values()), abs=1e-5)
    # The candidates are retrained as runs of this Keras.
    assert whole.selection[0]["label"] == "defaults"
    for name in os.listdir(os.path.join(search_dir, "selection")):
        run_dir = os.path.join(search_dir, "selection", name)
        with open(os.path.join(run_dir, "run.json")) as handle:
            fingerprint = json.load(handle)["fingerprint"]
        assert run_keras.recorded_keras(fingerprint) == THIS
        assert os.path.isfile(os.path.join(run_dir, RUN_WEIGHTS[THIS]))
    for name in ("best_config.json", "selection.md", "trials.md"):
        assert os.path.isfile(os.path.join(search_dir, name)), name
    assert whole.best_config["model"]["embedding_dim"] == FIXED["embedding_dim"]


def test_a_keras_3_search_records_its_keras(whole):
    fingerprint = read_search_file(whole.output_dir)["fingerprint"]
    assert run_keras.recorded_keras(fingerprint) == THIS
    # A tf-keras search records nothing: its fingerprint is the one from
    # before Keras 3 searches existed (tests/golden).
    assert ("keras" in fingerprint) == KERAS3


class _StopTrial(tf.keras.callbacks.Callback):
    """Interrupts the search (as Ctrl-C would) at the end of the first
    epoch of the ``nth`` trial this process trains (KerasTuner gives each
    trial a deep copy of the callbacks: the count is the class's)."""

    trained = 0

    def __init__(self, nth):
        super().__init__()
        self.nth = nth
        type(self).trained = 0

    def on_train_begin(self, logs=None):
        type(self).trained += 1

    def on_epoch_end(self, epoch, logs=None):
        if type(self).trained == self.nth:
            raise KeyboardInterrupt


def test_an_interrupted_search_resumes_as_the_uninterrupted_one(
    tmp_path, data, whole
):
    space = _space(data)
    with pytest.raises(KeyboardInterrupt):
        _search(tmp_path, space, retrain_top=0, callbacks=[_StopTrial(2)])
    project = os.path.join(tmp_path, "search", "search")
    done = os.path.join(project, "trial_0", "trial.json")
    with open(done) as handle:
        assert json.load(handle)["status"] == "COMPLETED"
    stamp = os.path.getmtime(done)

    resumed = _search(tmp_path, space, retrain_top=0)
    assert os.path.getmtime(done) == stamp  # the completed trial kept
    assert {row["status"] for row in resumed.trials} == {"COMPLETED"}
    assert _scores(resumed) == pytest.approx(_scores(whole), abs=1e-6)
    for trial_id in _scores(resumed):
        trial_dir = resumed.tuner.get_trial_dir(trial_id)
        assert os.path.isfile(os.path.join(trial_dir, CHECKPOINT[THIS]))


def test_a_search_of_the_other_keras_is_refused_naming_both(tmp_path, capsys):
    args = ["tune", *TINY_FLAGS, "--encoder", "gru4rec", "--tuner", "random"]
    args += ["--epochs", "1", "--max-trials", "2", "--retrain-top", "0"]
    args += ["--output-dir", str(tmp_path), "--name", "search", "--quiet"]
    # The other Keras' search, interrupted (Ctrl-C) once it has started:
    # search.json is written before its first trial.
    other = {"TF_USE_LEGACY_KERAS": "1" if KERAS3 else "0"}
    started = cli(args, env=other, cwd=tmp_path)
    search_file = tmp_path / "search" / "search.json"
    deadline = time.monotonic() + 180
    while not search_file.exists() and started.poll() is None:
        assert time.monotonic() < deadline, "the other search did not start"
        time.sleep(0.2)
    started.send_signal(signal.SIGINT)
    output, _ = started.communicate(timeout=120)
    assert search_file.exists(), output[-3000:]
    recorded = json.loads(search_file.read_text())["fingerprint"]
    assert run_keras.recorded_keras(recorded) == OTHER

    before = snapshot(tmp_path)
    code, output = run_in_process(capsys, *args)
    assert code == 1, output[-3000:]
    assert f"holds a search trained under {NAMES[OTHER]}" in output
    assert f"this process uses {NAMES[THIS]}" in output
    assert "cannot be resumed under another Keras" in output
    assert snapshot(tmp_path) == before  # nothing written, nothing lost
