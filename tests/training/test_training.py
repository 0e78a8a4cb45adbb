"""Training runs: the run directory, and resuming an interrupted run."""

import csv
import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import Interrupt, tiny_config
from tfrec_tricks.training.training import (
    TrainConfig,
    format_results,
    load_model,
    train,
)
from tfrec_tricks.training.training_data import load_training_data

pytestmark = pytest.mark.slow


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


class Scramble(tf.keras.callbacks.Callback):
    """Replaces the weights with noise before validation: worse epochs."""

    def on_test_begin(self, logs=None):
        for weight in self.model.trainable_weights:
            weight.assign(tf.random.normal(weight.shape, seed=1))


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
    import tfrec_tricks.training.training as training

    evaluate = training._results

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(training, "_results", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0)
    run_dir = tmp_path / "run"
    assert not list((run_dir / "backup").iterdir())
    epochs = _val_ndcg(run_dir)
    assert stopped_early == (len(epochs) < config.epochs)
    best = (run_dir / "checkpoints" / "best.index").read_bytes()
    monkeypatch.setattr(training, "_results", evaluate)
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


def _val_ndcg(run_dir) -> list:
    with open(run_dir / "history.csv") as handle:
        return [float(row["val_ndcg@10"]) for row in csv.DictReader(handle)]


def test_test_metrics_are_split_into_repeat_and_new_targets(tmp_path):
    result = train(tiny_config(tmp_path, epochs=1), verbose=0)
    split = result.metrics["test_by_target"]
    repeat, new = split["repeat"], split["new"]
    assert repeat["share"] + new["share"] == pytest.approx(1.0)
    assert 0 < repeat["share"] < 1  # the synthetic users repeat items
    # The shares weight the two parts back into the overall metric.
    for name in ("ndcg@10", "hr@10", "mrr@10"):
        whole = repeat["share"] * repeat[name] + new["share"] * new[name]
        assert whole == pytest.approx(result.metrics["test"][name], abs=1e-5)
    # The test metrics (from the per-example ranks) are what the model's
    # own metrics give.
    from tfrec_tricks.data.pipeline import make_dataset
    from tfrec_tricks.training.training import prepare_in_memory

    _, data = prepare_in_memory(tiny_config(tmp_path, epochs=1))
    evaluated = result.model.evaluate(
        make_dataset(data.test, 7), return_dict=True, verbose=0
    )
    assert result.metrics["test"] == pytest.approx(
        {name: evaluated[name] for name in result.metrics["test"]}, abs=1e-5
    )
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["test_by_target"] == split


def test_same_seed_same_metrics(tmp_path):
    first = train(tiny_config(tmp_path / "a", epochs=1), verbose=0)
    second = train(tiny_config(tmp_path / "b", epochs=1), verbose=0)
    assert first.metrics["test"] == second.metrics["test"]


@pytest.mark.parametrize("encoder", ["gru4rec", "sasrec", "hstu"])
def test_bucketed_evaluation_gives_the_metrics_of_fixed_batches(
    tmp_path, encoder
):
    # The encoders are causal and the batch is cut to its longest history,
    # so how examples are grouped into batches cannot change any score.
    from tfrec_tricks.data.pipeline import make_dataset
    from tfrec_tricks.training.training import prepare_in_memory

    config = tiny_config(
        tmp_path,
        epochs=1,
        model={
            "embedding_dim": 8,
            "encoder": encoder,
            "head": "cpr",
            "cpr_reranker_ks": (5,),
            "cpr_mi": True,
        },
    )
    result = train(config, verbose=0)
    _, data = prepare_in_memory(config)
    metrics = {
        bucket: result.model.evaluate(
            make_dataset(data.test, 16, bucket_by_length=bucket),
            return_dict=True,
            verbose=0,
        )
        for bucket in (False, True)
    }
    for name in ("ndcg@10", "hr@10", "mrr@10"):
        assert metrics[True][name] == pytest.approx(
            metrics[False][name], abs=1e-5
        )


