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
reference. With ``--recbole-python``, RecBole 1.2.1's own GRU4Rec, SASRec,
GRU4RecCPR and SASRecCPR (default configs, the same examples written as a
RecBole atomic file) train in the same run, in a worker process under that
interpreter (``recbole_worker.py``), so the "x faster" columns are ratios
of one run; without it they divide issue #4's RecBole seconds.

Every model first trains one epoch (which traces its graph); then the
models take turns, one epoch each, for ``--epochs - 1`` rounds, so that a
slow spell of the shared host hits every model alike. The median of those
epochs is reported.

    python -m venv /tmp/recbole && /tmp/recbole/bin/pip install \
        torch==2.13.0 recbole==1.2.1 "numpy<2" "pandas<2.3" "scipy<1.15"
    python -m benchmarks.epoch_speed --data-path ../shared/data \
        --recbole-python /tmp/recbole/bin/python
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402
from tfrec_tricks.data import load_source, prepare  # noqa: E402
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)

#: RecBole 1.2.1 s/epoch on this machine kind (issue #4's measurements),
#: used when RecBole is not run beside (no ``--recbole-python``).
RECBOLE_SECONDS = {
    ("gru4rec", "Softmax"): 31.0,
    ("sasrec", "Softmax"): 40.0,
    ("gru4rec", "CPR:100 + Mi"): 43.0,
    ("sasrec", "CPR:100 + Mi"): 42.0,
}
#: RecBole 1.2.1's model for each of ours.
RECBOLE_MODELS = {
    ("gru4rec", "Softmax"): "GRU4Rec",
    ("sasrec", "Softmax"): "SASRec",
    ("gru4rec", "CPR:100 + Mi"): "GRU4RecCPR",
    ("sasrec", "CPR:100 + Mi"): "SASRecCPR",
}
HEADS = {
    "Softmax": {"head": "softmax"},
    "CPR:100 + Mi": {"head": "cpr", "cpr_reranker_ks": (100,), "cpr_mi": True},
}

#: Encoder layers per encoder: RecBole 1.2.1's defaults, the ablation's.
ENCODER_LAYERS = {"gru4rec": 1, "sasrec": 2}

#: Runs under RecBole's interpreter, by path (it imports no package).
RECBOLE_WORKER = os.path.join(os.path.dirname(__file__), "recbole_worker.py")


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


def keras_epoch(model: tf.keras.Model, dataset) -> Callable[[], float]:
    """A job for ``interleaved_epoch_seconds``: one ``fit`` epoch, timed."""

    def run() -> float:
        start = time.perf_counter()
        model.fit(dataset, epochs=1, verbose=0)
        return time.perf_counter() - start

    return run


def interleaved_epoch_seconds(
    jobs: dict[str, Callable[[], float]], epochs: int
) -> dict:
    """Median seconds per epoch of each job, epochs taken in turns.

    Args:
        jobs: {name: function that trains one epoch and returns its
            seconds}.
        epochs: epochs per model, the first (graph tracing) not timed.

    Returns:
        {name: median seconds of epochs 2..``epochs``}.
    """
    if epochs < 2:
        raise ValueError(
            "epochs must be at least 2: the first only traces the graph. "
            f"Received: epochs={epochs}"
        )
    for run in jobs.values():
        run()
    times = {name: [] for name in jobs}
    for _ in range(epochs - 1):
        for name, run in jobs.items():
            times[name].append(run())
    return {name: statistics.median(t) for name, t in times.items()}


def write_recbole_atomic_file(interactions, directory: str, dataset: str):
    """Writes the interactions as RecBole's ``DATASET.inter`` atomic file.

    Args:
        interactions: a ``tfrec_tricks.data.Interactions`` with timestamps
            (RecBole's leave-one-out orders each session by time).
        directory: RecBole's ``data_path``; the file goes to
            ``directory/dataset/dataset.inter``.
        dataset: RecBole's dataset name.
    """
    if interactions.timestamps is None:
        raise ValueError(
            "RecBole's split orders by time, but the source "
            f"{interactions.source!r} has no timestamps."
        )
    folder = os.path.join(directory, dataset)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{dataset}.inter"), "w") as handle:
        handle.write("session_id:token\titem_id:token\ttimestamp:float\n")
        for user, item, stamp in zip(
            interactions.users, interactions.items, interactions.timestamps
        ):
            handle.write(f"{user}\t{item}\t{float(stamp)!r}\n")


