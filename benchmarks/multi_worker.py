"""Seconds per epoch of one process and of two workers on 127.0.0.1.

One prepared dataset (``tfrec-tricks prepare``) trains with the same
options twice: in one process, and as two ``MultiWorkerMirroredStrategy``
workers (``TF_CONFIG`` naming both, each a ``tfrec-tricks train``
process) with the same global batch. The table reports each run's median
seconds per epoch and its validation and test NDCG@10: on one machine of
2 cores the two workers share the cores and add all-reduce traffic, so no
speed-up is expected; the point is that the result is the same.

    python -m benchmarks.multi_worker --data yoochoose-100k --epochs 3
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

from benchmarks import common

SETUPS = ("1 process", "2 workers")


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, "yoochoose-100k")
    parser.add_argument(
        "--epochs", type=int, default=3, help="epochs per run. Default: 3"
    )
    parser.add_argument(
        "--work-dir",
        default=None,
        help="where the prepared data and runs go. Default: a temporary folder",
    )
    common.add_report_dir_option(parser)
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def tf_configs(workers: int) -> list[str]:
    """One ``TF_CONFIG`` per worker: one cluster on 127.0.0.1."""
    cluster = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}
    return [
        json.dumps({"cluster": cluster, "task": {"type": "worker", "index": i}})
        for i in range(workers)
    ]


def cli(args: list[str], cwd: str, tf_config: str = "") -> subprocess.Popen:
    env = dict(os.environ, TF_CONFIG=tf_config)
    return subprocess.Popen(
        [sys.executable, "-m", "tfrec_tricks.cli", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        output, _ = process.communicate()
        if process.returncode:
            raise RuntimeError(f"a run failed:\n{output[-3000:]}")


def table(results: dict) -> str:
    """The report's markdown table: one row per setup."""
    lines = [
        "| setup | replicas | s/epoch (median) | validation NDCG@10 "
        "| test NDCG@10 |",
        "|---|---:|---:|---:|---:|",
    ]
    for setup in SETUPS:
        r = results[setup]
        lines.append(
            f"| {setup} | {r['num_replicas']} | "
            f"{r['seconds_per_epoch_median']:.1f} | "
            f"{r['validation']['ndcg@10']:.4f} | {r['test']['ndcg@10']:.4f} |"
        )
    one, two = results[SETUPS[0]], results[SETUPS[1]]
    ratio = two["seconds_per_epoch_median"] / one["seconds_per_epoch_median"]
    lines.append(
        f"\nTwo workers take {ratio:.2f}x the time of one process per "
        "epoch; test NDCG@10 differs by "
        f"{two['test']['ndcg@10'] - one['test']['ndcg@10']:+.4f}."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    work = args.work_dir or tempfile.mkdtemp(prefix="multi-worker-")
    os.makedirs(work, exist_ok=True)
    data_flags = ["--data", args.data]
    if args.data_path:
        data_flags += ["--data-path", os.path.abspath(args.data_path)]
    prepared = os.path.join(work, "prepared")
    if not os.path.isdir(prepared):
        wait([cli(["prepare", *data_flags, "--output", prepared], work)])
    train = [
        "train",
        "--prepared",
        prepared,
        "--epochs",
        str(args.epochs),
        "--head",
        "softmax",
        "--output-dir",
        os.path.join(work, "runs"),
        "--overwrite",
    ]
    wait([cli([*train, "--name", "one"], work)])
    wait(
        [
            cli([*train, "--name", "two"], work, config)
            for config in tf_configs(2)
        ]
    )
    results = {}
    for setup, name in zip(SETUPS, ("one", "two")):
        with open(os.path.join(work, "runs", name, "metrics.json")) as handle:
            results[setup] = json.load(handle)
    text = (
        f"# One process vs two workers ({args.data}, {args.epochs} epochs)"
        f"\n\n{table(results)}\n\nCommand: "
        f"`{common.command_line('multi_worker', argv)}`\n"
    )
    stem = common.report_stem(args.report_dir, "multi_worker", args.data)
    common.write_report(stem, text, results)
    print(text)


if __name__ == "__main__":
    main()
