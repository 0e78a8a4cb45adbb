"""``tfrec_tricks.Recommender``: options, fit, recommend, evaluate, save,
load and export, on a tiny DataFrame (one epoch)."""

import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import tfrec_tricks
from tfrec_tricks.recommender import Recommender, _atomic_text
from tfrec_tricks.training.run_directory import check_finished_run

TINY = {"epochs": 1, "max_len": 6, "embedding_dim": 8, "seed": 0}
# Run in a fresh process: what importing the package root imports.
LIGHT_ROOT = """\
import sys, tfrec_tricks
assert "Recommender" in dir(tfrec_tricks)
print("tensorflow" in sys.modules, "tfrec_tricks.training" in sys.modules)
"""


def interactions(users: int = 40, per_user: int = 6) -> pd.DataFrame:
    """``users`` users of ``per_user`` interactions with 15 items."""
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "user_id": np.repeat(np.arange(users), per_user),
            "item_id": rng.integers(0, 15, users * per_user),
            "timestamp": np.tile(np.arange(per_user), users),
            "rating": rng.integers(1, 6, users * per_user).astype(float),
        }
    )


@pytest.fixture(scope="module")
def fitted():
    return Recommender(**TINY).fit(interactions(), verbose=0)


def test_the_root_gives_recommender_without_importing_tensorflow():
    output = subprocess.check_output(
        [sys.executable, "-c", LIGHT_ROOT], text=True
    )
    assert output.split() == ["False", "False"]
    assert tfrec_tricks.Recommender is Recommender
    with pytest.raises(AttributeError, match="no attribute 'Recomender'"):
        tfrec_tricks.Recomender  # noqa: B018


def test_unknown_options_are_named_with_close_matches():
    with pytest.raises(ValueError) as error:
        Recommender(epoch=3, max_lenn=20, colour="red")
    message = str(error.value)
    assert "Unknown Recommender options ['colour', 'epoch', 'max_lenn']" in (
        message
    )
    assert "epoch -> epochs" in message and "max_lenn -> max_len" in message
    assert message.endswith("Received: colour='red', epoch=3, max_lenn=20")


def test_the_data_is_fits_argument_not_an_option():
    with pytest.raises(ValueError, match="fit's argument.*data='ml-1m'"):
        Recommender(data="ml-1m")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"epochs": 0}, "epochs must be positive. Received: epochs=0"),
        ({"encoder": "lstm"}, "encoder.*Received.*'lstm'"),
        ({"dropout": 1.5}, "dropout must be in"),
        ({"recipe": "fast"}, "Unknown recipe"),
        # The flags' choices, as tfrec-tricks train checks them.
        ({"optimizer": "sgd"}, "optimizer must be one of"),
        ({"file_format": "xml"}, "Received: file_format='xml'"),
        ({"distribute": "gpu"}, "Received: distribute='gpu'"),
    ],
)
def test_option_values_are_checked_at_once(options, message):
    with pytest.raises(ValueError, match=message):
        Recommender(**options)


def test_a_recipe_gives_settings_that_the_options_override():
    recommender = Recommender(recipe="long-histories", epochs=3, dropout=0.3)
    config = recommender._config
    assert (config.epochs, config.max_len) == (3, 200)
    assert config.model.value("encoder") == "sasrec"
    assert config.model.value("dropout") == 0.3
    named = Recommender(encoder="gru4rec", recipe="long-histories")
    assert named._config.model["encoder"] == "gru4rec"


def test_unfitted_use_is_refused(tmp_path):
    recommender = Recommender()
    calls = [
        recommender.recommend,
        recommender.evaluate,
        lambda: recommender.save(str(tmp_path / "copy")),
        lambda: recommender.export(str(tmp_path / "served")),
        lambda: recommender.model,
    ]
    for call in calls:
        with pytest.raises(ValueError, match="not fitted yet"):
            call()
    assert recommender.run_dir is None


