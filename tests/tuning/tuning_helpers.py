"""Shared constants and helpers of the tuning tests."""

import subprocess

from tests.run_helpers import (  # noqa: F401 (free_port: tests use it)
    TINY_FLAGS,
    free_port,
    start_cli,
)

MAX_LEN = 10
# Cheap but still searching over techniques: head (softmax / CPR and its
# partitions), tying, SSE, features, dropout, learning rate, batch size.
FIXED = {"embedding_dim": 8, "encoder": "gru4rec", "num_layers": 1}
# Tracing the train and test functions costs more than an epoch on tiny
# data: run eagerly on a slice of the training examples.
COMPILE = {"run_eagerly": True}
TRAIN_EXAMPLES = 256


# Item attributes of the synthetic items i0..i44: the 40 of the tests'
# catalogue and 5 cold-start items.
ITEM_KINDS = {"genre": "token_seq", "year": "float"}
ITEM_COUNT = 45


def item_rows() -> dict:
    """``{item: {feature: value}}``: two genres and a year per item."""
    return {
        f"i{i}": {"genre": (f"g{i % 3}", f"g{i % 4}"), "year": 1990.0 + i}
        for i in range(ITEM_COUNT)
    }


def item_table():
    """The attributes as ``read_item_features`` gives them."""
    from tfrec_tricks.data.item_features.item_file import ItemFeatureTable

    return ItemFeatureTable(dict(ITEM_KINDS), item_rows(), "items.item")


def write_item_file(path) -> str:
    """Writes the attributes as a RecBole ``.item`` file at ``path``."""
    lines = ["item_id:token\tgenre:token_seq\tyear:float"]
    for item, values in item_rows().items():
        lines.append(f"{item}\t{' '.join(values['genre'])}\t{values['year']}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def write_token_interactions(path) -> str:
    """A tiny ``.inter`` file at ``path``: 12 users, 8 interactions each
    over 20 items, a ``rating:float`` and a ``device:token`` column
    (web, app, tv). Returns ``path`` as a str."""
    lines = ["user_id:token\titem_id:token\trating:float\tdevice:token"]
    devices = ["web", "app", "tv"]
    for user in range(12):
        for step in range(8):
            item = (user * 3 + step * 5) % 20 + 1
            rating = 1 + (user + step) % 5
            device = devices[(user + step) % len(devices)]
            lines.append(f"u{user}\ti{item}\t{rating}\t{device}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def token_config(path, **overrides):
    """A search's ``TrainConfig`` over ``write_token_interactions``' file."""
    from tfrec_tricks.training.train_config import TrainConfig

    values = dict(data="file", data_path=str(path), max_len=MAX_LEN)
    values.update(overrides)
    return TrainConfig(**values)


def search_data(hypermodel):
    """Unbatched training slice and validation data for ``search``."""
    values = hypermodel.search_data()
    values["x"] = values["x"].take(TRAIN_EXAMPLES)
    return values


def build_test_tuner(hypermodel, tmp_path, tuner="random", **options):
    """``build_tuner`` of ``hypermodel`` in ``tmp_path/<tuner>``, seed 1."""
    from tfrec_tricks.tuning.tuners import build_tuner

    return build_tuner(
        hypermodel,
        tuner,
        directory=str(tmp_path),
        project_name=tuner,
        seed=1,
        **options,
    )


def run_search(search_tuner, hypermodel, epochs=1):
    """Searches on ``search_data``'s slice, silently."""
    search_tuner.search(**search_data(hypermodel), epochs=epochs, verbose=0)


def cli(args, env=None, cwd=None) -> subprocess.Popen:
    """Starts ``tfrec-tricks`` in a fresh process (tf-keras, quiet TF)."""
    return start_cli(
        *args, cwd=cwd, env={"TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})}
    )


# Hyperband's first bracket at 3 epochs: three 1-epoch trials, the best
# continued to 3 epochs; then the best distinct trial and the defaults are
# retrained.
TINY_CLI = [
    "tune",
    *TINY_FLAGS,
    "--encoder",
    "gru4rec",
    "--tuner",
    "hyperband",
    "--epochs",
    "3",
    "--max-trials",
    "4",
    "--retrain-top",
    "1",
    "--choices",
    "head=softmax,cpr",
    "--choices",
    "cpr_reranker_ks=none;20",
]
