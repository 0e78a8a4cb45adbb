"""history_ranking: ranks among non-history items, history items in a top-k."""

import re

import numpy as np
import pytest

from benchmarks.history_ranking import (
    DIAGNOSTIC_FIELDS,
    concatenate_diagnostics,
    example_diagnostics,
    history_items_in_top_k,
    history_lengths,
    ndcg_per_example,
    non_history_ranks,
    paired_difference,
    summarize_diagnostics,
)
from tfrec_tricks.evaluation.full_ranking import target_ranks

# Column 0 is padding; its score is the highest on purpose: never ranked.
SCORES = np.array(
    [
        [9.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
        [9.0, 0.1, 0.5, 0.5, 0.5, 0.9, 0.0],
    ]
)


def test_non_history_ranks_leave_out_history_items_and_padding():
    history = np.array([[2, 1, 0], [0, 5, 5]])
    # Row 0: items 1 and 2 (history) leave; 3, 4, 5, 6 remain: 5 is 3rd.
    # Row 1: item 5 leaves; 1, 2, 3, 4, 6 remain: 1 scores 0.1, behind
    # 2, 3 and 4 (0.5): 4th.
    ranks = non_history_ranks(SCORES, history, np.array([5, 1]))
    np.testing.assert_array_equal(ranks, [3, 4])
    assert ranks.dtype == np.int64
    # Without the history, the ranks are target_ranks'.
    empty = np.zeros((2, 1), dtype=int)
    np.testing.assert_array_equal(
        non_history_ranks(SCORES, empty, np.array([5, 1])),
        target_ranks(SCORES, np.array([5, 1])),
    )


def test_non_history_ranks_are_pessimistic_on_ties():
    # Items 2, 3, 4 tie at 0.5; item 5 (0.9) is in the history.
    history = np.array([[5, 0]])
    scores = SCORES[1:]
    for target in (2, 3, 4):
        assert non_history_ranks(scores, history, np.array([target])) == [3]
    # A tie with a history item does not count against the target.
    assert non_history_ranks(
        scores, np.array([[2, 3, 5]]), np.array([4])
    ).tolist() == [1]
    # A constant scorer ranks the target last among the rest.
    constant = np.zeros((1, 7))
    assert non_history_ranks(
        constant, np.array([[1, 2]]), np.array([6])
    ).tolist() == [4]


def test_non_history_ranks_refuse_repeat_targets_and_name_the_rows():
    history = np.array([[1, 0], [3, 4], [2, 5]])
    with pytest.raises(ValueError, match=r"at rows \[1, 2\]"):
        non_history_ranks(SCORES[[0, 1, 1]], history, np.array([6, 4, 5]))


@pytest.mark.parametrize(
    "scores, history, targets, message",
    [
        (SCORES[0], np.array([[1]]), np.array([2]), "scores.shape=(7,)"),
        (SCORES, np.array([[1]]), np.array([2, 3]), "history.shape=(1, 1)"),
        (SCORES, np.array([[1], [2]]), np.array([2]), "targets.shape=(1,)"),
        (SCORES, np.array([[1], [2]]), np.array([0, 3]), "targets=[0]"),
        (SCORES, np.array([[1], [2]]), np.array([7, 3]), "targets=[7]"),
        (SCORES, np.array([[1], [7]]), np.array([2, 3]), "from 1 to 7"),
        (SCORES, np.array([[1.0], [2.0]]), np.array([2, 3]), "float64"),
    ],
)
def test_non_history_ranks_reject_bad_inputs(scores, history, targets, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        non_history_ranks(scores, history, targets)


def test_history_items_in_top_k_counts_distinct_history_items():
    # Row 0 top-3: 1, 2, 3; history 1, 1, 3 -> 2 distinct items.
    # Row 1 top-3: 5, then 2 and 3 of the tie 2, 3, 4 (lower ids first).
    history = np.array([[1, 1, 3], [4, 0, 0]])
    np.testing.assert_array_equal(
        history_items_in_top_k(SCORES, history, k=3), [2, 0]
    )
    # Item 3 of the tie is in the top-3, item 4 is not (stable order).
    np.testing.assert_array_equal(
        history_items_in_top_k(SCORES, np.array([[3], [3]]), k=3), [1, 1]
    )
    np.testing.assert_array_equal(
        history_items_in_top_k(SCORES, np.array([[4], [4]]), k=4), [1, 1]
    )


def test_history_items_in_top_k_never_takes_padding():
    # Padding scores highest and history rows hold padding: neither counts.
    history = np.array([[0, 0, 6], [0, 0, 0]])
    np.testing.assert_array_equal(
        history_items_in_top_k(SCORES, history, k=1), [0, 0]
    )
    # k beyond the catalogue: all real items are the top-k.
    np.testing.assert_array_equal(
        history_items_in_top_k(SCORES, history, k=50), [1, 0]
    )


@pytest.mark.parametrize("k", [0, -1, 2.0, True])
def test_history_items_in_top_k_rejects_bad_k(k):
    with pytest.raises(ValueError, match=f"k={k!r}"):
        history_items_in_top_k(SCORES, np.array([[1], [2]]), k=k)


def test_history_lengths_count_real_and_distinct_ids():
    lengths, distinct = history_lengths(np.array([[3, 3, 0, 1], [0, 0, 0, 0]]))
    np.testing.assert_array_equal(lengths, [3, 0])
    np.testing.assert_array_equal(distinct, [2, 0])
    with pytest.raises(ValueError, match=r"history.shape=\(4,\)"):
        history_lengths(np.array([1, 2, 3, 4]))


def test_example_diagnostics_of_repeat_and_new_targets():
    history = np.array([[2, 1, 0], [0, 5, 5]])
    found = example_diagnostics(SCORES, history, np.array([5, 5]), k=3)
    assert tuple(found) == DIAGNOSTIC_FIELDS
    np.testing.assert_array_equal(found["rank"], [5, 1])
    np.testing.assert_array_equal(found["repeat"], [False, True])
    np.testing.assert_array_equal(found["non_history_rank"], [3, 0])
    np.testing.assert_array_equal(found["history_in_top_k"], [2, 1])
    np.testing.assert_array_equal(found["history_length"], [2, 2])
    np.testing.assert_array_equal(found["distinct_history"], [2, 1])
    both = concatenate_diagnostics([found, found])
    np.testing.assert_array_equal(both["rank"], [5, 1, 5, 1])
    with pytest.raises(ValueError, match="none"):
        concatenate_diagnostics([])


def test_summary_of_hand_made_diagnostics():
    diagnostics = {
        "rank": np.array([1, 12, 3, 2]),
        "repeat": np.array([True, False, False, False]),
        "non_history_rank": np.array([0, 8, 1, 200]),
        "history_in_top_k": np.array([3, 4, 2, 0]),
        "history_length": np.array([4, 6, 2, 0]),
        "distinct_history": np.array([3, 5, 2, 0]),
    }
    summary = summarize_diagnostics(diagnostics, k=10)
    assert summary["overall"]["hr@10"] == 0.75
    assert summary["by_kind"]["repeat"] == {
        "share": 0.25,
        "ndcg@10": 1.0,
        "hr@10": 1.0,
        "mrr@10": 1.0,
    }
    assert summary["by_kind"]["new"]["hr@10"] == pytest.approx(2 / 3)
    inner = summary["new_non_history"]
    assert inner["count"] == 3
    assert inner["hr@10"] == pytest.approx(2 / 3)
    assert inner["hr@100"] == pytest.approx(2 / 3)
    assert inner["ndcg@10"] == pytest.approx((1 / np.log2(9) + 1.0) / 3)
    assert inner["median_rank"] == 8.0
    assert inner["mean_rank"] == pytest.approx(209 / 3)
    # Rank 8 among non-history items but 12 among all: pushed out.
    assert summary["merge_loss"] == pytest.approx(1 / 3)
    assert summary["history_in_top_k"]["all"] == {
        "histogram": [1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0],
        "mean": 2.25,
        "count": 4,
    }
    assert summary["history_in_top_k"]["new"]["histogram"][:5] == [
        1,
        0,
        1,
        0,
        1,
    ]
    assert summary["history_in_top_k"]["repeat"]["mean"] == 3.0
    assert summary["history"] == {"mean_length": 3.0, "mean_distinct": 2.5}


def test_summary_without_new_targets_and_bad_inputs():
    diagnostics = {name: np.array([1]) for name in DIAGNOSTIC_FIELDS}
    diagnostics["repeat"] = np.array([True])
    summary = summarize_diagnostics(diagnostics, k=2)
    assert summary["new_non_history"] == {"count": 0}
    assert summary["by_kind"]["new"] == {"share": 0.0}
    assert summary["history_in_top_k"]["new"] == {
        "histogram": [0, 0, 0],
        "mean": 0.0,
        "count": 0,
    }
    with pytest.raises(ValueError, match="lacks \\['rank'\\]"):
        summarize_diagnostics(
            {k: v for k, v in diagnostics.items() if k != "rank"}
        )
    with pytest.raises(ValueError, match="k=0"):
        summarize_diagnostics(diagnostics, k=0)


def test_ndcg_per_example_and_paired_difference():
    np.testing.assert_allclose(
        ndcg_per_example(np.array([1, 3, 10, 11]), k=10),
        [1.0, 0.5, 1 / np.log2(11), 0.0],
    )
    with pytest.raises(ValueError, match="rank of 0"):
        ndcg_per_example(np.array([0, 1]))
    mean, error = paired_difference(np.array([1.0, 0.0]), np.array([0.0, 0.0]))
    assert (mean, error) == pytest.approx((0.5, 0.5))
    # The same values shifted by a constant: no noise in the difference.
    first = np.array([0.2, 0.9, 0.4])
    assert paired_difference(first, first - 0.1) == pytest.approx((0.1, 0.0))
    assert paired_difference(np.array([0.3]), np.array([0.1])) == (
        pytest.approx(0.2),
        0.0,
    )
    with pytest.raises(ValueError, match=r"\(2,\) and \(3,\)"):
        paired_difference(np.zeros(2), np.zeros(3))


def test_nan_scores_are_the_worst_in_history_rankings():
    scores = np.array(
        [
            [0.0, np.nan, 0.8, 0.5, 0.1],  # a NaN item: below the target
            [0.0, 0.9, 0.8, np.nan, 0.1],  # a NaN target: last
            [np.nan] * 5,
        ]
    )
    history = np.array([[2, 0], [2, 0], [1, 0]])
    targets = np.array([3, 3, 2])
    ranks = non_history_ranks(scores, history, targets)
    # Non-history items: 1, 3, 4 (rows 0, 1) and 2, 3, 4 (row 2).
    np.testing.assert_array_equal(ranks, [1, 3, 3])
    np.testing.assert_array_equal(target_ranks(scores, targets), [2, 4, 4])
    # A NaN item never enters the top-k ahead of a scored one.
    np.testing.assert_array_equal(
        history_items_in_top_k(scores[:1], np.array([[1, 0]]), k=3), [0]
    )
    found = example_diagnostics(scores, history, targets, k=10)
    assert (found["rank"] >= 1).all() and (found["rank"] <= 4).all()