@pytest.mark.parametrize(
    "frame, message",
    [
        (pd.DataFrame({"user_id": [1]}), "columns user_id and item_id"),
        (
            pd.DataFrame({"user_id": [], "item_id": []}),
            "Received: 0 rows",
        ),
        (
            pd.DataFrame({"user_id": [1, None], "item_id": [1, 2]}),
            "'user_id' must hold an id in every row. Received: row 1",
        ),
        (
            pd.DataFrame({"user_id": [1], "item_id": ["a\tb"]}),
            "'item_id' must hold values without tabs",
        ),
        (
            pd.DataFrame({"user_id": [1], "item_id": [2], "x": [np.inf]}),
            "'x' must hold finite numbers in every row. Received: row 0 "
            "holds inf",
        ),
        (
            pd.DataFrame({"user_id": [1], "item_id": [2], "timestamp": ["x"]}),
            "'timestamp' must hold numbers or times",
        ),
        (
            pd.DataFrame({"user_id": [1], "item_id": [2], "a:b": [1]}),
            "column names must be .* Received: column 'a:b'",
        ),
    ],
)
def test_fit_refuses_a_frame_the_file_cannot_hold(frame, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        Recommender(output_dir=str(tmp_path)).fit(frame)
    assert os.listdir(tmp_path) == []


def test_fit_refuses_other_data(tmp_path):
    with pytest.raises(ValueError, match="Received: data of type int"):
        Recommender().fit(42)
    with pytest.raises(ValueError, match="data_path='/data'"):
        Recommender(data_path="/data").fit(interactions())


def test_a_frame_becomes_a_recbole_atomic_file():
    frame = pd.DataFrame(
        {
            "shop": ["s1", None],
            "item_id": ["i1", "i2"],
            "user_id": [7, 7],
            "timestamp": pd.to_datetime(
                ["1970-01-01 00:00:10", "1970-01-02 00:00:00"]
            ),
            "rating": [4, 5],
        }
    )
    assert _atomic_text(frame).splitlines() == [
        "user_id:token\titem_id:token\ttimestamp:float\tshop:token\t"
        "rating:float",
        "7\ti1\t10.0\ts1\t4.0",
        "7\ti2\t86400.0\t\t5.0",
    ]


@pytest.mark.slow
def test_fit_on_a_frame_writes_the_run_and_its_data_beside_it(fitted):
    parent = os.path.dirname(fitted.run_dir)
    assert os.path.basename(fitted.run_dir) == "recommender"
    (data_file,) = [
        name for name in os.listdir(parent) if name != "recommender"
    ]
    assert data_file.startswith("interactions-") and data_file.endswith(
        ".inter"
    )
    check_finished_run(fitted.run_dir)
    metrics = fitted.evaluate()
    assert sorted(metrics["test"]) == ["hr@10", "mrr@10", "ndcg@10"]
    assert metrics["epochs_run"] == 1
    assert fitted.model.config.num_items == 16  # 15 items and padding
    assert isinstance(fitted.model, tf.keras.Model)


@pytest.mark.slow
def test_recommend_filters_seen_items_and_keeps_to_the_lists(fitted):
    frame = interactions()
    seen = set(frame[frame.user_id == 3].item_id.astype(str))
    top = fitted.recommend(users=[3, "4"], k=4)
    assert top.columns.tolist() == ["user_id", "rank", "item_id", "score"]
    assert top.user_id.tolist() == ["3"] * 4 + ["4"] * 4
    assert not seen & set(top[top.user_id == "3"].item_id)
    kept = fitted.recommend(users=[3], k=15, filter_seen=False)
    assert seen <= set(kept.item_id)
    allowed = fitted.recommend(users=[3], k=3, items=[1, 2, 3, 4, 5, 6, 7])
    assert set(allowed.item_id) <= {"1", "2", "3", "4", "5", "6", "7"} - seen
    excluded = fitted.recommend(users=[3], k=3, exclude_items=top.item_id[:2])
    assert not set(excluded.item_id) & set(top.item_id[:2])
    assert fitted.recommend(k=1).user_id.nunique() == 40


@pytest.mark.slow
def test_a_saved_run_recommends_alike_after_the_original_is_gone(tmp_path):
    recommender = Recommender(**TINY).fit(interactions(30), verbose=0)
    expected = recommender.recommend(users=["0", "1", "2"], k=3)
    temporary = os.path.dirname(recommender.run_dir)
    saved = str(tmp_path / "models" / "mine")
    assert recommender.save(saved) == saved
    del recommender
    gc.collect()
    assert not os.path.exists(temporary)
    (data_file,) = [n for n in os.listdir(tmp_path / "models") if n != "mine"]
    with open(os.path.join(saved, "config.json")) as handle:
        train = json.load(handle)["train"]
    assert train["data_path"] == str(tmp_path / "models" / data_file)
    assert (train["output_dir"], train["name"]) == (
        str(tmp_path / "models"),
        "mine",
    )
    loaded = Recommender.load(saved)
    assert (loaded.encoder, loaded.head) == ("gru4rec", "softmax")
    pd.testing.assert_frame_equal(
        loaded.recommend(users=["0", "1", "2"], k=3), expected
    )
    again = str(tmp_path / "models" / "again")
    loaded.save(again)
    with pytest.raises(ValueError, match="already exists; pass overwrite"):
        loaded.save(again)
    loaded.save(again, overwrite=True)
    check_finished_run(again)
    with pytest.raises(ValueError, match="an input of this command"):
        loaded.save(saved, overwrite=True)


@pytest.mark.slow
def test_the_export_serves_the_recommended_lists(fitted, tmp_path):
    path = fitted.export(str(tmp_path / "served"), k=3)
    assert path == str(tmp_path / "served" / "recommender" / "1")
    frame = interactions()
    histories = [
        frame[frame.user_id == user].item_id.astype(str).tolist()
        for user in (0, 1)
    ]
    served = tf.saved_model.load(path).signatures["serving_default"]
    lists = served(history=tf.constant(histories))["item_ids"].numpy()
    expected = fitted.recommend(users=[0, 1], k=3, filter_seen=False)
    assert lists.astype(str).ravel().tolist() == expected.item_id.tolist()


@pytest.mark.slow
def test_export_refuses_a_run_retrained_since_it_was_fitted(tmp_path):
    from tests.run_helpers import snapshot
    from tfrec_tricks.export.model_identity import (
        ModelIdentity,
        read_identity,
    )

    options = {**TINY, "output_dir": str(tmp_path / "runs"), "name": "a"}
    first = Recommender(**options).fit(interactions(), verbose=0)
    run = first.run_dir
    trained = ModelIdentity.of_run(run, check_finished_run(run))
    # The version records the model it holds.
    path = first.export(str(tmp_path / "served"), name="m")
    assert read_identity(path) == trained
    # Another Recommender retrains the run: other weights.
    Recommender(**options, learning_rate=0.01).fit(
        interactions(), verbose=0, overwrite=True
    )
    now = ModelIdentity.of_run(run, check_finished_run(run))
    assert now.sha256 != trained.sha256
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as error:
        first.export(str(tmp_path / "served"), name="m")
    assert str(error.value) == (
        f"{run} now holds another model than this Recommender's "
        f"({now.facts()}): it was retrained since. Recommender.load(run_dir) "
        "exports the run's model, fit trains this one's again. Received: "
        f"this Recommender's {trained.describe()}"
    )
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_fit_on_a_file_names_the_run_after_it(tmp_path):
    path = tmp_path / "clicks.tsv"
    frame = interactions(30)
    frame[["user_id", "item_id", "rating", "timestamp"]].to_csv(
        path, sep="\t", header=False, index=False
    )
    output = tmp_path / "runs"
    recommender = Recommender(**TINY, output_dir=str(output)).fit(
        path, verbose=0
    )
    assert recommender.run_dir == str(output / "clicks")
    assert sorted(os.listdir(output)) == ["clicks"]
    assert len(recommender.recommend(users=["0"], k=2)) == 2


# --- the facade checks what the command line checks ----------------------


def _served_root(tmp_path):
    """``tmp_path`` holding ``served/``, a folder of served models whose
    ``models.config`` lists another model, and a ``models.config`` of
    its own beside it (another folder's): what a bad name would edit."""
    entry = 'model_config_list {{ config {{ name: "{0}" base_path: "/{0}" }} }}'
    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "models.config").write_text(entry.format("old"))
    (tmp_path / "models.config").write_text(entry.format("other"))
    return str(tmp_path / "served")


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["../y", "ABSOLUTE", "a/b", ".", "..", "", "y/"]
)
def test_export_refuses_a_name_that_is_not_one_folder(fitted, name, tmp_path):
    # export --name's check: a name never leads out of base_path.
    from tests.run_helpers import snapshot

    base_path = _served_root(tmp_path)
    name = str(tmp_path / "y") if name == "ABSOLUTE" else name
    before = snapshot(tmp_path), snapshot(os.path.dirname(fitted.run_dir))
    with pytest.raises(ValueError, match="A model name must match") as error:
        fitted.export(base_path, name=name, k=3)
    assert str(error.value).endswith(f"Received: name={name!r}")
    after = snapshot(tmp_path), snapshot(os.path.dirname(fitted.run_dir))
    assert after == before


