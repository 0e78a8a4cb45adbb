"""Full-ranking metrics: hand-computed cases, the tie rule, the Keras metric."""

import json
import math

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.evaluation.full_ranking import (
    RankingMetric,
    full_ranking_metrics,
    metrics_by_target_kind,
    metrics_by_target_popularity,
    metrics_from_ranks,
    popularity_group_names,
    repeat_targets,
    target_ranks,
    tf_target_ranks,
)

# Column 0 is padding and has the highest score: it must never count.
# Real items 1..4 scored 0.9, 0.5, 0.1, 0.3 -> ranks 1, 2, 4, 3.
SCORES = np.array([[9.0, 0.9, 0.5, 0.1, 0.3]])


def ranks_of(targets, scores=SCORES):
    scores = np.repeat(scores, len(targets), axis=0)
    return target_ranks(scores, np.array(targets))


def test_ranks_ignore_padding_column():
    np.testing.assert_array_equal(ranks_of([1, 2, 3, 4]), [1, 2, 4, 3])


def test_rank_one():
    m = full_ranking_metrics(SCORES, np.array([1]), ks=(1, 10))
    assert m == {
        "ndcg@1": 1.0,
        "hr@1": 1.0,
        "mrr@1": 1.0,
        "ndcg@10": 1.0,
        "hr@10": 1.0,
        "mrr@10": 1.0,
    }


def test_rank_two():
    m = full_ranking_metrics(SCORES, np.array([2]), ks=(1, 2))
    assert m["hr@1"] == m["mrr@1"] == m["ndcg@1"] == 0.0
    assert m["hr@2"] == 1.0
    assert m["mrr@2"] == 0.5
    assert m["ndcg@2"] == pytest.approx(1 / math.log2(3))


def test_rank_beyond_k():
    m = full_ranking_metrics(SCORES, np.array([3]), ks=(3,))  # rank 4
    assert m == {"ndcg@3": 0.0, "hr@3": 0.0, "mrr@3": 0.0}
    m = full_ranking_metrics(SCORES, np.array([3]), ks=(4,))
    assert m["mrr@4"] == 0.25
    assert m["ndcg@4"] == pytest.approx(1 / math.log2(5))


def test_several_examples_and_ks():
    scores = np.repeat(SCORES, 3, axis=0)
    m = full_ranking_metrics(scores, np.array([1, 2, 3]), ks=(1, 2, 3, 4))
    # ranks 1, 2, 4
    assert sorted(m) == sorted(
        f"{kind}@{k}" for kind in ("ndcg", "hr", "mrr") for k in (1, 2, 3, 4)
    )
    assert m["hr@1"] == pytest.approx(1 / 3)
    assert m["ndcg@1"] == pytest.approx(1 / 3)
    assert m["hr@2"] == m["hr@3"] == pytest.approx(2 / 3)
    assert m["mrr@2"] == m["mrr@3"] == pytest.approx(0.5)
    assert m["ndcg@2"] == pytest.approx((1 + 1 / math.log2(3)) / 3)
    assert m["ndcg@3"] == m["ndcg@2"]
    assert m["hr@4"] == 1.0
    assert m["mrr@4"] == pytest.approx((1 + 0.5 + 0.25) / 3)
    assert m["ndcg@4"] == pytest.approx(
        (1 + 1 / math.log2(3) + 1 / math.log2(5)) / 3
    )
    assert all(isinstance(v, float) for v in m.values())


def test_default_k_is_ten_and_docstring_example():
    scores = np.array([[0.0, 0.9, 0.5, 0.1]])
    m = full_ranking_metrics(scores, np.array([2]))
    assert sorted(m) == ["hr@10", "mrr@10", "ndcg@10"]
    assert m["ndcg@10"] == 0.6309297535714575


def test_metrics_from_ranks():
    m = metrics_from_ranks(np.array([1, 3, 11]), ks=(10,))
    assert m["hr@10"] == pytest.approx(2 / 3)
    assert m["mrr@10"] == pytest.approx((1 + 1 / 3) / 3)
    assert m["ndcg@10"] == pytest.approx((1 + 1 / 2) / 3)


# --- ties -------------------------------------------------------------------


def test_tied_target_gets_the_worse_rank():
    scores = np.array([[0.0, 0.5, 0.9, 0.5, 0.5, 0.1]])
    # Item 1: one item higher (0.9), two others tied -> rank 4.
    np.testing.assert_array_equal(ranks_of([1, 3, 4], scores), [4, 4, 4])
    np.testing.assert_array_equal(ranks_of([2, 5], scores), [1, 5])
    m = full_ranking_metrics(scores, np.array([1]), ks=(3, 4))
    assert m["hr@3"] == 0.0 and m["hr@4"] == 1.0


