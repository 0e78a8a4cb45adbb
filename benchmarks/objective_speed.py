"""Training-step time of `train` command lines, taking turns in one run.

Each ``--row LABEL FLAGS`` is a ``tfrec-tricks train`` command line (as in
``benchmarks.state_of_the_art``). The script builds each row's model and
training batches as ``train`` does (``training_model``: the data, the
head ``--head auto`` chooses, the optimizer and its schedule, steps per
compiled call) and times ``--steps`` training steps of it, the first
steps of a freshly shuffled epoch. Every row first runs once untimed
(graph tracing); then the rows take turns, one job each, for ``--rounds
- 1`` rounds, so that a slow spell of the shared host hits every row
alike. The table gives the median seconds per step, the epoch that makes
(steps per epoch x that median) and each row's ratio to the first row.

    python -m benchmarks.objective_speed --data-path ../shared/data \\
        --row "full softmax" "--data ml-1m --recipe long-histories" \\
        --row "128 sampled negatives" "--data ml-1m --recipe \\
              long-histories --objective sampled --num-sampled-negatives 128"

Writes ``<--report-dir>/objective_speed-<data>.md``, ``.json`` and a chart
(``.png``).
"""

import argparse
import sys
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common, train_rows  # noqa: E402
from benchmarks.epoch_speed import interleaved_epoch_seconds  # noqa: E402
from tfrec_tricks.training.run_training import training_model  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    train_rows.add_row_option(parser, "The first row is the ratios' reference.")
    parser.add_argument(
        "--steps",
        type=int,
        default=32,
        help="training steps per timed job (a multiple of the rows' "
        "--steps-per-execution, 16 by default). Default: 32",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="jobs per row, taking turns, the first not timed (>= 2). "
        "Default: 3",
    )
    common.add_seed_option(parser)
    common.add_data_path_option(parser)
    common.add_report_dir_option(parser)
    return parser


def steps_job(model, dataset, steps: int):
    """A job: ``steps`` training steps of ``model``; returns seconds."""
    batches = dataset.take(steps)

    def run() -> float:
        start = time.perf_counter()
        model.fit(batches, epochs=1, verbose=0)
        return time.perf_counter() - start

    return run


def report(args, results: dict, argv: list | None) -> str:
    """The markdown table: seconds per step, the epoch, the ratio."""
    first = results[args.row[0][0]]["seconds_per_step"]
    lines = [
        "# Training-step time by command line",
        "",
        f"Command: `{common.command_line('objective_speed', argv)}`",
        "",
        f"Median of {args.rounds - 1} timed jobs of {args.steps} steps "
        "per row, the rows taking turns in one run on the machine as it "
        "was. Epoch: steps per epoch x the median step.",
        "",
        "| row | flags | s/step | steps/epoch | epoch s | x first row |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for label, flags in args.row:
        row = results[label]
        lines.append(
            f"| {label} | `{flags}` | {row['seconds_per_step']:.3f} | "
            f"{row['steps_per_epoch']} | {row['epoch_seconds']:.0f} | "
            f"{row['seconds_per_step'] / first:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def plot(args, results: dict, path: str) -> None:
    """Seconds per epoch of each row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _ in args.row]
    seconds = [results[label]["epoch_seconds"] for label in labels]
    fig, axis = plt.subplots(figsize=(7, 0.5 * len(labels) + 1.4))
    axis.barh(range(len(labels)), seconds, color="tab:blue")
    for i, value in enumerate(seconds):
        axis.text(value, i, f" {value:.0f} s", va="center", fontsize=8)
    axis.set_yticks(range(len(labels)), labels)
    axis.invert_yaxis()
    axis.set_xlim(0, 1.15 * max(seconds))
    axis.set_xlabel("seconds per training epoch (steps x median step)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    labels = [label for label, _ in args.row]
    if args.steps < 1 or args.rounds < 2:
        parser.error(
            "--steps must be positive and --rounds at least 2. Received: "
            f"--steps {args.steps} --rounds {args.rounds}"
        )
    args.output_dir = "unused"  # the rows' run folder: nothing is written
    configs = {
        label: seeds[0]
        for label, seeds in train_rows.parse_rows(
            parser, args, [args.seed]
        ).items()
    }
    jobs, steps_per_epoch = {}, {}
    for label, config in configs.items():
        model, inputs = training_model(config)
        steps_per_epoch[label] = int(inputs.train.cardinality())
        jobs[label] = steps_job(model, inputs.train, args.steps)
    seconds = interleaved_epoch_seconds(jobs, args.rounds)
    results = {}
    for label in labels:
        per_step = seconds[label] / min(args.steps, steps_per_epoch[label])
        results[label] = {
            "seconds_per_step": per_step,
            "steps_per_epoch": steps_per_epoch[label],
            "epoch_seconds": per_step * steps_per_epoch[label],
        }
    stem = common.report_stem(
        args.report_dir, "objective_speed", configs[labels[0]].data
    )
    paths = common.write_report(
        stem,
        report(args, results, argv),
        {
            "rows": [
                {"label": label, "flags": flags, **results[label]}
                for label, flags in args.row
            ]
        },
        lambda path: plot(args, results, path),
    )
    print(open(paths["md"]).read())
    print(f"Wrote {', '.join(paths.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