@pytest.mark.slow
@pytest.mark.parametrize("version", [2**63, 0, True])
def test_export_refuses_a_version_tf_serving_cannot_load(
    fitted, version, tmp_path
):
    from tests.run_helpers import snapshot

    base_path = _served_root(tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=f"Received: version={version}"):
        fitted.export(base_path, name="m", version=version, k=3)
    assert snapshot(tmp_path) == before


def _data_file(recommender) -> str:
    """The file a DataFrame was written to, beside the run."""
    (name,) = [
        entry
        for entry in os.listdir(os.path.dirname(recommender.run_dir))
        if entry.endswith(".inter")
    ]
    return os.path.join(os.path.dirname(recommender.run_dir), name)


@pytest.mark.slow
@pytest.mark.parametrize("overwrite", [False, True])
def test_save_refuses_an_edited_data_file_beside_the_copy(
    fitted, overwrite, tmp_path
):
    from tests.run_helpers import snapshot

    data = _data_file(fitted)
    models = tmp_path / "models"
    models.mkdir()
    edited = models / os.path.basename(data)
    if overwrite:  # a copy saved before, beside its data file
        fitted.save(str(models / "mine"))
    edited.write_text("user_id:token\titem_id:token\nmine\t1\n")
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as error:
        fitted.save(str(models / "mine"), overwrite=overwrite)
    assert str(error.value).startswith(
        f"{edited} exists and is not the data file of that name"
    )
    assert "move it away" in str(error.value)
    assert snapshot(tmp_path) == before
    # The same rows are the file's own: kept, and the run saved.
    shutil.copyfile(data, edited)
    key = os.path.relpath(edited, tmp_path)
    before = snapshot(tmp_path)[key]
    fitted.save(str(models / "mine"), overwrite=overwrite)
    check_finished_run(str(models / "mine"))
    assert snapshot(tmp_path)[key] == before


def test_fit_refuses_an_edited_data_file_of_its_name(tmp_path):
    frame = interactions()
    digest = hashlib.sha256(_atomic_text(frame).encode()).hexdigest()
    edited = tmp_path / f"interactions-{digest[:12]}.inter"
    edited.write_text("user_id:token\titem_id:token\nmine\t1\n")
    with pytest.raises(ValueError, match="is not the data file of that"):
        Recommender(**TINY, output_dir=str(tmp_path)).fit(frame)
    assert os.listdir(tmp_path) == [edited.name]


@pytest.mark.slow
def test_train_config_of_a_fitted_run_reuses_it(fitted, capsys):
    # tfrec-tricks train --config repeats a run the facade trained.
    from tests.run_helpers import snapshot
    from tfrec_tricks import cli

    parent = os.path.dirname(fitted.run_dir)
    before = snapshot(parent)
    config = os.path.join(fitted.run_dir, "config.json")
    status = cli.main(["train", "--config", config])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    assert "finished before with the same settings and data: reusing it" in (
        captured.out
    )
    assert "Traceback" not in captured.err
    assert snapshot(parent) == before
