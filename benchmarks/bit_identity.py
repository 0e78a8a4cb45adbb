"""Bit-identity of models across a refactor: same arrays, same rankings.

A restructuring of the package (heads, objectives, training) must not
change a number. This script trains every kind of model the package builds
for a few steps from a fixed seed on tiny synthetic data, and saves what
they compute:

- every weight after training (by creation order and name);
- the training losses of each step and the validation metrics;
- the logits of a fixed batch over the whole catalogue;
- the served top-10 of fixed requests, by the index and by the full
  catalogue (``tfrec_tricks.export.ServingModule``), ids and scores.

Two configurations fuse item attributes of every kind (seeded synthetic
ones, rows of several widths, cold items) with the id embeddings.

Run it before the change (``--save before.npz``) and after (``--compare
before.npz``): the comparison lists every array that differs, with its
largest difference, and exits 1 if any does. Every array must be equal
bit for bit (``np.array_equal``, NaN equal to NaN: a float attribute's
"no value"), not merely close.

Usage:

    python -m benchmarks.bit_identity --save /tmp/before.npz
    # ... change the code ...
    python -m benchmarks.bit_identity --compare /tmp/before.npz

Example (one configuration against itself):

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "a.npz")
>>> arrays = save(path, ["gru4rec-softmax"])
>>> sorted(k.split("/")[1] for k in arrays)[:3]
['logits', 'losses', 'metrics']
>>> compare(path, ["gru4rec-softmax"])
[]
"""

import argparse
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tfrec_tricks.data import prepare  # noqa: E402
from tfrec_tricks.data.in_memory_item_features import (  # noqa: E402
    with_item_features,
)
from tfrec_tricks.data.item_features.item_file import (  # noqa: E402
    ItemFeatureTable,
)
from tfrec_tricks.data.sources import synthetic  # noqa: E402
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.export.serving_module import ServingModule  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)

MAX_LEN = 10
K = 10
# Every encoder, head and objective, and the techniques on top of them.
CONFIGS = {
    "gru4rec-softmax": {},
    "sasrec-softmax": {"encoder": "sasrec"},
    "hstu-softmax": {"encoder": "hstu"},
    "gru4rec-no-dup-sse": {
        "head": "softmax_no_dup",
        "sse_item_probability": 0.1,
        "sse_label_probability": 0.1,
        "sse_seed": 3,
    },
    "gru4rec-cpr": {"head": "cpr", "cpr_reranker_ks": (5,)},
    "sasrec-cpr-mi": {
        "encoder": "sasrec",
        "head": "cpr",
        "cpr_reranker_ks": (5, 3),
        "cpr_mi": True,
    },
    "gru4rec-mos": {"head": "mos", "mos_components": 2},
    "sasrec-in-batch": {"encoder": "sasrec", "objective": "sampled"},
    "gru4rec-k-negatives": {
        "objective": "sampled",
        "num_sampled_negatives": 8,
        "num_hard_negatives": 2,
    },
    "sasrec-untied-features": {
        "encoder": "sasrec",
        "tie_embeddings": False,
        "features": ("time_gap",),
    },
}
# Models with item attributes (``ModelConfig.item_features``): trained on
# the data joined with ``_item_table``'s attributes, cold items included.
ITEM_FEATURE_CONFIGS = {
    "gru4rec-item-features-sum": {},
    "sasrec-item-features-concat": {
        "encoder": "sasrec",
        "feature_fusion": "concat",
        "item_id_dropout": 0.2,
        "sse_seed": 5,
    },
}
CONFIGS.update(ITEM_FEATURE_CONFIGS)


def _data():
    source = synthetic.generate(num_users=60, num_items=40, num_clusters=4)
    return prepare(source.interactions, max_len=MAX_LEN)


def _item_table(data) -> ItemFeatureTable:
    """Seeded attributes of every kind: lists of 0 to 6 genres (one item
    with 30), a brand, a price and 0 to 3 sizes; rows for 3 items without
    interactions (cold items) and none for 2 catalogue items."""
    rng = np.random.default_rng(1)
    items = [*data.vocabulary.items[3:], "new-1", "new-2", "new-3"]
    rows = {}
    for k, item in enumerate(items):
        genres = rng.integers(0, 12, 30 if k == 5 else rng.integers(0, 7))
        sizes = rng.normal(40.0, 4.0, rng.integers(0, 4))
        rows[item] = {
            "genres": tuple(f"g{g}" for g in genres),
            "brand": f"b{rng.integers(0, 5)}",
            "price": float(rng.lognormal(3.0, 1.0)),
            "sizes": tuple(float(s) for s in sizes),
        }
        rows[item] = {key: v for key, v in rows[item].items() if v != ()}
    kinds = {
        "genres": "token_seq",
        "brand": "token",
        "price": "float",
        "sizes": "float_seq",
    }
    return ItemFeatureTable(kinds, rows, "synthetic.item")


