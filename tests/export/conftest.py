"""Shared helpers of the export tests: raw-id requests and a reference."""

import numpy as np
import pytest

UNKNOWN = "not-an-item"


def random_requests(items, batch, width, features=(), seed=0):
    """Dense raw-id histories (some unknown ids, "" padding) and features.

    Lengths run from 0 to ``width``, so some rows are empty and some are
    longer than a small ``max_len``; ids repeat.
    """
    rng = np.random.default_rng(seed)
    history = np.full((batch, width), "", dtype=object)
    values = {name: np.zeros((batch, width), np.float32) for name in features}
    for row in range(batch):
        length = int(rng.integers(0, width + 1))
        ids = rng.integers(1, len(items), length)
        raw = [items[i] for i in ids]
        for position in np.flatnonzero(rng.random(length) < 0.15):
            raw[position] = UNKNOWN
        history[row, :length] = raw
        for name in features:
            gaps = rng.exponential(3600.0, length).astype(np.float32)
            gaps[rng.random(length) < 0.1] = np.nan
            values[name][row, :length] = gaps
    return history.astype(str), values


def reference_inputs(items, max_len, history, features):
    """The model's inputs for raw histories, computed independently.

    Unknown ids and "" are dropped, the rest compacted to the left with
    their features, the last ``max_len`` kept.
    """
    index = {raw: i for i, raw in enumerate(items) if i}
    ids = np.zeros((len(history), max_len), np.int32)
    values = {
        name: np.zeros((len(history), max_len), np.float32) for name in features
    }
    for row, raw in enumerate(history):
        kept = [j for j, item in enumerate(raw) if item in index][-max_len:]
        ids[row, : len(kept)] = [index[raw[j]] for j in kept]
        for name in features:
            values[name][row, : len(kept)] = features[name][row][kept]
    return ids, values


def reference_top_k(model, items, history, features, k):
    """Raw top-``k`` ids and scores of the in-process model's logits."""
    ids, values = reference_inputs(
        items, model.config.max_len, history, features
    )
    logits = model({"history": ids, **values}).numpy()
    top = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    raw = np.asarray(items, dtype=object)[top].astype(str)
    return raw, np.take_along_axis(logits, top, axis=1), logits, ids


@pytest.fixture(scope="session")
def trained_runs(tmp_path_factory):
    """Trained run directories: plain softmax, CPR:5+Mi+time_gap, HSTU."""
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    root = tmp_path_factory.mktemp("runs")
    common = dict(
        synthetic_users=60,
        synthetic_items=40,
        max_len=10,
        epochs=1,
        output_dir=str(root),
    )
    runs = {}
    runs["softmax"] = train(
        TrainConfig(name="softmax", model={"embedding_dim": 8}, **common),
        verbose=0,
    ).run_dir
    runs["cpr"] = train(
        TrainConfig(
            name="cpr",
            model={
                "embedding_dim": 8,
                "num_layers": 2,
                "head": "cpr",
                "cpr_reranker_ks": (5,),
                "cpr_mi": True,
                "features": ("time_gap",),
            },
            **common,
        ),
        verbose=0,
    ).run_dir
    runs["hstu"] = train(
        TrainConfig(
            name="hstu",
            model={"embedding_dim": 8, "encoder": "hstu", "num_layers": 2},
            **common,
        ),
        verbose=0,
    ).run_dir
    return runs
