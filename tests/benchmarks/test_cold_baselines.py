"""cold_baselines: the baselines' formulas against hand and brute force."""

import itertools
import math

import numpy as np
import pytest

from benchmarks import cold_baselines
from tfrec_tricks.evaluation.full_ranking import metrics_from_ranks


def test_attribute_popularity_by_hand():
    # Items 1..4 (0 padding). Tokens: 2 = Drama, 3 = War, 1 = OOV.
    tokens = np.array([[0, 0], [2, 3], [2, 0], [3, 3], [1, 0]])
    counts = np.array([0, 4, 6, 0, 0])
    # Drama: items 1, 2 -> 4 + 6 = 10; War: items 1, 3 -> 4; OOV: 0.
    # Item 1: (10 + 4) / 2; item 2: 10; item 3 (War twice): 4; item 4: 0.
    np.testing.assert_allclose(
        cold_baselines.attribute_popularity(tokens, counts),
        [0.0, 7.0, 10.0, 4.0, 0.0],
    )


def test_lexicographic_orders_by_the_first_key_then_the_next():
    primary = np.array([0.0, 7.0, 7.0, 4.0, 7.0])
    secondary = np.array([0, 4, 0, 0, 4])
    scores = cold_baselines.lexicographic(primary, secondary)
    assert scores[1] == scores[4] > scores[2] > scores[3] > scores[0]


def test_random_expectation_by_hand():
    # 25 real items: every rank 1..25 equally likely.
    expected = metrics_from_ranks(np.arange(1, 26))
    ndcg = sum(1 / math.log2(r + 1) for r in range(1, 11)) / 25
    assert expected["ndcg@10"] == pytest.approx(ndcg)
    assert expected["hr@10"] == pytest.approx(10 / 25)


@pytest.mark.parametrize("exclude_history", [False, True])
def test_ties_at_random_average_every_tie_order(exclude_history):
    scores = np.array([9.0, 1.0, 3.0, 3.0, 3.0, 0.0, 3.0])
    history = np.array([[2, 0], [6, 1]])
    targets = np.array([3, 5])
    ranks, ties = cold_baselines.baseline_ranks(
        scores, history, targets, exclude_history
    )
    # Brute force: every order of the real items (the history's left out
    # when excluded: they rank below) that keeps the scores sorted,
    # equally likely; the mean of each metric over them.
    brute = []
    for row, target in zip(history, targets):
        real = [i for i in range(1, 7) if not (exclude_history and i in row)]
        orders = [
            order
            for order in itertools.permutations(real)
            if all(scores[a] >= scores[b] for a, b in zip(order, order[1:]))
        ]
        brute.append([order.index(target) + 1 for order in orders])
    # Pessimistic: the last of its ties.
    assert ranks.tolist() == [max(r) for r in brute]
    exact = cold_baselines.expected_metrics(ranks - ties, ties, 6, (1, 10))
    for name, value in exact.items():
        by_order = np.mean(
            [metrics_from_ranks(r, (1, 10))[name] for r in brute]
        )
        assert value == pytest.approx(by_order)
