"""Training-epoch time of GRU4Rec and SASRec, Softmax and CPR:100+Mi.

Every model trains one epoch at a time on the same YOOCHOOSE training
examples (batch 128, max_len 50, d=64, full softmax over the catalogue,
Adam 1e-3), with no validation pass, in three pipelines. The encoders are
the ablation's: GRU4Rec with 1 layer, SASRec with 2 layers and 2 heads
(``ENCODER_LAYERS``, RecBole's defaults).

- ``fixed``: random batches of the full 50-slot window, one step per
  compiled call (what a plain ``model.fit`` over the arrays does);
- ``tuned``: the training default, batches bucketed by history length
  (the encoder runs only up to a batch's longest history) and 16 steps per
  compiled call;
- ``every position``: ``tuned`` with each session's prefixes merged into
  one row with a target per position (``--every-position``): the encoder
  runs once per session; about 128 target positions per batch.

A plain tf-keras GRU (Embedding -> GRU -> Dense, fixed batches) is the
reference. Every model first trains one epoch (which traces its graph);
then the models take turns, one epoch each, for ``--epochs - 1`` rounds,
so that a slow spell of the shared host hits every model alike. The
median of those epochs is reported; all ratios come from the same run.

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
from tfrec_tricks.data.preparation import SPLITS  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)

#: RecBole 1.2.1 s/epoch on this machine kind (issue #4's measurements).
RECBOLE_SECONDS = {
    ("gru4rec", "Softmax"): 31.0,
    ("sasrec", "Softmax"): 40.0,
    ("gru4rec", "CPR:100 + Mi"): 43.0,
    ("sasrec", "CPR:100 + Mi"): 42.0,
}
HEADS = {
    "Softmax": {"head": "softmax"},
    "CPR:100 + Mi": {"head": "cpr", "cpr_reranker_ks": (100,), "cpr_mi": True},
}

#: Encoder layers per encoder: RecBole 1.2.1's defaults, the ablation's.
ENCODER_LAYERS = {"gru4rec": 1, "sasrec": 2}

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


def interleaved_epoch_seconds(jobs: dict, epochs: int) -> dict:
    """Median seconds per epoch of each job, epochs taken in turns.

    Args:
        jobs: {name: (compiled model, dataset)}.
        epochs: epochs per model, the first (graph tracing) not timed.

    Returns:
        {name: median seconds of epochs 2..``epochs``}.
    """
    if epochs < 2:
        raise ValueError(
            "epochs must be at least 2: the first only traces the graph. "
            f"Received: epochs={epochs}"
        )
    for model, dataset in jobs.values():
        model.fit(dataset, epochs=1, verbose=0)
    times = {name: [] for name in jobs}
    for _ in range(epochs - 1):
        for name, (model, dataset) in jobs.items():
            start = time.perf_counter()
            model.fit(dataset, epochs=1, verbose=0)
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def ours(data, encoder: str, head: dict, steps_per_execution: int):
    tf.keras.utils.set_random_seed(0)
    model = SequentialRetrievalModel.from_data(
        ModelConfig(
            num_items=data.num_items,
            encoder=encoder,
            num_layers=ENCODER_LAYERS[encoder],
            **head,
        ),
        data,
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(1e-3),
        steps_per_execution=steps_per_execution,
    )
    return model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--data", default="yoochoose-100k")
    parser.add_argument("--data-path", default=None)
    parser.add_argument(
        "--epochs",
        type=int,
        default=4,
        help="epochs per model, the first not timed (>= 2). Default: 4",
    )
    parser.add_argument(
        "--split",
        choices=tuple(SPLITS),
        default="recbole",
        help="leave-one-out split (see tfrec-tricks train --help)",
    )
    parser.add_argument(
        "--report-dir", default=RESULTS, help="where to write the results"
    )
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error(f"--epochs must be at least 2. Received: {args.epochs}")

    data = prepare(
        load_source(args.data, data_path=args.data_path).interactions,
        split=args.split,
    )
    fixed = make_dataset(data.train, 128, shuffle=True, seed=0)
    tuned = make_dataset(
        data.train, 128, shuffle=True, seed=0, bucket_by_length=True
    )
    merged = make_dataset(
        data.train,
        128,
        shuffle=True,
        seed=0,
        bucket_by_length=True,
        every_position=True,
    )
    plain = plain_gru(data.num_items, data.max_len)
    pairs = fixed.map(lambda batch: (batch["history"], batch["target"]))
    jobs = {"plain GRU": (plain, pairs)}
    for encoder in ("gru4rec", "sasrec"):
        for head_name, head in HEADS.items():
            for pipeline, dataset, steps in (
                ("fixed", fixed, 1),
                ("tuned", tuned, 16),
                ("every position", merged, 16),
            ):
                model = ours(data, encoder, head, steps)
                jobs[encoder, head_name, pipeline] = (model, dataset)
    seconds = interleaved_epoch_seconds(jobs, args.epochs)
    reference = seconds["plain GRU"]
    rows = []
    for encoder in ("gru4rec", "sasrec"):
        for head_name in HEADS:
            timings = {
                pipeline: seconds[encoder, head_name, pipeline]
                for pipeline in ("fixed", "tuned", "every position")
            }
            rows.append((encoder, head_name, timings))
    lines = [
        "Command: `"
        + " ".join(["python benchmarks/epoch_speed.py", *sys.argv[1:]])
        + "`",
        "",
        f"{args.data}, split {args.split}: {len(data.train):,} training "
        "examples per epoch, "
        f"{data.num_items:,} items. Median s/epoch of {args.epochs - 1} "
        "epochs taken in turns by all models, training only. "
        f"Plain tf-keras GRU (fixed batches): {reference:.2f} s.",
        "",
        "| model | head | fixed batches | bucketed + 16 steps/call "
        "(default) | + every position | RecBole 1.2.1 | x faster than "
        "RecBole (default) | x faster (every position) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for encoder, head_name, timings in rows:
        recbole = RECBOLE_SECONDS[(encoder, head_name)]
        lines.append(
            f"| {encoder} | {head_name} | {timings['fixed']:.2f} | "
            f"{timings['tuned']:.2f} | {timings['every position']:.2f} | "
            f"{recbole:.0f} | {recbole / timings['tuned']:.1f}x | "
            f"{recbole / timings['every position']:.1f}x |"
        )
    table = "\n".join(lines)
    os.makedirs(args.report_dir, exist_ok=True)
    with open(os.path.join(args.report_dir, "epoch_speed.md"), "w") as handle:
        handle.write(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
