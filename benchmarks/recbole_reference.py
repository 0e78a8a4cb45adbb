"""RecBole 1.2.1's own models on our data: the peer's test NDCG@10.

Writes the data source's interactions as a RecBole atomic file and trains
each named RecBole model with its default config and the RecBole protocol
(the same split and examples as ``tfrec-tricks train --split recbole``,
max_len 50, batch 128, Adam 1e-3, full softmax, validation every epoch,
RecBole's early stopping, the best epoch tested), one model after another,
in ``recbole_worker.py --fit`` under an interpreter that has RecBole and
PyTorch. Writes a table of validation and test NDCG@10 / HR@10 / MRR@10.

    python -m venv /tmp/recbole && /tmp/recbole/bin/pip install \\
        torch==2.13.0 recbole==1.2.1 "numpy<2" "pandas<2.3" "scipy<1.15"
    python -m benchmarks.recbole_reference --data-path ../shared/data \\
        --recbole-python /tmp/recbole/bin/python --models GRU4Rec GRU4RecCPR
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from benchmarks import common
from benchmarks.epoch_speed import RECBOLE_WORKER, write_recbole_atomic_file
from tfrec_tricks.data import load_source

METRICS = ("ndcg@10", "hit@10", "mrr@10")
DATASET = "interactions"


def fit_recbole(python: str, workdir: str, model: str, epochs: int) -> dict:
    """One ``recbole_worker.py --fit`` run; its reply, or RuntimeError."""
    log_path = os.path.join(workdir, f"{model}.log")
    with open(log_path, "w") as log:
        done = subprocess.run(
            [
                python,
                RECBOLE_WORKER,
                "--fit",
                str(epochs),
                workdir,
                DATASET,
                model,
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=workdir,  # RecBole writes log/ and saved/ into its cwd
        )
    lines = done.stdout.strip().splitlines()
    reply = json.loads(lines[-1]) if lines else {}
    if done.returncode or "error" in reply or not reply:
        with open(log_path) as log:
            tail = log.read()[-2000:]
        raise RuntimeError(
            f"RecBole's {model} failed (exit code {done.returncode}): "
            f"{reply.get('error', '')}\nThe end of {log_path}:\n{tail}"
        )
    return reply


def format_table(replies: list[dict]) -> str:
    """Markdown rows: model, then validation and test metrics."""
    lines = [
        "| RecBole 1.2.1 model | val NDCG@10 | test NDCG@10 | test HR@10 "
        "| test MRR@10 |",
        "|---|---:|---:|---:|---:|",
    ]
    for reply in replies:
        valid, test = reply["best_valid"], reply["test"]
        lines.append(
            f"| {reply['model']} | {valid['ndcg@10']:.4f} | "
            + " | ".join(f"{test[m]:.4f}" for m in METRICS)
            + " |"
        )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, default="yoochoose-100k")
    parser.add_argument(
        "--recbole-python",
        required=True,
        type=common.executable_file,
        metavar="PYTHON",
        help="an interpreter with RecBole 1.2.1 and PyTorch (see above)",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        default=["GRU4Rec", "GRU4RecCPR"],
        help="RecBole model names. Default: GRU4Rec GRU4RecCPR",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=25,
        help="RecBole's epoch budget (issue #4's runs: 25). Default: 25",
    )
    common.add_report_dir_option(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error(f"--epochs must be at least 1. Received: {args.epochs}")

    source = load_source(args.data, data_path=args.data_path)
    with tempfile.TemporaryDirectory() as workdir:
        write_recbole_atomic_file(source.interactions, workdir, DATASET)
        replies = []
        for model in args.models:
            print(f"== RecBole {model}, {args.epochs} epochs", flush=True)
            replies.append(
                fit_recbole(args.recbole_python, workdir, model, args.epochs)
            )
    table = format_table(replies)
    command = common.command_line("recbole_reference", argv)
    report = "\n".join(
        [
            f"Command: `{command}`",
            "",
            f"{args.data}, RecBole's leave-one-out split, default configs, "
            f"at most {args.epochs} epochs, early stopping on validation "
            "MRR@10 (RecBole's), the best epoch tested.",
            "",
            table,
        ]
    )
    stem = common.report_stem(args.report_dir, "recbole_reference", args.data)
    common.write_report(stem, report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
