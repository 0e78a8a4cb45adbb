"""Sampled-negative ranking (SASRec protocol): sampler, ranks, metrics."""

import math

import numpy as np
import pytest

from tfrec_tricks.evaluation.full_ranking import (
    metrics_from_ranks,
    target_ranks,
)
from tfrec_tricks.evaluation.sampled_ranking import (
    distinct_sampled_ranks,
    sample_negatives,
    sampled_ranking_metrics,
    sampled_ranks,
)

# Column 0 is padding and scores highest: it must never count.
# Items 1..5 score 0.9, 0.5, 0.5, 0.1, 0.3.
SCORES = np.array([[9.0, 0.9, 0.5, 0.5, 0.1, 0.3]])


def ranks_of(targets, negatives, scores=SCORES):
    scores = np.repeat(scores, len(targets), axis=0)
    return sampled_ranks(scores, np.array(targets), np.array(negatives))


def batch(num_items=30):
    seen = [
        np.array([1, 2, 3]),
        np.array([0, 0, 4, 9, 4]),
        np.array([], dtype=np.int64),
        np.arange(1, num_items - 3),  # leaves only num_items - 3 and - 2
        np.array([7]),
        np.array([7]),
    ]
    targets = np.array([4, 5, 1, num_items - 1, 8, 9])
    users = np.array([10, 11, 12, 13, 14, 14])
    return seen, targets, users


# --- sample_negatives -------------------------------------------------------


def test_negatives_shape_range_and_exclusions():
    num_items = 30
    seen, targets, users = batch(num_items)
    negatives = sample_negatives(seen, targets, users, num_items, 50)
    assert negatives.shape == (6, 50)
    assert negatives.dtype == np.int64
    assert negatives.min() >= 1 and negatives.max() <= num_items - 1
    for row, history, target in zip(negatives, seen, targets):
        assert target not in row
        assert not np.isin(row, history).any()
    # Example 3 may draw only the three items its user has not seen.
    assert set(negatives[3].tolist()) <= {num_items - 3, num_items - 2}


def test_same_negatives_whatever_the_batch_order():
    seen, targets, users = batch()
    negatives = sample_negatives(seen, targets, users, 30, seed=3)
    order = np.array([4, 2, 5, 0, 3, 1])
    permuted = sample_negatives(
        [seen[i] for i in order], targets[order], users[order], 30, seed=3
    )
    np.testing.assert_array_equal(permuted, negatives[order])
    # Alone in its batch, an example still gets the same row.
    alone = sample_negatives([seen[1]], targets[1:2], users[1:2], 30, seed=3)
    np.testing.assert_array_equal(alone[0], negatives[1])


def test_rows_depend_on_user_target_and_seed():
    seen, targets, users = batch()
    negatives = sample_negatives(seen, targets, users, 30, seed=0)
    again = sample_negatives(seen, targets, users, 30, seed=0)
    np.testing.assert_array_equal(negatives, again)
    other_seed = sample_negatives(seen, targets, users, 30, seed=1)
    for i in (0, 1, 2, 4, 5):
        assert not np.array_equal(negatives[i], other_seed[i])
    # Examples 4 and 5 share the user and history but not the target.
    assert not np.array_equal(negatives[4], negatives[5])


def chi_square(counts):
    expected = counts.sum() / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


# Chi-square critical value for 6 degrees of freedom at p = 1e-4.
CHI2_6DOF_P1E4 = 27.86


def test_negatives_are_uniform_over_allowed_items():
    num_items = 11  # items 1..10
    seen = [np.array([2, 5, 0])]
    target = 7
    negatives = sample_negatives(
        seen, np.array([target]), np.array([0]), num_items, 70_000, seed=5
    )
    counts = np.bincount(negatives[0], minlength=num_items)
    allowed = [1, 3, 4, 6, 8, 9, 10]
    assert counts[[0, 2, 5, target]].sum() == 0
    assert chi_square(counts[allowed]) < CHI2_6DOF_P1E4
    frequencies = counts[allowed] / counts.sum()
    np.testing.assert_allclose(frequencies, 1 / 7, rtol=0.04)


