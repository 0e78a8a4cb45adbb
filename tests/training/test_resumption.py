"""training.resumption: resuming an interrupted run, reusing a finished one."""

import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import Interrupt, tiny_config
from tfrec_tricks.training.evaluate import format_results
from tfrec_tricks.training.run_training import train
from tfrec_tricks.training.train_config import TrainConfig

pytestmark = pytest.mark.slow


class Scramble(tf.keras.callbacks.Callback):
    """Replaces the weights with noise before validation: worse epochs."""

    def on_test_begin(self, logs=None):
        for weight in self.model.trainable_weights:
            weight.assign(tf.random.normal(weight.shape, seed=1))


def test_interrupted_run_resumes_from_last_completed_epoch(tmp_path):
    config = tiny_config(tmp_path)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=1)])
    run_dir = tmp_path / "run"
    assert (run_dir / "backup").is_dir()  # the checkpoint survived
    result = train(config, verbose=0)
    # Two epochs were done before the interruption: only the third runs,
    # and the run reports all three.
    assert len(result.history["loss"]) == 1
    assert result.metrics["epochs_run"] == 3
    with open(run_dir / "history.csv") as handle:
        epochs = [int(row["epoch"]) for row in csv.DictReader(handle)]
    assert epochs == [0, 1, 2]
    # The backup is emptied once the run completes.
    assert not list((run_dir / "backup").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["test"]["ndcg@10"] == result.metrics["test"]["ndcg@10"]


def test_resumed_run_keeps_the_best_epoch_from_before_the_interruption(
    tmp_path,
):
    config = tiny_config(tmp_path, epochs=9, patience=2, learning_rate=0.02)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=2)])
    run_dir = tmp_path / "run"
    before = _val_ndcg(run_dir)
    best_epoch = int(np.argmax(before))
    result = train(config, verbose=0, callbacks=[Scramble()])
    after = _val_ndcg(run_dir)
    assert after[:3] == before
    assert max(after[3:]) < max(before)  # the scrambled epochs are worse
    # The wait continued from the best epoch before the interruption...
    assert len(after) == best_epoch + config.patience + 1
    assert result.metrics["epochs_run"] == len(after)
    # ...and its weights are the final model's (from checkpoints/best,
    # which the worse resumed epochs did not overwrite).
    assert result.metrics["validation"]["ndcg@10"] == pytest.approx(
        max(before), abs=1e-6
    )


@pytest.mark.parametrize("stopped_early", [False, True])
def test_a_run_interrupted_after_its_fit_is_evaluated_not_retrained(
    tmp_path, monkeypatch, stopped_early
):
    # Interrupted while evaluating: fit had returned and emptied backup/.
    overrides = {"epochs": 9, "patience": 1} if stopped_early else {}
    config = tiny_config(tmp_path, **overrides)
    from tfrec_tricks.training import run_training

    evaluate = run_training.evaluate_run

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(run_training, "evaluate_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0)
    run_dir = tmp_path / "run"
    assert not list((run_dir / "backup").iterdir())
    epochs = _val_ndcg(run_dir)
    assert stopped_early == (len(epochs) < config.epochs)
    best = (run_dir / "checkpoints" / "best.index").read_bytes()
    monkeypatch.setattr(run_training, "evaluate_run", evaluate)
    result = train(config, verbose=0)
    # Nothing was trained again: no epoch, the same history and best
    # weights, and the model evaluated is the best epoch's.
    assert result.history == {}
    assert _val_ndcg(run_dir) == epochs
    assert (run_dir / "checkpoints" / "best.index").read_bytes() == best
    assert result.metrics["epochs_run"] == len(epochs)
    assert result.metrics["validation"]["ndcg@10"] == pytest.approx(
        max(epochs), abs=1e-6
    )
    assert json.loads((run_dir / "run.json").read_text())["status"] == (
        "finished"
    )
    # No epoch was timed in this process: the summary says so by omission.
    assert result.metrics["seconds_per_epoch_median"] is None
    summary = format_results(result.metrics, str(run_dir))
    assert f"{len(epochs)} epochs, " in summary and "s/epoch" not in summary


def test_a_run_interrupted_during_its_fit_still_resumes_training(tmp_path):
    # The history of an unfinished fit does not meet the stopping rule.
    config = tiny_config(tmp_path, epochs=4)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=1)])
    result = train(config, verbose=0)
    assert len(result.history["loss"]) == 2


