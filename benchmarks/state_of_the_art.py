"""Our recipes' seeds beside the published state of the art on MovieLens-1M.

Each ``--row LABEL FLAGS`` is a ``tfrec-tricks train`` command line (its
flags, a recipe included), trained once per seed of ``--seeds`` as the run
``<--name>-s<seed>`` (the row's ``--name``, else its label made a file
name). Finished runs are reused and interrupted ones resume, so the
command that reports the table also trains what it lacks; with
``--report-only`` it reports the seeds that are finished and trains none.

A seed's run folder need not outlive the machine it trained on: a seed
recorded in the report's JSON by an earlier run of the script (the same
row flags, resolving to the same training settings, and the same seed)
counts as finished when no finished run folder is here, so a table of
seeds trained across sessions or machines is reported again from its
record; the report names the seeds it carried over. A record whose flags
now mean other settings (a recipe or a default changed) is not used.

    python -m benchmarks.state_of_the_art --data-path ../shared/data \\
        --seeds 0 1 2 \\
        --row "constant rate, patience 10" "--data ml-1m \\
              --recipe long-histories --name sasrec200-s100-lr2e3" \\
        --row "cosine, 25 epochs" "--data ml-1m --recipe long-histories \\
              --lr-schedule cosine --epochs 25 --name sasrec200-cos25-lr2e3"

The table gives, per row, test NDCG@10 and HR@10 with the user's seen items
ranked last (the anchors' protocol: the rows need ``--eval-seen-excluded``,
which the recipe sets), per seed and their mean, validation NDCG@10 (what
the rows are chosen on), the plain ranking of the same weights (history
kept: ``test_history_kept``, computed for runs from before it was
recorded), the best epoch and the minutes (epochs x their median: on a
shared machine, not idle). Below it, when the rows train on ``ml-1m``,
the published anchors (``ANCHORS``) with what separates their protocol
from ours; rows on other data (``ml-1m-timed``'s half of the users, for
the time gap) are reported alone, since the anchors are not theirs. Writes
``<--report-dir>/state_of_the_art-<data>.md``, ``.json`` and a chart
(``.png``).
"""

import argparse
import json
import os
import shlex
import statistics
import sys
import textwrap

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common, train_rows  # noqa: E402
from tfrec_tricks.training.evaluate import (  # noqa: E402
    eval_batch_size,
    history_kept_metrics,
    training_minutes,
)
from tfrec_tricks.training.persistence import load_model, read_history  # noqa: E402
from tfrec_tricks.training.resumption import finished_metrics, run_directory  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402
from tfrec_tricks.training.training_data import load_training_data  # noqa: E402

#: Published MovieLens-1M results, full ranking, leave-one-out, seen items
#: excluded: (model, items, test NDCG@10, HR@10, what it is).
ANCHORS = (
    (
        "HSTU-large (Zhai et al., ICML 2024)",
        3706,
        0.1893,
        0.3294,
        "8 blocks x 2 heads, d = 50, 128 sampled negatives",
    ),
    (
        "SASRec+ (Klenitskiy & Vasilev, RecSys 2023)",
        3416,
        0.1821,
        0.3152,
        "2 x 64, full softmax, items with 5+ ratings",
    ),
    (
        "eSASRec (2025)",
        3706,
        0.1772,
        0.3133,
        "LiGR layers, 256 sampled negatives",
    ),
    (
        "gSASRec (Petrov & Macdonald, RecSys 2023)",
        3416,
        0.1726,
        0.3003,
        "gBCE, 256 negatives, items with 5+ ratings",
    ),
    (
        "HSTU, 2 blocks x 1 head (the same code)",
        3706,
        0.1720,
        0.3097,
        "d = 50, 128 sampled negatives",
    ),
    (
        "SASRec 2 x 1, 128 negatives (HSTU's baseline)",
        3706,
        0.1603,
        0.2853,
        "d = 50, the same code and protocol as HSTU",
    ),
)
#: The data the anchors were measured on: rows on any other data get no
#: anchors or target.
ANCHOR_DATA = "ml-1m"
#: The issue's target, test NDCG@10.
TARGET = 0.19
METRICS = ("ndcg@10", "hr@10")


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    train_rows.add_row_option(parser)
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2],
        help="seeds of every row. Default: 0 1 2",
    )
    common.add_data_path_option(parser)
    parser.add_argument(
        "--output-dir",
        default="runs",
        help="the runs' folder: train's own default, so that the runs of "
        "the documented train commands are reused. Default: runs",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: report the finished seeds of each row",
    )
    common.add_report_dir_option(parser)
    return parser


def flags_key(flags: str) -> str:
    """A row's flags as one spacing, to match a recorded row."""
    return " ".join(shlex.split(flags))


def recorded_runs(path: str) -> dict:
    """The seeds an earlier report recorded.

    Args:
        path: the report's JSON (``numbers``); none yet gives ``{}``.

    Returns:
        ``{(flags, seed): (metrics, settings)}``, the settings the row's
        flags resolved to then (None in reports from before they were
        recorded).
    """
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        rows = json.load(handle)["rows"]
    return {
        (flags_key(row["flags"]), seed): (run, row.get("settings"))
        for row in rows
        for seed, run in row["runs"].items()
        if run is not None
    }


