"""A real KerasTuner search against the hand-set defaults, on test NDCG@10.

1. Trains the hand-set default model of ``tfrec-tricks train`` (GRU4Rec,
   softmax head, d=64, dropout 0.2, Adam 1e-3, batch 128).
2. Runs a search (``tfrec_tricks.tuning.search.run_search``, random by
   default, at least 20 trials) over the techniques and the usual settings
   on validation NDCG@10, each trial at most ``--trial-epochs`` epochs.
3. Trains the best configuration with the same budget as the defaults
   (``--epochs``, early stopping on validation NDCG@10).

Writes ``benchmarks/results/tuning_search.md`` (best configuration, test
NDCG@10 / HR@10 / MRR@10 of both, wall times) and a copy of the search's
score-per-trial plot ``tuning_search.png``.

    python -m benchmarks.tuning_search --data ml-100k --max-trials 20

Needs the real datasets (``--data-path``, default ../shared/data). On two
CPU cores expect about 20 trials x 5 epochs x 10-30 s on ml-100k.
"""

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from tfrec_tricks.runs.training import TrainConfig, train  # noqa: E402
from tfrec_tricks.tuning.search import run_search  # noqa: E402

METRICS = ("ndcg@10", "hr@10", "mrr@10")


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(
        parser, default="ml-100k", data_help="ml-100k or yoochoose-100k"
    )
    parser.add_argument(
        "--tuner", default="random", choices=("random", "bayesian", "hyperband")
    )
    parser.add_argument("--max-trials", type=int, default=20)
    parser.add_argument(
        "--trial-epochs",
        type=int,
        default=5,
        help="maximum epochs per trial. Default: 5",
    )
    common.add_training_options(
        parser,
        epochs=30,
        patience=3,
        epochs_help="maximum epochs of the two final runs",
    )
    common.add_seed_option(parser)
    parser.add_argument(
        "--fixed",
        default="{}",
        help='JSON of fixed values, e.g. \'{"encoder": "sasrec"}\'',
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    base = TrainConfig(
        data=args.data,
        data_path=args.data_path,
        epochs=args.epochs,
        patience=args.patience,
        seed=args.seed,
        output_dir=args.output_dir,
    )

    start = time.perf_counter()
    defaults = train(
        dataclasses.replace(base, name=f"tuning-defaults-{args.data}"),
        verbose=2,
    )
    default_seconds = time.perf_counter() - start

    start = time.perf_counter()
    search = run_search(
        dataclasses.replace(
            base, epochs=args.trial_epochs, patience=min(args.patience, 2)
        ),
        tuner=args.tuner,
        max_trials=args.max_trials,
        output_dir=os.path.join(args.output_dir, "tuning"),
        fixed=json.loads(args.fixed),
        verbose=2,
    )
    search_seconds = time.perf_counter() - start
    if search.best_config is None:
        print("No trial completed; see the search folder.", file=sys.stderr)
        return 1

    best_train = dict(search.best_config["train"])
    best_train.update(
        epochs=args.epochs,
        patience=args.patience,
        output_dir=args.output_dir,
        name=f"tuning-best-{args.data}",
    )
    start = time.perf_counter()
    best = train(TrainConfig(**best_train), verbose=2)
    best_seconds = time.perf_counter() - start

    text = report(
        args,
        search,
        defaults.metrics,
        best.metrics,
        (default_seconds, search_seconds, best_seconds),
        common.command_line("tuning_search", argv),
    )
    paths = common.write_report(
        common.report_stem(common.RESULTS, "tuning_search"),
        text,
        chart=lambda path: shutil.copy(
            os.path.join(search.output_dir, "trials.png"), path
        ),
    )
    print(text)
    print(f"Wrote {paths['md']}")
    return 0


def report(
    args, search, default_metrics, best_metrics, seconds, command
) -> str:
    """The markdown report; ``command`` reruns it."""
    default_seconds, search_seconds, best_seconds = seconds
    completed = sum(r["status"] == "COMPLETED" for r in search.trials)
    scores = [r["score"] for r in search.trials if r["score"] is not None]
    model = search.best_config["model"]
    train_values = search.best_config["train"]
    lines = [
        f"# KerasTuner search on {args.data}",
        "",
        f"`{command}`",
        "",
        f"{args.tuner} search, {len(search.trials)} trials ({completed} "
        f"completed), at most {args.trial_epochs} epochs each, objective "
        "validation NDCG@10; both final runs: at most "
        f"{args.epochs} epochs, early stopping (patience {args.patience}) "
        "on validation NDCG@10, evaluated on test (leave-one-out, full "
        "ranking).",
        "",
        "| model | val NDCG@10 | test NDCG@10 | test HR@10 | test MRR@10 "
        "| wall time |",
        "|---|---|---|---|---|---|",
    ]
    for name, metrics, wall in (
        ("hand-set defaults", default_metrics, default_seconds),
        ("best of the search", best_metrics, best_seconds),
    ):
        test = metrics["test"]
        lines.append(
            f"| {name} | {metrics['validation']['ndcg@10']:.4f} | "
            + " | ".join(f"{test[m]:.4f}" for m in METRICS)
            + f" | {wall / 60:.1f} min |"
        )
    change = (
        best_metrics["test"]["ndcg@10"] / default_metrics["test"]["ndcg@10"] - 1
    )
    lines += [
        "",
        f"Test NDCG@10 change: {change:+.1%}. Search wall time: "
        f"{search_seconds / 60:.1f} min; best trial's validation NDCG@10: "
        f"{max(scores):.4f}.",
        "",
        "## Best configuration",
        "",
        f"batch_size={train_values['batch_size']}, "
        f"learning_rate={train_values['learning_rate']:.3g}, "
        + ", ".join(
            f"{k}={v}"
            for k, v in model.items()
            if k not in ("num_items", "max_len", "learning_rate")
        ),
        "",
        f"Search folder: `{search.output_dir}` (trials.md, "
        "best_config.json, tensorboard/).",
        "",
        "![score per trial](tuning_search.png)",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
