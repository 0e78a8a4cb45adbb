"""Training-epoch time of the GRU4Rec baseline vs a plain tf-keras GRU.

Both train one epoch at a time on the same YOOCHOOSE training examples
(batch 128, max_len 50, d=64, full softmax), with no validation pass; the
median of ``--epochs`` epochs after the first (which traces the graph) is
reported, and the ratio is measured in the same run.

    python benchmarks/epoch_speed.py --data-path ../shared/data
"""

import argparse
import os
import statistics
import sys
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import tensorflow as tf  # noqa: E402

from tfrec_tricks.data import load_source, prepare  # noqa: E402
from tfrec_tricks.data.pipeline import make_dataset  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)

RESULTS = os.path.join(os.path.dirname(__file__), "results")


def plain_gru(num_items: int, max_len: int) -> tf.keras.Model:
    """Embedding -> GRU -> Dense over the catalogue: the reference model."""
    history = tf.keras.Input((max_len,), dtype=tf.int32)
    x = tf.keras.layers.Embedding(num_items, 64)(history)
    x = tf.keras.layers.GRU(64)(x)
    model = tf.keras.Model(history, tf.keras.layers.Dense(num_items)(x))
    model.compile(
        "adam",
        tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def epoch_seconds(model, dataset, epochs: int) -> list[float]:
    times = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.fit(dataset, epochs=1, verbose=0)
        times.append(time.perf_counter() - start)
    return times[1:]  # the first epoch also traces the graph


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", default="yoochoose-100k")
    parser.add_argument("--data-path", default=None)
    parser.add_argument("--epochs", type=int, default=4)
    args = parser.parse_args(argv)

    data = prepare(
        load_source(args.data, data_path=args.data_path).interactions
    )
    train = make_dataset(data.train, 128, shuffle=True, seed=0)
    tf.keras.utils.set_random_seed(0)
    ours = SequentialRetrievalModel.from_data(
        ModelConfig(num_items=data.num_items), data
    )
    ours.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
    plain = plain_gru(data.num_items, data.max_len)
    pairs = train.map(lambda batch: (batch["history"], batch["target"]))
    results = {
        "tfrec_tricks GRU4Rec (TFRS model)": epoch_seconds(
            ours, train, args.epochs
        ),
        "plain tf-keras GRU": epoch_seconds(plain, pairs, args.epochs),
    }
    reference = statistics.median(results["plain tf-keras GRU"])
    lines = [
        "Command: `"
        + " ".join(["python benchmarks/epoch_speed.py", *sys.argv[1:]])
        + "`",
        "",
        f"{args.data}: {len(data.train):,} training examples per epoch.",
        "",
        "| model | median s/epoch (training only) | x plain GRU |",
        "|---|---:|---:|",
    ]
    for name, times in results.items():
        median = statistics.median(times)
        lines.append(f"| {name} | {median:.2f} | {median / reference:.2f} |")
    table = "\n".join(lines)
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "epoch_speed.md"), "w") as handle:
        handle.write(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