def test_all_equal_scores_rank_last():
    n = 7
    scores = np.zeros((n - 1, n))
    ranks = target_ranks(scores, np.arange(1, n))
    np.testing.assert_array_equal(ranks, n - 1)
    m = full_ranking_metrics(scores, np.arange(1, n), ks=(n - 2,))
    assert m[f"hr@{n - 2}"] == 0.0


def test_padding_tie_does_not_count():
    scores = np.array([[0.5, 0.5, 0.1]])
    np.testing.assert_array_equal(ranks_of([1], scores), [1])


# --- bad input --------------------------------------------------------------


@pytest.mark.parametrize("targets", [[0], [5], [-1], [1, 7]])
def test_bad_targets(targets):
    scores = np.repeat(SCORES, len(targets), axis=0)
    with pytest.raises(ValueError, match=r"1\.\.4 \(0 is padding\)"):
        full_ranking_metrics(scores, np.array(targets))


@pytest.mark.parametrize(
    "scores, targets",
    [(np.zeros(5), [1]), (np.zeros((2, 5)), [1]), (np.zeros((1, 5)), [[1]])],
)
def test_bad_shapes(scores, targets):
    with pytest.raises(ValueError, match="Expected scores"):
        target_ranks(scores, np.array(targets))


@pytest.mark.parametrize("k", [0, -3])
def test_bad_cutoff(k):
    with pytest.raises(ValueError, match="Cut-offs must be positive"):
        full_ranking_metrics(SCORES, np.array([1]), ks=(10, k))


# --- the Keras metric -------------------------------------------------------


def random_case(seed, batch=64, num_items=30, decimals=None):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(batch, num_items)).astype(np.float32)
    if decimals is not None:  # coarse scores: many ties
        scores = np.round(scores, decimals)
    targets = rng.integers(1, num_items, size=batch).astype(np.int32)
    # Make some targets rank first so that every cut-off sees hits.
    top = rng.random(batch) < 0.3
    scores[top, targets[top]] = scores[top].max(axis=1) + 1.0
    return scores, targets


def test_tf_target_ranks_match_numpy():
    scores, targets = random_case(0, decimals=1)
    np.testing.assert_array_equal(
        tf_target_ranks(scores, targets).numpy(), target_ranks(scores, targets)
    )


def test_tf_target_ranks_count_the_padding_column_never():
    # The padding column scores highest, and ties the target in row 1.
    scores = np.array([[9.0, 0.5, 0.2, 0.7], [0.5, 0.5, 0.1, 0.5]])
    ranks = tf_target_ranks(scores, np.array([1, 1])).numpy()
    np.testing.assert_array_equal(ranks, [2, 2])
    np.testing.assert_array_equal(ranks, target_ranks(scores, [1, 1]))


def test_ranking_metrics_share_one_ranking_pass():
    scores, targets = random_case(3, decimals=1)
    ranks = tf_target_ranks(scores, targets)
    for kind in ("ndcg", "hr", "mrr"):
        direct, shared = RankingMetric(kind, 5), RankingMetric(kind, 5)
        direct.update_state(targets, scores)
        shared.update_from_ranks(ranks)
        assert float(shared.result()) == pytest.approx(float(direct.result()))


@pytest.mark.parametrize("kind", ["ndcg", "hr", "mrr"])
@pytest.mark.parametrize("k", [1, 5, 10])
@pytest.mark.parametrize("decimals", [None, 1])
def test_ranking_metric_matches_full_ranking_metrics(kind, k, decimals):
    scores, targets = random_case(k, decimals=decimals)
    expected = full_ranking_metrics(scores, targets, ks=(k,))[f"{kind}@{k}"]
    metric = RankingMetric(kind, k=k)
    metric.update_state(targets, scores)
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("kind", ["ndcg", "hr", "mrr"])
def test_ranking_metric_accumulates_over_batches(kind):
    first, first_targets = random_case(1, batch=40)
    second, second_targets = random_case(2, batch=24)
    metric = RankingMetric(kind, k=5)
    metric.update_state(first_targets, first)
    metric.update_state(second_targets[:, None], second)  # [B, 1] targets
    expected = full_ranking_metrics(
        np.concatenate([first, second]),
        np.concatenate([first_targets, second_targets]),
        ks=(5,),
    )[f"{kind}@5"]
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)
    alone = full_ranking_metrics(second, second_targets, ks=(5,))[f"{kind}@5"]
    metric.reset_state()
    metric.update_state(second_targets, second)
    assert float(metric.result()) == pytest.approx(alone, abs=1e-6)


