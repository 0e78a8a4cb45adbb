"""Throughput and peak memory of ``tfrec-tricks recommend``.

``tfrec-tricks recommend RUN_DIR --k 10 --output recs.csv`` ranks every
user of a run's data, a batch of users at a time, through the served
model's code (``tfrec_tricks.recommendation``). This script measures how
many users a second it ranks at a small and a large catalogue, and its
peak memory as the number of users grows.

The runs: random ``udata`` interaction files
(``benchmarks.large_catalogue_data.write_interactions``: every user at least 5
interactions, ``--length`` on average, Zipf item popularity, a fifth of
the interactions repeat one of the user's last 10 items), one per
(users, items), written to ``--work-dir``. Each is trained by
``tfrec_tricks.training.run_training.train`` (``--data file --format udata``,
GRU4Rec, d=64, max_len 50, one epoch, Adagrad, the head of ``--heads``),
in a child process that caps the examples ``prepare`` forms: each split
keeps its first ``--train-examples`` prefix examples. The weights then
mean little, but the run directory is a finished run like any other: its
model (the architecture the lists are scored with), its vocabulary of
every user and item, its data fingerprint; and ``recommend`` reads the
whole file (every user's whole history), whatever the training read.
Without the cap, ``prepare`` holds about 1.2 kB per interaction: 24 GB at
a million users. Finished runs and files are reused.

Throughput (``--items``, one run per catalogue size and head): the run's
first ``--users`` users are ranked. A large catalogue's run has more
users, enough for every item to occur at ``--length`` interactions a user
(65,790 at a million items), and ranks its first ``--users`` as
``--users FILE`` would. One child builds the ``RecommendationJob`` (as the
command line does), ranks one batch untimed (tracing), then times
``--repeats`` passes over those users, the output formats of
``--formats`` taking turns: ``csv`` and ``parquet`` write the file with
the command line's writer, ``none`` only ranks (the frames dropped).
users/s = users / the median pass. Then, in the same child, a floor: a
bare matmul of random queries with a random ``[items, 64]`` table and the
package's exact top-10 (``top_k_ids``), ``--repeats`` batches.

Peak memory (``--memory-users``, at the first catalogue size and head):
for each number of users, three fresh processes on its run, each one's
peak RSS from ``os.wait4``:

1. ``histories``: the job's data alone, what ``RecommendationJob`` loads
   besides the model (TensorFlow imported, the vocabulary's items, the
   run's histories: ``run_data.run_histories``), with its RSS once loaded
   (the data held);
2. ``job``: ``RecommendationJob`` built (the histories, the vocabulary's
   users, the model and its ``ServingModule``), nothing ranked;
3. ``recommend``: ``tfrec-tricks recommend RUN --k 10 --output F.csv
   --quiet``, the whole command. Its RSS is sampled from ``/proc`` every
   ``--sample-seconds`` with the size of the file it stages, so the
   table also gives its RSS while the rows were written (at the first,
   the largest, at the last).

The largest RSS while ranking - the data held is what the ranking adds:
flat in the number of users when nothing is kept per user. ``job`` -
``histories`` is the model and what the job holds per user besides the
histories.

    python -m benchmarks.recommend_throughput   # 14 min (+10 the first time)
    python -m benchmarks.recommend_throughput --items 3706 --users 2000 \\
        --memory-users 1000,4000 --repeats 2              # a minute or two

Writes ``<--report-dir>/recommend_throughput.md``, ``.json`` and ``.png``
(by default ``benchmarks/results/recommend-throughput/``).
"""

import argparse
import glob
import inspect
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from benchmarks.large_catalogue_data import write_interactions  # noqa: E402
from benchmarks.recommend_throughput_report import (  # noqa: E402
    MB,
    plot,
    report,
)

