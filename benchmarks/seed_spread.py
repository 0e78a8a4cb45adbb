"""Seed-to-seed spread: is a difference between two variants real?

Trains rows of the ablation (``tfrec_tricks.training.ablation.ROWS``) once per
seed of ``--seeds``, everything else fixed (data, encoder, dropout, budget),
and reports each row's test and validation NDCG@10 per seed, their mean and
range, and the change of the mean against the first row. A change smaller
than the rows' ranges is not one a single run can show. The seed sets the
initial weights, the shuffling and dropout.

    python -m benchmarks.seed_spread --data yoochoose-100k \\
        --data-path ../shared/data --encoder sasrec --num-layers 2 \\
        --every-position --rows Softmax "Softmax + CPR:100 + Mi"

A second table gives test NDCG@10, HR@10 and MRR@10 (mean and range),
the epochs run and the minutes of training; with ``--eval-negatives N``, a
third the same against N sampled negatives (the SASRec / SSE-PT papers'
protocol). Converged ml-1m with training windows (issue 21):

    python -m benchmarks.seed_spread --data ml-1m --data-path ../shared/data \\
        --encoder gru4rec --train-windows --eval-negatives 100 \\
        --epochs 200 --patience 5 --rows Softmax "Softmax + CPR:100 + Mi"

``--model`` gives every row more model settings, for what no row names:
e.g. SSE-SE at another probability than the row ``SSE-SE p=0.1``, or
rows on top of untied embeddings (each setting under its own ``--name``):

    python -m benchmarks.seed_spread --data ml-1m --encoder gru4rec \\
        --train-windows --rows Softmax "Softmax + CPR:100 + Mi" \\
        --model '{"sse_item_probability": 0.05,
                  "sse_label_probability": 0.05}' \\
        --name ml-1m-gru4rec-sse0.05 --report-dir benchmarks/results/sse0.05

Writes ``benchmarks/results/seed_spread-<data>-<encoder>.md`` (with
``-<split>`` before ``.md`` for ``--split every-user``) and a chart
(``.png``). Seed 0 is named as the ablation's run at the same dropout, and
finished runs of the same configuration are reused.
"""

import argparse
import dataclasses
import json
import statistics
import sys

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from tfrec_tricks.models.config import ModelConfig  # noqa: E402
from tfrec_tricks.training.ablation import ROWS, row_slug  # noqa: E402
from tfrec_tricks.training.evaluate import training_minutes  # noqa: E402
from tfrec_tricks.training.resumption import finished_metrics  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402


def run_name(prefix: str, row: str, dropout: float, seed: int) -> str:
    """The ablation's run name for seed 0, with ``-seed<S>`` otherwise."""
    name = f"{prefix}-{row_slug(row)}-dropout{dropout}"
    return name if seed == 0 else f"{name}-seed{seed}"


def row_config(
    base: TrainConfig, row: str, seed: int, dropout: float
) -> TrainConfig:
    """The ``TrainConfig`` of one ablation row at one seed and dropout."""
    return dataclasses.replace(
        base,
        seed=seed,
        name=run_name(base.run_name, row, dropout, seed),
        model=row_model(base.model, row, dropout),
    )


def row_model(shared: dict, row: str, dropout: float) -> dict:
    """One row's model settings: the shared ones, the row's, the dropout."""
    return {**shared, **ROWS[row], "dropout": dropout}


def run_seeds(
    base: TrainConfig,
    rows: list[str],
    seeds: list[int],
    dropout: float,
    verbose: int = 0,
) -> dict:
    """Metrics of each row at each seed, ``{(row, seed): metrics}``.

    ``base.name`` prefixes the run names (``run_name``); a finished run of
    the same configuration is read, not trained again.
    """
    results = {}
    for row in rows:
        for seed in seeds:
            config = row_config(base, row, seed, dropout)
            if verbose:
                print(f"== {row}, seed {seed}", flush=True)
            results[row, seed] = (
                finished_metrics(config)
                or train(config, verbose=verbose).metrics
            )
    return results


def base_config(args: argparse.Namespace) -> TrainConfig:
    """The shared config, as ``tfrec-tricks ablation`` builds it.

    The same options give the same ``TrainConfig`` as the ablation's, so
    seed 0 reuses its run
    (``tfrec_tricks.training.resumption.finished_metrics``).
    """
    return TrainConfig(
        data=args.data,
        data_path=common.data_file_path(args),
        file_format=args.file_format,
        synthetic_users=args.synthetic_users,
        synthetic_items=args.synthetic_items,
        epochs=args.epochs,
        patience=args.patience,
        every_position=args.every_position,
        train_windows=args.train_windows,
        window_stride=args.window_stride,
        eval_negatives=args.eval_negatives,
        learning_rate=args.learning_rate,
        split=args.split,
        output_dir=args.output_dir,
        name=args.name
        or f"{common.data_label(args, by_name=False)}-{args.encoder}",
        model=base_model(args),
    )