def test_training_without_bucketing_or_multi_step_calls(tmp_path):
    config = tiny_config(
        tmp_path, epochs=1, bucket_by_length=False, steps_per_execution=1
    )
    result = train(config, verbose=0)
    assert 0.0 <= result.metrics["test"]["ndcg@10"] <= 1.0
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["bucket_by_length"] is False
    assert saved["train"]["steps_per_execution"] == 1


def test_training_every_position_in_one_pass(tmp_path):
    config = tiny_config(
        tmp_path,
        epochs=2,
        every_position=True,
        model={"embedding_dim": 8, "encoder": "sasrec"},
    )
    result = train(config, verbose=0)
    assert result.history["loss"][-1] < result.history["loss"][0]
    assert 0.0 < result.metrics["test"]["ndcg@10"] <= 1.0
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["every_position"] is True


@pytest.mark.parametrize("encoder", ["gru4rec", "sasrec", "hstu"])
def test_training_windows_on_disk_and_in_memory(tmp_path, encoder):
    """--train-windows trains; the prepared path gives the same metrics."""
    from tfrec_tricks.training.prepare_dataset import prepare_dataset

    model = {"embedding_dim": 8, "encoder": encoder}
    memory = train(
        tiny_config(
            tmp_path, epochs=2, train_windows=True, window_stride=4, model=model
        ),
        verbose=0,
    )
    assert memory.history["loss"][-1] < memory.history["loss"][0]
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["train_windows"] is True
    assert saved["train"]["window_stride"] == 4
    prepared = prepare_dataset(
        tiny_config(tmp_path), str(tmp_path / "prepared"), verbose=False
    )
    disk = train(
        tiny_config(
            tmp_path,
            epochs=2,
            train_windows=True,
            window_stride=4,
            model=model,
            prepared=prepared,
            name="disk",
        ),
        verbose=0,
    )
    # Same rows, other shuffles: close, not equal.
    for split in ("validation", "test"):
        assert (
            abs(
                disk.metrics[split]["ndcg@10"]
                - memory.metrics[split]["ndcg@10"]
            )
            < 0.1
        )


def test_eval_negatives_reports_the_sampled_protocol_beside(tmp_path):
    config = tiny_config(tmp_path, epochs=1, eval_negatives=20)
    result = train(config, verbose=0)
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["eval_negatives"] == 20
    for split in ("validation", "test"):
        sampled, full = metrics[f"{split}_sampled"], metrics[split]
        assert set(sampled) == set(full)
        # 20 negatives are far easier than 39 other items.
        assert sampled["hr@10"] > full["hr@10"]
    assert result.metrics["test_sampled"] == metrics["test_sampled"]
    # Seeded per user and target: the same numbers again.
    again = train(dataclasses.replace(config, name="again"), verbose=0).metrics
    assert again["test_sampled"] == metrics["test_sampled"]


def test_eval_seen_excluded_reports_the_full_sort_protocol_beside(tmp_path):
    config = tiny_config(tmp_path, epochs=1, eval_seen_excluded=True)
    metrics = train(config, verbose=0).metrics
    for split in ("validation", "test"):
        excluded, full = metrics[f"{split}_seen_excluded"], metrics[split]
        assert set(excluded) == set(full)
        assert all(0.0 <= value <= 1.0 for value in excluded.values())
    # The synthetic data repeats items: ranking them last loses those hits.
    assert metrics["test_seen_excluded"] != metrics["test"]
    assert "(seen items ranked last)" in format_results(metrics, "run")
    # The tiny run's head keeps the history: its full ranking is the plain one.
    assert "test_history_kept" not in metrics


