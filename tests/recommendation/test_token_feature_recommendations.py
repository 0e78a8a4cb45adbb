"""Recommendations of a run that reads categorical per-interaction
features (token columns of a RecBole ``.inter`` file): each request sends
the history's raw values, and the lists are what the exported SavedModel
answers for them, from the run's data, from new users' histories (a
table), through the Beam engine and from a prepared dataset.

The reference is built without ``tfrec_tricks.recommendation``: each
user's rows read from the file with pandas, sorted by time, sent to a
SavedModel loaded with ``tf.saved_model.load`` (``score_candidates`` of
the whole catalogue, seen items dropped, ties to the lower item id).
"""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from tests.recommendation.recommend_helpers import (
    assert_same_lists,
    frame_lists,
    vocabulary,
)
from tests.run_helpers import write_token_interactions
from tfrec_tricks.recommendation import (
    RecommendationJob,
    RecommendationOptions,
    recommend_frame,
)

# Every test reads a run trained by the module fixture: the main tier.
pytestmark = pytest.mark.slow

MAX_LEN = 6
FEATURES = ("device", "channel", "time_gap")
K = 4


def _train(data_path: str, root, name: str, prepared: str = "") -> str:
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    # A prepared run takes its data options from the dataset.
    if prepared:
        source = {"prepared": prepared}
    else:
        source = {"data": "file", "data_path": data_path}
    config = TrainConfig(
        **source,
        max_len=MAX_LEN,
        epochs=1,
        output_dir=str(root),
        name=name,
        model={"embedding_dim": 8, "features": FEATURES},
    )
    return train(config, verbose=0).run_dir


@pytest.fixture(scope="module")
def data_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tokens")
    return write_token_interactions(folder / "shop.inter", empty=True)


@pytest.fixture(scope="module")
def run(data_path, tmp_path_factory):
    return _train(data_path, tmp_path_factory.mktemp("runs"), "tokens")


@pytest.fixture(scope="module")
def loaded(run, tmp_path_factory):
    from tfrec_tricks.export.export_for_serving import export_for_serving
    from tfrec_tricks.training.persistence import load_model

    base = tmp_path_factory.mktemp("served") / "tokens"
    path = export_for_serving(load_model(run), str(base), vocabulary(run))
    return tf.saved_model.load(path)


def _file_frame(data_path: str) -> pd.DataFrame:
    """The file as a histories table: raw ids, seconds, raw values."""
    frame = pd.read_csv(data_path, sep="\t", dtype=str, keep_default_na=False)
    frame.columns = [column.split(":")[0] for column in frame.columns]
    return frame.assign(timestamp=frame["timestamp"].astype(float))


def _reference(loaded, items: list, frame: pd.DataFrame) -> dict:
    """``{user: [(item, score), ...]}``: each user's whole history by
    time, the last ``MAX_LEN`` known items with their values, scored
    over the catalogue, seen items dropped."""
    score = loaded.signatures["score_candidates"]
    frame = frame.assign(row=np.arange(len(frame)))
    lists = {}
    for user, rows in frame.groupby("user_id", sort=False):
        rows = rows.sort_values(["timestamp", "row"], kind="stable")
        gaps = np.diff(rows["timestamp"].to_numpy(), prepend=np.nan)
        known = rows["item_id"].isin(items[1:]).to_numpy()
        kept = np.flatnonzero(known)[-MAX_LEN:]
        request = {
            "history": rows["item_id"].to_numpy(str)[kept][None],
            "device": rows["device"].to_numpy(str)[kept][None],
            "channel": rows["channel"].to_numpy(str)[kept][None],
            "time_gap": gaps[kept].astype(np.float32)[None],
            "candidate_ids": np.asarray([items[1:]], dtype=str),
        }
        scores = score(**request)["scores"].numpy()[0]
        seen = set(rows["item_id"])
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        ranked = [
            (items[i + 1], float(scores[i]))
            for i in order
            if items[i + 1] not in seen
        ]
        lists[str(user)] = ranked[:K]
    return lists


def test_the_runs_users_get_the_served_models_lists(run, loaded, data_path):
    items = vocabulary(run)
    expected = _reference(loaded, items, _file_frame(data_path))
    got = frame_lists(recommend_frame(run, k=K))
    assert_same_lists(got, expected)


def test_the_values_change_the_lists(run, loaded, data_path):
    # The features are read: other devices give other scores.
    frame = _file_frame(data_path)
    items = vocabulary(run)
    changed = frame.assign(
        device=np.where(frame["device"] == "web", "tv", "web")
    )
    assert _reference(loaded, items, changed) != _reference(
        loaded, items, frame
    )


