"""Side information against id-only: item features, fused two ways.

Trains the same encoder, budget and data three ways, once per seed of
``--seeds``: item ids only, then ids fused with the item features of
``--features`` by concatenation + projection (``--feature-fusion
concat``, Transformers4Rec's) and by a sum (``sum``, RecTools'). Runs are
full ranking with the user's seen items ranked last (``--eval-seen-
excluded``) and stop early on validation NDCG@10. The report gives each
variant's validation and test NDCG@10 / HR@10 (mean and range over the
seeds), the change of the mean against id-only, the median epoch time
against id-only's (the cost of the fused table) and a chart.

    python -m benchmarks.side_information --data ml-100k \\
        --data-path ../shared/data --encoder gru4rec --train-windows

    python -m benchmarks.side_information --data ml-1m \\
        --data-path ../shared/data --recipe long-histories-1h

Writes ``benchmarks/results/side_information-<data>-<encoder>.md`` (and
``.json``, ``.png``). Finished runs of the same configuration are reused,
so an interrupted benchmark resumes where it stopped.

A seed need not finish on the machine that reports it: the JSON records
each seed's metrics with the settings it trained with
(``common.run_settings``), and a later run of the script carries a
recorded seed over when no finished run folder is here and the settings
still match. ``--report-only`` trains nothing and reports the seeds that
are finished or recorded, so ml-1m's attention encoders (about an hour a
run) can be measured over several sittings: train some seeds, report
them, commit the JSON, continue elsewhere.
"""

import argparse
import dataclasses
import json
import os
import statistics
import sys

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from tfrec_tricks.training.recipes import RECIPES, recipe_options  # noqa: E402
from tfrec_tricks.training.resumption import finished_metrics  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402

#: Variant name -> the model settings it adds (features come from --features).
VARIANTS = {
    "id-only": {},
    "concat": {"feature_fusion": "concat"},
    "sum": {"feature_fusion": "sum"},
}
METRICS = ("ndcg@10", "hr@10")
# What a seed's record keeps of its run's metrics.json.
RECORDED_METRICS = (
    "validation_seen_excluded",
    "test_seen_excluded",
    "test_seen_excluded_by_popularity",
    "seconds_per_epoch_median",
    "epochs_run",
)
# A variant's test NDCG@10 by target popularity (runs' metrics.json
# ``test_seen_excluded_by_popularity``).
POPULARITY_KEY = "test ndcg@10 by popularity"


def variant_config(
    base: TrainConfig, variant: str, features: list, seed: int
) -> TrainConfig:
    """One variant's ``TrainConfig`` at one seed."""
    model = dict(base.model)
    item_features = base.item_features
    if variant != "id-only":
        model.update(VARIANTS[variant], features=list(features))
    else:
        # Ids only: the .item file is not read (its rows would add cold
        # items; the benchmarks' data has none, so the catalogue is one).
        item_features = None
    return dataclasses.replace(
        base,
        item_features=item_features,
        seed=seed,
        name=f"{base.run_name}-{variant}-seed{seed}",
        model=model,
    )


def base_config(args: argparse.Namespace) -> TrainConfig:
    """The settings every run shares: data, recipe, encoder, budget."""
    recipe = recipe_options(args.recipe) if args.recipe else {}
    train_options = dict(recipe.get("train", {}))
    model = dict(recipe.get("model", {}))
    if args.encoder:
        model["encoder"] = args.encoder
    model.update(args.model)
    model.setdefault("head", "softmax")
    train_options.setdefault("epochs", args.epochs)
    train_options.setdefault("patience", args.patience)
    if args.train_windows:
        train_options["train_windows"] = True
    train_options["eval_seen_excluded"] = True
    # Runs of another recipe or encoder on the same data keep apart.
    setting = args.recipe or model.get("encoder") or "gru4rec"
    setting += "".join(f"-{key}{value}" for key, value in args.model.items())
    return TrainConfig(
        name=f"{data_label(args)}-{setting}",
        data=args.data,
        data_path=args.data_path,
        item_features=args.item_features,
        output_dir=args.output_dir,
        model=model,
        **train_options,
    )


