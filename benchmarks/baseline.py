"""Baseline GRU4Rec (full softmax) on real data: time per epoch and quality.

Trains GRU4Rec with the plain softmax head (``--head softmax``; ``train``
now chooses its head from the data by default) on each dataset with
RecBole's protocol (leave-one-out, every prefix an example, max_len 50,
full ranking, d=64, Adam 1e-3, batch 128) and writes a markdown table and a
PNG chart of test NDCG@10 / HR@10 / MRR@10 and seconds per epoch.

    python -m benchmarks.baseline --datasets yoochoose-100k ml-1m

Needs the real datasets (``--data-path``, default ../shared/data).
"""

import argparse
import sys

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    parser.add_argument(
        "--datasets", nargs="+", default=["yoochoose-100k", "ml-1m"]
    )
    common.add_data_path_option(parser)
    common.add_training_options(
        parser, epochs=30, patience=3, epochs_help="maximum epochs per dataset"
    )
    parser.add_argument(
        "--name",
        default="baseline",
        help="results file stem. Default: baseline",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    rows = []
    for dataset in args.datasets:
        result = train(
            TrainConfig(
                data=dataset,
                data_path=args.data_path,
                epochs=args.epochs,
                patience=args.patience,
                output_dir=args.output_dir,
                name=f"baseline-{dataset}",
                model={"head": "softmax"},
            ),
            verbose=2,
        )
        rows.append((dataset, result.metrics))
    table = format_table(rows)
    command = common.command_line("baseline", argv)
    common.write_report(
        common.report_stem(common.RESULTS, args.name),
        f"Command: `{command}`\n\n{table}\n",
        numbers=dict(rows),
        chart=lambda path: plot(rows, path),
    )
    print(table)
    return 0


def format_table(rows: list) -> str:
    lines = [
        "| dataset | train examples | epochs | s/epoch (median) | "
        "test NDCG@10 | test HR@10 | test MRR@10 | val NDCG@10 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for dataset, m in rows:
        test, val = m["test"], m["validation"]
        lines.append(
            f"| {dataset} | {m['num_train_examples']:,} | {m['epochs_run']} | "
            f"{m['seconds_per_epoch_median']:.1f} | {test['ndcg@10']:.4f} | "
            f"{test['hr@10']:.4f} | {test['mrr@10']:.4f} | "
            f"{val['ndcg@10']:.4f} |"
        )
    return "\n".join(lines)


def plot(rows: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["ndcg@10", "hr@10", "mrr@10"]
    fig, (quality, speed) = plt.subplots(1, 2, figsize=(10, 4))
    width = 0.8 / len(rows)
    for i, (dataset, m) in enumerate(rows):
        quality.bar(
            [j + i * width for j in range(3)],
            [m["test"][n] for n in names],
            width,
            label=dataset,
        )
    quality.set_xticks([j + 0.4 - width / 2 for j in range(3)], names)
    quality.set_title("GRU4Rec baseline, test metrics")
    quality.legend()
    speed.bar(
        [d for d, _ in rows], [m["seconds_per_epoch_median"] for _, m in rows]
    )
    speed.set_title("seconds per epoch (median, 2 CPU cores)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
