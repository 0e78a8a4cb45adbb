"""A 1M-item catalogue end to end: prepare, train, export, serve.

Writes random ``udata`` interactions (``user<TAB>item<TAB>rating<TAB>time``)
into ``--work-dir``, a chunk of users at a time: ``--users`` users of at
least 5 interactions each, ``--interactions`` in all; every one of the
``--items`` items occurs once, the other fresh interactions draw items of
Zipf popularity (p of the r-th most popular ~ 1/r; ids shuffled), and a
share ``--repeat-probability`` of the interactions repeat one of the
user's last 10 items (something for the heads to learn; the rest is
noise). Then, each stage in a fresh process, timed, with its peak RSS
(``ru_maxrss`` of that child, from ``os.wait4``):

1. ``generate``: the file above.
2. ``prepare``: ``tfrec-tricks prepare --data file --data-path F --format
   udata --output DIR``.
3. ``train`` (per head of ``--heads``): ``tfrec-tricks train --prepared
   DIR --objective sampled --head H --embedding-dim 32 --epochs 1``, run by
   a child that calls the command line's own ``train`` with two callbacks:
   one times the training steps, one ends the epoch after ``--train-steps``
   batches (0: the whole epoch). Validation and test then rank their
   examples over the whole catalogue, in batches, as every run does.
4. ``export``: ``tfrec-tricks export RUN_DIR --name NAME``.
5. ``serve``: a plain-TensorFlow process (it imports no ``tfrec_tricks``)
   loads the SavedModel and scores the request example ``export`` wrote.

The per-step time is the median over the training's compiled calls after
the first (which traces the graph), divided by its steps. Evaluation runs
in batches when the training process's peak RSS stays far below what one
``[examples, N]`` float32 matrix of its test examples would take.

    python -m benchmarks.large_catalogue

Writes ``benchmarks/results/large_catalogue.md``, ``.json`` and ``.png``.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from benchmarks.large_catalogue_data import (  # noqa: E402
    MIN_LENGTH,
    write_interactions,
)
from benchmarks.large_catalogue_report import plot, report  # noqa: E402

#: Where the interaction file, the prepared dataset, runs and models go.
WORK_DIR = os.path.join(tempfile.gettempdir(), "tfrec_tricks_large_catalogue")
HEADS = ("cpr", "softmax")
#: The training options of every run (besides the head and the output).
TRAIN_FLAGS = (
    "--objective",
    "sampled",
    "--embedding-dim",
    "32",
    "--epochs",
    "1",
)
#: The ``serve`` stage: plain TensorFlow, no ``tfrec_tricks``. argv: the
#: SavedModel, the request JSON (``{"instances": [...]}``), the result.
SERVE_SCRIPT = """\
import json, sys, time
start = time.perf_counter()
import tensorflow as tf
model_path, request_path, result_path = sys.argv[1:4]
assert not any(name.startswith("tfrec_tricks") for name in sys.modules)
imported = time.perf_counter()
model = tf.saved_model.load(model_path)
loaded = time.perf_counter()
with open(request_path) as handle:
    instances = json.load(handle)["instances"]
inputs = {
    key: tf.constant([row[key] for row in instances]) for key in instances[0]
}
serve = model.signatures["serving_default"]
first = serve(**inputs)
called = time.perf_counter()
seconds = []
for _ in range(5):
    again = time.perf_counter()
    output = serve(**inputs)
    seconds.append(time.perf_counter() - again)