def data_label(args: argparse.Namespace) -> str:
    """The data's name in run and report names: ``--data``, or the stem
    of ``--data-path`` for ``--data file`` (``sports`` of
    ``amazon-sports/sports.inter``).

    >>> data_label(argparse.Namespace(data="tfds:movielens/100k-ratings"))
    'tfds-movielens-100k-ratings'
    >>> data_label(argparse.Namespace(data="file", data_path="a/sports.inter"))
    'sports'
    """
    if args.data == "file":
        return os.path.splitext(os.path.basename(args.data_path))[0]
    return args.data.replace(":", "-").replace("/", "-")


def recorded_runs(path: str) -> dict:
    """The seeds an earlier report recorded: ``{(variant, seed):
    (metrics, settings)}``; ``{}`` without a report or a record."""
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        variants = json.load(handle).get("variants", {})
    return {
        (variant, int(seed)): (run["metrics"], run["settings"])
        for variant, row in variants.items()
        for seed, run in row.get("runs", {}).items()
    }


def seed_metrics(
    config: TrainConfig, recorded: tuple | None, report_only: bool
) -> tuple[dict | None, bool]:
    """One seed's metrics and whether they were carried over: a finished
    run folder's, else the record's (same settings), else a new run's
    (none with ``report_only``)."""
    metrics = finished_metrics(config)
    if metrics is not None:
        return metrics, False
    metrics = common.carried_over(recorded, config, config.name)
    if metrics is not None:
        return metrics, True
    if report_only:
        return None, False
    return train(config, verbose=2).metrics, False


def variant_results(results: list[dict]) -> dict:
    """Means and ranges of one variant's runs (seen items excluded)."""
    out = {}
    for split in ("validation", "test"):
        for metric in METRICS:
            out[f"{split} {metric}"] = common.summarise(
                [r[f"{split}_seen_excluded"][metric] for r in results]
            )
    out["seconds per epoch"] = statistics.median(
        r["seconds_per_epoch_median"] for r in results
    )
    out["epochs"] = [r["epochs_run"] for r in results]
    by_group = popularity_results(results)
    if by_group:
        out[POPULARITY_KEY] = by_group
    return out


def popularity_results(results: list[dict]) -> dict:
    """Test NDCG@10 of each target-popularity group (its share and the
    mean and range over the runs); {} if a run did not report groups."""
    groups = [r.get("test_seen_excluded_by_popularity") for r in results]
    if not all(groups):
        return {}
    out = {}
    for name in groups[0]:
        parts = [group[name] for group in groups]
        if all("ndcg@10" in part for part in parts):
            out[name] = {
                "share": statistics.fmean(p["share"] for p in parts),
                **common.summarise([p["ndcg@10"] for p in parts]),
            }
    return out