@pytest.mark.parametrize("source", ["memory", "bucketed", "prepared"])
def test_a_resumed_run_trains_as_the_uninterrupted_run(tmp_path, source):
    # Without dropout the only randomness after the weights' initialisation
    # is the data's order: the resumed epochs read the orders of the epochs
    # they replace, so the run ends bit-identical to an uninterrupted one.
    settings = dict(
        epochs=4, patience=10, model={"embedding_dim": 8, "dropout": 0.0}
    )
    if source == "bucketed":
        settings["bucket_by_length"] = True
    if source == "prepared":
        from tfrec_tricks.training.prepare_dataset import prepare_dataset

        settings["prepared"] = prepare_dataset(
            tiny_config(tmp_path), str(tmp_path / "prepared"), verbose=False
        )
    whole = train(tiny_config(tmp_path, name="whole", **settings), verbose=0)
    config = tiny_config(tmp_path, name="resumed", **settings)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=1)])
    resumed = train(config, verbose=0)
    assert _losses(tmp_path / "resumed") == _losses(tmp_path / "whole")
    assert resumed.metrics["test"] == whole.metrics["test"]


def _losses(run_dir) -> list:
    with open(run_dir / "history.csv") as handle:
        return [row["loss"] for row in csv.DictReader(handle)]


def _val_ndcg(run_dir) -> list:
    with open(run_dir / "history.csv") as handle:
        return [float(row["val_ndcg@10"]) for row in csv.DictReader(handle)]


def test_rerun_after_completion_reuses_the_run(tmp_path, monkeypatch):
    config = tiny_config(tmp_path, epochs=1)
    first = train(config, verbose=0)
    before = sorted(p.name for p in (tmp_path / "run").iterdir())

    def no_fit(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(tf.keras.Model, "fit", no_fit)
    again = train(config, verbose=0)
    assert again.metrics == first.metrics
    assert again.history["loss"] == pytest.approx(first.history["loss"])
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == before
    monkeypatch.undo()
    # --overwrite trains afresh: a new, one-epoch history.
    train(config, verbose=0, overwrite=True)
    with open(tmp_path / "run" / "history.csv") as handle:
        assert [row["epoch"] for row in csv.DictReader(handle)] == ["0"]


def test_a_later_option_recorded_at_its_default_is_the_same_run():
    # A run that recorded `feature_fusion: "sum"` explicitly (before sum
    # was the default) is the run that leaves it out: both fingerprints
    # compare equal once as trained.
    from tfrec_tricks.training.resumption import (
        as_trained_fingerprint,
        fingerprint,
    )

    config = TrainConfig(epochs=1, model={"encoder": "gru4rec"})
    current = fingerprint(config, num_items=10, data=[])
    recorded = {
        **current,
        "model": {**current["model"], "feature_fusion": "sum"},
        "train": {
            **current["train"],
            "model": {**current["train"]["model"], "feature_fusion": "sum"},
        },
    }
    assert recorded != current
    assert as_trained_fingerprint(recorded) == as_trained_fingerprint(current)
    concat = {
        **current,
        "model": {**current["model"], "feature_fusion": "concat"},
    }
    assert as_trained_fingerprint(concat) != as_trained_fingerprint(current)


def test_model_options_given_at_their_default_are_the_same_run():
    # A run repeated from its config.json gives every model field; one
    # started with flags gives those it changed: the same run.
    import dataclasses

    from tfrec_tricks.config_fields import field_default
    from tfrec_tricks.models.config import ModelConfig
    from tfrec_tricks.training.model_options import DERIVED_MODEL_FIELDS
    from tfrec_tricks.training.resumption import (
        as_trained_fingerprint,
        fingerprint,
    )
    from tfrec_tricks.training.run_directory import differences

    def compared(model):
        config = TrainConfig(epochs=1, model=model)
        return as_trained_fingerprint(fingerprint(config, 500, data=[]))

    every = {
        field.name: field_default(ModelConfig, field.name)
        for field in dataclasses.fields(ModelConfig)
        if field.name not in DERIVED_MODEL_FIELDS
    }
    flags = {"embedding_dim": 8, "head": "cpr"}
    assert compared(flags) == compared({**every, **flags})
    # A value other than the default is another run, named once per part.
    assert differences(
        compared(flags), compared({**flags, "dropout": 0.3})
    ) == [
        "model.dropout: 0.2 -> 0.3",
        'train.model.dropout: "<unset>" -> 0.3',
    ]