def test_new_users_histories_send_their_raw_values(run, loaded, data_path):
    frame = _file_frame(data_path)
    # New users with the same rows, one an unknown device (OOV), one none.
    new = frame.assign(user_id="new-" + frame["user_id"])
    new.loc[new.index[1], "device"] = "smart fridge"
    new.loc[new.index[2], "channel"] = ""
    got = frame_lists(recommend_frame(run, k=K, histories=new))
    assert_same_lists(got, _reference(loaded, vocabulary(run), new))
    # A missing value as NaN (a table from elsewhere) is no value too.
    nan = new.assign(channel=new["channel"].replace("", np.nan))
    assert_same_lists(
        frame_lists(recommend_frame(run, k=K, histories=nan)), got
    )


def test_histories_without_a_token_feature_are_refused(run, data_path):
    new = _file_frame(data_path).drop(columns=["device"])
    with pytest.raises(ValueError, match=r"has no \['device'\]") as error:
        RecommendationJob(run, RecommendationOptions(histories=new))
    # The message names the column to add, not time_gap's (it is there).
    message = str(error.value)
    assert (
        "(device needs a column of its raw values (a categorical feature: "
        "device:token in a RecBole .inter file); its columns are user_id, "
        "item_id, timestamp, channel)"
    ) in message
    assert "timestamp column" not in message


def test_a_token_column_of_floats_is_refused(run, data_path):
    # pandas reads a column of codes with an empty field as floats: 7.0
    # has lost its text ("7", "07"?), so every value would be OOV.
    frame = _file_frame(data_path)
    codes = frame.assign(channel=np.where(frame.channel == "ads", 7.0, np.nan))
    with pytest.raises(ValueError) as error:
        RecommendationJob(run, RecommendationOptions(histories=codes))
    assert str(error.value).startswith(
        "histories: column 'channel' is a categorical feature of the model, "
        "looked up by its text, and holds floats"
    )
    assert str(error.value).endswith(
        "Received: dtype float64, row 0: channel=7.0"
    )
    # Integers keep their text, and a column with no value at all is none.
    ints = frame.assign(channel=np.where(frame.channel == "ads", 7, 8))
    empty = frame.assign(channel=np.nan)
    for histories in (ints, empty):
        RecommendationJob(run, RecommendationOptions(histories=histories))


def test_the_beam_engine_gives_the_local_rows(run, tmp_path):
    from tfrec_tricks.recommendation.beam_engine import recommend_with_beam

    job = RecommendationJob(run, RecommendationOptions(k=K))
    out = recommend_with_beam(job, str(tmp_path / "beam"), "csv")
    frames = [
        pd.read_csv(f"{out.path}/{name}", dtype={"user_id": str})
        for name in out.files
    ]
    beam = frame_lists(pd.concat(frames))
    assert_same_lists(beam, frame_lists(recommend_frame(run, k=K)))


@pytest.fixture(scope="module")
def prepared_run(data_path, tmp_path_factory):
    from tfrec_tricks.training.prepare_dataset import prepare_dataset
    from tfrec_tricks.training.train_config import TrainConfig

    root = tmp_path_factory.mktemp("prepared")
    prepared = prepare_dataset(
        TrainConfig(data="file", data_path=data_path, max_len=MAX_LEN),
        str(root / "shop"),
        num_shards=2,
        verbose=False,
    )
    return _train(data_path, root / "runs", "prepared", prepared=prepared)


def test_a_prepared_runs_users_get_the_served_models_lists(
    prepared_run, data_path, tmp_path
):
    from tfrec_tricks.export.export_for_serving import export_for_serving
    from tfrec_tricks.training.persistence import load_model

    items = vocabulary(prepared_run)
    path = export_for_serving(
        load_model(prepared_run), str(tmp_path / "served"), items
    )
    expected = _reference(
        tf.saved_model.load(path), items, _file_frame(data_path)
    )
    got = frame_lists(recommend_frame(prepared_run, k=K))
    assert_same_lists(got, expected)


def test_the_beam_engine_reads_a_prepared_runs_token_ids(
    prepared_run, tmp_path
):
    from tfrec_tricks.recommendation.beam_engine import recommend_with_beam

    job = RecommendationJob(prepared_run, RecommendationOptions(k=K))
    out = recommend_with_beam(job, str(tmp_path / "beam"), "csv")
    frames = [
        pd.read_csv(f"{out.path}/{name}", dtype={"user_id": str})
        for name in out.files
    ]
    assert_same_lists(
        frame_lists(pd.concat(frames)),
        frame_lists(recommend_frame(prepared_run, k=K)),
    )