with open(result_path, "w") as handle:
    json.dump(
        {
            "import_seconds": imported - start,
            "load_seconds": loaded - imported,
            "first_call_seconds": called - loaded,
            "call_seconds": sorted(seconds)[len(seconds) // 2],
            "rows": len(instances),
            "history": [row["history"] for row in instances],
            "item_ids": output["item_ids"].numpy().astype(str).tolist(),
            "scores": output["scores"].numpy().tolist(),
        },
        handle,
    )
"""


# ------------------------------------------------------------ the stages


def worker(name: str, options: dict) -> list[str]:
    """The argv of this script's ``--NAME-worker`` child."""
    return [
        *common.module_command("large_catalogue"),
        f"--{name}-worker",
        json.dumps(options),
    ]


def train_arguments(
    prepared: str, head: str, runs: str, optimizer: str = "adagrad"
) -> list[str]:
    """``tfrec-tricks train`` arguments of the run of ``head``."""
    return [
        "--prepared",
        prepared,
        *TRAIN_FLAGS,
        *common.optimizer_flags(optimizer),
        "--head",
        head,
        "--output-dir",
        runs,
        "--name",
        f"large-{head}",
        "--overwrite",
        "--quiet",
    ]


def step_seconds(ends: list[tuple[int, float]]) -> float | None:
    """Median seconds per step from ``(steps done, time)`` at call ends.

    The first entry is the start; the first call (graph tracing) is left
    out. None with fewer than two calls after it.

    >>> step_seconds([(0, 0.0), (16, 9.0), (32, 10.6), (48, 12.0)])
    0.09375
    """
    rates = [
        (t1 - t0) / (s1 - s0)
        for (s0, t0), (s1, t1) in zip(ends[1:], ends[2:])
        if s1 > s0
    ]
    return statistics.median(rates) if len(rates) >= 2 else None


def generate_worker(options: dict) -> int:
    """Child: writes the interaction file, its counts to ``result``."""
    counts = write_interactions(
        options["path"],
        options["interactions"],
        options["users"],
        options["items"],
        options["repeat_probability"],
        options["seed"],
    )
    with open(options["result"], "w") as handle:
        json.dump(counts, handle)
    return 0


def train_worker(options: dict) -> int:
    """Child: ``tfrec-tricks train ARGV``, timed, maybe ``steps`` batches.

    Runs the command line's own ``train``. A callback ends the epoch after
    ``steps`` batches (0: never): Keras then still runs the epoch's
    validation, and ``train`` its test evaluation, over the whole
    validation and test sets.
    """
    from tfrec_tricks.cli.quiet import load_tensorflow

    load_tensorflow(verbose=False)
    import tensorflow as tf

    from tfrec_tricks.cli.parser import build_parser, parse, train_config
    from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
    from tfrec_tricks.training import evaluate, training

    arguments = parse(build_parser(), ["train", *options["argv"]])
    config = train_config(arguments)
    steps = options["steps"]

    def cpu_seconds() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    class Timer(tf.keras.callbacks.Callback):
        """Call ends in training, the fit's validation, the end of fit."""

        def __init__(self):
            super().__init__()
            self.ends, self.cpu_ends, self.validation = [], [], None
            self.validation_seconds = None

        def on_train_begin(self, logs=None):
            self.ends = [(0, time.perf_counter())]
            self.cpu_ends = [(0, cpu_seconds())]

        def on_train_batch_end(self, batch, logs=None):
            self.ends.append((batch + 1, time.perf_counter()))
            self.cpu_ends.append((batch + 1, cpu_seconds()))
            if steps and batch + 1 >= steps:
                self.model.stop_training = True

        def on_test_begin(self, logs=None):
            self.validation = time.perf_counter()

        def on_test_end(self, logs=None):
            self.validation_seconds = time.perf_counter() - self.validation

        def on_train_end(self, logs=None):
            self.fit_end = time.perf_counter()

    timer = Timer()
    result = training.train(
        config, verbose=0, callbacks=[timer], overwrite=arguments.overwrite
    )
    done = time.perf_counter()
    data = OnDiskDataset(config.prepared)
    batch_size = getattr(evaluate, "eval_batch_size", None)
    num_items = data.num_items
    trained = timer.ends[-1][0]
    with open(options["result"], "w") as handle:
        json.dump(
            {
                "run_dir": result.run_dir,
                "steps": trained,
                "batch_size": config.batch_size,
                "examples": min(
                    trained * config.batch_size, data.num_examples("train")
                ),
                "epoch_examples": data.num_examples("train"),
                "whole_epoch": not steps
                or trained * config.batch_size >= data.num_examples("train"),
                "train_seconds": timer.ends[-1][1] - timer.ends[0][1],
                "step_seconds": step_seconds(timer.ends),
                "step_cpu_seconds": step_seconds(timer.cpu_ends),
                "validation_seconds": timer.validation_seconds,
                "after_fit_seconds": done - timer.fit_end,
                "validation_examples": data.num_examples("validation"),
                "test_examples": data.num_examples("test"),
                "num_items": num_items,
                "eval_batch_size": (
                    batch_size(num_items)
                    if batch_size
                    else training.EVAL_BATCH_SIZE
                ),
                "metrics": result.metrics,
            },
            handle,
        )
    return 0


def run_head(head: str, args: argparse.Namespace, prepared: str) -> dict:
    """Trains, exports and serves ``head``; the stages' measurements."""
    logs = os.path.join(args.work_dir, "logs")
    runs = os.path.join(args.work_dir, "runs")
    stages = {}
    result_path = os.path.join(logs, f"train-{head}.json")
    print(f"{head}: training", flush=True)
    stages["train"] = common.measured(
        worker(
            "train",
            {
                "argv": train_arguments(prepared, head, runs, args.optimizer),
                "steps": args.train_steps,
                "result": result_path,
            },
        ),
        os.path.join(logs, f"train-{head}.log"),
    )
    if stages["train"]["returncode"]:
        return stages
    with open(result_path) as handle:
        stages["train"].update(json.load(handle))
    base_path = os.path.join(args.work_dir, "saved_models")
    name = f"large-{head}"
    print(f"{head}: exporting", flush=True)
    stages["export"] = common.measured(
        common.cli(
            "export",
            stages["train"]["run_dir"],
            "--name",
            name,
            "--base-path",
            base_path,
        ),
        os.path.join(logs, f"export-{head}.log"),
    )
    if stages["export"]["returncode"]:
        return stages
    with open(stages["export"]["log"]) as handle:
        exported = [
            line.split(" ", 1)[1].strip()
            for line in handle
            if line.startswith("Exported ")
        ][-1]
    stages["export"]["path"] = exported
    serve_result = os.path.join(logs, f"serve-{head}.json")
    print(f"{head}: serving", flush=True)
    stages["serve"] = common.measured(
        [
            sys.executable,
            "-c",
            SERVE_SCRIPT,
            exported,
            os.path.join(base_path, f"{name}.request.json"),
            serve_result,
        ],
        os.path.join(logs, f"serve-{head}.log"),
    )
    if not stages["serve"]["returncode"]:
        with open(serve_result) as handle:
            stages["serve"].update(json.load(handle))
    print(f"{head}: {json.dumps(stages, default=str)[:2000]}", flush=True)
    return stages


# ------------------------------------------------------------ main


def positive(text: str) -> int:
    """argparse type: an int >= 1 (``1_000_000`` and ``1M`` too).

    >>> positive("1M"), positive("250k"), positive("3000")
    (1000000, 250000, 3000)
    """
    units = {"k": 1_000, "m": 1_000_000}
    scale = units.get(text.strip()[-1:].lower(), 1)
    digits = text.strip()[:-1] if scale > 1 else text.strip()
    try:
        value = int(digits.replace("_", "")) * scale
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer (k, M allowed). Received: {text!r}"
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    parser.add_argument(
        "--interactions",
        type=positive,
        default=3_000_000,
        help="interactions of the file. Default: 3M",
    )
    parser.add_argument(
        "--users",
        type=positive,
        default=20_000,
        help="users (each gives a validation and a test example ranked "
        "over the whole catalogue). Default: 20k",
    )
    parser.add_argument(
        "--items", type=positive, default=1_000_000, help="Default: 1M"
    )
    parser.add_argument(
        "--repeat-probability",
        type=float,
        default=0.2,
        help="share of interactions repeating a recent item. Default: 0.2",
    )
    parser.add_argument(
        "--heads",
        type=common.name_list(HEADS, "heads"),
        default=list(HEADS),
        help=f"output heads, comma-separated. Default: {','.join(HEADS)}",
    )
    common.add_optimizer_option(parser, default="adagrad")
    parser.add_argument(
        "--train-steps",
        type=int,
        default=192,
        help="training batches of the epoch's stream; 0: the whole epoch. "
        "Default: 192",
    )
    parser.add_argument(
        "--work-dir",
        default=WORK_DIR,
        help=f"the file, prepared data, runs, models and logs (about 1 GB)."
        f" Default: {WORK_DIR}",
    )
    common.add_seed_option(parser)
    common.add_report_dir_option(parser)
    parser.add_argument("--generate-worker", help=argparse.SUPPRESS)
    parser.add_argument("--train-worker", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.generate_worker:
        return generate_worker(json.loads(args.generate_worker))
    if args.train_worker:
        return train_worker(json.loads(args.train_worker))
    if args.train_steps < 0:
        parser.error(
            f"--train-steps must be >= 0. Received: {args.train_steps}"
        )
    if not 0.0 <= args.repeat_probability < 1.0:
        parser.error(
            "--repeat-probability must be in [0, 1). Received: "
            f"{args.repeat_probability}"
        )
    if args.interactions < MIN_LENGTH * args.users:
        parser.error(
            f"--interactions must be at least {MIN_LENGTH} per user. "
            f"Received: {args.interactions} for {args.users} users"
        )
    logs = os.path.join(args.work_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    path = os.path.join(args.work_dir, "interactions.udata")
    prepared = os.path.join(args.work_dir, "prepared")
    results = {}
    print("generating", flush=True)
    counts_path = os.path.join(logs, "generate.json")
    results["generate"] = common.measured(
        worker(
            "generate",
            {
                "path": path,
                "interactions": args.interactions,
                "users": args.users,
                "items": args.items,
                "repeat_probability": args.repeat_probability,
                "seed": args.seed,
                "result": counts_path,
            },
        ),
        os.path.join(logs, "generate.log"),
    )
    if not results["generate"]["returncode"]:
        with open(counts_path) as handle:
            results["generate"].update(json.load(handle))
        print("preparing", flush=True)
        results["prepare"] = common.measured(
            common.cli(
                "prepare",
                "--data",
                "file",
                "--data-path",
                path,
                "--format",
                "udata",
                "--output",
                prepared,
                "--overwrite",
            ),
            os.path.join(logs, "prepare.log"),
        )
    if results.get("prepare", {}).get("returncode") == 0:
        with open(os.path.join(prepared, "metadata.json")) as handle:
            results["num_items"] = json.load(handle)["num_items"]
        results["heads"] = {
            head: run_head(head, args, prepared) for head in args.heads
        }
    command = common.command_line("large_catalogue", argv)
    text = report(
        results,
        args,
        command,
        [*TRAIN_FLAGS, *common.optimizer_flags(args.optimizer)],
    )
    common.write_report(
        common.report_stem(args.report_dir, "large_catalogue"),
        text,
        results,
        chart=lambda chart_path: plot(results, chart_path),
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