def run_results(
    config: TrainConfig, report_only: bool, recorded: dict | None = None
) -> dict | None:
    """A finished run's metrics, with its best epoch and plain ranking.

    Args:
        config: the seed's run.
        report_only: do not train an unfinished run (None instead).
        recorded: the seed's metrics in an earlier report, used when no
            finished run folder is here (the run trained elsewhere).
    """
    metrics = finished_metrics(config)
    if metrics is None and recorded is not None:
        return recorded
    if metrics is None and report_only:
        return None
    if metrics is None:
        metrics = train(config, verbose=2).metrics
    run_dir = run_directory(config)
    metrics = dict(metrics)
    metrics["best_epoch"] = best_epoch(run_dir)
    if "test_history_kept" not in metrics and "test_seen_excluded" in metrics:
        kept = history_kept(config, run_dir)
        if kept is not None:
            metrics["test_history_kept"] = kept
    return metrics


def best_epoch(run_dir: str) -> int | None:
    """The epoch (from 1) of the best validation NDCG@10 in history.csv."""
    values = read_history(run_dir).get("val_ndcg@10")
    return values.index(max(values)) + 1 if values else None


def history_kept(config: TrainConfig, run_dir: str) -> dict | None:
    """The plain test ranking of a run from before ``test_history_kept``;
    None for a head that keeps the history (its ``test`` is that ranking
    already)."""
    model = load_model(run_dir)
    if not model.head.excludes_history(False):
        return None
    data = load_training_data(config)
    batches = data.batches("test", eval_batch_size(data.num_items))
    return history_kept_metrics(model, batches)


def mean_cell(values: list, digits: int = 4) -> str:
    """``mean`` of the values, ``mean (a / b / c)`` for several."""
    if not values:
        return ""
    mean = f"{statistics.mean(values):.{digits}f}"
    if len(values) == 1:
        return mean
    return f"{mean} ({' / '.join(f'{v:.{digits}f}' for v in values)})"


def row_line(label: str, runs: list, num_seeds: int) -> str:
    """One table row from the finished runs of a row."""
    done = [run for run in runs if run is not None]
    if not done:
        return f"| {label} | 0 of {num_seeds} |" + " |" * 6
    excluded = [run.get("test_seen_excluded", run["test"]) for run in done]
    validation = [
        run.get("validation_seen_excluded", run["validation"]) for run in done
    ]
    kept = [run.get("test_history_kept", run["test"]) for run in done]
    epochs = [
        f"{run['best_epoch']}/{run['epochs_run']}"
        for run in done
        if run.get("best_epoch")
    ]
    # Unknown for a run whose last process trained no epoch.
    minutes = [
        training_minutes(run)
        for run in done
        if run.get("seconds_per_epoch_median")
    ]
    return (
        f"| {label} | {len(done)} of {num_seeds} | "
        f"{mean_cell([m['ndcg@10'] for m in excluded])} | "
        f"{mean_cell([m['hr@10'] for m in excluded])} | "
        f"{mean_cell([m['ndcg@10'] for m in validation])} | "
        f"{mean_cell([m['ndcg@10'] for m in kept])} | "
        f"{', '.join(epochs)} | {mean_cell(minutes, 0)} |"
    )


def anchors_for(data: str) -> tuple:
    """The published anchors comparable with rows on ``data``.

    >>> len(anchors_for("ml-1m")), anchors_for("ml-1m-timed")
    (6, ())
    """
    return ANCHORS if data == ANCHOR_DATA else ()