class RecBoleWorker:
    """RecBole models in a child process (``recbole_worker.py``).

    Args:
        python: an interpreter with RecBole 1.2.1 and PyTorch.
        interactions: the examples' source interactions.
        models: RecBole model names, e.g. ``["GRU4Rec", "SASRecCPR"]``.
        workdir: a folder for the atomic file and RecBole's logs.
    """

    DATASET = "interactions"

    def __init__(self, python: str, interactions, models, workdir: str):
        write_recbole_atomic_file(interactions, workdir, self.DATASET)
        # RecBole warns a lot on stderr: keep it in a file, shown on failure.
        self.log_path = os.path.join(workdir, "recbole_worker.log")
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(
                [python, RECBOLE_WORKER, workdir, self.DATASET, *models],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=workdir,  # RecBole writes log/ folders into its cwd
            )
        #: {model: training examples per epoch, as RecBole counts them}.
        self.examples = self._read()["ready"]

    def _read(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            with open(self.log_path) as log:
                tail = log.read()[-2000:]
            raise RuntimeError(
                f"The RecBole worker ended without a reply (exit code "
                f"{code}). The end of {self.log_path}:\n{tail}"
            )
        message = json.loads(line)
        if "error" in message:
            raise RuntimeError(
                "The RecBole worker failed:\n" + message["error"]
            )
        return message

    def job(self, model: str) -> Callable[[], float]:
        """A job for ``interleaved_epoch_seconds``: one RecBole epoch."""

        def run() -> float:
            self.process.stdin.write(model + "\n")
            self.process.stdin.flush()
            return self._read()["seconds"]

        return run

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


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


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, default="yoochoose-100k")
    parser.add_argument(
        "--epochs",
        type=int,
        default=4,
        help="epochs per model, the first not timed (>= 2). Default: 4",
    )
    common.add_split_option(parser)
    common.add_report_dir_option(parser)
    parser.add_argument(
        "--recbole-python",
        default=None,
        type=common.executable_file,
        metavar="PYTHON",
        help="an interpreter with RecBole 1.2.1 and PyTorch (see above):\n"
        "RecBole's four models then train in the same run, and the\n"
        "ratios are of that run. Default: divide issue #4's seconds",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error(f"--epochs must be at least 2. Received: {args.epochs}")

    source = load_source(args.data, data_path=args.data_path)
    data = prepare(source.interactions, split=args.split)
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
    jobs = {"plain GRU": keras_epoch(plain, pairs)}
    for encoder in ("gru4rec", "sasrec"):
        for head_name, head in HEADS.items():
            for pipeline, dataset, steps in (
                ("fixed", fixed, 1),
                ("tuned", tuned, 16),
                ("every position", merged, 16),
            ):
                model = ours(data, encoder, head, steps)
                jobs[encoder, head_name, pipeline] = keras_epoch(model, dataset)
    with tempfile.TemporaryDirectory() as workdir:
        worker = None
        if args.recbole_python:
            worker = RecBoleWorker(
                args.recbole_python,
                source.interactions,
                list(RECBOLE_MODELS.values()),
                workdir,
            )
            for key, name in RECBOLE_MODELS.items():
                jobs["recbole", key] = worker.job(name)
        seconds = interleaved_epoch_seconds(jobs, args.epochs)
        if worker:
            worker.close()
    if worker:
        recbole = {key: seconds["recbole", key] for key in RECBOLE_MODELS}
        recbole_note = (
            "RecBole 1.2.1 (default configs) trained in the same run, "
            "on the same interactions; its epochs have "
            + ", ".join(
                f"{name} {count:,}" for name, count in worker.examples.items()
            )
            + " training examples."
        )
    else:
        recbole = RECBOLE_SECONDS
        recbole_note = (
            "RecBole 1.2.1's seconds are issue #4's measurements on this "
            "machine kind, not of this run (see --recbole-python)."
        )
    lines = [
        f"Command: `{common.command_line('epoch_speed', argv)}`",
        "",
        f"{args.data}, split {args.split}: {len(data.train):,} training "
        "examples per epoch, "
        f"{data.num_items:,} items. Median s/epoch of {args.epochs - 1} "
        "epochs taken in turns by all models, training only. "
        f"Plain tf-keras GRU (fixed batches): {seconds['plain GRU']:.2f} s. "
        + recbole_note,
        "",
        "| model | head | fixed batches | bucketed + 16 steps/call "
        "(default) | + every position | RecBole 1.2.1 | x faster than "
        "RecBole (default) | x faster (every position) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for encoder in ("gru4rec", "sasrec"):
        for head_name in HEADS:
            timings = {
                pipeline: seconds[encoder, head_name, pipeline]
                for pipeline in ("fixed", "tuned", "every position")
            }
            theirs = recbole[encoder, head_name]
            lines.append(
                f"| {encoder} | {head_name} | {timings['fixed']:.2f} | "
                f"{timings['tuned']:.2f} | {timings['every position']:.2f} | "
                f"{theirs:.1f} | {theirs / timings['tuned']:.1f}x | "
                f"{theirs / timings['every position']:.1f}x |"
            )
    table = "\n".join(lines)
    common.write_report(
        common.report_stem(args.report_dir, "epoch_speed"), table
    )
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