def test_ranking_metric_ignores_padding_and_uses_worse_rank_on_ties():
    metric = RankingMetric("mrr", k=10)
    metric.update_state([1, 1], [[9.0, 0.9, 0.5], [0.0, 0.5, 0.5]])
    assert float(metric.result()) == pytest.approx((1 + 0.5) / 2)


def test_ranking_metric_docstring_example():
    metric = RankingMetric("hr", k=1)
    metric.update_state([1, 2], [[0.0, 0.9, 0.5], [0.0, 0.9, 0.5]])
    assert float(metric.result()) == 0.5


def test_ranking_metric_in_model_evaluate():
    scores, targets = random_case(3, batch=50, num_items=12)
    model = tf.keras.Sequential(
        [tf.keras.Input(shape=(12,)), tf.keras.layers.Activation("linear")]
    )
    model.compile(
        loss="sparse_categorical_crossentropy",
        metrics=[RankingMetric("ndcg", k=3)],
    )
    results = model.evaluate(
        scores, targets, batch_size=16, verbose=0, return_dict=True
    )
    expected = full_ranking_metrics(scores, targets, ks=(3,))["ndcg@3"]
    assert results["ndcg@3"] == pytest.approx(expected, abs=1e-6)


def test_ranking_metric_config_round_trip():
    metric = RankingMetric("mrr", k=20, name="my_mrr")
    config = metric.get_config()
    assert config["kind"] == "mrr" and config["k"] == 20
    assert config["name"] == "my_mrr"
    json.dumps(config)
    clone = RankingMetric.from_config(config)
    assert (clone.kind, clone.k, clone.name) == ("mrr", 20, "my_mrr")
    restored = tf.keras.metrics.deserialize(
        json.loads(json.dumps(tf.keras.metrics.serialize(metric)))
    )
    assert isinstance(restored, RankingMetric)
    assert (restored.kind, restored.k, restored.name) == ("mrr", 20, "my_mrr")
    scores, targets = random_case(4)
    metric.update_state(targets, scores)
    restored.update_state(targets, scores)
    assert float(restored.result()) == float(metric.result())


def test_ranking_metric_default_name():
    assert RankingMetric().name == "ndcg@10"
    assert RankingMetric("hr", k=5).name == "hr@5"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="recall"), "kind must be one of"),
        (dict(kind="NDCG"), "kind must be one of"),
        (dict(k=0), "k must be positive"),
        (dict(k=-1), "k must be positive"),
    ],
)
def test_ranking_metric_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RankingMetric(**kwargs)


def test_repeat_targets_ignore_padding():
    history = np.array([[4, 2, 0], [1, 3, 0], [5, 0, 0]])
    # Target 0 never counts as a repeat of the padding.
    mask = repeat_targets(history, np.array([2, 9, 0]))
    np.testing.assert_array_equal(mask, [True, False, False])
    with pytest.raises(ValueError, match=r"targets.shape=\(2,\)"):
        repeat_targets(history, np.array([1, 2]))


def test_metrics_by_target_kind_splits_and_weights():
    history = np.array([[4, 2], [1, 3], [5, 6], [7, 0]])
    targets = np.array([2, 8, 6, 9])  # repeat, new, repeat, new
    ranks = np.array([1, 3, 20, 2])
    split = metrics_by_target_kind(ranks, history, targets, ks=(10,))
    assert split["repeat"]["share"] == split["new"]["share"] == 0.5
    assert split["repeat"]["hr@10"] == 0.5  # ranks 1 and 20
    assert split["new"]["mrr@10"] == pytest.approx((1 / 3 + 1 / 2) / 2)
    overall = metrics_from_ranks(ranks)["ndcg@10"]
    halves = (split["repeat"]["ndcg@10"] + split["new"]["ndcg@10"]) / 2
    assert overall == pytest.approx(halves)
    # A kind without examples reports only its share.
    only_new = metrics_by_target_kind(ranks[1:2], history[1:2], targets[1:2])
    assert only_new["repeat"] == {"share": 0.0}
    assert only_new["new"]["hr@10"] == 1.0


