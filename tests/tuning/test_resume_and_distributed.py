"""A killed search resumes; chief/worker distributed search (processes)."""

import glob
import json
import os
import time

import pytest
import tensorflow as tf
from tuning_helpers import COMPILE, FIXED, TINY_CLI, cli, free_port

from tests.keras_env import KERAS3
from tests.run_helpers import tiny_config
from tfrec_tricks.tuning import (
    SequentialRetrievalHyperModel,
    import_keras_tuner,
)
from tfrec_tricks.tuning.search import SearchOptions, run_search

keras_tuner = import_keras_tuner()


def _trials(search_dir):
    """{trial_id: (status, score)} from KerasTuner's trial files."""
    result = {}
    pattern = os.path.join(search_dir, "search", "trial_*", "trial.json")
    for path in glob.glob(pattern):
        try:
            with open(path) as handle:
                trial = json.load(handle)
        except (OSError, json.JSONDecodeError):  # being written
            continue
        result[trial["trial_id"]] = (trial["status"], trial["score"])
    return result


def _finish(process, timeout):
    try:
        output, _ = process.communicate(timeout=timeout)
    except Exception:
        process.kill()
        output, _ = process.communicate()
        raise AssertionError(
            f"did not finish in {timeout} s:\n{output[-3000:]}"
        )
    return output


@pytest.mark.slow
def test_killed_search_resumes_without_redoing_trials(tmp_path):
    args = [*TINY_CLI, "--output-dir", str(tmp_path)]
    search_dir = tmp_path / "synthetic"
    first = cli(args, cwd=tmp_path)
    deadline = time.monotonic() + 240
    # KerasTuner writes a trial's COMPLETED status, then the tuner's own
    # file that a rerun reloads: killed between the two, there is nothing
    # to reload yet. Wait for both.
    tuner_file = search_dir / "search" / "tuner0.json"
    while time.monotonic() < deadline:
        statuses = {s for s, _ in _trials(search_dir).values()}
        if "COMPLETED" in statuses and tuner_file.exists():
            break
        if first.poll() is not None:
            break
        time.sleep(0.2)
    first.kill()
    output, _ = first.communicate()
    done = {t: v for t, v in _trials(search_dir).items() if v[0] == "COMPLETED"}
    assert done, output[-3000:]
    assert len(done) < 4, "the search finished before it could be killed"
    stamps = {
        t: os.path.getmtime(search_dir / "search" / f"trial_{t}" / "trial.json")
        for t in done
    }

    second = cli(args, cwd=tmp_path)
    output = _finish(second, 400)
    assert second.returncode == 0, output[-3000:]
    assert "Reloading Tuner" in output
    trials = _trials(search_dir)
    assert len(trials) == 4
    assert {s for s, _ in trials.values()} == {"COMPLETED"}, trials
    for trial_id, (status, score) in done.items():
        # Not redone: same score, trial file untouched.
        assert trials[trial_id] == (status, score)
        path = search_dir / "search" / f"trial_{trial_id}" / "trial.json"
        assert os.path.getmtime(path) == stamps[trial_id]
    assert (search_dir / "best_config.json").is_file()
    assert "(chosen)" in (search_dir / "selection.md").read_text()


@pytest.mark.slow
def test_distributed_chief_and_two_workers(tmp_path):
    pytest.importorskip(
        "grpc", reason="KerasTuner's distributed mode needs grpcio"
    )
    port = str(free_port())
    args = [*TINY_CLI, "--output-dir", str(tmp_path)]
    env = {"KERASTUNER_ORACLE_IP": "127.0.0.1", "KERASTUNER_ORACLE_PORT": port}
    chief = cli(args, env={**env, "KERASTUNER_TUNER_ID": "chief"}, cwd=tmp_path)
    workers = [
        cli(args, env={**env, "KERASTUNER_TUNER_ID": f"tuner{i}"}, cwd=tmp_path)
        for i in range(2)
    ]
    try:
        outputs = [_finish(worker, 600) for worker in workers]
        chief_output = _finish(chief, 300)
    finally:
        for process in (chief, *workers):
            if process.poll() is None:
                process.kill()
    for process, output in zip((*workers, chief), (*outputs, chief_output)):
        assert process.returncode == 0, output[-3000:]
    trials = _trials(tmp_path / "synthetic")
    assert len(trials) == 4
    assert {s for s, _ in trials.values()} == {"COMPLETED"}, trials
    # Both workers ran trials; the chief only served the oracle.
    for output in outputs:
        assert "val_ndcg@10" in output and "Worker finished" in output
    assert (tmp_path / "synthetic" / "best_config.json").is_file()
    assert (tmp_path / "synthetic" / "trials.md").is_file()
    # The chief retrained the defaults and the best trial after the search.
    assert "Retraining 2 configurations" in chief_output
    assert (tmp_path / "synthetic" / "selection.md").is_file()


class _StopTrial(tf.keras.callbacks.Callback):
    """Interrupts the search (as Ctrl-C would) at the end of the first
    epoch of the ``nth`` trial this process trains. KerasTuner gives each
    trial a deep copy of the callbacks: the count is the class's."""

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


def _narrow_space(data):
    """Every setting fixed at its default but the learning rate: the first
    trial's (the defaults of this space: 1e-2, the first value) and two
    that learn nothing, so the defaults win Hyperband's first round and
    are trained again, longer, in its second."""
    hp = keras_tuner.HyperParameters()
    SequentialRetrievalHyperModel(data, fixed=FIXED).declare(hp)
    narrow = keras_tuner.HyperParameters()
    for h in hp.space:
        if h.name not in FIXED and h.name != "learning_rate":
            narrow.Fixed(h.name, h.default)
    narrow.Choice("learning_rate", [1e-2, 1e-9, 2e-9])
    return narrow


def _tiny_search(folder, hyperparameters, callbacks=()):
    config = tiny_config(".", epochs=3, name="search", model=dict(FIXED))
    options = SearchOptions(
        tuner="hyperband",
        max_trials=4,
        output_dir=str(folder),
        hyperparameters=hyperparameters,
        verbose=0,
        compile_options=COMPILE,
        retrain_top=0,
        callbacks=list(callbacks),
    )
    return run_search(config, options)


@pytest.mark.slow
@pytest.mark.skipif(
    KERAS3,
    reason="tf-keras' numbers: the defaults win Hyperband's first round "
    "(Keras 3: tests/tuning/test_search_keras.py resumes as uninterrupted)",
)
def test_resumed_search_scores_the_defaults_as_an_uninterrupted_one(
    tmp_path, data
):
    space = _narrow_space(data)
    whole = _tiny_search(tmp_path / "whole", space)
    scores = {row["trial_id"]: row["score"] for row in whole.trials}
    assert len(scores) == 4
    # Hyperband's second round trains the best of the first (the
    # defaults, trial 0) again for 3 epochs: the defaults re-scored.
    continued = max(scores)
    last = next(r for r in whole.trials if r["trial_id"] == continued)
    assert last["hyperparameters"]["learning_rate"] == 1e-2

    # The same search, interrupted in that second round and resumed in a
    # process that has trained fewer models by then.
    with pytest.raises(KeyboardInterrupt):
        _tiny_search(tmp_path / "resumed", space, [_StopTrial(4)])
    resumed = _tiny_search(tmp_path / "resumed", space)
    again = {row["trial_id"]: row["score"] for row in resumed.trials}
    assert again[continued] == pytest.approx(scores[continued], abs=1e-6)
    assert again == pytest.approx(scores, abs=1e-6)