def _requests(data) -> tf.Tensor:
    """Fixed requests: raw-id histories of several lengths, one empty."""
    vocabulary = np.asarray(data.vocabulary.items)
    rng = np.random.default_rng(0)
    history = vocabulary[rng.integers(1, len(vocabulary), (8, MAX_LEN))]
    for row, length in enumerate([0, 1, 3, 5, 7, 9, 10, 10]):
        history[row, length:] = ""
    return tf.constant(history)


def run_config(name: str, data) -> dict:
    """The arrays one configuration computes (see the module docstring)."""
    if name in ITEM_FEATURE_CONFIGS:
        data = with_item_features(data, _item_table(data))
    tf.keras.utils.set_random_seed(0)
    overrides = dict(CONFIGS[name])
    if name in ITEM_FEATURE_CONFIGS:
        overrides["item_features"] = tuple(data.item_features.spec_dicts())
    config = ModelConfig(
        num_items=data.num_items,
        max_len=MAX_LEN,
        embedding_dim=8,
        dropout=0.1,
        **overrides,
    )
    model = SequentialRetrievalModel.from_data(config, data)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2))
    train = make_dataset(data.train, 16, shuffle=True, seed=0).take(4)
    history = model.fit(train, epochs=2, verbose=0)
    valid = make_dataset(data.validation, 32, shuffle=False)
    metrics = model.evaluate(valid, verbose=0, return_dict=True)
    arrays = {
        "losses": np.asarray(history.history["loss"], np.float64),
        "metrics": np.asarray(
            [metrics[key] for key in sorted(metrics)], np.float64
        ),
    }
    for index, weight in enumerate(model.weights):
        arrays[f"weight/{index:03d}:{weight.name}"] = weight.numpy()
    batch = next(iter(valid))
    ids, states = model.encode(batch, training=False)
    arrays["logits"] = model.logits(ids, states).numpy()
    requests = _requests(data)
    feature_values = {
        feature: tf.fill(tf.shape(requests), 60.0)
        for feature in model.config.features
    }
    vocabulary = list(data.vocabulary.items)
    scorings = ["full"] + (["index"] if model.has_index else [])
    for scoring in scorings:
        module = ServingModule(model, vocabulary, k=K, scoring=scoring)
        served = module.recommend(requests, **feature_values)
        arrays[f"served-{scoring}-ids"] = served["item_ids"].numpy().astype(str)
        arrays[f"served-{scoring}-scores"] = served["scores"].numpy()
    return arrays


def collect(names: list[str] | None = None) -> dict:
    """``{"<config>/<array>": array}`` over ``names`` (all by default)."""
    data = _data()
    arrays = {}
    for name in names or list(CONFIGS):
        for key, value in run_config(name, data).items():
            arrays[f"{name}/{key}"] = value
    return arrays


def save(path: str, names: list[str] | None = None) -> dict:
    """Computes the arrays and saves them to ``path`` (``.npz``)."""
    arrays = collect(names)
    np.savez(path, **arrays)
    return arrays


def compare(path: str, names: list[str] | None = None) -> list[str]:
    """Lines naming each array that differs from those saved at ``path``
    (an empty list: bit-identical)."""
    with np.load(path, allow_pickle=False) as saved:
        before = {key: saved[key] for key in saved.files}
    if names:
        before = {k: v for k, v in before.items() if k.split("/")[0] in names}
    now = collect(names)
    lines = [f"{key}: missing now" for key in sorted(set(before) - set(now))]
    lines += [f"{key}: new" for key in sorted(set(now) - set(before))]
    for key in sorted(set(before) & set(now)):
        old, new = before[key], now[key]
        if old.shape != new.shape or old.dtype != new.dtype:
            lines.append(
                f"{key}: {old.dtype}{old.shape} -> {new.dtype}{new.shape}"
            )
        elif not np.array_equal(old, new, equal_nan=old.dtype.kind in "fc"):
            if old.dtype.kind in "fc":
                gap = float(np.nanmax(np.abs(old - new)))
                lines.append(f"{key}: differs (largest difference {gap:.3g})")
            else:
                lines.append(f"{key}: differs")
    return lines


def build_parser() -> argparse.ArgumentParser:
    """The script's options: ``--save`` or ``--compare``, ``--configs``."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Configurations: " + ", ".join(CONFIGS),
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", metavar="NPZ", help="write the arrays")
    action.add_argument(
        "--compare", metavar="NPZ", help="compare with saved arrays"
    )
    parser.add_argument(
        "--configs",
        nargs="+",
        choices=list(CONFIGS),
        help="only these configurations (default: all)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.save:
        arrays = save(args.save, args.configs)
        print(f"saved {len(arrays)} arrays to {args.save}")
        return 0
    lines = compare(args.compare, args.configs)
    for line in lines:
        print(line)
    print("bit-identical" if not lines else f"{len(lines)} arrays differ")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
