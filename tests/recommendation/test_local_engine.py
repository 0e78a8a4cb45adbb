"""Ranking a batch of users in-process
(``tfrec_tricks.recommendation.local_engine``): the filters, ties, one
trace, and the same lists as the exported SavedModel."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.recommendation import local_engine
from tfrec_tricks.recommendation.local_engine import (
    COLUMNS,
    ListFilters,
    LocalEngine,
    empty_frame,
)
from tfrec_tricks.recommendation.user_histories import HistoryBatch

ITEMS = ["[PAD]"] + [f"i{i}" for i in range(1, 13)]
MAX_LEN = 4


def make_engine(k=5, seed=0, head="softmax"):
    tf.keras.utils.set_random_seed(seed)
    model = SequentialRetrievalModel(
        ModelConfig(
            num_items=len(ITEMS),
            max_len=MAX_LEN,
            embedding_dim=8,
            features=("time_gap",),
            head=head,
        )
    )
    return LocalEngine(model, ITEMS, k=k)


def batch_of(histories):
    """A ``HistoryBatch`` of ``{user: [ids]}`` with a gap per item."""
    batch = HistoryBatch()
    for user, ids in histories.items():
        ids = np.asarray(ids, np.int32)
        gaps = np.arange(len(ids), dtype=np.float32) * 60.0
        gaps[:1] = np.nan
        batch.append(user, ids, {"time_gap": gaps})
    return batch


def logits(engine, batch):
    """The model's logits for each user's request, ``[B, N]``."""
    history, features = engine.request(batch)
    ids = np.vectorize(lambda raw: ITEMS.index(raw) if raw else 0)(history)
    inputs = {"history": ids.astype(np.int32).reshape(len(batch), -1)}
    inputs["time_gap"] = features["time_gap"]
    encoded, states = engine.module.model.encode(inputs, training=False)
    return engine.module.model.logits(encoded, states).numpy()


def reference(engine, batch, filters, k):
    """``{user: [(item, score)]}``: every item by logit then id, filtered."""
    scores = logits(engine, batch)
    lists = {}
    for row, user in enumerate(batch.users):
        excluded = set(filters.excluded(batch.item_ids[row]).tolist())
        allowed = range(1, len(ITEMS))
        if filters.allowed is not None:
            allowed = filters.allowed.tolist()
        ranked = sorted(
            (i for i in allowed if i not in excluded),
            key=lambda i: (-scores[row, i], i),
        )
        lists[user] = [(ITEMS[i], scores[row, i]) for i in ranked[:k]]
    return lists


def as_lists(frame):
    lists = {}
    for user, rows in frame.groupby("user_id", sort=False):
        assert rows["rank"].tolist() == list(range(1, len(rows) + 1))
        lists[user] = list(zip(rows["item_id"], rows["score"]))
    return lists


def assert_lists(got, expected):
    assert list(got) == [u for u in expected if expected[u]]
    for user, pairs in got.items():
        assert [i for i, _ in pairs] == [i for i, _ in expected[user]]
        np.testing.assert_allclose(
            [s for _, s in pairs], [s for _, s in expected[user]], atol=1e-5
        )


HISTORIES = {
    "new": [],
    "short": [3],
    # More than max_len items: the first ones are excluded all the same.
    "long": [1, 2, 3, 4, 5, 6, 7],
    # Items the catalogue does not hold (0) take no place of the history.
    "unknown": [0, 8, 0, 9, 0],
    # 10 of the 12 items seen: 2 eligible, fewer than k.
    "most": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 3],
}


def test_lists_leave_out_seen_items_and_shrink_when_few_are_left():
    engine = make_engine(k=5)
    batch = batch_of(HISTORIES)
    frame = engine.rank(batch, ListFilters())
    assert frame.columns.tolist() == list(COLUMNS)
    assert frame.dtypes.astype(str).tolist() == [
        "str",
        "int32",
        "str",
        "float32",
    ]
    assert frame.groupby("user_id", sort=False).size().to_dict() == {
        "new": 5,
        "short": 5,
        "long": 5,
        "unknown": 5,
        "most": 2,
    }
    assert_lists(as_lists(frame), reference(engine, batch, ListFilters(), 5))
    kept = engine.rank(batch, ListFilters(keep_seen=True))
    assert (kept.groupby("user_id").size() == 5).all()
    assert_lists(
        as_lists(kept), reference(engine, batch, ListFilters(keep_seen=True), 5)
    )


def test_allow_and_deny_lists():
    engine = make_engine(k=4)
    batch = batch_of(HISTORIES)
    denied = ListFilters(denied=np.array([11, 12, 1]))
    assert_lists(
        as_lists(engine.rank(batch, denied)),
        reference(engine, batch, denied, 4),
    )
    allowed = ListFilters(
        denied=np.array([12]), allowed=np.array([12, 2, 11, 9, 5, 10])
    )
    frame = engine.rank(batch, allowed)
    assert set(frame["item_id"]) <= {"i2", "i11", "i9", "i5", "i10"}
    assert_lists(as_lists(frame), reference(engine, batch, allowed, 4))
    assert frame.groupby("user_id", sort=False).size().to_dict() == {
        "new": 4,
        "short": 4,
        "long": 3,
        "unknown": 4,
        "most": 1,
    }


def test_allowed_items_in_chunks_rank_as_one(monkeypatch):
    engine = make_engine(k=4)
    batch = batch_of(HISTORIES)
    allowed = ListFilters(allowed=np.arange(12, 0, -1))
    whole = engine.rank(batch, allowed)
    monkeypatch.setattr(local_engine, "CANDIDATE_CHUNK", 3)
    pd.testing.assert_frame_equal(engine.rank(batch, allowed), whole)


def test_ties_rank_the_lower_item_id_first():
    engine = make_engine(k=5)
    model = engine.module.model
    # The item table and bias by attribute: the Kerases name them apart.
    table = model.item_embedding
    table.embeddings.assign(tf.ones_like(table.embeddings))
    table.output_bias.assign(tf.zeros_like(table.output_bias))
    batch = batch_of({"a": [2, 4], "b": []})
    frame = engine.rank(batch, ListFilters(denied=np.array([5])))
    lists = as_lists(frame)
    assert [i for i, _ in lists["a"]] == ["i1", "i3", "i6", "i7", "i8"]
    assert [i for i, _ in lists["b"]] == ["i1", "i2", "i3", "i4", "i6"]
    allowed = ListFilters(allowed=np.array([9, 8, 7, 2, 1]))
    lists = as_lists(engine.rank(batch, allowed))
    assert [i for i, _ in lists["a"]] == ["i1", "i7", "i8", "i9"]
    assert [i for i, _ in lists["b"]] == ["i1", "i2", "i7", "i8", "i9"]


def test_batches_of_any_size_share_one_trace():
    engine = make_engine(k=3)
    for users in ({"a": [1]}, HISTORIES, {"b": list(range(1, 12))}):
        engine.rank(batch_of(users), ListFilters())
        engine.rank(batch_of(users), ListFilters(allowed=np.array([1, 2])))
    assert engine._recommend.experimental_get_tracing_count() == 1
    assert engine._score.experimental_get_tracing_count() == 1


def test_request_holds_the_last_known_items_with_their_features():
    engine = make_engine()
    history, features = engine.request(batch_of(HISTORIES))
    assert history.shape == (5, MAX_LEN)
    assert history[2].tolist() == ["i4", "i5", "i6", "i7"]
    assert history[3].tolist() == ["i8", "i9", "", ""]
    assert features["time_gap"][3].tolist() == [60.0, 180.0, 0.0, 0.0]
    assert history[0].tolist() == ["", "", "", ""]


def test_an_empty_batch_result_has_the_columns():
    frame = empty_frame()
    assert frame.columns.tolist() == list(COLUMNS) and not len(frame)


@pytest.mark.slow
def test_the_lists_are_the_exported_savedmodels(tmp_path):
    from tfrec_tricks.export import export_for_serving

    engine = make_engine(k=5, seed=4)
    batch = batch_of(HISTORIES)
    filters = ListFilters(denied=np.array([12]))
    frame = engine.rank(batch, filters)
    path = export_for_serving(
        engine.module.model, str(tmp_path / "served" / "m"), ITEMS, k=5
    )
    loaded = tf.saved_model.load(path)
    history, features = engine.request(batch)
    excluded = [filters.excluded(ids) for ids in batch.item_ids]
    width = max(len(ids) for ids in excluded)
    exclude = np.full((len(batch), width), "", dtype=object)
    for row, ids in enumerate(excluded):
        exclude[row, : len(ids)] = np.asarray(ITEMS, dtype=object)[ids]
    served = loaded.signatures["recommend_filtered"](
        history=tf.constant(history.astype(str)),
        time_gap=tf.constant(features["time_gap"]),
        exclude_item_ids=tf.constant(exclude.astype(str)),
        k=tf.fill([len(batch)], 5),
        history_last=tf.zeros([len(batch)], tf.bool),
    )
    ids = served["item_ids"].numpy().astype(str)
    scores = served["scores"].numpy()
    expected = {}
    for row, user in enumerate(batch.users):
        dropped = set(np.asarray(ITEMS)[excluded[row]])
        expected[user] = [
            (item, score)
            for item, score in zip(ids[row], scores[row])
            if item and item not in dropped
        ]
    assert_lists(as_lists(frame), expected)


def test_kept_seen_items_rank_as_the_model_serves_them():
    # A softmax_no_dup model serves the history it reads last: with
    # --keep-seen its lists end with them, scored -1e9, as the SavedModel's
    # serving_default and score_candidates (the allow-list path) do.
    engine = make_engine(k=len(ITEMS) - 1, head="softmax_no_dup")
    assert engine.history_last
    batch = batch_of({"ann": [1, 2, 3, 5, 7]})  # reads the last 4
    kept = ListFilters(keep_seen=True)
    lists = engine.rank(batch, kept)
    ranked = lists["item_id"].tolist()
    assert set(ranked[-4:]) == {"i2", "i3", "i5", "i7"}
    assert (lists["score"].to_numpy()[-4:] == np.float32(-1e9)).all()
    # score_candidates gives them all -1e9: among themselves they rank by
    # lower id there, by their logits in recommend_filtered.
    allowed = ListFilters(keep_seen=True, allowed=np.arange(1, len(ITEMS)))
    among = engine.rank(batch, allowed)["item_id"].tolist()
    assert among[:-4] == ranked[:-4]
    assert among[-4:] == ["i2", "i3", "i5", "i7"]
    assert not make_engine(head="softmax").history_last
