"""Recommendations, export and the ``Recommender`` under the Keras in use.

These tests run under tf-keras and under Keras 3 (CI's Keras 3 job): a
tiny run with item attributes, trained under the Keras in use, gets the
same lists from ``tfrec-tricks recommend``'s local and Beam engines, is
exported (and with ``--add-items``) into SavedModels plain TensorFlow
serves, and is fitted, recommended for, exported, saved and loaded through
the ``Recommender``. A run of the other Keras (trained in a process of its
own) is refused by each of them, naming both Kerases
(``training.run_keras.check_run_keras``), before anything is written.
"""

import json
import os

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tests.keras_env import KERAS3
from tests.recommendation.recommend_helpers import (
    NEW_ITEMS,
    train_new_items_run,
)
from tests.run_helpers import TINY_FLAGS, run_cli, run_in_process, snapshot
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.recommender import Recommender
from tfrec_tricks.training import run_keras

THIS = "keras-3" if KERAS3 else "tf-keras"
OTHER = "tf-keras" if KERAS3 else "keras-3"
NAMES = {"tf-keras": "tf-keras (Keras 2)", "keras-3": "Keras 3"}
TINY = {"epochs": 1, "max_len": 6, "embedding_dim": 8, "seed": 0}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> str:
    """A run with item attributes and 6 items no user clicked, trained
    under this Keras."""
    run_dir = train_new_items_run(tmp_path_factory.mktemp("keras-run"))
    with open(os.path.join(run_dir, "run.json")) as handle:
        fingerprint = json.load(handle)["fingerprint"]
    assert run_keras.recorded_keras(fingerprint) == THIS
    return run_dir


def _rows(path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype={"user_id": str, "item_id": str})
    return frame.sort_values(["user_id", "rank"]).reset_index(drop=True)


@pytest.mark.slow
def test_local_and_beam_engines_give_the_same_lists(run, tmp_path, capsys):
    local, beam = tmp_path / "local.csv", tmp_path / "beam.csv"
    argv = ["recommend", run, "--k", "4", "--new-item-slots", "1"]
    code, output = run_in_process(capsys, *argv, "--output", local)
    assert code == 0, output[-3000:]
    code, output = run_in_process(
        capsys, *argv, "--engine", "beam", "--shards", "1", "--output", beam
    )
    assert code == 0, output[-3000:]
    ours = _rows(local)
    # One shard (beside the folder's record of what it holds).
    (shard,) = beam.glob("part-*.csv")
    theirs = _rows(shard)
    assert len(ours) > 0
    pd.testing.assert_frame_equal(
        ours.drop(columns="score"), theirs.drop(columns="score")
    )
    np.testing.assert_allclose(ours["score"], theirs["score"], atol=1e-5)
    # The reserved place holds a new item (ranked by its attributes).
    assert set(ours[ours["rank"] == 4]["item_id"]) <= set(NEW_ITEMS)


@pytest.mark.slow
def test_export_and_added_items_serve_in_plain_tensorflow(
    run, tmp_path, capsys
):
    base = tmp_path / "saved_models"
    argv = ["export", run, "--name", "shop", "--base-path", base, "--k", "5"]
    code, output = run_in_process(capsys, *argv)
    assert code == 0, output[-3000:]
    added = tmp_path / "more.item"
    added.write_text(
        "item_id:token\tgenres:token_seq\nbrand-new\tg1 g6\ni3\tg0 g5\n"
    )
    code, output = run_in_process(capsys, *argv, "--add-items", added)
    assert code == 0, output[-3000:]
    assert "Added 1 items" in output
    first = tf.saved_model.load(str(base / "shop" / "1"))
    second = tf.saved_model.load(str(base / "shop" / "2"))
    history = tf.constant([["i1", "i2", "i3"], ["", "", ""]])
    old = [f"i{k}" for k in range(1, 20)]
    candidates = tf.constant([old + ["brand-new"]] * 2)
    one = first.signatures["score_candidates"](
        history=history, candidate_ids=candidates
    )["scores"].numpy()
    two = second.signatures["score_candidates"](
        history=history, candidate_ids=candidates
    )["scores"].numpy()
    # The old items keep their scores; the new one is scored, not -1e9.
    np.testing.assert_allclose(two[:, :-1], one[:, :-1], rtol=1e-5, atol=1e-5)
    assert (one[:, -1] == -1e9).all() and (two[:, -1] > -1e8).all()
    served = second.signatures["serving_default"](history=history)
    assert served["item_ids"].shape == (2, 5)


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "user_id": np.repeat(np.arange(30), 6),
            "item_id": rng.integers(0, 15, 180),
            "timestamp": np.tile(np.arange(6), 30),
        }
    )


@pytest.mark.slow
def test_the_recommender_fits_recommends_exports_saves_and_loads(tmp_path):
    fitted = Recommender(output_dir=str(tmp_path / "runs"), **TINY).fit(
        _frame(), verbose=0
    )
    lists = fitted.recommend(users=[0, 1], k=3, filter_seen=False)
    assert lists["rank"].tolist() == [1, 2, 3] * 2
    version = fitted.export(str(tmp_path / "served"), name="rec", k=3)
    loaded = tf.saved_model.load(version)
    # A user's list is what the export serves for the user's history.
    frame = _frame()
    history = frame[frame["user_id"] == 0]["item_id"].astype(str).tolist()
    served = loaded.signatures["serving_default"](
        history=tf.constant([history])
    )
    user = lists[lists["user_id"] == "0"]
    assert [i.decode() for i in served["item_ids"].numpy()[0]] == (
        user["item_id"].tolist()
    )
    np.testing.assert_allclose(
        served["scores"].numpy()[0], user["score"], atol=1e-5
    )
    saved = fitted.save(str(tmp_path / "copy"))
    again = Recommender.load(saved)
    pd.testing.assert_frame_equal(
        again.recommend(users=[0, 1], k=3, filter_seen=False), lists
    )


@pytest.fixture(scope="module")
def other_run(tmp_path_factory) -> str:
    """A run trained under the other Keras, in a process of its own."""
    root = tmp_path_factory.mktemp("other-keras")
    made = run_cli(
        "train", *TINY_FLAGS, "--epochs", "1", "--head", "softmax",
        "--output-dir", root, "--name", "run", "--quiet",
        env={"TF_USE_LEGACY_KERAS": "1" if KERAS3 else "0"},
    )  # fmt: skip
    assert made.returncode == 0, made.stderr[-3000:]
    return str(root / "run")


def _names_both(message: str) -> None:
    assert f"trained under {NAMES[OTHER]}" in message
    assert f"this process uses {NAMES[THIS]}" in message
    assert "cannot be loaded under another Keras" in message


@pytest.mark.slow
def test_a_run_of_the_other_keras_is_refused(other_run, tmp_path, capsys):
    before = snapshot(other_run)
    with pytest.raises(RunDirectoryError) as raised:
        Recommender.load(other_run)
    _names_both(str(raised.value))
    base = tmp_path / "saved_models"
    code, output = run_in_process(
        capsys, "export", other_run, "--name", "m", "--base-path", base
    )
    assert code == 1
    _names_both(output)
    for engine in ("local", "beam"):
        path = tmp_path / f"{engine}.csv"
        code, output = run_in_process(
            capsys, "recommend", other_run, "--engine", engine,
            "--output", path,
        )  # fmt: skip
        assert code == 1
        _names_both(output)
        assert not path.exists()
    assert not base.exists()
    assert snapshot(other_run) == before