def report_text(args, numbers: dict, command: str) -> str:
    """The markdown table of every variant against id-only."""
    base = numbers["id-only"]
    lines = [
        f"# Side information on {data_label(args)} ({numbers['encoder']})",
        "",
        f"Item features {', '.join(args.features)}; seeds "
        f"{', '.join(map(str, args.seeds))}; full ranking, seen items "
        "ranked last; early stopping on validation NDCG@10. Mean "
        "[min, max] over the seeds; change of the mean against id-only.",
        "",
        "| variant | val NDCG@10 | test NDCG@10 | change | test HR@10 | "
        "s/epoch (x id-only) | epochs |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in numbers["variants"].items():
        val, test = row["validation ndcg@10"], row["test ndcg@10"]
        hr = row["test hr@10"]
        change = test["mean"] / base["test ndcg@10"]["mean"] - 1
        # id-only is what the changes are against: its cell stays empty.
        change_cell = "" if name == "id-only" else common.signed_percent(change)
        ratio = row["seconds per epoch"] / base["seconds per epoch"]
        lines.append(
            f"| {name} | {val['mean']:.4f} [{val['min']:.4f}, "
            f"{val['max']:.4f}] | {test['mean']:.4f} [{test['min']:.4f}, "
            f"{test['max']:.4f}] | {change_cell} | {hr['mean']:.4f} | "
            f"{row['seconds per epoch']:.1f} ({ratio:.2f}x) | "
            f"{', '.join(map(str, row['epochs']))} |"
        )
    lines += paired_table(numbers)
    lines += seed_notes(numbers, args.seeds)
    if numbers.get("not started"):
        lines += [
            "",
            "**Not trained yet**: " + ", ".join(numbers["not started"]) + ".",
        ]
    lines += popularity_table(numbers)
    lines += ["", "```", command, "```"]
    return "\n".join(lines)


def paired_changes(numbers: dict, name: str, split: str) -> dict:
    """``{seed: change}``: each seed's NDCG@10 against id-only's run of
    the same seed (the seeds both recorded)."""
    base = numbers["id-only"].get("runs", {})
    runs = numbers["variants"][name].get("runs", {})
    key = f"{split}_seen_excluded"
    return {
        seed: run["metrics"][key]["ndcg@10"]
        / base[seed]["metrics"][key]["ndcg@10"]
        - 1
        for seed, run in runs.items()
        if seed in base
    }


def paired_table(numbers: dict) -> list[str]:
    """Markdown lines: each variant's change per seed, paired with
    id-only's run of the same seed, and on how many seeds it is ahead
    (none without per-seed records)."""
    rows = []
    for name in numbers["variants"]:
        if name == "id-only":
            continue
        by_split = [
            paired_changes(numbers, name, split)
            for split in ("validation", "test")
        ]
        if not by_split[0]:
            continue  # no seed recorded by both (a report before records)
        cells = []
        for changes in by_split:
            ahead = sum(change > 0 for change in changes.values())
            cells += [
                ", ".join(
                    f"{s}: {common.signed_percent(c)}"
                    for s, c in changes.items()
                ),
                f"{ahead}/{len(changes)}",
            ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    if not rows:
        return []
    return [
        "",
        "NDCG@10 paired by seed: each seed's change against id-only's run "
        "of the same seed (seed: change), and on how many seeds the "
        "variant is ahead.",
        "",
        "| variant | validation | ahead | test | ahead |",
        "|---|---|---|---|---|",
        *rows,
    ]


def seed_notes(numbers: dict, seeds: list[int]) -> list[str]:
    """Markdown lines naming the seeds carried over from the report's
    earlier record and those not finished yet (none when every seed of
    every variant trained here)."""
    carried, missing = [], []
    for name, row in numbers["variants"].items():
        runs = row.get("runs")
        if runs is None:
            continue
        over = [s for s in seeds if runs.get(str(s), {}).get("carried_over")]
        absent = [s for s in seeds if str(s) not in runs]
        if over:
            carried.append(f"{name} seeds {', '.join(map(str, over))}")
        if absent:
            missing.append(f"{name} seeds {', '.join(map(str, absent))}")
    return common.seed_notes(
        carried, missing, "trained on another machine, same settings"
    )


def popularity_variants(numbers: dict) -> list[str]:
    """The variants whose runs reported test NDCG@10 by popularity."""
    return [
        n for n, row in numbers["variants"].items() if POPULARITY_KEY in row
    ]


def popularity_table(numbers: dict) -> list[str]:
    """Markdown lines: test NDCG@10 by the target's training users, each
    variant's mean and its change against id-only (none without groups)."""
    base = numbers["id-only"].get(POPULARITY_KEY)
    if not base:
        return []
    names = popularity_variants(numbers)
    lines = [
        "",
        "Test NDCG@10 (seen items last) by how many users the target item "
        "had in training: where a variant wins or loses. Mean over the "
        "seeds; change against id-only.",
        "",
        "| training users | share of test | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for group, reference in base.items():
        cells = []
        for name in names:
            part = numbers["variants"][name][POPULARITY_KEY].get(group)
            if part is None:
                cells.append("-")
            elif name == "id-only" or not reference["mean"]:
                cells.append(f"{part['mean']:.4f}")
            else:
                change = part["mean"] / reference["mean"] - 1
                cells.append(
                    f"{part['mean']:.4f} ({common.signed_percent(change)})"
                )
        lines.append(
            f"| {group} | {reference['share']:.1%} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def draw_chart(numbers: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(numbers["variants"])
    base_groups = numbers["variants"]["id-only"].get(POPULARITY_KEY) or {}
    panels = 2 if base_groups else 1
    figure, all_axes = plt.subplots(
        1, panels, figsize=(6 * panels, 3.5), squeeze=False
    )
    axes = all_axes[0][0]
    for i, name in enumerate(names):
        row = numbers["variants"][name]["test ndcg@10"]
        axes.bar(i, row["mean"], color="#4c72b0" if i else "#999999")
        axes.plot([i] * len(row["values"]), row["values"], "k.", ms=6)
    axes.set_xticks(range(len(names)), names)
    axes.set_ylabel("test NDCG@10 (seen items last)")
    axes.set_title(f"Side information: {numbers['data']}, {numbers['encoder']}")
    if base_groups:
        _draw_popularity_groups(all_axes[0][1], numbers)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _draw_popularity_groups(axes, numbers: dict) -> None:
    """Grouped bars: each variant's test NDCG@10 by the target's training
    users (least popular left; absolute, so a tiny group's ratio does not
    dominate the picture)."""
    base = numbers["variants"]["id-only"][POPULARITY_KEY]
    groups = list(base)
    names = popularity_variants(numbers)
    width = 0.8 / len(names)
    for offset, name in enumerate(names):
        row = numbers["variants"][name][POPULARITY_KEY]
        axes.bar(
            [i + offset * width for i in range(len(groups))],
            [row[g]["mean"] if g in row else 0.0 for g in groups],
            width,
            label=name,
            color="#999999" if name == "id-only" else None,
        )
    axes.set_xticks(
        [i + width * (len(names) - 1) / 2 for i in range(len(groups))],
        [f"{g}\n{base[g]['share']:.0%} of test" for g in groups],
    )
    axes.set_xlabel("target's training users")
    axes.set_ylabel("test NDCG@10 (seen items last)")
    axes.legend()


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    parser = common.build_parser(__doc__)
    parser.add_argument("--data", default="ml-100k", help="dataset name")
    common.add_data_path_option(parser)
    parser.add_argument(
        "--item-features",
        metavar="FILE",
        help="the items' attributes (a RecBole .item file), e.g. "
        "../shared/data/amazon-sports/sports.item with --data file "
        "--data-path ../shared/data/amazon-sports/sports.inter",
    )
    parser.add_argument(
        "--recipe", choices=sorted(RECIPES), help="a named recipe's settings"
    )
    parser.add_argument(
        "--encoder", choices=("gru4rec", "sasrec", "hstu"), default=None
    )
    parser.add_argument(
        "--model",
        type=common.json_object,
        default={},
        metavar="JSON",
        help="other model settings of every variant, a JSON object (the "
        "runs' names say them), e.g. '{\"num_layers\": 2}'. Default: {}",
    )
    parser.add_argument(
        "--features",
        nargs="+",
        default=["genres", "year"],
        help="item features of the feature variants. Default: genres year",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=tuple(VARIANTS),
        default=list(VARIANTS),
        help="what to train; id-only comes first and is the reference",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--train-windows", action="store_true")
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train nothing: report the seeds that are finished here or "
        "recorded in the report's JSON",
    )
    common.add_training_options(parser, epochs=100, patience=5)
    common.add_report_dir_option(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.variants[0] != "id-only":
        args.variants.insert(0, "id-only")
    base = base_config(args)
    encoder = base.model.value("encoder")
    stem = common.report_stem(
        args.report_dir, "side_information", data_label(args), encoder
    )
    record = recorded_runs(stem + ".json")
    numbers = {"data": data_label(args), "encoder": encoder, "variants": {}}
    for variant in args.variants:
        runs, results = {}, []
        for seed in args.seeds:
            config = variant_config(base, variant, args.features, seed)
            print(f"== {config.name}", flush=True)
            metrics, carried = seed_metrics(
                config, record.get((variant, seed)), args.report_only
            )
            if metrics is None:
                continue
            runs[str(seed)] = {
                "metrics": {
                    name: metrics[name]
                    for name in RECORDED_METRICS
                    if name in metrics
                },
                "settings": common.run_settings(config),
                "carried_over": carried,
            }
            results.append(metrics)
        if results:
            numbers["variants"][variant] = {
                **variant_results(results),
                "runs": runs,
            }
        else:
            numbers.setdefault("not started", []).append(variant)
    if "id-only" not in numbers["variants"]:
        print(
            "No id-only seed is finished or recorded: nothing to report "
            "against (run without --report-only to train).",
            file=sys.stderr,
        )
        return 1
    numbers["id-only"] = numbers["variants"]["id-only"]
    # The command that trains what the report shows: without
    # --report-only, which only reports what is finished or recorded.
    given = sys.argv[1:] if argv is None else argv
    command = common.command_line(
        "side_information", [a for a in given if a != "--report-only"]
    )
    paths = common.write_report(
        stem,
        report_text(args, numbers, command),
        numbers,
        lambda path: draw_chart(numbers, path),
    )
    print(open(paths["md"]).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
