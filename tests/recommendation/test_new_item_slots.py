"""Reserved places for new items: the rule, and the lists of a run whose
catalogue holds items no user clicked, local and Beam alike."""

import numpy as np
import pandas as pd
import pytest

from tests.recommendation.recommend_helpers import NEW_ITEMS
from tfrec_tricks.recommendation import RecommendationOptions, recommend_frame
from tfrec_tricks.recommendation.job import RecommendationJob
from tfrec_tricks.recommendation.new_item_slots import with_new_item_slots


def lists(rows):
    """``(item_ids, scores, keep)`` of rows of (item, score) pairs, padded
    with unkept places."""
    width = max(len(row) for row in rows) + 1
    ids = np.full((len(rows), width), "", dtype=object)
    scores = np.zeros((len(rows), width), np.float32)
    keep = np.zeros((len(rows), width), bool)
    for r, row in enumerate(rows):
        for c, (item, score) in enumerate(row):
            ids[r, c], scores[r, c], keep[r, c] = item, score, True
    return ids, scores, keep


def kept(result):
    ids, scores, keep = result
    return [
        [(ids[r, c], float(scores[r, c])) for c in np.flatnonzero(keep[r])]
        for r in range(len(ids))
    ]


def test_the_last_places_go_to_the_best_new_items_not_above():
    ranked = lists([[("a", 9), ("n1", 8), ("b", 7), ("c", 6), ("d", 5)]])
    new = lists([[("n1", 8), ("n2", 3), ("n3", 1)]])
    assert kept(with_new_item_slots(ranked, new, k=4, slots=2)) == [
        [("a", 9), ("n1", 8), ("n2", 3), ("n3", 1)]
    ]
    # One place: n1 is in the head already, n2 takes the place.
    assert kept(with_new_item_slots(ranked, new, k=4, slots=1)) == [
        [("a", 9), ("n1", 8), ("b", 7), ("n2", 3)]
    ]
    # Every place reserved: the new items alone, by score.
    assert kept(with_new_item_slots(ranked, new, k=3, slots=3)) == [
        [("n1", 8), ("n2", 3), ("n3", 1)]
    ]


def test_places_no_new_item_takes_go_to_the_next_ranked_items():
    ranked = lists([[("a", 9), ("b", 7), ("c", 6)], [("x", 2)]])
    new = lists([[("n1", 1)], []])
    assert kept(with_new_item_slots(ranked, new, k=3, slots=2)) == [
        [("a", 9), ("n1", 1), ("b", 7)],
        # A short list (few eligible items) stays short.
        [("x", 2)],
    ]


@pytest.mark.parametrize("slots", [0, 4, -1, 1.5, True])
def test_slots_outside_one_to_k_are_refused(slots):
    ranked = lists([[("a", 1)]])
    with pytest.raises(ValueError, match=f"Received: slots={slots!r}"):
        with_new_item_slots(ranked, ranked, k=3, slots=slots)


@pytest.fixture(scope="module")
def run(new_items_run):
    return new_items_run


@pytest.mark.slow
def test_every_list_ends_with_the_best_new_items(run):
    plain = recommend_frame(run, k=5, users=["u1", "u2", "u3"])
    # Before: no new item reaches the first three places of a list of this
    # run (they rank below the trained items; under Keras 3, whose initial
    # weights differ, one reaches a fifth place, which the slots replace).
    assert not plain.groupby("user_id").head(3)["item_id"].isin(NEW_ITEMS).any()
    slotted = recommend_frame(
        run, k=5, users=["u1", "u2", "u3"], new_item_slots=2
    )
    for user, rows in slotted.groupby("user_id"):
        head = plain[plain["user_id"] == user]["item_id"].tolist()[:3]
        assert rows["item_id"].tolist()[:3] == head
        assert rows["rank"].tolist() == [1, 2, 3, 4, 5]
        tail = rows.iloc[3:]
        assert tail["item_id"].isin(NEW_ITEMS).all()
        # The two best new items for this user, by the model's scores.
        assert tail["score"].is_monotonic_decreasing
        best = _new_item_scores(run, user).nlargest(2)
        np.testing.assert_allclose(tail["score"], best.values, atol=1e-5)
        assert tail["item_id"].tolist() == best.index.tolist()


def _new_item_scores(run, user):
    """The model's scores of every new item for ``user`` (allow-list)."""
    frame = recommend_frame(run, k=6, users=[user], items=NEW_ITEMS)
    return frame.set_index("item_id")["score"]


@pytest.mark.slow
def test_the_job_says_so_and_a_model_of_ids_only_is_refused(run, tmp_path):
    job = RecommendationJob(run, RecommendationOptions(k=4, new_item_slots=1))
    assert job.describe() == (
        "top 4, seen items excluded, the last 1 for the best of 6 new items"
    )
    with pytest.raises(ValueError, match="Received: new_item_slots=5"):
        RecommendationJob(run, RecommendationOptions(k=4, new_item_slots=5))
    from tests.recommendation.recommend_helpers import train_tiny_run

    ids_only = train_tiny_run(tmp_path)
    with pytest.raises(ValueError, match="a model of item ids only"):
        recommend_frame(ids_only, k=4, new_item_slots=1)


@pytest.mark.slow
def test_the_beam_engine_lists_what_the_local_one_does(run, tmp_path):
    from tests.recommendation.test_beam_engine import (
        assert_same_rows,
        beam_rows,
    )

    options = dict(k=4, users=["u1", "u5", "u9"], new_item_slots=2)
    got, _ = beam_rows(run, tmp_path, **options)
    expected = recommend_frame(run, **options)
    assert expected["item_id"].isin(NEW_ITEMS).sum() == 6
    assert_same_rows(got, expected)
    assert isinstance(got, pd.DataFrame)


@pytest.mark.slow
def test_the_facade_passes_the_slots_on(run):
    from tfrec_tricks import Recommender

    loaded = Recommender.load(run)
    got = loaded.recommend(users=["u2"], k=4, new_item_slots=3)
    expected = recommend_frame(run, k=4, users=["u2"], new_item_slots=3)
    pd.testing.assert_frame_equal(got, expected)
    assert got["item_id"].isin(NEW_ITEMS).sum() == 3