def test_a_head_that_ranks_the_history_last_reports_the_plain_ranking_too(
    tmp_path,
):
    config = tiny_config(
        tmp_path,
        epochs=1,
        eval_seen_excluded=True,
        model={"embedding_dim": 8, "head": "softmax_no_dup"},
    )
    result = train(config, verbose=0)
    metrics = result.metrics
    # The synthetic data repeats items: ranking the history last loses
    # the repeats' hits, which the plain ranking keeps.
    assert metrics["test_history_kept"] != metrics["test"]
    # The README's recipe agrees: the run's weights, loaded, with the head
    # told to keep the history before its first call, through Keras'
    # metrics.
    model = load_model(result.run_dir)
    model.head.exclude_history = False
    batches = load_training_data(config).batches("test", 512)
    again = model.evaluate(batches, return_dict=True, verbose=0)
    assert again["ndcg@10"] == pytest.approx(
        metrics["test_history_kept"]["ndcg@10"], abs=1e-6
    )
    assert "(history kept: plain ranking)" in format_results(metrics, "run")


def test_bad_budget_is_rejected():
    with pytest.raises(
        ValueError, match="epochs must be positive. Received: epochs=0"
    ):
        TrainConfig(epochs=0)
    with pytest.raises(
        ValueError,
        match="steps_per_execution must be positive. "
        "Received: steps_per_execution=0",
    ):
        TrainConfig(steps_per_execution=0)
    with pytest.raises(ValueError, match="Received: split='last'"):
        TrainConfig(split="last")


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


def test_run_directory_model_reloads_with_equal_outputs(tmp_path):
    from tfrec_tricks.data import load_source, prepare
    from tfrec_tricks.training.training import load_model

    config = tiny_config(
        tmp_path,
        epochs=1,
        model={
            "embedding_dim": 8,
            "head": "cpr",
            "cpr_reranker_ks": [5],
            "features": ["time_gap"],
            "sse_item_probability": 0.1,
        },
    )
    result = train(config, verbose=0)
    model = load_model(result.run_dir)
    data = prepare(
        load_source(
            "synthetic", synthetic_options={"num_users": 60, "num_items": 40}
        ).interactions,
        max_len=10,
    )
    batch = {k: v[:16] for k, v in data.test.as_dict().items()}
    reloaded = model(batch).numpy()
    assert reloaded.shape == (16, data.num_items)
    np.testing.assert_allclose(
        reloaded, result.model(batch).numpy(), rtol=1e-6, atol=1e-6
    )
    evaluated = model.evaluate(
        tf.data.Dataset.from_tensors(batch), return_dict=True, verbose=0
    )
    assert 0.0 <= evaluated["ndcg@10"] <= 1.0


def test_load_model_from_an_unfinished_run_says_so(tmp_path):
    from tfrec_tricks.training.training import load_model

    with pytest.raises(FileNotFoundError, match="No trained model"):
        load_model(str(tmp_path))


def test_run_writes_tensorboard_scalars_and_hparams(tmp_path):
    from tensorboard.backend.event_processing import event_accumulator

    model = {"embedding_dim": 8, "head": "cpr", "cpr_reranker_ks": [5]}
    config = dataclasses.replace(tiny_config(tmp_path, epochs=2), model=model)
    train(config, verbose=0)
    logs = tmp_path / "run" / "tensorboard"
    scalars = event_accumulator.EventAccumulator(
        str(logs / "validation"), size_guidance={"tensors": 0}
    )
    scalars.Reload()
    tags = scalars.Tags()["tensors"]
    assert "epoch_ndcg@10" in tags and "epoch_loss" in tags
    assert len(scalars.Tensors("epoch_ndcg@10")) == 2  # one per epoch
    hparams = event_accumulator.EventAccumulator(str(logs))
    hparams.Reload()
    plugin = hparams.PluginTagToContent("hparams")
    session = next(iter(plugin.values()))
    from tensorboard.plugins.hparams import plugin_data_pb2

    data = plugin_data_pb2.HParamsPluginData.FromString(session)
    values = data.session_start_info.hparams
    assert values["model.head"].string_value == "cpr"
    assert values["model.cpr_reranker_ks"].string_value == "5"
    assert values["train.seed"].number_value == 0