def test_uniformity_check_catches_a_biased_sampler():
    # A sampler that replaces a rejected item by the next allowed one
    # doubles the frequency of 3, 6 and 8; the check above must fail it.
    rng = np.random.default_rng(0)
    draws = rng.integers(1, 11, size=100_000)
    draws = np.where(np.isin(draws, [2, 5, 7]), draws + 1, draws)
    counts = np.bincount(draws, minlength=11)[[1, 3, 4, 6, 8, 9, 10]]
    assert chi_square(counts) > CHI2_6DOF_P1E4


def test_padding_in_seen_is_ignored():
    # Items 1..3; the user saw 1, the target is 2: only 3 is left. Were the
    # padding 0 counted as an item, nothing would be left to draw.
    padded = sample_negatives(
        [np.array([0, 0, 0, 1])], np.array([2]), np.array([4]), 4, 10
    )
    np.testing.assert_array_equal(padded, np.full((1, 10), 3))
    seen = [np.array([0, 5, 0, 1]), np.array([3])]
    plain = sample_negatives(
        [np.array([5, 1]), np.array([3, 0])], [2, 4], [4, 4], 30
    )
    np.testing.assert_array_equal(
        sample_negatives(seen, [2, 4], [4, 4], 30), plain
    )


def test_seen_may_be_a_padded_matrix():
    seen = np.array([[0, 1, 2], [0, 0, 3]])
    negatives = sample_negatives(seen, np.array([3, 1]), np.array([0, 1]), 6)
    expected = sample_negatives(
        [np.array([1, 2]), np.array([3])], [3, 1], [0, 1], 6
    )
    np.testing.assert_array_equal(negatives, expected)


def test_nothing_left_to_draw():
    with pytest.raises(ValueError, match=r"user 3 .*num_items=5"):
        sample_negatives([np.array([1, 2, 3])], [4], [3], 5)
    # The other example is fine; the error names the bad one.
    with pytest.raises(ValueError, match="example 1"):
        sample_negatives([np.array([1]), np.array([2, 1])], [2, 3], [0, 1], 4)


def test_num_negatives_must_be_positive():
    with pytest.raises(ValueError, match="num_negatives=0"):
        sample_negatives([np.array([1])], [2], [0], 10, num_negatives=0)


def test_lengths_must_match():
    with pytest.raises(ValueError, match=r"len\(seen\)=2, len\(targets\)=1"):
        sample_negatives([np.array([1]), np.array([2])], [3], [0], 10)
    with pytest.raises(ValueError, match=r"len\(users\)=3"):
        sample_negatives([np.array([1])], [3], [0, 1, 2], 10)


@pytest.mark.parametrize("target", [0, 10, -2])
def test_targets_must_be_in_the_catalogue(target):
    with pytest.raises(ValueError, match=rf"1\.\.9.*targets=\[{target}\]"):
        sample_negatives([np.array([1])], [target], [0], 10)


def test_other_bad_inputs_name_the_value():
    with pytest.raises(ValueError, match=r"users=\[-1\]"):
        sample_negatives([np.array([1])], [2], [-1], 10)
    with pytest.raises(ValueError, match="seed=-1"):
        sample_negatives([np.array([1])], [2], [0], 10, seed=-1)
    with pytest.raises(ValueError, match=r"seen\[0\] contains \[12\]"):
        sample_negatives([np.array([1, 12])], [2], [0], 10)
    with pytest.raises(ValueError, match="seen.*float64"):
        sample_negatives([np.array([1.5])], [2], [0], 10)


# --- sampled_ranks ----------------------------------------------------------


def test_ranks_by_hand():
    np.testing.assert_array_equal(
        ranks_of([1, 4, 5], [[2, 3, 4, 5], [1, 5, 2, 3], [4, 4, 4, 1]]),
        [1, 5, 2],
    )


def test_ties_count_against_the_target():
    # Items 2 and 3 both score 0.5.
    np.testing.assert_array_equal(ranks_of([2, 3], [[3, 4], [2, 4]]), [2, 2])
    flat = np.zeros((1, 6))
    assert sampled_ranks(flat, np.array([1]), np.array([[2, 3, 4]]))[0] == 4


