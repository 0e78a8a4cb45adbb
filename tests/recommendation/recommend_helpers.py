"""Shared helpers of the recommendation tests: tiny runs and a reference.

The reference is built without ``tfrec_tricks.recommendation``: each
user's history straight from the synthetic data the run read (sorted by
time with pandas), and the lists from an exported SavedModel loaded with
``tf.saved_model.load``: its ``score_candidates`` of the whole catalogue,
the excluded items dropped, ranked by score, ties to the lower item id.
"""

import json
import os

import numpy as np
import pandas as pd

# 60 synthetic users (u1..u60) of 40 items (i1..i40): every user has
# interactions and timestamps, so the runs read time_gap.
TINY_DATA = dict(synthetic_users=60, synthetic_items=40, seed=0)
MAX_LEN = 10


def train_tiny_run(root, name: str = "run", **model) -> str:
    """Trains a one-epoch GRU4Rec run with time_gap; returns its folder."""
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    config = TrainConfig(
        **TINY_DATA,
        max_len=MAX_LEN,
        epochs=1,
        output_dir=str(root),
        name=name,
        model={"embedding_dim": 8, "features": ("time_gap",), **model},
    )
    return train(config, verbose=0).run_dir


def synthetic_histories() -> pd.DataFrame:
    """The tiny runs' data as a histories table (``user_id``, ``item_id``,
    ``timestamp``), in file order."""
    from tfrec_tricks.data.sources import synthetic

    table = synthetic.generate(
        num_users=TINY_DATA["synthetic_users"],
        num_items=TINY_DATA["synthetic_items"],
        seed=TINY_DATA["seed"],
    ).interactions
    return pd.DataFrame(
        {
            "user_id": np.asarray(table.users).astype(str),
            "item_id": np.asarray(table.items).astype(str),
            "timestamp": np.asarray(table.timestamps, np.float64),
        }
    )


def user_histories(frame: pd.DataFrame) -> dict:
    """``{user: (items, time gaps)}``: each user's rows by time (equal
    times in table order), gaps in seconds, NaN at the first."""
    frame = frame.assign(row=np.arange(len(frame)))
    histories = {}
    for user, rows in frame.groupby("user_id", sort=False):
        rows = rows.sort_values(["timestamp", "row"], kind="stable")
        gaps = np.diff(rows["timestamp"].to_numpy(), prepend=np.nan)
        histories[str(user)] = (rows["item_id"].tolist(), gaps)
    return histories


def vocabulary(run_dir: str) -> list:
    with open(os.path.join(run_dir, "vocabulary.json")) as handle:
        return json.load(handle)["items"]


def served_lists(
    loaded, items: list, histories: dict, excluded: dict, k: int, max_len: int
) -> dict:
    """``{user: [(item, score), ...]}`` from a loaded SavedModel.

    Each user's request is their last ``max_len`` known items with their
    time gaps; the catalogue is scored with ``score_candidates``, the
    user's ``excluded`` items dropped, the rest ranked by score then
    lower contiguous id, the first ``k`` kept.
    """
    known = set(items[1:])
    score = loaded.signatures["score_candidates"]
    lists = {}
    for user, (raw, gaps) in histories.items():
        kept = [j for j, item in enumerate(raw) if item in known][-max_len:]
        request = {
            "history": np.asarray([[raw[j] for j in kept]], dtype=str),
            "time_gap": np.asarray([[gaps[j] for j in kept]], np.float32),
            "candidate_ids": np.asarray([items[1:]], dtype=str),
        }
        scores = score(**request)["scores"].numpy()[0]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        ranked = [
            (items[i + 1], float(scores[i]))
            for i in order
            if items[i + 1] not in excluded.get(user, ())
        ]
        lists[user] = ranked[:k]
    return lists


def frame_lists(frame: pd.DataFrame) -> dict:
    """``{user: [(item, score), ...]}`` of a recommendations table, in
    rank order."""
    lists = {}
    for user, rows in frame.groupby("user_id", sort=False):
        rows = rows.sort_values("rank")
        assert rows["rank"].tolist() == list(range(1, len(rows) + 1))
        lists[str(user)] = list(zip(rows["item_id"], rows["score"]))
    return lists


def assert_same_lists(got: dict, expected: dict, atol: float = 1e-5) -> None:
    """The same users, items in the same order, scores close."""
    assert sorted(got) == sorted(expected)
    for user, pairs in expected.items():
        assert [i for i, _ in got[user]] == [i for i, _ in pairs], user
        np.testing.assert_allclose(
            [s for _, s in got[user]], [s for _, s in pairs], atol=atol
        )


# 40 users over items i0..i19; the .item file also lists 6 items no user
# clicked: the run's new items, ranked by their attributes.
INTERACTIONS = "".join(
    f"u{u}\ti{(u * 3 + k * (1 + u % 4)) % 20}\t{1 + k % 5}\t{100 * u + k}\n"
    for u in range(40)
    for k in range(5 + u % 4)
)
NEW_ITEMS = [f"new{k}" for k in range(6)]


def train_new_items_run(root) -> str:
    """Trains a one-epoch run whose catalogue holds 6 items no user
    clicked (``NEW_ITEMS``): its new items, ranked by their attributes;
    returns its folder."""
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    (root / "u.data").write_text(INTERACTIONS)
    items = [f"i{k}" for k in range(20)] + NEW_ITEMS
    (root / "x.item").write_text(
        "item_id:token\tgenres:token_seq\n"
        + "".join(
            f"{item}\tg{k % 5} g{k % 3 + 5}\n" for k, item in enumerate(items)
        )
    )
    config = TrainConfig(
        data="file",
        data_path=str(root / "u.data"),
        file_format="udata",
        item_features=str(root / "x.item"),
        max_len=6,
        epochs=1,
        output_dir=str(root),
        name="run",
        model={"embedding_dim": 8},
    )
    return train(config, verbose=0).run_dir
