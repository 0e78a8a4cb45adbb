"""Scale-out: preparation and training time and memory, 1M to 50M rows.

Random interaction files (``udata``: ``user<TAB>item<TAB>rating<TAB>time``)
of each size in ``--sizes``: n/25 users (each row's user drawn uniformly,
so about 25 interactions each), n/50 items of Zipf popularity (p of the
r-th most popular item ~ 1/r; ids shuffled), ratings 1..5, timestamps
increasing in file order (a log). Written a million rows at a time, never
as millions of Python objects, into ``--work-dir``; a file already there
is reused.

Engines:

- ``memory``: ``tfrec-tricks train --data file`` loads the file as NumPy
  strings and prepares every prefix example in memory. Its preparation
  alone is timed in a child that runs ``prepare_in_memory`` (what ``train`` runs
  first). Only up to ``--memory-max`` interactions: it needs about 1.2 KB
  of memory per interaction.
- ``local``: ``tfrec-tricks prepare --output DIR`` (compact int32 columns,
  each user's sequence once, TFRecord shards), then ``train --prepared``.
- ``beam``: ``tfrec-tricks prepare --engine beam`` on Beam's DirectRunner
  (up to ``--beam-max``), then ``train --prepared`` on its output.

Every number comes from a fresh process: its wall seconds, and its peak
resident memory (``ru_maxrss`` of that child, from ``os.wait4``). "B per
interaction" is the peak above the same command's on a file of 1,000
interactions (TensorFlow and the libraries: about 0.65 GB), divided by the
interactions; the raw ids' strings (``vocabulary``: one ``str`` per user
and item, in a list) are also given apart.

Training: ``tfrec-tricks train`` with GRU4Rec, ``--embedding-dim 32
--objective sampled`` (in-batch sampled softmax), batch 128, one epoch,
run by a child that calls the same ``train`` with a timer callback and a
count of the training examples read: "train s" is the training part of
the epoch (without the validation pass); examples per second are those
after the first compiled call (16 steps, which also traces the step).
Above ``--epoch-max`` interactions the child trains the first ``--steps``
batches of the full dataset's stream instead, and evaluates the first
``--eval-batches`` validation and test batches (``train``'s evaluation
batches: 512 users, fewer for large catalogues; ranked over the whole
catalogue): the memory of a run on the whole catalogue, in minutes. (A
step's time grows with the catalogue under ``--optimizer adam``, the
default: Adam updates the whole [items, d] table every step, so an epoch
of 10M interactions would take hours here, one of 50M days; ``--optimizer
adagrad`` updates only the batch's rows.)

    python -m benchmarks.scale_out
    python -m benchmarks.scale_out --sizes 1M,10M --engines local,beam

Writes ``benchmarks/results/scale_out.md``, ``.json`` and ``.png``.
"""

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import numpy as np  # noqa: E402

from benchmarks import common  # noqa: E402

ENGINES = ("memory", "local", "beam")
DEFAULT_SIZES = "1M,10M,50M"
#: Where the interaction files, prepared datasets and runs go.
WORK_DIR = os.path.join(tempfile.gettempdir(), "tfrec_tricks_scale_out")
#: Interactions per user and per item of the random files.
PER_USER, PER_ITEM = 25, 50
#: Rows of the file written at a time.
CHUNK_ROWS = 1_000_000
#: The training options of every run (besides the data and the output).
TRAIN_FLAGS = (
    "--embedding-dim",
    "32",
    "--objective",
    "sampled",
    "--head",
    "softmax",
)
#: Interactions of the file the baselines are measured on.
BASELINE_SIZE = 1_000
#: What the peak is compared with: the memory target of the issue.
TARGET_GB = 4.0
GB = 1e9
#: What each engine runs, as the report says.
COMMANDS = (
    "- memory: `tfrec-tricks train --data file --data-path F --format udata "
    "--embedding-dim 32 --objective sampled --head softmax --epochs 1` (its "
    "preparation timed alone: `prepare_in_memory`, what `train` runs first)",
    "- local: `tfrec-tricks prepare --data file --data-path F --format udata "
    "--output DIR`, then `tfrec-tricks train --prepared DIR --embedding-dim "
    "32 --objective sampled --head softmax --epochs 1`",
    "- beam: the same with `prepare --engine beam` (DirectRunner)",
)


