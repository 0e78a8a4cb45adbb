"""A raise of the new items' scores: the rule, the spread, and the lists
of a run whose catalogue holds items no user clicked, local and Beam
alike."""

import numpy as np
import pandas as pd
import pytest

from tests.recommendation.recommend_helpers import NEW_ITEMS
from tfrec_tricks.recommendation import RecommendationOptions, recommend_frame
from tfrec_tricks.recommendation.job import RecommendationJob
from tfrec_tricks.recommendation.new_item_boost import (
    SPREAD_SAMPLE,
    check_boost,
    row_spread,
    spread_sample,
    with_new_item_boost,
)
from tfrec_tricks.recommendation.new_item_slots import kept_places


def top(scores, columns, k):
    """``(item_ids, scores, keep)`` of each row's ``k`` best ``columns``
    (items named by their column), best first."""
    rows = len(scores)
    ids = np.full((rows, k), "", dtype=object)
    values = np.zeros((rows, k))
    keep = np.zeros((rows, k), bool)
    for row in range(rows):
        best = sorted(columns, key=lambda c: -scores[row, c])[:k]
        ids[row, : len(best)] = [str(c) for c in best]
        values[row, : len(best)] = scores[row, best]
        keep[row, : len(best)] = True
    return ids, values, keep


@pytest.mark.parametrize("seed", range(5))
def test_the_two_lists_give_the_catalogues_top_k_by_raised_scores(seed):
    rng = np.random.default_rng(seed)
    items, k = 30, 7
    new = rng.choice(items, 9, replace=False)
    scores = rng.normal(size=(4, items))
    raise_by = rng.uniform(0, 3, size=4)
    got = with_new_item_boost(
        top(scores, range(items), k), top(scores, new, k), raise_by, k
    )
    raised = scores + np.isin(np.arange(items), new) * raise_by[:, None]
    expected = top(raised, range(items), k)
    for row in range(4):
        got_items, got_scores = zip(*kept_places(got, row))
        items_expected, scores_expected = zip(*kept_places(expected, row))
        assert got_items == items_expected
        assert got_scores == pytest.approx(scores_expected, abs=1e-6)
    # The raise took some new items in and left some out.
    listed = got[0][got[2]].astype(int)
    assert 0 < np.isin(listed, new).sum() < len(listed)


def test_short_lists_stay_short_and_a_zero_raise_changes_nothing():
    ranked = top(np.array([[3.0, 1.0, 2.0]]), [0, 2], 4)
    new = top(np.array([[3.0, 1.0, 2.0]]), [1], 4)
    ids, scores, keep = with_new_item_boost(ranked, new, np.array([0.0]), 4)
    assert ids[keep].tolist() == ["0", "2", "1"]
    assert scores[keep].tolist() == [3.0, 2.0, 1.0]


def test_the_spread_sample_is_every_item_or_evenly_spaced_ids():
    assert spread_sample(SPREAD_SAMPLE + 1).tolist() == list(
        range(1, SPREAD_SAMPLE + 1)
    )
    sample = spread_sample(50_000)
    assert len(sample) == len(set(sample)) == SPREAD_SAMPLE
    gaps = np.diff(sample)
    assert gaps.min() >= 12 and gaps.max() <= 13


def test_the_spread_leaves_out_what_is_not_kept():
    scores = np.array([[1.0, 2.0, 3.0, 100.0], [5.0, 5.0, 5.0, 5.0]])
    keep = np.array([[True, True, True, False], [True, False, False, False]])
    spread = row_spread(scores, keep)
    assert spread[0] == pytest.approx(np.std([1.0, 2.0, 3.0]))
    assert spread[1] == 0.0  # one score: no spread


@pytest.mark.parametrize(
    "boost", [-0.5, float("nan"), float("inf"), True, "1", None]
)
def test_a_boost_that_is_not_a_finite_number_at_least_0_is_refused(boost):
    with pytest.raises(ValueError, match=f"Received: new_item_boost={boost!r}"):
        check_boost(boost)


@pytest.fixture(scope="module")
def run(new_items_run):
    return new_items_run


