"""What can a repeat / explore switch add to a trained model?

Softmax-CPR's gain on data with repeats comes from deciding, per example,
how much probability goes to the items of the history. This script trains
ablation rows (or reuses their finished runs, named as the ablation and
``benchmarks.seed_spread`` name them) and re-ranks each model's validation and
test logits with the switches of ``benchmarks.repeat_switch``:

- constant: the history gets the validation split's repeat share;
- learned: a logistic regression on the history and the logits predicts
  whether the target is a repeat, fitted on validation and applied to
  test, and also cross-fitted on test itself (two folds), which removes
  any difference between the splits;
- perfect: the history gets all of the mass for repeat targets and none
  for new ones (an oracle: the most any switch can add).

The order within the history and within the rest is the model's own, so
the perfect switch's gain is the whole of what a repeat decision can buy,
and the learned switches show how much of it the history predicts.

    python -m benchmarks.repeat_headroom --data yoochoose-100k \\
        --data-path ../shared/data --encoder sasrec --num-layers 2 \\
        --every-position --rows Softmax "Softmax + CPR:100 + Mi"

Writes ``benchmarks/results/repeat_headroom-<data>-<encoder>.md`` (with
``-<split>`` before ``.md`` for ``--split every-user``), the numbers
(``.json``) and a chart (``.png``).
"""

import argparse
import os
import sys

import numpy as np

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common, seed_spread  # noqa: E402
from benchmarks.repeat_switch import (  # noqa: E402
    cross_fitted_headroom,
    repeat_headroom,
)
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.training.evaluate import EVAL_BATCH_SIZE  # noqa: E402
from tfrec_tricks.training.persistence import load_model  # noqa: E402
from tfrec_tricks.training.training_data import prepare_in_memory  # noqa: E402

SWITCHES = (
    ("model", "model"),
    ("constant", "constant switch"),
    ("learned", "learned switch (fit on validation)"),
    ("cross-fitted", "learned switch (cross-fitted on test)"),
    ("perfect", "perfect switch"),
)


def split_logits(model, examples) -> tuple:
    """``(logits [B, N], histories [B, L], targets [B])`` of a split."""
    logits = [
        model(batch, training=False).numpy()
        for batch in make_dataset(
            examples, EVAL_BATCH_SIZE, bucket_by_length=False
        )
    ]
    return np.concatenate(logits), examples.history, examples.target


def headroom_of_run(config, folds: int) -> dict:
    """The switches' metrics for one finished run (``config``'s run dir)."""
    _, data = prepare_in_memory(config)
    model = load_model(os.path.join(config.output_dir, config.run_name))
    validation = split_logits(model, data.validation)
    test = split_logits(model, data.test)
    result = repeat_headroom(validation, test)
    crossed = cross_fitted_headroom(test, folds=folds)
    result["metrics"]["cross-fitted"] = crossed["metrics"]["learned"]
    result["auc"]["cross-fitted"] = crossed["auc"]["learned"]
    train_repeats = np.any(
        data.train.history == data.train.target[:, None], axis=1
    )
    result["repeat_share"]["train"] = float(train_repeats.mean())
    return result


def run_rows(args: argparse.Namespace, verbose: int = 0) -> dict:
    """Trains or reuses each row's run; ``{row: headroom}``."""
    base = seed_spread.base_config(args)
    results = {}
    for row in args.rows:
        seed_spread.run_seeds(base, [row], [args.seed], args.dropout, verbose)
        config = seed_spread.row_config(base, row, args.seed, args.dropout)
        results[row] = headroom_of_run(config, args.folds)
    return results


def report(results: dict, args: argparse.Namespace, command: str) -> str:
    first = next(iter(results.values()))
    shares = first["repeat_share"]
    lines = [
        f"# Repeat / explore headroom on {args.data}, {args.encoder}",
        "",
        f"Command: `{command}`",
        "",
        f"{args.num_layers or 'default'} layer(s), dropout {args.dropout}, "
        f"head dropout {args.head_dropout}, every position: "
        f"{args.every_position}, split {args.split}, seed {args.seed}, at "
        f"most {args.epochs} epochs, patience {args.patience} on validation "
        "NDCG@10. Repeat targets (the target is in the history): "
        f"{shares['train']:.1%} of train, {shares['fit']:.1%} of "
        f"validation, {shares['evaluate']:.1%} of test.",
        "",
        "Test NDCG@10 (repeat / new targets) of each model and of its "
        "logits re-ranked by a switch that sets the history's probability "
        "mass; AUC: how well the switch's repeat probability ranks repeat "
        "targets above new ones.",
        "",
        "| model | switch | test NDCG@10 | vs model | repeat / new | AUC |",
        "|---|---|---:|---:|---|---:|",
    ]
    for row, result in results.items():
        reference = result["metrics"]["model"]["ndcg@10"]
        auc = {
            "model": result["auc"]["history mass"],
            "learned": result["auc"]["learned"],
            "cross-fitted": result["auc"]["cross-fitted"],
        }
        for key, label in SWITCHES:
            metrics = result["metrics"][key]
            value = metrics["ndcg@10"]
            lines.append(
                f"| {row} | {label} | {value:.4f} | "
                f"{value / reference - 1:+.1%} | "
                f"{metrics['ndcg@10 repeat']:.4f} / "
                f"{metrics['ndcg@10 new']:.4f} | "
                + (f"{auc[key]:.3f}" if key in auc else "")
                + " |"
            )
    lines += [
        "",
        "The model's AUC is that of its own history mass. The learned "
        "switch's weights (standardised features, fitted on validation), "
        "per row:",
        "",
    ]
    for row, result in results.items():
        weights = ", ".join(
            f"{name} {value:+.2f}" for name, value in result["weights"].items()
        )
        lines.append(f"- {row}: {weights}")
    return "\n".join(lines) + "\n"


def plot(results: dict, path: str, data: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = list(results)
    width = 0.8 / len(SWITCHES)
    fig, axis = plt.subplots(figsize=(2.6 * len(rows) + 3, 4))
    for j, (key, label) in enumerate(SWITCHES):
        values = [results[row]["metrics"][key]["ndcg@10"] for row in rows]
        positions = np.arange(len(rows)) + (j - (len(SWITCHES) - 1) / 2) * width
        bars = axis.bar(positions, values, width, label=label)
        axis.bar_label(bars, fmt="%.3f", fontsize=7, rotation=90, padding=2)
    axis.set_xticks(range(len(rows)), rows)
    axis.set_ylabel("test NDCG@10")
    axis.set_ylim(
        0,
        1.2 * max(r["metrics"]["perfect"]["ndcg@10"] for r in results.values()),
    )
    axis.set_title(f"{data}: what a repeat / explore switch adds")
    axis.legend(
        fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    seed_spread.add_run_options(parser)
    common.add_seed_option(parser)
    parser.add_argument(
        "--folds",
        type=int,
        default=2,
        help="folds of the cross-fitted switch on test. Default: 2",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    seed_spread.check_rows(parser, args)
    if args.folds < 2:
        parser.error(f"--folds must be 2 or more. Received: {args.folds}")
    results = run_rows(args, verbose=2)
    text = report(results, args, common.command_line("repeat_headroom", argv))
    common.write_report(
        common.report_stem(
            args.report_dir,
            "repeat_headroom",
            args.data,
            args.encoder,
            split=args.split,
        ),
        text,
        numbers=results,
        chart=lambda path: plot(results, path, args.data),
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