def sizes(text: str) -> list[int]:
    """argparse type of ``--sizes``: comma-separated, ascending, unique."""
    values = sorted(
        {common.count(part) for part in text.split(",") if part.strip()}
    )
    if not values:
        raise argparse.ArgumentTypeError(f"no sizes. Received: {text!r}")
    return values


def engines(text: str) -> list[str]:
    """argparse type of ``--engines``: names of ENGINES, in ENGINES' order."""
    names = common.name_list(ENGINES, "engines")(text)
    return [name for name in ENGINES if name in names]


def human(count: int) -> str:
    """``50M``, ``250k``, ``1000``: a size as ``--sizes`` takes it."""
    for suffix, factor in (("M", 1_000_000), ("k", 1_000)):
        if count % factor == 0:
            return f"{count // factor}{suffix}"
    return str(count)


@dataclasses.dataclass
class Job:
    """One engine at one size: what to measure, or why not.

    Attributes:
        engine: a name of ``ENGINES``.
        size: interactions.
        training: "epoch" (one epoch), "steps" (``--steps`` batches) or
            None (preparation only).
        skip: why the engine does not run at this size ("" when it does).
    """

    engine: str
    size: int
    training: str | None
    skip: str = ""


def plan(args: argparse.Namespace) -> list[Job]:
    """The jobs of ``args``, size by size, engines in ``ENGINES`` order."""
    jobs = []
    for count in args.sizes:
        for engine in args.engines:
            skip = ""
            if engine == "memory" and count > args.memory_max:
                skip = (
                    f"needs about {count * 1.2e3 / GB:.0f} GB "
                    f"(> --memory-max {human(args.memory_max)})"
                )
            elif engine == "beam" and count > args.beam_max:
                skip = f"DirectRunner only up to {human(args.beam_max)}"
            training = None
            if not args.no_train:
                training = "epoch" if count <= args.epoch_max else "steps"
            jobs.append(Job(engine, count, training, skip))
    return jobs