def base_model(args: argparse.Namespace) -> dict:
    """The model settings every row shares (``TrainConfig.model``)."""
    return {
        "encoder": args.encoder,
        "head_dropout": args.head_dropout,
        # Given only when set, as the CLI does.
        **({"num_layers": args.num_layers} if args.num_layers else {}),
        **args.model,
    }


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options ``base_config`` reads, and the rows to train.

    Shared with ``benchmarks.repeat_headroom``, which trains (or reuses)
    the same runs.
    """
    common.add_data_options(parser, default="yoochoose-100k")
    common.add_file_options(parser)
    common.add_synthetic_options(parser)
    parser.add_argument("--encoder", default="sasrec")
    parser.add_argument(
        "--num-layers",
        type=int,
        default=None,
        help="encoder layers. Default: the encoder's default (left out of "
        "the run config, as the ablation does when --num-layers is not "
        "given, so its runs are reused)",
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        default=["Softmax", "Softmax + CPR:100 + Mi"],
        metavar="ROW",
        help="ablation rows; the first is the reference. "
        "Default: Softmax, Softmax + CPR:100 + Mi",
    )
    parser.add_argument(
        "--model",
        type=common.json_object,
        default={},
        metavar="JSON",
        help="model settings of every row, as a JSON object; a row's own "
        "settings (its head) cannot be changed. E.g. SSE-SE at another "
        'probability: \'{"sse_item_probability": 0.05, '
        '"sse_label_probability": 0.05}\'; the soft one-hot rating: '
        '\'{"features": ["rating"]}\'; untied under every row: '
        "'{\"tie_embeddings\": false}'. Give each setting its own --name "
        "(and --report-dir). Default: {} (the ablation's rows)",
    )
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--head-dropout", type=float, default=0.3)
    parser.add_argument("--every-position", action="store_true")
    common.add_window_options(parser)
    parser.add_argument(
        "--eval-negatives",
        type=int,
        default=0,
        metavar="N",
        help="also rank each target against N sampled negatives (SASRec's "
        "protocol; not comparable with full ranking). Default: 0 (off)",
    )
    parser.add_argument(
        "--learning-rate",
        type=float,
        default=None,
        help="Adam's learning rate. Default: train's (0.001; 0.005 with "
        "--train-windows)",
    )
    common.add_training_options(parser, epochs=40, patience=5)
    common.add_split_option(parser)
    common.add_report_dir_option(parser)
    parser.add_argument(
        "--name",
        default=None,
        help="run name prefix, as the ablation's --name. "
        "Default: <data>-<encoder>",
    )


#: Model settings with their own option, which ``--model`` must not set.
OWN_FLAGS = {
    "dropout": "--dropout",
    "encoder": "--encoder",
    "head_dropout": "--head-dropout",
    "num_layers": "--num-layers",
}


def check_rows(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> None:
    """Exits with a usage error naming unknown ``--rows``, or a ``--model``
    that changes a row's own settings or is not a valid model config."""
    unknown = [row for row in args.rows if row not in ROWS]
    if unknown:
        parser.error(f"unknown --rows {unknown}; known: {list(ROWS)}")
    flagged = sorted(set(args.model) & set(OWN_FLAGS))
    if flagged:
        parser.error(
            f"--model sets {flagged}, which have their own options: "
            f"{', '.join(OWN_FLAGS[key] for key in flagged)}. Received: "
            f"--model {json.dumps(args.model)}"
        )
    for row in args.rows:
        clash = sorted(set(args.model) & set(ROWS[row]))
        if clash:
            parser.error(
                f"--model sets {clash}, which row {row!r} sets itself "
                f"({ {key: ROWS[row][key] for key in clash} }). Received: "
                f"--model {json.dumps(args.model)}"
            )
        model = row_model(base_model(args), row, args.dropout)
        try:
            # Any catalogue large enough for the rows' reranker sizes.
            ModelConfig.from_dict({**model, "num_items": 100_000})
        except (TypeError, ValueError) as error:
            parser.error(
                f"--model {json.dumps(args.model)} is not a valid model "
                f"config for row {row!r}: {error}"
            )


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    add_run_options(parser)
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="S"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_rows(parser, args)
    common.check_file_options(parser, args)
    base = base_config(args)
    results = run_seeds(base, args.rows, args.seeds, args.dropout, verbose=2)
    text = report(results, args, common.command_line("seed_spread", argv))
    common.write_report(
        common.report_stem(
            args.report_dir,
            "seed_spread",
            common.data_label(args, by_name=False),
            args.encoder,
            split=args.split,
        ),
        text,
        chart=lambda path: plot(
            results,
            args.rows,
            args.seeds,
            path,
            common.data_label(args, by_name=False),
        ),
    )
    print(text)
    return 0


def ndcg(results: dict, row: str, seeds: list, split: str) -> list:
    return [results[row, seed][split]["ndcg@10"] for seed in seeds]


