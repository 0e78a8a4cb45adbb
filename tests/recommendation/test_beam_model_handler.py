"""The Beam engine's model (``tfrec_tricks.recommendation.
beam_model_handler``): an exported SavedModel, loaded with plain
``tf.saved_model.load``, ranks a batch as the local engine does; exports
that cannot give a run's lists are refused; a missing Beam names the
extra."""

import importlib
import os
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tfrec_tricks.export.model_identity import ModelIdentity
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
from tfrec_tricks.recommendation import beam_model_handler, local_engine
from tfrec_tricks.recommendation.beam_model_handler import (
    RecommendationModelHandler,
    UserList,
    UserRequest,
    check_saved_model,
    lists_frame,
    load_saved_model,
)
from tfrec_tricks.recommendation.local_engine import ListFilters, LocalEngine

ITEMS = ["[PAD]"] + [f"i{i}" for i in range(1, 13)]
MAX_LEN = 4
K = 5
# The model the export records (a model of no run: an identity made up).
IDENTITY = ModelIdentity("a" * 64, "/runs/m", seed=3)
# Raw user -> contiguous item ids: an empty history, one with an item the
# catalogue lacks (0), one longer than max_len, one that has seen most.
HISTORIES = {
    "empty": [],
    "short": [3, 0, 5],
    "long": [1, 2, 3, 4, 5, 6, 7],
    "most": [1, 2, 3, 4, 5, 6, 7, 8, 9],
}
FILTERS = {
    "seen excluded": ListFilters(),
    "kept, denied": ListFilters(keep_seen=True, denied=np.array([2, 11])),
    "allow-list": ListFilters(allowed=np.array([12, 10, 8, 3, 1])),
    "allow-list, denied": ListFilters(
        allowed=np.arange(12, 0, -1), denied=np.array([4])
    ),
}


def requests():
    out = []
    for user, ids in HISTORIES.items():
        ids = np.asarray(ids, np.int32)
        gaps = np.arange(len(ids), dtype=np.float32) * 60.0
        gaps[:1] = np.nan
        out.append(UserRequest(user, ids, {"time_gap": gaps}))
    return out


def handler_of(path, filters, k=K, batch_size=3):
    return RecommendationModelHandler(
        path, k=k, max_len=MAX_LEN, filters=filters, batch_size=batch_size
    )


@pytest.fixture(scope="module")
def engine():
    tf.keras.utils.set_random_seed(3)
    model = SequentialRetrievalModel(
        ModelConfig(
            num_items=len(ITEMS),
            max_len=MAX_LEN,
            embedding_dim=8,
            features=("time_gap",),
        )
    )
    return LocalEngine(model, ITEMS, k=K)


@pytest.fixture(scope="module")
def exported(engine, tmp_path_factory):
    from tfrec_tricks.export import export_for_serving

    root = tmp_path_factory.mktemp("served")
    return export_for_serving(
        engine.module.model,
        str(root / "m"),
        ITEMS,
        k=K + 1,
        warmup=False,
        identity=IDENTITY,
    )


def test_batches_are_of_the_batch_size():
    handler = handler_of("unused", ListFilters(), batch_size=7)
    assert handler.batch_elements_kwargs() == {
        "min_batch_size": 7,
        "max_batch_size": 7,
    }
    assert handler.get_metrics_namespace() == "tfrec_tricks.recommend"


def test_lists_frame_has_the_local_engines_columns_and_types():
    frame = lists_frame(
        [
            UserList("a", [], np.zeros(0, np.float32)),
            UserList("b", ["i2", "i1"], np.float32([0.5, 0.25])),
            UserList("c", ["i9"], np.float32([-1.0])),
        ]
    )
    assert frame.values.tolist() == [
        ["b", 1, "i2", 0.5],
        ["b", 2, "i1", 0.25],
        ["c", 1, "i9", -1.0],
    ]
    assert frame.dtypes.equals(local_engine.empty_frame().dtypes)
    assert lists_frame([]).dtypes.equals(local_engine.empty_frame().dtypes)


def test_a_folder_that_is_no_savedmodel_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "notes.txt").write_text("x")
    for name, what in (
        ("missing", "does not exist"),
        ("file", "is a file"),
        ("folder", "holds ['notes.txt']"),
    ):
        path = str(tmp_path / name)
        with pytest.raises(ValueError, match="is not a SavedModel folder") as e:
            load_saved_model(path)
        assert f"Received: {path!r} {what}" in str(e.value)