def test_duplicate_negatives_count_each_time():
    np.testing.assert_array_equal(
        ranks_of([4, 2, 2], [[1, 1, 1, 5], [3, 3, 4, 4], [1, 1, 1, 1]]),
        [5, 3, 5],
    )


def test_rank_shape_errors():
    with pytest.raises(ValueError, match=r"negatives.shape=\(2,\)"):
        sampled_ranks(SCORES, np.array([1]), np.array([2, 3]))
    with pytest.raises(ValueError, match=r"negatives.shape=\(2, 2\)"):
        sampled_ranks(SCORES, np.array([1]), np.array([[2, 3], [2, 3]]))
    with pytest.raises(ValueError, match=r"negatives.shape=\(1, 0\)"):
        sampled_ranks(SCORES, np.array([1]), np.zeros((1, 0), np.int64))
    with pytest.raises(ValueError, match=r"targets.shape=\(2,\)"):
        sampled_ranks(SCORES, np.array([1, 2]), np.array([[2, 3]]))
    with pytest.raises(ValueError, match=r"scores.shape=\(6,\)"):
        sampled_ranks(SCORES[0], np.array([1]), np.array([[2, 3]]))


def test_rank_id_errors():
    with pytest.raises(ValueError, match=r"negatives=\[0\]"):
        ranks_of([1], [[2, 0]])  # padding is not a negative
    with pytest.raises(ValueError, match=r"negatives=\[6\]"):
        ranks_of([1], [[6, 2]])
    with pytest.raises(ValueError, match=r"targets=\[6\]"):
        ranks_of([6], [[1, 2]])
    with pytest.raises(ValueError, match="negatives.dtype=float64"):
        ranks_of([1], [[2.0, 3.0]])


def test_nan_scores_rank_worst():
    scores = SCORES.copy()
    scores[0, 3] = np.nan
    # A NaN target ranks last; a NaN negative ranks below the target.
    assert sampled_ranks(scores, np.array([3]), np.array([[1, 2]]))[0] == 3
    assert sampled_ranks(scores, np.array([5]), np.array([[3, 4]]))[0] == 1
    assert sampled_ranks(scores, np.array([1]), np.array([[2, 4]]))[0] == 1


# --- sampled_ranking_metrics ------------------------------------------------


def scorer_batch(target_score):
    num_items, size = 200, 8
    rng = np.random.default_rng(1)
    targets = rng.integers(1, num_items, size=size)
    scores = np.zeros((size, num_items))
    scores[np.arange(size), targets] = target_score
    scores[:, 0] = 100.0  # padding must not count
    seen = [rng.integers(0, num_items, size=20) for _ in range(size)]
    seen = [s[s != t] for s, t in zip(seen, targets)]
    return scores, targets, seen, np.arange(size)


def test_perfect_scorer():
    m = sampled_ranking_metrics(*scorer_batch(1.0), ks=(1, 10))
    assert m == {
        "ndcg@1": 1.0,
        "hr@1": 1.0,
        "mrr@1": 1.0,
        "ndcg@10": 1.0,
        "hr@10": 1.0,
        "mrr@10": 1.0,
    }


@pytest.mark.parametrize("target_score", [-1.0, 0.0])  # below, or all tied
def test_target_last_among_101(target_score):
    scores, targets, seen, users = scorer_batch(target_score)
    negatives = sample_negatives(seen, targets, users, scores.shape[1])
    assert negatives.shape == (8, 100)
    ranks = sampled_ranks(scores, targets, negatives)
    np.testing.assert_array_equal(ranks, 101)
    m = sampled_ranking_metrics(scores, targets, seen, users)
    assert m == {"ndcg@10": 0.0, "hr@10": 0.0, "mrr@10": 0.0}