#: Where the interaction files, the runs and the outputs go.
WORK_DIR = os.path.join(
    tempfile.gettempdir(), "tfrec_tricks_recommend_throughput"
)
#: The report folder.
REPORT_DIR = os.path.join(common.RESULTS, "recommend-throughput")
#: ML-1M's catalogue and a million items.
ITEMS = (3706, 1_000_000)
#: Users ranked per throughput pass, per catalogue size.
USERS = (20_000, 4_000)
#: Users of the peak-memory runs (at the first catalogue size).
MEMORY_USERS = (10_000, 100_000, 1_000_000)
HEADS = ("softmax",)
FORMATS = ("csv", "parquet", "none")
#: A fifth of the interactions repeat a recent item (large_catalogue's).
REPEAT_PROBABILITY = 0.2
#: ``train``'s settings of every run besides the data and the head.
TRAIN_SETTINGS = {
    "epochs": 1,
    "optimizer": "adagrad",
    "learning_rate": common.LEARNING_RATES["adagrad"],
    "max_len": 50,
}


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    parser.add_argument(
        "--items",
        type=common.count_list,
        default=list(ITEMS),
        help="catalogue sizes of the throughput runs. Default: "
        + ",".join(map(str, ITEMS)),
    )
    parser.add_argument(
        "--users",
        type=common.count_list,
        default=list(USERS),
        help="users of each throughput run, one per --items (the last "
        "repeated). Default: " + ",".join(map(str, USERS)),
    )
    parser.add_argument(
        "--memory-users",
        type=common.count_list,
        default=list(MEMORY_USERS),
        help="users of the peak-memory runs, at the first --items. "
        "Default: " + ",".join(map(str, MEMORY_USERS)),
    )
    parser.add_argument(
        "--heads",
        type=common.name_list(("softmax", "cpr", "softmax_no_dup"), "heads"),
        default=list(HEADS),
        help="the runs' heads (the memory runs: the first). Default: "
        + ",".join(HEADS),
    )
    parser.add_argument(
        "--formats",
        type=common.name_list(FORMATS, "formats"),
        default=list(FORMATS),
        help="output formats of the throughput passes (none: ranked, not "
        "written). Default: " + ",".join(FORMATS),
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed passes per format. Default: 5",
    )
    parser.add_argument(
        "--length",
        type=int,
        default=20,
        help="mean interactions per user (at least 5 each). Default: 20",
    )
    parser.add_argument(
        "--k", type=int, default=10, help="items per user. Default: 10"
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=256,
        help="users ranked at a time (recommend's default). Default: 256",
    )
    parser.add_argument(
        "--train-examples",
        type=int,
        default=1024,
        help="prefix examples each split of a run's training keeps. "
        "Default: 1024",
    )
    parser.add_argument(
        "--sample-seconds",
        type=float,
        default=0.2,
        help="RSS sampling period of the recommend process. Default: 0.2",
    )
    parser.add_argument(
        "--build-only",
        action="store_true",
        help="write the files and train the runs, measure nothing",
    )
    parser.add_argument(
        "--work-dir",
        default=WORK_DIR,
        help=f"files, runs and outputs. Default: {WORK_DIR}",
    )
    parser.add_argument("--seed", type=int, default=0, help="Default: 0")
    parser.add_argument(
        "--report-dir",
        default=REPORT_DIR,
        help="where the report goes. Default: "
        "benchmarks/results/recommend-throughput",
    )
    for name in ("train", "throughput", "load"):
        parser.add_argument(
            f"--{name}-worker", metavar="JSON", help=argparse.SUPPRESS
        )
    return parser


# ------------------------------------------------------------- the runs