def test_without_beam_the_error_names_the_extra(monkeypatch):
    name = beam_model_handler.__name__
    for missing in ("apache_beam", "apache_beam.ml.inference.base"):
        monkeypatch.setitem(sys.modules, missing, None)
    monkeypatch.delitem(sys.modules, name)
    with pytest.raises(
        ImportError, match=r'pip install "tfrec_tricks\[beam\]"'
    ):
        importlib.import_module(name)


@pytest.mark.slow
@pytest.mark.parametrize("filters", FILTERS.values(), ids=list(FILTERS))
def test_the_savedmodel_ranks_as_the_local_engine(engine, exported, filters):
    handler = handler_of(exported, filters)
    model = handler.load_model()
    batch = requests()
    lists = handler.run_inference(batch, model)
    assert [one.user_id for one in lists] == list(HISTORIES)
    got = lists_frame(lists)

    from tfrec_tricks.recommendation.user_histories import HistoryBatch

    histories = HistoryBatch()
    for request in batch:
        histories.append(*request)
    expected = engine.rank(histories, filters)
    assert len(got) and got["user_id"].tolist() == expected["user_id"].tolist()
    for column in ("rank", "item_id"):
        assert got[column].tolist() == expected[column].tolist()
    np.testing.assert_allclose(got["score"], expected["score"], atol=1e-5)
    # A user with fewer eligible items than k gets a shorter list.
    if not filters.keep_seen and filters.allowed is None:
        assert (got["user_id"] == "most").sum() == 12 - 9


@pytest.mark.slow
def test_allowed_items_in_chunks_rank_as_one(exported, monkeypatch):
    filters = FILTERS["allow-list, denied"]
    handler = handler_of(exported, filters)
    model = handler.load_model()
    whole = lists_frame(handler.run_inference(requests(), model))
    monkeypatch.setattr(local_engine, "CANDIDATE_CHUNK", 5)
    chunked = lists_frame(handler.run_inference(requests(), model))
    pd.testing.assert_frame_equal(chunked, whole)


@pytest.mark.slow
def test_the_savedmodel_gives_its_catalogue_features_and_k(exported):
    loaded, info = load_saved_model(exported)
    assert info.items == ITEMS
    assert info.feature_names == ("time_gap",)
    assert info.k == K + 1
    check_saved_model(exported, ITEMS, ["time_gap"], K + 1, IDENTITY)


@pytest.mark.slow
def test_exports_that_cannot_give_the_runs_lists_are_refused(
    exported, tmp_path
):
    other = ITEMS[:3] + ["x"] + ITEMS[4:]
    cases = [
        (dict(items=other), "another catalogue", "first difference at "
         "contiguous id 3"),
        (dict(items=ITEMS[:-1]), "another catalogue", "11 items"),
        (dict(features=[]), "other features", "Received: ['time_gap']"),
        (dict(k=K + 2), "returns at most 6 items", f"--k {K + 2} or more"),
        (dict(identity=ModelIdentity("b" * 64, "/runs/m", seed=4)),
         "exported from another model than the run's \\(/runs/m: seed 4",
         "Received: an export of the model trained in /runs/m (seed 3, "
         "weights aaaaaaaaaaaa)"),
    ]  # fmt: skip
    for change, reason, received in cases:
        arguments = dict(
            items=ITEMS, features=["time_gap"], k=K, identity=IDENTITY
        )
        arguments.update(change)
        with pytest.raises(ValueError, match=reason) as error:
            check_saved_model(
                exported,
                arguments["items"],
                arguments["features"],
                arguments["k"],
                arguments["identity"],
            )
        assert received in str(error.value)
    # A SavedModel that is no tfrec-tricks export.
    plain = str(tmp_path / "plain")
    module = tf.Module()
    module.f = tf.function(lambda x: {"y": x}).get_concrete_function(
        tf.TensorSpec([None], tf.float32)
    )
    tf.saved_model.save(module, plain, signatures={"serving_default": module.f})
    with pytest.raises(ValueError, match="is not a tfrec-tricks export") as e:
        check_saved_model(plain, ITEMS, ["time_gap"], K, IDENTITY)
    assert "Received: signatures ['serving_default']" in str(e.value)
    assert os.path.isdir(plain)
