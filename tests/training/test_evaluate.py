"""training.evaluate: a run's metrics, and the sampled and seen-excluded
protocols (the users' earlier items, the sampled ranks)."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from tests.run_helpers import tiny_config
from tfrec_tricks.data.in_memory_dataset import prepare
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.training.evaluate import (
    SeenItems,
    format_results,
    sampled_metrics,
    seen_excluded_metrics,
    seen_items,
)
from tfrec_tricks.training.persistence import load_model
from tfrec_tricks.training.run_training import train
from tfrec_tricks.training.training_data import load_training_data


@pytest.fixture(scope="module")
def table():
    return synthetic.generate(num_users=40, num_items=50, seed=3).interactions


@pytest.mark.parametrize("max_len", [2, 50])
def test_seen_items_are_the_items_before_the_validation_target(table, max_len):
    data = prepare(table, max_len=max_len)
    sequences = user_sequences(table.users, table.items, table.timestamps)
    seen = seen_items(make_dataset(data.train, 7, shuffle=True, seed=0))
    checked = 0
    for user in range(sequences.num_users):
        start = sequences.starts[user]
        end = sequences.train_ends[user] + 1  # positions 0 .. train end
        if end < 2:
            continue
        items = sequences.items[start : start + end]
        np.testing.assert_array_equal(seen[user], np.unique(items))
        checked += 1
    assert checked > 30


def test_seen_items_lookup_of_an_unknown_user_is_empty():
    seen = SeenItems(np.array([3]), np.array([5]))
    assert seen[2].tolist() == [] and seen[3].tolist() == [5]


class TargetFirst(tf.keras.Model):
    """Scores each batch's target above everything; the rest by item id."""

    def call(self, batch, training=False):
        num_items = 30
        scores = tf.tile(
            tf.range(num_items, dtype=tf.float32)[None, :],
            [tf.shape(batch["target"])[0], 1],
        )
        hot = tf.one_hot(batch["target"], num_items, on_value=100.0)
        return scores + hot


def test_sampled_metrics_rank_the_target_among_the_negatives():
    batch = {
        "user": np.array([0, 1], np.int32),
        "history": np.array([[4, 5], [6, 0]], np.int32),
        "target": np.array([7, 3], np.int32),
    }
    batches = tf.data.Dataset.from_tensors(batch)
    seen = SeenItems(np.array([0, 1]), np.array([1, 2]))
    perfect = sampled_metrics(TargetFirst(), batches, seen, 10, seed=0)
    assert perfect["hr@10"] == 1.0 and perfect["ndcg@10"] == 1.0

    class TargetLast(TargetFirst):
        def call(self, batch, training=False):
            return -super().call(batch, training)

    worst = sampled_metrics(TargetLast(), batches, seen, 10, seed=0)
    assert worst["hr@10"] == 0.0


class ScoresAll(tf.keras.Model):
    """Scores item i as ``scores[i]`` for every row."""

    def __init__(self, scores):
        super().__init__()
        self.scores = tf.constant(scores, tf.float32)

    def call(self, batch, training=False):
        return tf.tile(self.scores[None], [tf.shape(batch["target"])[0], 1])


@pytest.mark.parametrize("num_negatives", [5, 28, 29, 100])
def test_sampled_metrics_never_below_full_ranking(num_negatives):
    # 29 items; the target scores 4th-best overall. With N at or above
    # what a user has left, each example is ranked against all of it.
    scores = np.linspace(1.0, 0.0, 30)
    scores[0] = 9.0  # padding
    batch = {
        "user": np.arange(4, dtype=np.int32),
        "history": np.array([[1, 2], [5, 0], [9, 10], [1, 0]], np.int32),
        "target": np.array([4, 4, 4, 4], np.int32),
    }
    batches = tf.data.Dataset.from_tensors(batch)
    seen = SeenItems(np.arange(4), np.array([3, 3, 3, 6]))
    notes = []
    sampled = sampled_metrics(
        ScoresAll(scores), batches, seen, num_negatives, 0, (3,), notes.append
    )
    # Full rank 4 (full HR@3 = 0); every user has seen an item above the
    # target, so its sampled rank is at most 3, whatever N.
    assert sampled["hr@3"] == 1.0
    assert all(0.0 <= v <= 1.0 for v in sampled.values())
    if num_negatives >= 26:
        assert notes and "ranked against all of those" in notes[0]
    else:
        assert not notes


def test_seen_excluded_metrics_rank_every_seen_item_last():
    # Items 1..9 score 9..1: item 1 is best. Each user's seen items (from
    # training and from the history) drop below every unseen item.
    scores = np.array([99.0, 9, 8, 7, 6, 5, 4, 3, 2, 1])
    batch = {
        "user": np.array([0, 1, 2], np.int32),
        "history": np.array([[1, 2], [3, 0], [5, 0]], np.int32),
        "target": np.array([[4], [4], [5]], np.int32),
    }
    batches = tf.data.Dataset.from_tensors(batch)
    seen = SeenItems(np.array([0, 1, 1]), np.array([3, 1, 2]))
    plain = seen_excluded_metrics(
        ScoresAll(scores), batches, SeenItems(np.zeros(0), np.zeros(0)),
        (1, 3),
    )  # fmt: skip
    excluded = seen_excluded_metrics(ScoresAll(scores), batches, seen, (1, 3))
    # User 0: 1, 2, 3 seen -> target 4 first. User 1: 1, 2, 3 seen -> 4
    # first. User 2: the target 5 is itself seen (a repeat): last.
    assert excluded["hr@1"] == pytest.approx(2 / 3)
    # With only the history excluded, 3 stays above 4 for user 0, and
    # 1 and 2 for user 1.
    assert plain["hr@1"] == 0.0
    assert plain["hr@3"] == pytest.approx(2 / 3)


@pytest.mark.slow
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
    from tfrec_tricks.data.tf_data_pipeline import make_dataset
    from tfrec_tricks.training.training_data import prepare_in_memory

    _, data = prepare_in_memory(tiny_config(tmp_path, epochs=1))
    evaluated = result.model.evaluate(
        make_dataset(data.test, 7), return_dict=True, verbose=0
    )
    assert result.metrics["test"] == pytest.approx(
        {name: evaluated[name] for name in result.metrics["test"]}, abs=1e-5
    )
    saved = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert saved["test_by_target"] == split


@pytest.mark.slow
@pytest.mark.parametrize("encoder", ["gru4rec", "sasrec", "hstu"])
def test_bucketed_evaluation_gives_the_metrics_of_fixed_batches(
    tmp_path, encoder
):
    # The encoders are causal and the batch is cut to its longest history,
    # so how examples are grouped into batches cannot change any score.
    from tfrec_tricks.data.tf_data_pipeline import make_dataset
    from tfrec_tricks.training.training_data import prepare_in_memory

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


@pytest.mark.slow
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


@pytest.mark.slow
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
    # The test targets by popularity weight back into the seen-excluded
    # test metrics.
    groups = metrics["test_seen_excluded_by_popularity"]
    assert sum(g["share"] for g in groups.values()) == pytest.approx(1.0)
    weighted = sum(g["share"] * g.get("ndcg@10", 0) for g in groups.values())
    assert weighted == pytest.approx(
        metrics["test_seen_excluded"]["ndcg@10"], abs=1e-9
    )
    assert "training users," in format_results(metrics, "run")
    # The tiny run's head keeps the history: its full ranking is the plain one.
    assert "test_history_kept" not in metrics


@pytest.mark.slow
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
