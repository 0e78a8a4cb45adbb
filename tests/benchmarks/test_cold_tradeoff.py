"""benchmarks.cold_tradeoff: a new-item offset and reserved slots, scored
on hand-made lists."""

import numpy as np
import pytest

from benchmarks import cold_tradeoff

# Items 1-4 are trained, 5 and 6 cold (0 is padding).
COLD = np.array([False, False, False, False, False, True, True])
SCORES = np.array(
    [
        [0.0, 9, 8, 7, 6, 5, 1],  # target 5 (cold): rank 5
        [0.0, 9, 8, 7, 6, 1, 5],  # target 2 (warm): rank 2
    ]
)
TARGETS = np.array([5, 2])


def test_reserved_slots_put_the_best_cold_item_in_the_list():
    # A list of 3 with one slot: items 1, 2, then the best cold item.
    positions = cold_tradeoff.reserved_positions(
        SCORES, TARGETS, COLD, slots=1, k=3
    )
    assert positions.tolist() == [3, 2]
    # Two slots push the warm target at rank 2 out.
    positions = cold_tradeoff.reserved_positions(
        SCORES, TARGETS, COLD, slots=2, k=3
    )
    assert positions.tolist() == [2, 0]
    # No slot: the model's own ranks, cut at k.
    positions = cold_tradeoff.reserved_positions(
        SCORES, TARGETS, COLD, slots=0, k=3
    )
    assert positions.tolist() == [0, 2]


def test_a_cold_item_already_in_the_head_takes_no_slot_twice():
    scores = np.array([[0.0, 9, 8, 7, 6, 8.5, 5]])
    # Item 5 (cold) is second by score; the slot goes to item 6.
    positions = cold_tradeoff.reserved_positions(
        scores, np.array([6]), COLD, slots=1, k=3
    )
    assert positions.tolist() == [3]


def test_trade_off_accumulates_cold_and_warm_means():
    # Both rows score items 1-6 as 9, 8, 7, 6, 5, 1 in some order: one
    # spread (standard deviation), and a step of 3.5 / spread raises the
    # cold items by 3.5.
    step = 3.5 / np.std([9, 8, 7, 6, 5, 1])
    trade = cold_tradeoff.TradeOff(cold=COLD, offsets=(0.0, step))
    trade.add(SCORES[:1], TARGETS[:1])
    trade.add(SCORES[1:], TARGETS[1:])
    results = trade.results()
    unshifted = results["offset"][0.0]
    assert unshifted["cold hr@10"] == 1.0  # rank 5 of 6 is in a top 10
    assert unshifted["cold ndcg@10"] == pytest.approx(1 / np.log2(6))
    assert unshifted["warm ndcg@10"] == pytest.approx(1 / np.log2(3))
    # +3.5 lifts item 5 to 8.5 (rank 2) and item 6 to 8.5 in row 2: the
    # warm target keeps rank 2 only if no cold item passes it: 8.5 > 8.
    shifted = results["offset"][step]
    assert shifted["cold ndcg@10"] == pytest.approx(1 / np.log2(3))
    assert shifted["warm ndcg@10"] == pytest.approx(1 / np.log2(4))
    assert set(results["slots"]) == set(cold_tradeoff.SLOTS)


def test_the_offset_chosen_is_the_largest_within_the_warm_cost():
    validation = {
        0.0: {"warm ndcg@10": 0.100},
        0.5: {"warm ndcg@10": 0.0985},
        1.0: {"warm ndcg@10": 0.0979},
    }
    assert cold_tradeoff.choose_offset(validation) == 0.5
    assert cold_tradeoff.choose_offset(validation, warm_cost=0.05) == 1.0


def test_the_offset_is_the_rule_recommend_applies_with_new_item_boost():
    from tfrec_tricks.recommendation.new_item_boost import (
        with_new_item_boost,
    )
    from tfrec_tricks.recommendation.new_item_slots import kept_places

    rng = np.random.default_rng(3)
    num_items, k, step = 40, 10, 1.2
    cold = np.zeros(num_items, bool)
    cold[rng.choice(np.arange(1, num_items), 12, replace=False)] = True
    scores = rng.normal(size=(6, num_items))
    scores[:, 0] = -1e9
    seen = rng.random((6, num_items)) < 0.1
    scores[seen] = -1e9  # each user's history, as the evaluation scores it
    targets = rng.integers(1, num_items, 6)
    trade = cold_tradeoff.TradeOff(cold=cold, offsets=(step,))
    trade.add(scores, targets)
    measured = trade.results()["offset"][step]

    def lists(columns):
        """Top k (or all) of ``columns``, the history left out, as the
        served lists hold them."""
        ids = np.full((6, k), "", dtype=object)
        values = np.zeros((6, k))
        keep = np.zeros((6, k), bool)
        for row in range(6):
            eligible = [c for c in columns if scores[row, c] > -1e8]
            best = sorted(eligible, key=lambda c: -scores[row, c])[:k]
            ids[row, : len(best)] = [str(c) for c in best]
            values[row, : len(best)] = scores[row, best]
            keep[row, : len(best)] = True
        return ids, values, keep

    sampled = scores[:, 1:]
    spread = np.array([row[row > -1e8].std() for row in sampled])
    boosted = with_new_item_boost(
        lists(range(1, num_items)),
        lists(np.flatnonzero(cold)),
        step * spread,
        k,
    )
    gains = {"cold": 0.0, "warm": 0.0}
    for row, target in enumerate(targets):
        listed = [int(item) for item, _ in kept_places(boosted, row)]
        if target in listed:
            gain = 1 / np.log2(listed.index(target) + 2)
            gains["cold" if cold[target] else "warm"] += gain
    counts = {"cold": cold[targets].sum(), "warm": (~cold[targets]).sum()}
    assert gains["cold"] > 0 and gains["warm"] > 0  # both kinds listed
    for kind in ("cold", "warm"):
        assert measured[f"{kind} ndcg@10"] == pytest.approx(
            gains[kind] / max(counts[kind], 1)
        )