def write_interactions(path: str, count: int, seed: int = 0) -> None:
    """Writes ``count`` random interactions to ``path`` (see the module doc).

    Written under a temporary name and renamed when complete.
    """
    rng = np.random.default_rng(seed)
    num_users = max(1, count // PER_USER)
    num_items = max(1, count // PER_ITEM)
    popularity = np.cumsum(1.0 / np.arange(1, num_items + 1))
    popularity /= popularity[-1]
    item_ids = rng.permutation(num_items) + 1
    partial = path + ".part"
    with open(partial, "w") as handle:
        for start in range(0, count, CHUNK_ROWS):
            rows = min(CHUNK_ROWS, count - start)
            users = rng.integers(1, num_users + 1, rows)
            ranks = np.searchsorted(popularity, rng.random(rows))
            items = item_ids[np.minimum(ranks, num_items - 1)]
            ratings = rng.integers(1, 6, rows)
            times = 1_000_000_000 + start + np.arange(rows)
            handle.write(
                "".join(
                    f"{u}\t{i}\t{r}\t{t}\n"
                    for u, i, r, t in zip(
                        users.tolist(),
                        items.tolist(),
                        ratings.tolist(),
                        times.tolist(),
                    )
                )
            )
    os.replace(partial, path)


def interactions_file(work_dir: str, count: int, seed: int) -> str:
    """The random file of ``count`` interactions, written if missing."""
    path = os.path.join(work_dir, f"interactions-{human(count)}-{seed}.udata")
    if not os.path.isfile(path):
        os.makedirs(work_dir, exist_ok=True)
        start = time.perf_counter()
        write_interactions(path, count, seed)
        print(
            f"wrote {path} in {time.perf_counter() - start:.0f} s", flush=True
        )
    return path


def data_flags(path: str) -> list[str]:
    return ["--data", "file", "--data-path", path, "--format", "udata"]


def prepare_command(engine: str, path: str, output: str) -> list[str]:
    """The command that prepares ``path`` with ``engine``."""
    if engine == "memory":
        worker = json.dumps({"path": path, "result": output + ".json"})
        return [*common.module_command("scale_out"), "--prepare-worker", worker]
    extra = ["--engine", "beam"] if engine == "beam" else []
    return common.cli(
        "prepare", *data_flags(path), "--output", output, "--overwrite", *extra
    )


def train_arguments(
    engine: str,
    path: str,
    prepared: str,
    name: str,
    runs: str,
    optimizer: str = "adam",
) -> list[str]:
    """``tfrec-tricks train`` arguments of a run of ``engine``'s data."""
    data = data_flags(path) if engine == "memory" else ["--prepared", prepared]
    return [
        *data,
        *TRAIN_FLAGS,
        *common.optimizer_flags(optimizer),
        "--epochs",
        "1",
        "--output-dir",
        runs,
        "--name",
        name,
        "--overwrite",
        "--quiet",
    ]


def vocabulary_bytes(prepared: str) -> int:
    """Memory of the raw ids as Python holds them: a ``str`` in a list each."""
    with open(os.path.join(prepared, "vocabulary.json")) as handle:
        vocabulary = json.load(handle)
    names = [*vocabulary["items"][1:], *vocabulary["users"]]
    return sum(sys.getsizeof(name) + 8 for name in names)


def run_job(job: Job, args: argparse.Namespace, baselines: dict) -> dict:
    """Measures one job; returns its row of the report's numbers."""
    row = dataclasses.asdict(job)
    if job.skip:
        return row
    path = interactions_file(args.work_dir, job.size, args.seed)
    tag = f"{job.engine}-{human(job.size)}"
    prepared = os.path.join(args.work_dir, f"prepared-{tag}")
    logs = os.path.join(args.work_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    print(f"{tag}: preparing", flush=True)
    result = common.measured(
        prepare_command(job.engine, path, prepared),
        os.path.join(logs, f"prepare-{tag}.log"),
    )
    row["prepare"] = result
    if result["returncode"]:
        return row
    if job.engine == "memory":
        with open(prepared + ".json") as handle:
            row.update(json.load(handle))
    else:
        with open(os.path.join(prepared, "metadata.json")) as handle:
            metadata = json.load(handle)
        row["users"] = metadata["num_users"]
        row["items"] = metadata["num_items"] - 1
        row["vocabulary_bytes"] = vocabulary_bytes(prepared)
    baseline = baselines.get(job.engine)
    if baseline:
        row["bytes_per_interaction"] = (
            result["peak_rss"] - baseline["peak_rss"]
        ) / job.size
    if job.training:
        print(f"{tag}: training ({job.training})", flush=True)
        result_path = os.path.join(logs, f"train-{tag}.json")
        worker = {
            "argv": train_arguments(
                job.engine,
                path,
                prepared,
                tag,
                os.path.join(args.work_dir, "runs"),
                args.optimizer,
            ),
            "steps": args.steps if job.training == "steps" else 0,
            "eval_batches": args.eval_batches,
            "result": result_path,
        }
        row["train"] = common.measured(
            [
                *common.module_command("scale_out"),
                "--train-worker",
                json.dumps(worker),
            ],
            os.path.join(logs, f"train-{tag}.log"),
        )
        if not row["train"]["returncode"]:
            with open(result_path) as handle:
                row["train"].update(json.load(handle))
    print(f"{tag}: {json.dumps(row)}", flush=True)
    return row


def measure_baselines(args: argparse.Namespace) -> dict:
    """Each engine's preparation of ``BASELINE_SIZE`` interactions."""
    os.makedirs(args.work_dir, exist_ok=True)
    path = os.path.join(args.work_dir, "interactions-baseline.udata")
    if not os.path.isfile(path):
        write_interactions(path, BASELINE_SIZE, args.seed)
    logs = os.path.join(args.work_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    baselines = {}
    for engine in args.engines:
        output = os.path.join(args.work_dir, f"prepared-baseline-{engine}")
        result = common.measured(
            prepare_command(engine, path, output),
            os.path.join(logs, f"prepare-baseline-{engine}.log"),
        )
        if not result["returncode"]:
            baselines[engine] = result
    return baselines


def _gb(value: float | None) -> str:
    return "" if value is None else f"{value / GB:.2f}"


def table(rows: list[dict], baselines: dict) -> str:
    """The report's markdown table, one row per engine and size."""
    lines = [
        "| engine | interactions | users | items | prepare s | prepare "
        "peak GB | B per interaction (besides ids + ids) | training | "
        "train examples | train s | examples/s | train peak GB |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = [row["engine"], f"{row['size']:,}"]
        prepare = row.get("prepare", {})
        if row["skip"] or prepare.get("returncode"):
            why = f"not run: {row['skip']}" if row["skip"] else _failed(prepare)
            lines.append(_row([*cells, "", "", why], 12))
            continue
        per_row = row.get("bytes_per_interaction")
        vocabulary = row.get("vocabulary_bytes")
        memory = ""
        if per_row is not None:
            memory = f"{per_row:,.0f}"
            if vocabulary:
                apart = per_row - vocabulary / row["size"]
                memory = f"{apart:,.0f} + {vocabulary / 1e6:,.0f} MB"
        cells += [
            f"{row.get('users', 0):,}",
            f"{row.get('items', 0):,}",
            f"{prepare['seconds']:.0f}",
            _gb(prepare["peak_rss"]),
            memory,
        ]
        train = row.get("train")
        if not train:
            cells.append("not run")
        elif train.get("returncode"):
            cells.append(_failed(train))
        else:
            steps = train.get("steps")
            cells += [
                f"{steps:,} steps" if steps else "1 epoch",
                f"{train['examples']:,}",
                f"{train['train_seconds']:.0f}",
                f"{train['steady_examples'] / train['steady_seconds']:,.0f}",
                _gb(train["peak_rss"]),
            ]
        lines.append(_row(cells, 12))
    if baselines:
        lines.append("")
        lines.append(
            "Baselines (the same preparation of "
            f"{BASELINE_SIZE:,} interactions): "
            + ", ".join(
                f"{engine} {_gb(result['peak_rss'])} GB, "
                f"{result['seconds']:.0f} s"
                for engine, result in baselines.items()
            )
            + "."
        )
    return "\n".join(lines)


def _failed(result: dict) -> str:
    log = os.path.basename(result["log"])
    return f"failed (exit {result['returncode']}, {log})"


def _row(cells: list[str], columns: int) -> str:
    """A markdown table row of ``cells``, empty cells up to ``columns``."""
    cells = [*cells, *[""] * (columns - len(cells))]
    return "| " + " | ".join(cells) + " |"


def targets(rows: list[dict]) -> list[str]:
    """Lines saying whether the largest on-disk run meets the targets."""
    done = [
        row
        for row in rows
        if row["engine"] == "local"
        and not row["skip"]
        and not row.get("prepare", {}).get("returncode")
    ]
    if not done:
        return []
    row = done[-1]
    peaks = [row["prepare"]["peak_rss"]]
    if row.get("train") and not row["train"].get("returncode"):
        peaks.append(row["train"]["peak_rss"])
    lines = [
        f"- Largest local run, {row['size']:,} interactions: peak "
        f"{max(peaks) / GB:.2f} GB over preparation and training "
        f"(target: at most {TARGET_GB:.0f} GB): "
        + ("met." if max(peaks) <= TARGET_GB * GB else "missed.")
    ]
    per_row = row.get("bytes_per_interaction")
    if per_row is not None:
        apart = per_row - row.get("vocabulary_bytes", 0) / row["size"]
        lines.append(
            f"- Its preparation: {apart:.0f} B per interaction besides the "
            "raw ids' strings (target: at most 40): "
            + ("met." if apart <= 40 else "missed.")
        )
    return lines


def plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (memory, seconds) = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = dict(zip(ENGINES, ("tab:red", "tab:blue", "tab:green")))
    for engine in ENGINES:
        done = [
            row
            for row in rows
            if row["engine"] == engine
            and not row["skip"]
            and not row.get("prepare", {}).get("returncode")
        ]
        if not done:
            continue
        x = [row["size"] for row in done]
        colour = colours[engine]
        memory.plot(
            x,
            [row["prepare"]["peak_rss"] / GB for row in done],
            "o-",
            color=colour,
            label=f"{engine}: prepare",
        )
        seconds.plot(
            x,
            [row["prepare"]["seconds"] for row in done],
            "o-",
            color=colour,
            label=f"{engine}: prepare",
        )
        trained = [
            row
            for row in done
            if row.get("train") and not row["train"].get("returncode")
        ]
        if trained:
            memory.plot(
                [row["size"] for row in trained],
                [row["train"]["peak_rss"] / GB for row in trained],
                "s--",
                color=colour,
                label=f"{engine}: train",
            )
    memory.axhline(TARGET_GB, color="grey", linestyle=":", label="4 GB")
    memory.set_ylabel("peak RSS, GB")
    seconds.set_ylabel("preparation, seconds")
    for ax in (memory, seconds):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("interactions")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Preparation and training at scale (one process each)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def prepare_worker(options: dict) -> int:
    """Child: the in-memory preparation of ``train --data file``."""
    from tfrec_tricks.cli.quiet import load_tensorflow

    load_tensorflow(verbose=False)
    from tfrec_tricks.training.train_config import TrainConfig
    from tfrec_tricks.training.training_data import prepare_in_memory

    config = TrainConfig(
        data="file", data_path=options["path"], file_format="udata"
    )
    _, data = prepare_in_memory(config)
    with open(options["result"], "w") as handle:
        json.dump(
            {
                "users": len(data.vocabulary.users),
                "items": data.num_items - 1,
                "train_examples": len(data.train),
            },
            handle,
        )
    return 0


def train_worker(options: dict) -> int:
    """Child: ``tfrec-tricks train ARGV``, timed, maybe for a few steps.

    Runs the command line's own ``train`` with a callback timing the
    training part of the epoch and a count of the training examples read.
    With ``steps``, the training data is the first ``steps`` batches of
    the epoch's stream and validation and test the first ``eval_batches``
    batches.
    """
    from tfrec_tricks.cli.quiet import load_tensorflow

    load_tensorflow(verbose=False)
    import tensorflow as tf

    from tfrec_tricks.cli.parser import build_parser, parse, train_config
    from tfrec_tricks.training import training_data
    from tfrec_tricks.training.run_training import train

    config = train_config(parse(build_parser(), ["train", *options["argv"]]))
    steps, eval_batches = options["steps"], options["eval_batches"]
    examples = tf.Variable(0, dtype=tf.int64, trainable=False)
    batches = training_data.TrainingData.batches

    def counted(batch):
        rows = tf.shape(batch["target"], out_type=tf.int64)[0]
        with tf.control_dependencies([examples.assign_add(rows)]):
            return {name: tf.identity(v) for name, v in batch.items()}

    def counted_batches(self, split, *arguments, **keywords):
        dataset = batches(self, split, *arguments, **keywords)
        if split == "train":
            return (dataset.take(steps) if steps else dataset).map(counted)
        return dataset.take(eval_batches) if steps else dataset

    training_data.TrainingData.batches = counted_batches

    class Timer(tf.keras.callbacks.Callback):
        """The epoch's training part, whole and after its first call.

        The first compiled call (``steps_per_execution`` steps) also traces
        the training step: the throughput is that of the calls after it.
        """

        def on_epoch_begin(self, epoch, logs=None):
            examples.assign(0)
            self.start, self.warm, self.seconds = (
                time.perf_counter(),
                None,
                None,
            )

        def on_train_batch_end(self, batch, logs=None):
            if self.warm is None:
                self.warm = (time.perf_counter(), int(examples.numpy()))

        def on_test_begin(self, logs=None):
            if self.seconds is None:
                end = time.perf_counter()
                self.seconds = end - self.start
                self.examples = int(examples.numpy())
                self.steady = (end - self.warm[0], self.examples - self.warm[1])

        def on_epoch_end(self, epoch, logs=None):
            self.on_test_begin()

    timer = Timer()
    result = train(config, verbose=0, callbacks=[timer], overwrite=True)
    metrics = result.metrics
    with open(options["result"], "w") as handle:
        json.dump(
            {
                "steps": steps,
                "eval_batches": eval_batches if steps else None,
                "train_seconds": timer.seconds,
                "examples": timer.examples,
                "steady_seconds": timer.steady[0],
                "steady_examples": timer.steady[1],
                "epoch_seconds": metrics["seconds_per_epoch_median"],
                "num_train_examples": metrics["num_train_examples"],
            },
            handle,
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    parser.add_argument(
        "--sizes",
        type=sizes,
        default=sizes(DEFAULT_SIZES),
        help=f"interactions, comma-separated (k, M allowed). Default: "
        f"{DEFAULT_SIZES}",
    )
    parser.add_argument(
        "--engines",
        type=engines,
        default=list(ENGINES),
        help=f"engines, comma-separated. Default: {','.join(ENGINES)}",
    )
    parser.add_argument(
        "--work-dir",
        default=WORK_DIR,
        help=f"interaction files, prepared datasets, runs and logs (needs "
        f"about 2.5 GB per 50M interactions). Default: {WORK_DIR}",
    )
    parser.add_argument(
        "--memory-max",
        type=common.count,
        default=common.count("10M"),
        help="largest size of the memory engine. Default: 10M",
    )
    parser.add_argument(
        "--beam-max",
        type=common.count,
        default=common.count("10M"),
        help="largest size of the beam engine. Default: 10M",
    )
    parser.add_argument(
        "--epoch-max",
        type=common.count,
        default=common.count("1M"),
        help="largest size trained for a whole epoch; larger ones train "
        "--steps batches. Default: 1M",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=320,
        help="training batches above --epoch-max. Default: 320",
    )
    parser.add_argument(
        "--eval-batches",
        type=int,
        default=8,
        help="validation and test batches above --epoch-max. Default: 8",
    )
    common.add_optimizer_option(parser, default="adam")
    parser.add_argument(
        "--no-train",
        action="store_true",
        help="measure the preparation only",
    )
    common.add_seed_option(parser)
    common.add_report_dir_option(parser)
    parser.add_argument("--prepare-worker", help=argparse.SUPPRESS)
    parser.add_argument("--train-worker", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.prepare_worker:
        return prepare_worker(json.loads(args.prepare_worker))
    if args.train_worker:
        return train_worker(json.loads(args.train_worker))
    for name in ("steps", "eval_batches"):
        if getattr(args, name) < 1:
            parser.error(
                f"--{name.replace('_', '-')} must be at least 1. "
                f"Received: {getattr(args, name)}"
            )
    jobs = plan(args)
    baselines = measure_baselines(args)
    rows = [run_job(job, args, baselines) for job in jobs]
    command = common.command_line("scale_out", argv)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    text = "\n".join(
        [
            f"Command: `{command}`",
            "",
            "Random udata files (n/25 users, n/50 Zipf items, timestamps in "
            "file order). One fresh process per number; peak = the "
            "process's peak RSS. Training: GRU4Rec d=32, sampled softmax, "
            f"{' '.join(common.optimizer_flags(args.optimizer))}, "
            "batch 128; train s = the epoch's (or the steps') training "
            "part, without validation; examples/s after the first compiled "
            f"call. Above {human(args.epoch_max)} interactions: the first "
            f"{args.steps} batches of the epoch, {args.eval_batches} "
            "validation and test batches. Load average at the end: "
            + load
            + ".",
            "",
            *COMMANDS,
            "",
            table(rows, baselines),
            "",
            *targets(rows),
            "",
            "![peak RSS and seconds vs interactions](scale_out.png)",
        ]
    )
    common.write_report(
        common.report_stem(args.report_dir, "scale_out"),
        text,
        {"rows": rows, "baselines": baselines},
        chart=lambda path: plot(rows, path),
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