def report(results: dict, args: argparse.Namespace, command: str) -> str:
    seeds = args.seeds
    reference = statistics.mean(ndcg(results, args.rows[0], seeds, "test"))
    data = common.data_label(args, by_name=False)
    learning_rate = TrainConfig(
        train_windows=args.train_windows, learning_rate=args.learning_rate
    ).training_learning_rate()
    lines = [
        f"# Seed-to-seed spread on {data}, {args.encoder}",
        "",
        f"Command: `{command}`",
        "",
        f"{args.num_layers or 'default'} layer(s), dropout {args.dropout}, "
        "head dropout "
        f"{args.head_dropout}, every position: {args.every_position}, "
        f"training windows: {args.train_windows}, split "
        f"{args.split}, at "
        f"most {args.epochs} epochs, patience {args.patience} on validation "
        f"NDCG@10; d=64, Adam {learning_rate:g}, batch 128, full "
        "ranking."
        + (
            f" Model settings of every row: `{json.dumps(args.model)}`."
            if args.model
            else ""
        ),
        "",
        "| variant | test NDCG@10 per seed "
        f"({', '.join(map(str, seeds))}) | mean | range | mean vs first "
        "| val NDCG@10 per seed | val mean | test repeat | test new |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for row in args.rows:
        test = ndcg(results, row, seeds, "test")
        validation = ndcg(results, row, seeds, "validation")
        mean = statistics.mean(test)
        lines.append(
            f"| {row} | {' / '.join(f'{v:.4f}' for v in test)} | "
            f"{mean:.4f} | {max(test) - min(test):.4f} | "
            f"{mean / reference - 1:+.1%} | "
            f"{' / '.join(f'{v:.4f}' for v in validation)} | "
            f"{statistics.mean(validation):.4f} | "
            f"{by_target(results, row, seeds, 'repeat')} | "
            f"{by_target(results, row, seeds, 'new')} |"
        )
    lines += [
        "",
        "Test repeat / new: the mean test NDCG@10 of the targets that repeat "
        "an item of their history and of the others (empty for runs made "
        "before it was recorded).",
        "",
        *metric_table(results, args.rows, seeds, "test"),
    ]
    if all("test_sampled" in results[key] for key in results):
        lines += [
            "",
            f"With {args.eval_negatives} sampled negatives "
            "(`--eval-negatives`: each target against items the user had not "
            "seen, as the SASRec and SSE-PT papers evaluate): not comparable "
            "with full ranking.",
            "",
            *metric_table(results, args.rows, seeds, "test_sampled"),
        ]
    return "\n".join(lines) + "\n"


METRICS = ("ndcg@10", "hr@10", "mrr@10")


def metric_table(results: dict, rows: list, seeds: list, split: str) -> list:
    """Lines of a table: each metric's mean (range) on ``split``, the
    epochs run and the minutes of training (epochs x their median)."""
    lines = [
        f"| variant | {' | '.join(f'{split} {m}' for m in METRICS)} "
        "| epochs | minutes |",
        "|---|" + "---:|" * (len(METRICS) + 2),
    ]
    for row in rows:
        runs = [results[row, seed] for seed in seeds]
        cells = []
        for metric in METRICS:
            values = [run[split][metric] for run in runs]
            cells.append(
                f"{statistics.mean(values):.4f} "
                f"({max(values) - min(values):.4f})"
            )
        epochs = [run.get("epochs_run") or 0 for run in runs]
        minutes = [training_minutes(run) for run in runs]
        lines.append(
            f"| {row} | {' | '.join(cells)} | "
            f"{statistics.mean(epochs):.1f} | {statistics.mean(minutes):.1f} |"
        )
    return lines


def by_target(results: dict, row: str, seeds: list, kind: str) -> str:
    """Mean test NDCG@10 of one target kind over the seeds, or ''."""
    values = [
        results[row, seed].get("test_by_target", {}).get(kind, {})
        for seed in seeds
    ]
    values = [v["ndcg@10"] for v in values if "ndcg@10" in v]
    return f"{statistics.mean(values):.4f}" if len(values) == len(seeds) else ""


def plot(results: dict, rows: list, seeds: list, path: str, data: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(6, 0.6 * len(rows) + 1.6))
    for i, row in enumerate(rows):
        test = ndcg(results, row, seeds, "test")
        axis.plot(test, [i] * len(test), "o", color="tab:blue", alpha=0.7)
        axis.plot([statistics.mean(test)], [i], "|", color="black", ms=18)
    axis.set_yticks(range(len(rows)), rows)
    axis.invert_yaxis()
    axis.set_xlabel("test NDCG@10 (dots: seeds; bar: mean)")
    # Over the figure, not the axes: long row labels leave the axes narrow,
    # and an axes title over them was cut at the figure's edge.
    fig.suptitle(f"{data}: seed-to-seed spread")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