def test_metrics_by_target_popularity_groups_by_the_targets_counts():
    # Items 1..6 trained by 0, 3, 9, 10, 150 and 2,000 users.
    counts = np.array([0, 0, 3, 9, 10, 150, 2000])
    targets = np.array([1, 2, 3, 4, 4, 5, 6, 6])
    ranks = np.array([50, 1, 2, 4, 30, 1, 1, 11])
    groups = metrics_by_target_popularity(ranks, targets, counts)
    assert list(groups) == ["0", "1-9", "10-99", "100-999", "1000+"]
    # Hand-computed: the groups hold targets {1}, {2, 3}, {4, 4}, {5},
    # {6, 6}.
    assert [g["share"] for g in groups.values()] == [
        1 / 8, 2 / 8, 2 / 8, 1 / 8, 2 / 8
    ]  # fmt: skip
    assert groups["0"]["hr@10"] == 0.0
    assert groups["1-9"]["ndcg@10"] == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert groups["10-99"]["hr@10"] == 0.5
    assert groups["1000+"]["mrr@10"] == 0.5
    # The shares weight the groups back into the overall metric.
    overall = metrics_from_ranks(ranks)["ndcg@10"]
    weighted = sum(g["share"] * g.get("ndcg@10", 0) for g in groups.values())
    assert weighted == pytest.approx(overall)


def test_metrics_by_target_popularity_custom_edges_and_empty_groups():
    groups = metrics_by_target_popularity(
        np.array([3]), np.array([1]), np.array([0, 5]), ks=(1, 5), edges=(2, 4)
    )
    assert groups == {
        "0-1": {"share": 0.0},
        "2-3": {"share": 0.0},
        "4+": {"share": 1.0, **metrics_from_ranks(np.array([3]), (1, 5))},
    }
    assert popularity_group_names((1, 2, 10)) == ["0", "1", "2-9", "10+"]


@pytest.mark.parametrize("edges", [(), (0, 10), (10, 10), (100, 10)])
def test_popularity_edges_must_be_increasing_positive_counts(edges):
    with pytest.raises(ValueError, match=r"Received: edges="):
        popularity_group_names(edges)


def test_metrics_by_target_popularity_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match=r"ranks.shape=\(2,\)"):
        metrics_by_target_popularity(
            np.array([1, 2]), np.array([1]), np.array([0, 1])
        )


# --- NaN and inf scores: the worst score, metrics stay in [0, 1] -----------


def nan_scores():
    """Rows: all NaN, a NaN target, NaN other items, a +inf target tied
    with another +inf, a -inf target, all finite."""
    scores = np.tile([[0.0, 0.9, 0.5, 0.1, 0.3]], (6, 1))
    scores[0] = np.nan
    scores[1, 2] = np.nan
    scores[2, [1, 4]] = np.nan
    scores[3, [2, 3]] = np.inf
    scores[4, 2] = -np.inf
    return scores, np.array([2, 2, 2, 2, 2, 2])


def test_nan_target_ranks_last_and_nan_items_rank_below_the_target():
    scores, targets = nan_scores()
    # 4 real items: NaN target -> 4; item 1 NaN -> 2 rises to 1; the +inf
    # tie is pessimistic -> 2; -inf -> 4.
    expected = [4, 4, 1, 2, 4, 2]
    np.testing.assert_array_equal(target_ranks(scores, targets), expected)
    np.testing.assert_array_equal(
        tf_target_ranks(tf.constant(scores), tf.constant(targets)).numpy(),
        expected,
    )


@pytest.mark.parametrize("kind", ["ndcg", "hr", "mrr"])
def test_metrics_of_non_finite_scores_are_in_0_1(kind):
    scores, targets = nan_scores()
    for k in (1, 3, 10):
        for value in full_ranking_metrics(scores, targets, (k,)).values():
            assert 0.0 <= value <= 1.0
        metric = RankingMetric(kind, k=k)
        metric.update_state(targets, scores.astype(np.float32))
        assert 0.0 <= float(metric.result()) <= 1.0
    # All-NaN scores (a diverged model) score 0, not inf or 1.
    diverged = np.full((3, 20), np.nan)
    assert full_ranking_metrics(diverged, np.array([1, 5, 19])) == {
        "ndcg@10": 0.0,
        "hr@10": 0.0,
        "mrr@10": 0.0,
    }
    metric = RankingMetric(kind, k=10)
    metric.update_state([1, 5, 19], diverged.astype(np.float32))
    assert float(metric.result()) == 0.0