def _scores(run, user):
    """Every eligible item's score for ``user`` (an allow-list of the
    catalogue, the user's history left out)."""
    import json
    import os

    with open(os.path.join(run, "vocabulary.json")) as file:
        vocabulary = json.load(file)
    catalogue = [item for item in vocabulary["items"][1:]]
    frame = recommend_frame(
        run, k=len(catalogue), users=[user], items=catalogue
    )
    return frame.set_index("item_id")["score"]


@pytest.mark.slow
def test_new_items_enter_where_their_raised_scores_reach(run):
    users = ["u1", "u2", "u3"]
    plain = recommend_frame(run, k=5, users=users)
    # Before: new items rank low in this run (under tf-keras none reaches
    # a list; Keras 3's initial weights put one at a fifth place).
    listed_before = plain["item_id"].isin(NEW_ITEMS).sum()
    assert listed_before <= 1
    pd.testing.assert_frame_equal(
        recommend_frame(run, k=5, users=users, new_item_boost=0.0), plain
    )
    boosted = recommend_frame(run, k=5, users=users, new_item_boost=1.5)
    entered = 0
    for user, rows in boosted.groupby("user_id"):
        scores = _scores(run, user)
        # The spread: over the whole catalogue (26 items, fewer than
        # SPREAD_SAMPLE), the user's history left out.
        spread = np.std(scores.values.astype(np.float64))
        raised = scores + 1.5 * spread * scores.index.isin(NEW_ITEMS)
        best = raised.sort_values(ascending=False, kind="stable").iloc[:5]
        assert rows["item_id"].tolist() == best.index.tolist()
        np.testing.assert_allclose(rows["score"], best.values, atol=1e-4)
        assert rows["rank"].tolist() == [1, 2, 3, 4, 5]
        entered += rows["item_id"].isin(NEW_ITEMS).sum()
    # Some new items entered, not only new items.
    assert listed_before < entered < 15


@pytest.mark.slow
def test_the_job_says_so_and_a_model_of_ids_only_is_refused(run, tmp_path):
    job = RecommendationJob(
        run, RecommendationOptions(k=4, new_item_boost=0.5, new_item_slots=1)
    )
    assert job.describe() == (
        "top 4, seen items excluded, new items raised by 0.5 standard "
        "deviations, the last 1 for the best of 6 new items"
    )
    with pytest.raises(ValueError, match="Received: new_item_boost=-1"):
        RecommendationJob(run, RecommendationOptions(k=4, new_item_boost=-1))
    from tests.recommendation.recommend_helpers import train_tiny_run

    ids_only = train_tiny_run(tmp_path)
    with pytest.raises(ValueError, match="a model of item ids only"):
        recommend_frame(ids_only, k=4, new_item_boost=1.0)


@pytest.mark.slow
def test_a_boost_and_reserved_places_together(run):
    both = recommend_frame(
        run, k=5, users=["u4"], new_item_boost=1.0, new_item_slots=2
    )
    boosted = recommend_frame(run, k=5, users=["u4"], new_item_boost=1.0)
    # The head is the boosted list's; the last two places hold new items.
    assert both["item_id"].tolist()[:3] == boosted["item_id"].tolist()[:3]
    assert both["item_id"].iloc[3:].isin(NEW_ITEMS).all()


@pytest.mark.slow
def test_the_beam_engine_lists_what_the_local_one_does(run, tmp_path):
    from tests.recommendation.test_beam_engine import (
        assert_same_rows,
        beam_rows,
    )

    options = dict(k=4, users=["u1", "u5", "u9"], new_item_boost=2.0)
    got, _ = beam_rows(run, tmp_path, **options)
    expected = recommend_frame(run, **options)
    assert expected["item_id"].isin(NEW_ITEMS).any()
    assert_same_rows(got, expected)


@pytest.mark.slow
def test_the_facade_passes_the_boost_on(run):
    from tfrec_tricks import Recommender

    loaded = Recommender.load(run)
    got = loaded.recommend(users=["u2"], k=4, new_item_boost=2.0)
    expected = recommend_frame(run, k=4, users=["u2"], new_item_boost=2.0)
    pd.testing.assert_frame_equal(got, expected)
    assert got["item_id"].isin(NEW_ITEMS).any()
