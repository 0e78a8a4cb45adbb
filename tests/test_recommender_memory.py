"""``Recommender.recommend`` answers from memory
(``tfrec_tricks.recommendation.served_run``): the lists of
``recommend_frame`` for every option, the model loaded and traced once,
and never a run's old model or data once the run changed."""

import logging
import os

import numpy as np
import pandas as pd
import pytest
from tensorflow.python.eager.polymorphic_function import (
    polymorphic_function,
)

from tests.test_recommender import TINY, interactions
from tfrec_tricks.errors import DataError
from tfrec_tricks.recommendation import recommend_frame, served_run
from tfrec_tricks.recommendation.local_engine import LocalEngine
from tfrec_tricks.recommender import Recommender

NEW_ITEMS = ["new0", "new1", "new2"]


def _item_file(folder) -> str:
    """Attributes of the 15 items of ``interactions`` and 3 new ones."""
    path = os.path.join(folder, "attributes.item")
    items = [str(k) for k in range(15)] + NEW_ITEMS
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("item_id:token\tgenres:token_seq\n")
        for k, item in enumerate(items):
            handle.write(f"{item}\tg{k % 4} g{k % 3 + 4}\n")
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A run reading ``rating`` and item attributes (new items too)."""
    folder = tmp_path_factory.mktemp("memory")
    return Recommender(
        **TINY,
        features=("rating", "genres"),
        item_features=_item_file(folder),
        output_dir=str(folder / "runs"),
    ).fit(interactions(), verbose=0)


@pytest.fixture
def counted(monkeypatch):
    """``{"loads": n, "traces": n}``: models loaded by recommendation
    jobs, and traces of a ``LocalEngine``'s ranking function (its Python
    body runs once per trace, not per call)."""
    counts = {"loads": 0, "traces": 0}
    load = served_run.load_model
    rank = LocalEngine._recommend_filtered

    def counting_load(run_dir):
        counts["loads"] += 1
        return load(run_dir)

    def counting_rank(self, history, exclude, k, last, features):
        counts["traces"] += 1
        return rank(self, history, exclude, k, last, features)

    monkeypatch.setattr(served_run, "load_model", counting_load)
    monkeypatch.setattr(LocalEngine, "_recommend_filtered", counting_rank)
    return counts


def _new_histories() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "user_id": ["ann", "ann", "ann", "bob"],
            "item_id": ["1", "2", "3", "9"],
            "timestamp": [1, 2, 3, 1],
            "rating": [5.0, 4.0, 3.0, 1.0],
        }
    )


# recommend's options -> recommend_frame's.
OPTION_SETS = [
    ({"users": [3, "4"], "k": 4}, {"users": ["3", "4"], "k": 4}),
    ({"users": [3], "k": 15, "filter_seen": False},
     {"users": ["3"], "k": 15, "keep_seen": True}),
    ({"users": [5, 6], "k": 3, "items": [1, 2, 3, 4, "new1"]},
     {"users": ["5", "6"], "k": 3, "items": ["1", "2", "3", "4", "new1"]}),
    ({"users": [5], "k": 3, "exclude_items": [7, 8]},
     {"users": ["5"], "k": 3, "exclude_items": ["7", "8"]}),
    ({"users": [1, 2], "k": 5, "new_item_slots": 2},
     {"users": ["1", "2"], "k": 5, "new_item_slots": 2}),
    ({"users": [1, 2], "k": 5, "new_item_boost": 3.0},
     {"users": ["1", "2"], "k": 5, "new_item_boost": 3.0}),
    ({"histories": "new", "k": 3}, {"histories": "new", "k": 3}),
    ({"k": 1}, {"k": 1}),
]  # fmt: skip


@pytest.mark.slow
def test_the_lists_are_recommend_frames_for_every_option(fitted, counted):
    loaded = Recommender.load(fitted.run_dir)
    loads = 0
    for facade, frame in OPTION_SETS:
        if facade.get("histories") == "new":
            facade = {**facade, "histories": _new_histories()}
            frame = {**frame, "histories": _new_histories()}
        before = counted["loads"]
        got = loaded.recommend(**facade)
        loads += counted["loads"] - before
        expected = recommend_frame(fitted.run_dir, **frame)
        pd.testing.assert_frame_equal(got, expected)
        assert len(got)
        if facade.get("new_item_slots"):
            assert got.item_id.isin(NEW_ITEMS).sum() == 4
        if facade.get("new_item_boost"):
            assert got.item_id.isin(NEW_ITEMS).any()
    assert loads == 1


@pytest.mark.slow
def test_a_second_call_neither_loads_nor_traces_again(
    fitted, counted, monkeypatch, caplog
):
    # A fresh count of TensorFlow's retracing warnings (at most two per
    # function a process), so earlier tests cannot have used them up.
    monkeypatch.setattr(
        polymorphic_function,
        "_frequent_tracing_detector_manager",
        polymorphic_function._FrequentTracingDetectorManager(),
    )
    logger = logging.getLogger("tensorflow")
    logger.addHandler(caplog.handler)
    try:
        loaded = Recommender.load(fitted.run_dir)
        lists = [loaded.recommend(users=[u], k=4) for u in range(7)]
    finally:
        logger.removeHandler(caplog.handler)
    assert [frame.user_id.unique().tolist() for frame in lists] == [
        [str(u)] for u in range(7)
    ]
    assert "retracing" not in caplog.text
    assert counted == {"loads": 1, "traces": 1}
    # Another k: an engine of its own, traced once; the model is held.
    loaded.recommend(users=[0], k=2)
    loaded.recommend(users=[1], k=2)
    assert counted == {"loads": 1, "traces": 2}


@pytest.mark.slow
def test_a_run_retrained_since_is_read_again(tmp_path, counted):
    options = {**TINY, "output_dir": str(tmp_path), "name": "run"}
    first = Recommender(**options).fit(interactions(), verbose=0)
    before = first.recommend(users=[0, 1], k=3)
    # Another Recommender (another process alike: only the files tell)
    # retrains the run: other weights.
    Recommender(**options, learning_rate=0.05).fit(
        interactions(), verbose=0, overwrite=True
    )
    counted["loads"] = 0
    after = first.recommend(users=[0, 1], k=3)
    assert counted["loads"] == 1
    expected = recommend_frame(first.run_dir, k=3, users=["0", "1"])
    pd.testing.assert_frame_equal(after, expected)
    assert not np.allclose(after.score, before.score)


@pytest.mark.slow
def test_data_edited_since_is_refused_as_recommend_frame_refuses_it(
    fitted, tmp_path
):
    copy = fitted.save(str(tmp_path / "copy"))
    loaded = Recommender.load(copy)
    assert len(loaded.recommend(users=[0], k=2)) == 2
    (data,) = [p for p in tmp_path.iterdir() if p.suffix == ".inter"]
    with open(data, "a", encoding="utf-8") as handle:
        handle.write("0\t3\t99.0\t4.0\n")
    with pytest.raises(DataError) as expected:
        recommend_frame(copy, k=2, users=["0"])
    assert "changed since the run" in str(expected.value)
    with pytest.raises(DataError) as error:
        loaded.recommend(users=[0], k=2)
    assert str(error.value) == str(expected.value)
