"""Training speed from a prepared dataset on disk vs from memory.

Two measurements on the same data (YOOCHOOSE-100k by default):

1. Whole runs. ``tfrec-tricks prepare --data D --output DIR`` once, then
   ``tfrec-tricks train --prepared DIR`` and ``tfrec-tricks train --data
   D`` (the default model: GRU4Rec, d=64, full softmax, batch 128,
   bucketed batches, 16 steps per call) for ``--epochs`` epochs each, the
   two taking turns ``--repeats`` times, each a fresh process. Each run's
   ``seconds_per_epoch_median`` (``metrics.json``: training and the
   validation pass) is read; the table gives the median over the repeats.
2. Does the input keep up? In this process, the two pipelines of a run's
   training batches (``OnDiskDataset(DIR).batches("train", 128,
   shuffle=True, bucket_by_length=True)`` and ``make_dataset`` over the
   in-memory examples) are iterated alone, an epoch at a time: batches
   per second. The same model then trains an epoch from each pipeline and
   from the prepared batches cached in memory (``.cache()``: no input
   work left), taking turns, the first epoch of each not timed: steps per
   second. Input batches per second well above the cached steps per
   second mean the input can keep up; a last epoch of each, traced with
   the TensorFlow profiler, gives how long a step waited for its batch
   (``IteratorGetNextOp``: microseconds when the prefetch buffer holds
   one). On two cores the input pipeline's threads also share the CPU
   with the training step: what an epoch from it takes over the cached
   epoch is mostly that, not waiting.

    python -m benchmarks.prepared_speed --data-path ../shared/data

Writes ``benchmarks/results/prepared_speed.md`` and ``.json``.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.epoch_speed import (  # noqa: E402
    interleaved_epoch_seconds,
    keras_epoch,
)

WORK_DIR = os.path.join(tempfile.gettempdir(), "tfrec_tricks_prepared_speed")
PATHS = ("prepared", "memory")


def data_flags(args: argparse.Namespace) -> list[str]:
    flags = ["--data", args.data]
    if args.data_path:
        flags += ["--data-path", args.data_path]
    return flags


def train_command(path: str, args: argparse.Namespace, name: str) -> list:
    """The ``tfrec-tricks train`` command of one run of ``path``."""
    if path == "prepared":
        data = ["--prepared", os.path.join(args.work_dir, "prepared")]
    else:
        data = data_flags(args)
    return common.cli(
        "train",
        *data,
        "--epochs",
        str(args.epochs),
        "--patience",
        str(args.epochs),
        "--output-dir",
        os.path.join(args.work_dir, "runs"),
        "--name",
        name,
        "--overwrite",
        "--quiet",
    )


def run_seconds(command: list[str], run_dir: str) -> float:
    """Runs a training command; its ``seconds_per_epoch_median``."""
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(run_dir, "metrics.json")) as handle:
        return json.load(handle)["seconds_per_epoch_median"]


def interleaved_runs(args: argparse.Namespace) -> dict[str, list[float]]:
    """Each path's s/epoch of ``--repeats`` runs, the paths in turns."""
    seconds = {path: [] for path in PATHS}
    for repeat in range(args.repeats):
        for path in PATHS:
            name = f"{path}-{repeat}"
            seconds[path].append(
                run_seconds(
                    train_command(path, args, name),
                    os.path.join(args.work_dir, "runs", name),
                )
            )
            print(f"run {name}: {seconds[path][-1]:.2f} s/epoch", flush=True)
    return seconds


def input_rate(dataset: tf.data.Dataset, epochs: int) -> tuple[float, int]:
    """Median batches per second of iterating ``dataset`` alone."""
    rates, count = [], 0
    for _ in range(epochs):
        start = time.perf_counter()
        count = 0
        for _ in dataset:
            count += 1
        rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates), count


def pipelines(args: argparse.Namespace):
    """The two pipelines of a run's training batches, and the model data."""
    from tfrec_tricks.data import load_source, prepare
    from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
    from tfrec_tricks.data.tf_data_pipeline import make_dataset

    prepared = OnDiskDataset(os.path.join(args.work_dir, "prepared"))
    source = load_source(args.data, data_path=args.data_path)
    data = prepare(source.interactions, max_len=prepared.max_len)
    options = {"shuffle": True, "seed": 0, "bucket_by_length": True}
    return (
        {
            "prepared": prepared.batches("train", 128, **options),
            "memory": make_dataset(data.train, 128, **options),
        },
        prepared,
    )


#: The trace event of the training loop taking its next batch from tf.data.
GET_NEXT = "IteratorGetNextOp::DoCompute"


def get_next_ms(xspace_path: str) -> tuple[float, int]:
    """Milliseconds spent in ``GET_NEXT`` events of a trace, and their count.

    Each training step takes one batch; the time is how long the step
    waited for it (a batch already in the prefetch buffer: microseconds).
    """
    space = xplane_pb2.XSpace()
    with open(xspace_path, "rb") as handle:
        space.ParseFromString(handle.read())
    total, count = 0.0, 0
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                if plane.event_metadata[event.metadata_id].name == GET_NEXT:
                    total += event.duration_ps / 1e9
                    count += 1
    return total, count


