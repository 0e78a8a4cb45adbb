"""Latency of ``Recommender.recommend`` for one user, first and later calls.

Trains (or reuses) a synthetic run of ``--synthetic-users`` users and
``--synthetic-items`` items (``tfrec-tricks train --synthetic-users 5000
--synthetic-items 2000 --epochs 1``, in a child process), then, in this
process, with TensorFlow imported before any clock starts:

* ``first call``: ``Recommender.load(run).recommend(users=[u], k=K)`` on a
  fresh ``Recommender``, ``--fresh`` times (each loads the vocabulary,
  the users' histories and the model, and traces the engine; the first
  of them also pays the process's first load and trace of a model);
* ``later calls``: ``--calls`` single-user calls of one ``Recommender``
  after its first, each for another user (what the facade answers from
  memory);
* ``one job per call``: ``recommend_frame(run, users=[u], k=K)``,
  ``--fresh`` times: every call checks and loads the run and traces its
  engine (what each facade call cost before it held the run);
* ``served call alone``: ``LocalEngine.rank`` of one user's batch, the
  floor a facade call pays at least.

Each row: the median and the range in milliseconds. The first two rows
run in turn (a call of each), and so do the last two, so load from other
jobs on the machine's cores falls on both alike: compare the rows of one
run.

Usage::

    python -m benchmarks.facade_latency      # 5,000 users, ~3 min

Writes ``benchmarks/results/facade_latency.md`` and ``.json``.
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time

from benchmarks import common

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROWS = ("first call", "later calls", "one job per call", "served call alone")
#: The run directory's name under ``--work-dir``.
RUN_NAME = "facade-latency"


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    parser.add_argument(
        "--synthetic-users",
        type=int,
        default=5000,
        metavar="N",
        help="users of the synthetic run. Default: 5000",
    )
    parser.add_argument(
        "--synthetic-items",
        type=int,
        default=2000,
        metavar="N",
        help="items of the synthetic run. Default: 2000",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=1,
        help="training epochs of the run. Default: 1",
    )
    parser.add_argument(
        "--k", type=int, default=10, help="items per list. Default: 10"
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=50,
        help="later single-user calls timed. Default: 50",
    )
    parser.add_argument(
        "--fresh",
        type=int,
        default=3,
        help="first calls (and one-job calls) timed. Default: 3",
    )
    parser.add_argument(
        "--work-dir",
        default=os.path.join(tempfile.gettempdir(), "tfrec_tricks_facade"),
        help="where the run is trained (reused when finished). "
        "Default: $TMPDIR/tfrec_tricks_facade",
    )
    common.add_report_dir_option(parser)
    return parser


def train_run(args: argparse.Namespace) -> str:
    """The run directory: trained by ``tfrec-tricks train`` in a child
    process (a finished run of the same settings is reused)."""
    command = common.cli(
        "train",
        "--synthetic-users", str(args.synthetic_users),
        "--synthetic-items", str(args.synthetic_items),
        "--epochs", str(args.epochs),
        "--output-dir", os.path.abspath(args.work_dir),
        "--name", RUN_NAME,
    )  # fmt: skip
    subprocess.run(command, cwd=common.ROOT, check=True)
    return os.path.join(os.path.abspath(args.work_dir), RUN_NAME)


def round_robin(calls: dict, times: int) -> dict:
    """``{name: [wall ms, ...]}``: each of ``calls`` (``name: call(i)``)
    ``times`` times, one call of each in turn, so load from other
    processes falls on all alike."""
    timings = {name: [] for name in calls}
    for index in range(times):
        for name, call in calls.items():
            start = time.perf_counter()
            call(index)
            timings[name].append((time.perf_counter() - start) * 1000)
    return timings


def measure(run_dir: str, args: argparse.Namespace) -> dict:
    """``{row: [ms, ...]}`` of ``ROWS``."""
    from tfrec_tricks import Recommender
    from tfrec_tricks.recommendation import (
        RecommendationJob,
        RecommendationOptions,
        recommend_frame,
    )
    from tfrec_tricks.recommendation.served_run import RunMemory

    k = args.k

    def user(index: int) -> str:
        # Synthetic users are u1 .. uN; a call's user is never the last's.
        return f"u{1 + index % args.synthetic_users}"

    timings = round_robin(
        {
            "first call": lambda i: Recommender.load(run_dir).recommend(
                users=[user(i)], k=k
            ),
            "one job per call": lambda i: recommend_frame(
                run_dir, users=[user(i)], k=k
            ),
        },
        args.fresh,
    )
    held = Recommender.load(run_dir)
    held.recommend(users=[user(0)], k=k)
    job = RecommendationJob(
        run_dir, RecommendationOptions(k=k, users=[user(0)]), RunMemory()
    )
    (batch,) = job.histories.batches(1, [user(0)], job.engine.feature_names)
    job.engine.rank(batch, job.filters)
    timings.update(
        round_robin(
            {
                "later calls": lambda i: held.recommend(
                    users=[user(i + 1)], k=k
                ),
                "served call alone": lambda i: job.engine.rank(
                    batch, job.filters
                ),
            },
            args.calls,
        )
    )
    return {row: timings[row] for row in ROWS}


def report(timings: dict, args: argparse.Namespace, command: str) -> str:
    """The markdown report of ``measure``'s timings.

    >>> args = argparse.Namespace(synthetic_users=50, synthetic_items=20,
    ...                           epochs=1, k=10)
    >>> text = report({row: [1.0, 3.0] for row in ROWS}, args, "cmd")
    >>> "| later calls | 2 | 1.0 | 2.0 | 3.0 |" in text
    True
    """
    lines = [
        f"Command: `{command}`",
        "",
        f"`Recommender.recommend(users=[u], k={args.k})` on a synthetic "
        f"run of {args.synthetic_users:,} users and "
        f"{args.synthetic_items:,} items ({args.epochs} epoch), "
        "wall milliseconds.",
        "",
        "| what | calls | min | median | max |",
        "|---|---|---|---|---|",
    ]
    for row in ROWS:
        values = timings[row]
        lines.append(
            f"| {row} | {len(values)} | {min(values):.1f} | "
            f"{statistics.median(values):.1f} | {max(values):.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run_dir = train_run(args)
    timings = measure(run_dir, args)
    command = common.command_line("facade_latency", argv)
    text = report(timings, args, command)
    stem = common.report_stem(args.report_dir, "facade_latency")
    common.write_report(stem, text, numbers=timings)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