def report(
    args: argparse.Namespace,
    results: dict,
    argv: list | None,
    carried: dict | None = None,
    data: str = ANCHOR_DATA,
) -> str:
    """The markdown report: our rows, then the anchors of ``data``.

    Args:
        carried: ``{label: [seed, ...]}``, the seeds taken from the
            earlier report's record rather than a run folder.
        data: the rows' dataset; only ``ANCHOR_DATA`` has anchors.
    """
    num_seeds = len(args.seeds)
    anchors = anchors_for(data)
    title = (
        "MovieLens-1M: our recipes beside the published state of the art"
        if anchors
        else f"{data}: our rows (no published anchors on this data)"
    )
    lines = [
        f"# {title}",
        "",
        f"Command: `{common.command_line('state_of_the_art', argv)}`",
        "",
        "Full ranking over the catalogue, leave-one-out by time, the user's "
        "seen items ranked last (the anchors' protocol). Cells: the mean "
        "over the finished seeds (each seed). Validation NDCG@10 is what "
        "rows are chosen on. Plain: the same weights with the history "
        "kept in the ranking. Epochs: best / run, per seed. Minutes: "
        "epochs x their median, on the machine as it was (not idle).",
        "",
        "| ours | seeds | test NDCG@10 | test HR@10 | val NDCG@10 | "
        "plain test NDCG@10 | epochs | minutes |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for label, _ in args.row:
        lines.append(row_line(label, results[label], num_seeds))
    carried_rows = [
        f"{label} (seeds {', '.join(map(str, seeds))})"
        for label, seeds in (carried or {}).items()
        if seeds
    ]
    if carried_rows:
        lines += [
            "",
            "Carried over from this report's earlier record (their run "
            "folders are not on this machine): "
            + "; ".join(carried_rows)
            + ".",
        ]
    if anchors:
        lines += [
            "",
            "| published | items | test NDCG@10 | test HR@10 | what it is |",
            "|---|---:|---:|---:|---|",
        ]
    for name, items, ndcg, hr, what in anchors:
        lines.append(f"| {name} | {items:,} | {ndcg:.4f} | {hr:.4f} | {what} |")
    return "\n".join(lines) + "\n"


def numbers(
    args: argparse.Namespace,
    results: dict,
    configs: dict,
    data: str = ANCHOR_DATA,
) -> dict:
    """The report's JSON: each row's flags, the settings they resolve to
    (``common.run_settings``) and per-seed metrics."""
    return {
        "seeds": args.seeds,
        "rows": [
            {
                "label": label,
                "flags": flags,
                "settings": common.run_settings(configs[label][0]),
                "runs": {
                    str(seed): run
                    for seed, run in zip(args.seeds, results[label])
                },
            }
            for label, flags in args.row
        ],
        "anchors": [
            {"model": a[0], "items": a[1], "ndcg@10": a[2], "hr@10": a[3]}
            for a in anchors_for(data)
        ],
    }


def plot(
    args: argparse.Namespace,
    results: dict,
    path: str,
    data: str = ANCHOR_DATA,
) -> None:
    """Test NDCG@10: our rows' seeds and means, the anchors and the
    target (on ``ANCHOR_DATA``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    anchors = anchors_for(data)
    labels = [label for label, _ in args.row] + [a[0] for a in anchors]
    # Wrapped: a row's label is its description, often a sentence long.
    labels = [textwrap.fill(label, 42) for label in labels]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig, axis = plt.subplots(figsize=(9, 0.32 * lines + 2))
    shown = [a[2] for a in anchors]
    for i, (label, _) in enumerate(args.row):
        values = [
            run.get("test_seen_excluded", run["test"])["ndcg@10"]
            for run in results[label]
            if run is not None
        ]
        if values:
            mean = statistics.mean(values)
            axis.barh(i, mean, color="tab:blue")
            axis.plot(values, [i] * len(values), "o", color="black", ms=4)
            axis.text(mean, i, f" {mean:.4f}", va="center", fontsize=8)
            shown += values
    for i, anchor in enumerate(anchors, start=len(args.row)):
        axis.barh(i, anchor[2], color="tab:gray")
        axis.text(anchor[2], i, f" {anchor[2]:.4f}", va="center", fontsize=8)
    target = [TARGET] if anchors else []
    for value in target:
        axis.axvline(value, color="tab:red", linestyle="--")
        axis.text(value, -0.6, f" target {value}", color="tab:red", fontsize=8)
    # From near the lowest score: the differences are a few percent.
    if shown:
        axis.set_xlim(0.9 * min(shown), 1.08 * max([*shown, *target]))
    axis.set_yticks(range(len(labels)), labels)
    axis.invert_yaxis()
    axis.set_xlabel("test NDCG@10, seen items excluded (dots: our seeds)")
    fig.suptitle(
        "MovieLens-1M: ours (blue) and published (gray)"
        if anchors
        else f"{data}: ours"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    labels = [label for label, _ in args.row]
    configs = train_rows.parse_rows(parser, args, args.seeds)
    data = configs[labels[0]][0].data
    others = {
        label: configs[label][0].data
        for label in labels
        if configs[label][0].data != data
    }
    if others:
        parser.error(
            f"every row must train on one dataset, as the first row "
            f"({labels[0]!r}) does on {data!r}; received "
            + ", ".join(f"{label!r} on {d!r}" for label, d in others.items())
            + ": report each dataset with its own command"
        )
    stem = common.report_stem(args.report_dir, "state_of_the_art", data)
    record = recorded_runs(stem + ".json")
    results, carried = {}, {}
    for label, flags in args.row:
        results[label], carried[label] = [], []
        for seed, config in zip(args.seeds, configs[label]):
            recorded = common.carried_over(
                record.get((flags_key(flags), str(seed))),
                config,
                f"Row {label!r}, seed {seed}",
            )
            run = run_results(config, args.report_only, recorded)
            if run is not None and run is recorded:
                carried[label].append(seed)
            results[label].append(run)
    paths = common.write_report(
        stem,
        report(args, results, argv, carried, data),
        numbers(args, results, configs, data),
        lambda path: plot(args, results, path, data),
    )
    print(open(paths["md"]).read())
    print(f"Wrote {', '.join(paths.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