def file_users(args: argparse.Namespace, users: int, items: int) -> int:
    """Users of the file of ``users`` x ``items``: more than ``users`` when
    ``--length`` interactions a user would leave items out (every item
    of the catalogue must occur once, so the fresh draws, about 4/5 of
    the interactions, must reach ``items``).

    >>> file_users(argparse.Namespace(length=20), 4000, 1000000)
    65790
    """
    fresh = (1 - REPEAT_PROBABILITY) * 0.95 * args.length
    return max(users, -int(-items // fresh))


def data_file(args: argparse.Namespace, users: int, items: int) -> str:
    """Writes (or reuses) the interaction file of ``file_users`` users
    and ``items`` items, ``--length`` interactions a user on average."""
    users = file_users(args, users, items)
    interactions = users * args.length
    path = os.path.join(
        args.work_dir,
        "data",
        f"u{users}-i{items}-n{interactions}-s{args.seed}.udata",
    )
    if not os.path.isfile(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        print(f"writing {path}", flush=True)
        counts = write_interactions(
            path, interactions, users, items, REPEAT_PROBABILITY, args.seed
        )
        if counts["items"] != items:
            os.remove(path)
            raise RuntimeError(
                f"{path}: {counts['items']:,} distinct items, not {items:,}"
            )
    return path


def run_name(path: str, head: str) -> str:
    return f"{os.path.splitext(os.path.basename(path))[0]}-{head}"


def train_run(args: argparse.Namespace, path: str, head: str) -> str:
    """The finished run of ``path`` and ``head`` (trained in a child)."""
    runs = os.path.join(args.work_dir, "runs")
    name = run_name(path, head)
    log = os.path.join(args.work_dir, "logs", f"train-{name}.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    options = {
        "data_path": path,
        "head": head,
        "output_dir": runs,
        "name": name,
        "cap": args.train_examples,
        "seed": args.seed,
    }
    print(f"run {name}", flush=True)
    result = common.measured(
        [*common.module_command("recommend_throughput"), "--train-worker",
         json.dumps(options)],
        log,
    )  # fmt: skip
    if result["returncode"]:
        raise RuntimeError(f"training {name} failed: see {log}")
    return os.path.join(runs, name)


def train_worker(options: dict) -> int:
    """Child: trains one run, its prefix examples capped (module doc)."""
    from tfrec_tricks.data import in_memory_dataset
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    # The examples of a split are formed by ``_windows`` from the
    # positions of their targets: only the first ``cap`` are kept.
    windows = in_memory_dataset._windows
    signature = inspect.signature(windows)
    cap = options["cap"]

    def capped(*arguments, **keywords):
        bound = signature.bind(*arguments, **keywords)
        bound.arguments["positions"] = bound.arguments["positions"][:cap]
        return windows(*bound.args, **bound.kwargs)

    in_memory_dataset._windows = capped
    config = TrainConfig(
        data="file",
        data_path=options["data_path"],
        file_format="udata",
        output_dir=options["output_dir"],
        name=options["name"],
        seed=options["seed"],
        model={"head": options["head"]},
        **TRAIN_SETTINGS,
    )
    result = train(config, verbose=0)
    print(f"run {result.run_dir}: {result.metrics.get('test')}")
    return 0


# ------------------------------------------------------------ throughput


def throughput_worker(options: dict) -> int:
    """Child: times passes over every user of a run (module doc)."""
    from tfrec_tricks.data.in_memory_dataset import Vocabulary
    from tfrec_tricks.recommendation import (
        RecommendationJob,
        RecommendationOptions,
    )
    from tfrec_tricks.recommendation.writers import FORMATS as WRITERS

    # The run's first users, all of them when it has no more (a run of a
    # large catalogue has more users than ranked: module doc).
    vocabulary = Vocabulary.load(
        os.path.join(options["run_dir"], "vocabulary.json")
    )
    users = [str(user) for user in vocabulary.users]
    sample = (
        users[: options["users"]] if len(users) > options["users"] else None
    )
    del vocabulary, users
    start = time.perf_counter()
    job = RecommendationJob(
        options["run_dir"],
        RecommendationOptions(
            k=options["k"], users=sample, batch_size=options["batch"]
        ),
    )
    loaded = time.perf_counter()
    next(job.batches())
    traced = time.perf_counter()
    seconds = {name: [] for name in options["formats"]}
    rows = {}
    folder = tempfile.mkdtemp(dir=options["work_dir"])
    for repeat in range(options["repeats"]):
        for name in options["formats"]:
            path = os.path.join(folder, f"recs-{repeat}.{name}")
            writer = WRITERS[name](path) if name != "none" else None
            count = 0
            begin = time.perf_counter()
            for frame in job.batches():
                count += len(frame)
                if writer is not None:
                    writer.write(frame)
            if writer is not None:
                writer.close()
            seconds[name].append(time.perf_counter() - begin)
            rows[name] = count
            if writer is not None:
                rows[f"{name}_bytes"] = os.path.getsize(path)
                os.remove(path)
    os.rmdir(folder)
    floor = floor_seconds(
        len(job.engine.items), options["batch"], options["repeats"]
    )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(options["result"], "w") as handle:
        json.dump(
            {
                "users": job.num_users,
                "items": len(job.engine.items) - 1,
                "load_seconds": loaded - start,
                "first_batch_seconds": traced - loaded,
                "seconds": seconds,
                "rows": rows,
                "floor_seconds": floor,
                "peak_rss": usage.ru_maxrss * 1024,
            },
            handle,
        )
    return 0


def floor_seconds(rows: int, batch: int, repeats: int, dim: int = 64):
    """Seconds of a bare ``[batch, dim] x [dim, rows]`` matmul and the
    package's exact top-10 (``top_k_ids``) in one ``tf.function`` (random
    numbers, not the model): what the served scoring of a batch does at
    least. One untimed call, then ``repeats``."""
    import tensorflow as tf

    from tfrec_tricks.layers.top_k import top_k_ids

    table = tf.random.stateless_normal((rows, dim), seed=(1, 2))
    queries = tf.random.stateless_normal((batch, dim), seed=(3, 4))

    @tf.function(input_signature=[tf.TensorSpec([None, dim], tf.float32)])
    def top(query):
        scores = tf.matmul(query, table, transpose_b=True)
        return top_k_ids(scores, 10)

    top(queries).numpy()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        top(queries).numpy()
        seconds.append(time.perf_counter() - start)
    return seconds


def throughput(args, run_dir: str, label: str, users: int) -> dict:
    """The throughput child's result: ``users`` of ``run_dir`` ranked."""
    result = os.path.join(args.work_dir, "logs", f"throughput-{label}.json")
    options = {
        "run_dir": run_dir, "users": users, "k": args.k,
        "batch": args.batch_size,
        "formats": args.formats, "repeats": args.repeats,
        "work_dir": args.work_dir, "result": result,
    }  # fmt: skip
    print(f"throughput {label}", flush=True)
    measured = common.measured(
        [*common.module_command("recommend_throughput"),
         "--throughput-worker", json.dumps(options)],
        result[: -len(".json")] + ".log",
    )  # fmt: skip
    if measured["returncode"]:
        raise RuntimeError(f"throughput of {label} failed: {measured['log']}")
    with open(result) as handle:
        numbers = json.load(handle)
    numbers["users_per_second"] = {
        name: numbers["users"] / statistics.median(times)
        for name, times in numbers["seconds"].items()
    }
    numbers["floor_users_per_second"] = args.batch_size / statistics.median(
        numbers["floor_seconds"]
    )
    print(f"  {json.dumps(numbers['users_per_second'])}", flush=True)
    return numbers


# ---------------------------------------------------------------- memory


def rss_bytes(pid: int) -> int | None:
    """A process's resident set (``VmRSS``), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def load_worker(options: dict) -> int:
    """Child: the job's data alone (``histories``) or the job built
    (``job``); its peak and current RSS to ``result``."""
    start = time.perf_counter()
    import tensorflow as tf  # noqa: F401  (the command imports it too)

    from tfrec_tricks.data.in_memory_dataset import Vocabulary
    from tfrec_tricks.recommendation import (
        RecommendationJob,
        RecommendationOptions,
    )
    from tfrec_tricks.recommendation.run_data import run_histories
    from tfrec_tricks.training.run_directory import check_finished_run

    run_dir = options["run_dir"]
    if options["mode"] == "histories":
        run = check_finished_run(run_dir)
        vocabulary = Vocabulary.load(os.path.join(run_dir, "vocabulary.json"))
        catalogue = [str(item) for item in vocabulary.items]
        del vocabulary
        held = run_histories(run_dir, run, catalogue)
        users = len(held.user_names)
    else:
        held = RecommendationJob(run_dir, RecommendationOptions(k=10))
        users = held.num_users
    usage = resource.getrusage(resource.RUSAGE_SELF)
    with open(options["result"], "w") as handle:
        json.dump(
            {
                "users": users,
                "seconds": time.perf_counter() - start,
                "peak_rss": usage.ru_maxrss * 1024,
                "rss": rss_bytes(os.getpid()),
            },
            handle,
        )
    return 0


def sampled(command: list[str], log_path: str, output: str, period: float):
    """Runs ``command``; its peak RSS and a trace of ``(seconds, RSS,
    bytes)``, bytes: the size of ``output``'s staging copy (``recommend``
    writes it there, then links it into place), 0 when there is none."""
    staged = os.path.join(
        os.path.dirname(output), f".{os.path.basename(output)}.*.tmp",
        os.path.basename(output),
    )  # fmt: skip
    trace = []
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, cwd=common.ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        done = threading.Event()

        def sample():
            while not done.is_set():
                rss = rss_bytes(process.pid)
                written = 0
                for path in glob.glob(staged):
                    try:
                        written = max(written, os.path.getsize(path))
                    except OSError:
                        pass
                if rss is not None:
                    trace.append((time.perf_counter() - start, rss, written))
                done.wait(period)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        done.set()
        sampler.join()
    return {
        "seconds": time.perf_counter() - start,
        "returncode": os.waitstatus_to_exitcode(status),
        "peak_rss": usage.ru_maxrss * 1024,
        "log": log_path,
        "trace": trace,
    }


def trace_summary(trace: list) -> dict:
    """The RSS while the rows were written: at the first sample with rows
    in the staging file (the first batches ranked), its largest, at the
    last sample before the file was published; and the seconds between.

    >>> trace_summary([(0, 5, 0), (1, 7, 10), (2, 9, 20), (3, 8, 30),
    ...                (4, 4, 0)])["ranking_rss_max"]
    9
    """
    writing = [(t, rss) for t, rss, size in trace if size > 0]
    if not writing:
        return {}
    return {
        "ranking_rss_first": writing[0][1],
        "ranking_rss_max": max(rss for _, rss in writing),
        "ranking_rss_last": writing[-1][1],
        "ranking_seconds": writing[-1][0] - writing[0][0],
        "load_seconds": writing[0][0],
    }


def memory(args, run_dir: str, users: int) -> dict:
    """The three processes of one run (module doc)."""
    logs = os.path.join(args.work_dir, "logs")
    numbers = {"users": users}
    for mode in ("histories", "job"):
        result = os.path.join(logs, f"memory-{users}-{mode}.json")
        measured = common.measured(
            [*common.module_command("recommend_throughput"), "--load-worker",
             json.dumps({"run_dir": run_dir, "mode": mode, "result": result})],
            result[: -len(".json")] + ".log",
        )  # fmt: skip
        if measured["returncode"]:
            raise RuntimeError(f"{mode} of {users} failed: {measured['log']}")
        with open(result) as handle:
            numbers[mode] = {**json.load(handle), **measured}
    output = os.path.join(args.work_dir, "outputs", f"recs-{users}.csv")
    os.makedirs(os.path.dirname(output), exist_ok=True)
    if os.path.exists(output):
        os.remove(output)
    command = common.cli(
        "recommend", run_dir, "--k", str(args.k), "--output", output,
        "--batch-size", str(args.batch_size), "--quiet",
    )  # fmt: skip
    run = sampled(
        command,
        os.path.join(logs, f"memory-{users}-recommend.log"),
        output,
        args.sample_seconds,
    )
    if run["returncode"]:
        raise RuntimeError(f"recommend of {users} users failed: {run['log']}")
    run.update(trace_summary(run["trace"]))
    run["file_bytes"] = os.path.getsize(output)
    run["trace"] = [[round(t, 2), rss, size] for t, rss, size in run["trace"]]
    os.remove(output)
    numbers["recommend"] = run
    print(
        f"memory {users:,} users: histories "
        f"{numbers['histories']['peak_rss'] / MB:.0f} MB, job "
        f"{numbers['job']['peak_rss'] / MB:.0f} MB, recommend "
        f"{run['peak_rss'] / MB:.0f} MB in {run['seconds']:.0f} s",
        flush=True,
    )
    return numbers


# ------------------------------------------------------------------ main


def interaction_count(path: str) -> int:
    """Interactions of a file named by ``data_file``."""
    return int(os.path.basename(path).split("-n")[1].split("-")[0])


def file_count(path: str) -> int:
    """Users of a file named by ``data_file``."""
    return int(os.path.basename(path)[1:].split("-")[0])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for name, run in (
        ("train", train_worker),
        ("throughput", throughput_worker),
        ("load", load_worker),
    ):
        options = getattr(args, f"{name}_worker")
        if options:
            return run(json.loads(options))
    if args.repeats < 1 or args.length < 5 or args.k < 1:
        parser.error(
            "--repeats and --k take a positive count, --length at least 5. "
            f"Received: --repeats {args.repeats} --length {args.length} "
            f"--k {args.k}"
        )
    os.makedirs(args.work_dir, exist_ok=True)
    users = [*args.users, *[args.users[-1]] * len(args.items)]
    plan = []
    for items, count in zip(args.items, users):
        for head in args.heads:
            plan.append(("throughput", count, items, head))
    for count in args.memory_users:
        plan.append(("memory", count, args.items[0], args.heads[0]))
    runs = {}
    for _, count, items, head in plan:
        if (count, items, head) not in runs:
            path = data_file(args, count, items)
            runs[(count, items, head)] = (path, train_run(args, path, head))
    if args.build_only:
        return 0
    results = {
        "setup": {
            "length": args.length, "k": args.k,
            "batch_size": args.batch_size, "repeats": args.repeats,
            "train_examples": args.train_examples,
            "sample_seconds": args.sample_seconds,
            "memory_items": args.items[0], "memory_head": args.heads[0],
            "load_before": "%.1f" % os.getloadavg()[0],
        },
        "throughput": [],
        "memory": [],
    }  # fmt: skip
    for kind, count, items, head in plan:
        path, run_dir = runs[(count, items, head)]
        if kind == "throughput":
            row = throughput(args, run_dir, run_name(path, head), count)
            row.update(
                head=head,
                interactions=interaction_count(path),
                run_users=file_count(path),
            )
            results["throughput"].append(row)
        else:
            row = memory(args, run_dir, count)
            row["interactions"] = interaction_count(path)
            results["memory"].append(row)
    results["setup"]["load_after"] = "%.1f" % os.getloadavg()[0]
    command = common.command_line("recommend_throughput", argv)
    paths = common.write_report(
        os.path.join(args.report_dir, "recommend_throughput"),
        report(results, command),
        results,
        chart=lambda path: plot(results, path),
    )
    print("\n".join(f"{kind}: {path}" for kind, path in paths.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
