"""``tfrec-tricks recommend`` on MovieLens-1M (needs ../shared/data).

A one-epoch GRU4Rec (embedding 16, max_len 50) is trained; ``recommend``
then writes the lists of all 6,040 users as CSV, JSON Lines and Parquet.
Every user gets 10 items, never one of their own ratings (whatever its
position: most users rated far more than 50 films), the allow- and
deny-lists hold, and 200 random users get the answers of the exported
SavedModel, loaded in a fresh process by plain TensorFlow (where
``import tfrec_tricks`` fails, as in TF Serving).
"""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tfrec_tricks import cli
from tfrec_tricks.testing.test_case import BLOCK_PACKAGE_PREAMBLE

pytestmark = [pytest.mark.real_data, pytest.mark.slow]

# ../shared/data of the checkout (tests/conftest.py's).
SHARED_DATA = (
    pathlib.Path(__file__).parents[2] / ".." / "shared" / "data"
).resolve()
USERS = 6040
SERVED_USERS = 200
MAX_LEN = 50

# Asks the loaded SavedModel's recommend_filtered for the users of a
# request file: history (the last MAX_LEN items), the excluded items.
CLIENT = (
    BLOCK_PACKAGE_PREAMBLE
    + r"""
import numpy as np
import tensorflow as tf

model_dir, request_path, output_path = sys.argv[1:4]
serve = tf.saved_model.load(model_dir).signatures["recommend_filtered"]
with np.load(request_path) as request:
    rows = len(request["history"])
    out = serve(
        history=tf.constant(request["history"]),
        exclude_item_ids=tf.constant(request["exclude"]),
        k=tf.fill([rows], 10),
        history_last=tf.zeros([rows], tf.bool),
    )
np.savez(
    output_path,
    item_ids=out["item_ids"].numpy().astype(str),
    scores=out["scores"].numpy(),
)
"""
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if not (SHARED_DATA / "ml-1m").is_dir():
        pytest.skip(f"ml-1m not found in {SHARED_DATA}")
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    config = TrainConfig(
        data="ml-1m",
        data_path=str(SHARED_DATA),
        max_len=MAX_LEN,
        epochs=1,
        train_windows=True,
        output_dir=str(tmp_path_factory.mktemp("runs")),
        name="ml-1m",
        model={"embedding_dim": 16, "encoder": "gru4rec", "head": "softmax"},
    )
    return train(config, verbose=0).run_dir


@pytest.fixture(scope="module")
def histories(run):
    """Each user's ratings in time order, read from the file directly."""
    path = SHARED_DATA / "ml-1m" / "ml-1m_seq_sasrec_format.txt"
    table = pd.read_csv(
        path, sep=" ", header=None, names=["user", "item"], dtype=str
    )
    return {
        user: rows.tolist()
        for user, rows in table.groupby("user", sort=False)["item"]
    }


@pytest.fixture(scope="module")
def outputs(run, tmp_path_factory):
    """The lists as CSV, Parquet and (allow- and deny-listed) JSON Lines."""
    folder = tmp_path_factory.mktemp("recommendations")
    with open(f"{run}/vocabulary.json") as handle:
        items = json.load(handle)["items"][1:]
    rng = np.random.default_rng(0)
    allowed = sorted(rng.choice(items, 600, replace=False).tolist())
    denied = allowed[::3] + rng.choice(items, 50, replace=False).tolist()
    (folder / "allowed.txt").write_text("\n".join(allowed) + "\n")
    (folder / "denied.txt").write_text("\n".join(denied) + "\n")
    paths = {}
    for name, flags in (
        ("recs.csv", []),
        ("recs.parquet", ["--quiet"]),
        (
            "filtered.jsonl",
            ["--items", str(folder / "allowed.txt"), "--exclude-items"]
            + [str(folder / "denied.txt")],
        ),
    ):
        paths[name] = folder / name
        argv = ["recommend", run, "--k", "10", "--output", str(paths[name])]
        assert cli.main([*argv, *flags]) == 0
    return paths, set(allowed), set(denied)


def _read_csv(path):
    return pd.read_csv(path, dtype={"user_id": str, "item_id": str})


def _assert_never_seen(frame, histories):
    seen = {user: set(items) for user, items in histories.items()}
    hits = [
        (user, item)
        for user, item in zip(frame["user_id"], frame["item_id"])
        if item in seen[user]
    ]
    assert not hits, hits[:5]


def test_every_user_gets_ten_unseen_items(outputs, histories):
    paths, _, _ = outputs
    frame = _read_csv(paths["recs.csv"])
    assert len(frame) == USERS * 10
    assert frame["user_id"].nunique() == USERS == len(histories)
    assert frame["rank"].tolist() == list(range(1, 11)) * USERS
    assert (frame.groupby("user_id")["item_id"].nunique() == 10).all()
    _assert_never_seen(frame, histories)
    parquet = pd.read_parquet(paths["recs.parquet"])
    for column in ("user_id", "rank", "item_id"):
        assert parquet[column].tolist() == frame[column].tolist()
    np.testing.assert_array_equal(
        parquet["score"].to_numpy(), frame["score"].to_numpy(np.float32)
    )


def test_allow_and_deny_lists_hold(outputs, histories):
    paths, allowed, denied = outputs
    frame = pd.read_json(
        paths["filtered.jsonl"], lines=True, dtype={"user_id": str}
    )
    frame["item_id"] = frame["item_id"].astype(str)
    assert set(frame["item_id"]) <= allowed - denied
    assert frame["user_id"].nunique() == USERS
    _assert_never_seen(frame, histories)
    eligible = {
        user: len((allowed - denied) - set(items))
        for user, items in histories.items()
    }
    counts = frame.groupby("user_id").size()
    assert all(counts[user] == min(10, n) for user, n in eligible.items())


def test_two_hundred_users_get_the_saved_models_answers(
    run, outputs, histories, tmp_path
):
    from tfrec_tricks.export import export_for_serving
    from tfrec_tricks.training.persistence import load_model

    paths, _, _ = outputs
    path = export_for_serving(
        load_model(run),
        str(tmp_path / "served" / "ml1m"),
        f"{run}/vocabulary.json",
    )
    users = np.random.default_rng(1).choice(
        list(histories), SERVED_USERS, replace=False
    )
    history = np.full((SERVED_USERS, MAX_LEN), "", dtype=object)
    excluded = [sorted(set(histories[user])) for user in users]
    exclude = np.full((SERVED_USERS, max(map(len, excluded))), "", dtype=object)
    for row, user in enumerate(users):
        last = histories[user][-MAX_LEN:]
        history[row, : len(last)] = last
        exclude[row, : len(excluded[row])] = excluded[row]
    request = tmp_path / "request.npz"
    np.savez(request, history=history.astype(str), exclude=exclude.astype(str))
    answer = tmp_path / "answer.npz"
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, path, str(request), str(answer)],
        cwd=tmp_path,  # the working tree's package is not on sys.path
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    served = np.load(answer)
    frame = _read_csv(paths["recs.csv"]).set_index("user_id")
    for row, user in enumerate(users):
        mine = frame.loc[user].sort_values("rank")
        assert mine["item_id"].tolist() == served["item_ids"][row].tolist()
        np.testing.assert_allclose(
            mine["score"].to_numpy(), served["scores"][row], atol=1e-5
        )