def test_metrics_compose_sampler_and_ranks():
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(5, 40))
    targets = np.array([3, 17, 39, 1, 20])
    seen = [rng.integers(1, 40, size=n) for n in (0, 3, 10, 5, 1)]
    seen = [s[s != t] for s, t in zip(seen, targets)]
    users = np.array([5, 4, 3, 2, 1])
    negatives = sample_negatives(seen, targets, users, 40, 20, seed=9)
    ranks = sampled_ranks(scores, targets, negatives)
    m = sampled_ranking_metrics(
        scores, targets, seen, users, num_negatives=20, seed=9, ks=(5, 10)
    )
    assert m == metrics_from_ranks(ranks, (5, 10))
    assert m["ndcg@10"] == pytest.approx(
        np.mean([(r <= 10) / math.log2(r + 1) for r in ranks])
    )


def test_metrics_shape_error_before_sampling():
    with pytest.raises(ValueError, match=r"targets.shape=\(2,\)"):
        sampled_ranking_metrics(SCORES, [1, 2], [[0], [0]], [0, 1])


# --- NaN and inf scores, distinct negatives ----------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_metrics_stay_in_0_1_with_non_finite_scores(bad):
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(6, 12))
    scores[0] = bad  # every score, the target's included
    scores[1, 4] = bad  # the target's
    scores[2, 7] = bad  # another item's
    targets = np.array([2, 4, 5, 1, 9, 11])
    seen = [np.array([3])] * 6
    users = np.arange(6)
    negatives = sample_negatives(seen, targets, users, 12, 5)
    found = [
        sampled_ranks(scores, targets, negatives),
        distinct_sampled_ranks(scores, targets, seen, users, 5)[0],
    ]
    for ranks in found:
        assert (ranks >= 1).all() and (ranks <= 6).all()
        for value in metrics_from_ranks(ranks, (1, 10)).values():
            assert 0.0 <= value <= 1.0
    if np.isnan(bad):
        np.testing.assert_array_equal(found[1][:2], [6, 6])  # last
        assert (
            found[1][2]
            == distinct_sampled_ranks(
                np.nan_to_num(scores[2:3], nan=-np.inf),
                targets[2:3],
                seen[2:3],
                users[2:3],
                5,
            )[0][0]
        )


@pytest.mark.parametrize("num_negatives", [1, 5, 20, 36, 38, 39, 40, 100, 500])
def test_sampled_rank_is_never_worse_than_the_full_rank(num_negatives):
    # 40 items; with N at or above what a user has left, the example is
    # ranked against all of it (capped), never against repeats.
    rng = np.random.default_rng(num_negatives)
    num_items = 41
    scores = rng.normal(size=(50, num_items))
    scores[:10] = np.round(scores[:10])  # many ties
    targets = rng.integers(1, num_items, size=50)
    seen = [rng.integers(0, num_items, size=n) for n in range(50)]
    seen = [s[s != t] for s, t in zip(seen, targets)]
    users = np.arange(50)
    ranks, capped = distinct_sampled_ranks(
        scores, targets, seen, users, num_negatives, seed=1
    )
    full = target_ranks(scores, targets)
    assert (ranks <= full).all()
    assert (ranks >= 1).all() and (ranks <= num_negatives + 1).all()
    left = np.array(
        [
            num_items - 1 - len(np.union1d(s[s > 0], [t]))
            for s, t in zip(seen, targets)
        ]
    )
    np.testing.assert_array_equal(capped, left <= num_negatives)
    sampled = metrics_from_ranks(ranks, (10,))
    assert sampled["hr@10"] >= metrics_from_ranks(full, (10,))["hr@10"]


def test_distinct_negatives_are_reproducible_and_distinct():
    num_items = 1001
    scores = np.random.default_rng(0).normal(size=(3, num_items))
    targets, users = np.array([5, 6, 7]), np.array([1, 2, 3])
    seen = [np.array([1, 2]), np.array([], np.int64), np.array([9])]
    first = distinct_sampled_ranks(scores, targets, seen, users, 100, 4)
    again = distinct_sampled_ranks(scores, targets, seen, users, 100, 4)
    np.testing.assert_array_equal(first[0], again[0])
    assert not first[1].any()
    # One negative scoring above everything: counted once at most.
    scores[:, 3] = 100.0
    ranks, _ = distinct_sampled_ranks(scores, targets, seen, users, 999, 4)
    full = target_ranks(scores, targets)
    assert (ranks <= full).all()