def input_wait(model, dataset: tf.data.Dataset) -> float:
    """ms per step a profiled training epoch waited for its batches."""
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        model.fit(dataset, epochs=1, verbose=0)
        tf.profiler.experimental.stop()
        (path,) = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
        total, count = get_next_ms(path)
    return total / max(count, 1)


def model_for(prepared):
    """The default run's model (``train``'s), compiled as ``train`` does."""
    from tfrec_tricks.models import SequentialRetrievalModel
    from tfrec_tricks.training.train_config import TrainConfig

    config = TrainConfig()
    tf.keras.utils.set_random_seed(0)
    model = SequentialRetrievalModel.from_data(
        config.model_config(prepared.num_items), prepared
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(config.training_learning_rate()),
        steps_per_execution=config.steps_per_execution,
    )
    return model


def report(
    runs: dict, rates: dict, steps: dict, epoch: dict, waits: dict
) -> str:
    """The markdown tables of both measurements."""
    medians = {path: statistics.median(runs[path]) for path in PATHS}
    lines = [
        "| `tfrec-tricks train` | s/epoch of each run | median |",
        "|---|---|---:|",
    ]
    for path in PATHS:
        each = ", ".join(f"{s:.2f}" for s in runs[path])
        lines.append(f"| {FLAGS[path]} | {each} | {medians[path]:.2f} |")
    lines += [
        "",
        f"On disk / in memory: {medians['prepared'] / medians['memory']:.2f}"
        "x the time per epoch.",
        "",
        "| training batches | batches per epoch | input alone: batches/s | "
        "training: s/epoch | steps/s | waiting for a batch: ms/step |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("prepared", "memory", "cached"):
        rate, count = rates.get(name, (None, steps[name]))
        lines.append(
            f"| {LABELS[name]} | {steps[name]:,} | "
            + (f"{rate:,.0f}" if rate else "")
            + f" | {epoch[name]:.2f} | {steps[name] / epoch[name]:,.0f} | "
            f"{waits[name]:.2f} |"
        )
    headroom = rates["prepared"][0] / (steps["cached"] / epoch["cached"])
    lines += [
        "",
        f"The prepared input alone yields {headroom:.1f}x the batches per "
        "second the model trains on (cached batches); an epoch from it "
        f"takes {epoch['prepared'] / epoch['cached']:.2f}x the cached "
        "epoch's time.",
    ]
    return "\n".join(lines)


FLAGS = {"prepared": "`--prepared DIR`", "memory": "`--data` (in memory)"}
LABELS = {
    "prepared": "on disk (`OnDiskDataset.batches`)",
    "memory": "in memory (`make_dataset`)",
    "cached": "on disk, cached in memory (model alone)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, default="yoochoose-100k")
    parser.add_argument(
        "--epochs",
        type=int,
        default=4,
        help="epochs per run and per model (the first of each model not "
        "timed). Default: 4",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="runs of each path, taking turns. Default: 5",
    )
    parser.add_argument(
        "--work-dir",
        default=WORK_DIR,
        help=f"the prepared dataset and the runs. Default: {WORK_DIR}",
    )
    common.add_report_dir_option(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error(f"--epochs must be at least 2. Received: {args.epochs}")
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1. Received: {args.repeats}")
    subprocess.run(
        common.cli(
            "prepare",
            *data_flags(args),
            "--output",
            os.path.join(args.work_dir, "prepared"),
            "--overwrite",
        ),
        check=True,
    )
    runs = interleaved_runs(args)

    datasets, prepared = pipelines(args)
    rates = {name: input_rate(d, args.epochs) for name, d in datasets.items()}
    datasets["cached"] = datasets["prepared"].cache()
    models = {name: model_for(prepared) for name in datasets}
    jobs = {
        name: keras_epoch(models[name], dataset)
        for name, dataset in datasets.items()
    }
    epoch = interleaved_epoch_seconds(jobs, args.epochs)
    waits = {
        name: input_wait(models[name], dataset)
        for name, dataset in datasets.items()
    }
    steps = {name: rates[name][1] for name in rates}
    steps["cached"] = steps["prepared"]
    command = common.command_line("prepared_speed", argv)
    text = "\n".join(
        [
            f"Command: `{command}`",
            "",
            f"{args.data}: {prepared.num_examples('train'):,} training "
            f"examples, {prepared.num_items - 1:,} items. {args.repeats} "
            f"runs of {args.epochs} epochs per path, taking turns; then "
            f"the input pipelines alone and one model per pipeline, "
            f"median of {args.epochs - 1} epochs after a first untimed "
            "one. Load average at the end: "
            + ", ".join(f"{v:.1f}" for v in os.getloadavg())
            + ".",
            "",
            report(runs, rates, steps, epoch, waits),
        ]
    )
    common.write_report(
        common.report_stem(args.report_dir, "prepared_speed"),
        text,
        {
            "runs": runs,
            "input_rates": rates,
            "epoch_seconds": epoch,
            "input_wait_ms_per_step": waits,
        },
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
