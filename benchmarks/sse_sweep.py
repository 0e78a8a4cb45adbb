"""SSE-SE probability sweep: does stochastic shared embedding regularise?

Trains the default GRU4Rec (softmax head, d=64, dropout 0.2) on one data
set with SSE-SE at each probability ``p`` of ``--probabilities`` (on the
input item ids and the label ids alike; ``p = 0`` is no SSE), the same seed
and budget for every ``p``, early stopping on validation NDCG@10. Writes a
table of validation and test NDCG@10 / HR@10 / MRR@10 per ``p``
(``benchmarks/results/sse_sweep-<data>.md``) and a chart (``.png``).

    python -m benchmarks.sse_sweep --data ml-100k --data-path ../shared/data

Runs that already finished with the same configuration are reused.
"""

import argparse
import sys

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from tfrec_tricks.training.resumption import finished_metrics  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, default="ml-100k")
    parser.add_argument(
        "--probabilities",
        default="0,0.05,0.1,0.2",
        help="comma-separated SSE-SE probabilities. Default: 0,0.05,0.1,0.2",
    )
    common.add_training_options(parser, epochs=10, patience=3)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    probabilities = [float(p) for p in args.probabilities.split(",")]
    bad = [p for p in probabilities if not 0.0 <= p < 1.0]
    if bad:
        parser.error(f"--probabilities must be in [0, 1), got {bad}")

    results = {}
    for p in probabilities:
        config = TrainConfig(
            data=args.data,
            data_path=args.data_path,
            epochs=args.epochs,
            patience=args.patience,
            output_dir=args.output_dir,
            name=f"sse-sweep-{args.data}-p{p}",
            model={"sse_item_probability": p, "sse_label_probability": p},
        )
        # A finished run of the same config is reused, so the sweep can be
        # split over processes (one --probabilities value each) and then
        # assembled by running it once more with every value.
        results[p] = (
            finished_metrics(config) or train(config, verbose=2).metrics
        )
    base = results[probabilities[0]]["test"]["ndcg@10"]
    lines = [
        f"# SSE-SE sweep on {args.data}",
        "",
        f"Command: `{common.command_line('sse_sweep', argv)}`",
        "",
        "GRU4Rec, softmax head, d=64, dropout 0.2, Adam 1e-3, batch 128, "
        f"at most {args.epochs} epochs, early stopping on validation NDCG@10.",
        "",
        "| SSE-SE p | val NDCG@10 | test NDCG@10 | vs first | test HR@10 "
        "| test MRR@10 | epochs |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p, metrics in results.items():
        test = metrics["test"]
        lines.append(
            f"| {p} | {metrics['validation']['ndcg@10']:.4f} | "
            f"{test['ndcg@10']:.4f} | {test['ndcg@10'] / base - 1:+.1%} | "
            f"{test['hr@10']:.4f} | {test['mrr@10']:.4f} | "
            f"{metrics['epochs_run']} |"
        )
    best = max(results, key=lambda p: results[p]["validation"]["ndcg@10"])
    lines += ["", f"Selected on validation NDCG@10: p = {best}."]
    text = "\n".join(lines) + "\n"
    common.write_report(
        common.report_stem(common.RESULTS, "sse_sweep", args.data),
        text,
        chart=lambda path: plot(results, path, args.data),
    )
    print(text)
    return 0


def plot(results: dict, path: str, data: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(5, 3.2))
    ps = list(results)
    for split, style in (("validation", "o--"), ("test", "s-")):
        values = [results[p][split]["ndcg@10"] for p in ps]
        axis.plot(ps, values, style, label=split)
    axis.set_xlabel("SSE-SE probability p")
    axis.set_ylabel("NDCG@10")
    axis.set_title(f"{data}: SSE-SE sweep")
    axis.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
