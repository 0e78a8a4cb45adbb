"""Cold items: how well are new items recommended from their attributes?

Holds ``--cold-share`` of the items (10%, drawn at random with ``--seed``)
out of every training sequence and trains on the rest with item features
(``--features``, the default fusion). A held-out item keeps only its
occurrences at a user's last two positions, the validation and test
targets of RecBole's leave-one-out split: it is in no training example,
so the model replaces its id embedding by the mean trained row and ranks
it by its attributes (a cold item). The report gives, over the test
targets that are cold items, the model's NDCG@10 and HR@10 (its
``metrics.json``'s ``test_by_target["cold"]``), HR@100 and the median
rank (from its test scores), mean [min, max] over ``--seeds``, against
baselines scored on the same examples the same way: full ranking over
the whole catalogue, ties pessimistic
(``tfrec_tricks.evaluation.full_ranking``), no seen-item exclusion. The
run's head is train's default (``--head auto``: on MovieLens, without
repeats, ``softmax_no_dup``, which ranks each example's history last);
when it ranks the history last, so do the baselines.

    python -m benchmarks.cold_items --data ml-100k --data-path ../shared/data

    python -m benchmarks.cold_items --data ml-1m --data-path ../shared/data

``--data file --data-path FILE --item-features FILE.item`` reads another
dataset and its RecBole ``.item`` file.

The work files, under ``--work-dir`` (``runs/benchmarks/cold-items``):
``data/<data>-cold<P>-pick<S>.txt``, the interactions without the
held-out items' training occurrences (``user item`` lines, each user's in
time order: ``--format sasrec``), and ``.item``, every item's attributes
(held-out items included), and one run directory per seed.

Baselines (user-independent scores; the same cold targets):

- random: the exact expectation of a uniform random ranking (the mean of
  each metric over ranks 1 .. N - 1), not a draw; its median rank is N / 2;
- popularity: items by their training count; cold items all count 0,
  tie with each other and rank near last;
- popularity within attribute (``--attribute``, genres): a genre's
  popularity is the sum of the training target counts of the items that
  hold it; an item scores the mean of its genres' popularities (0 without
  a genre; the out-of-vocabulary token is one genre), ties broken by its
  own training count (0 for a cold item): what attributes plus
  popularity give without a model;
- references, not baselines: popularity before the hold-out, the
  training counts with the held-out items' interactions kept, which knows
  how popular each new item turns out (whether even that puts them in a
  top 10); and every cold item ranked ahead of every
  trained one, which knows which items are new (the model is not told),
  the cold items in random order (the exact expectation), by the
  popularity within attribute above, or by the model's scores (a cold
  target's rank among the cold items): how well each orders the new
  items among themselves.

The baselines tie items often (the model only ties cold items of equal
attributes): beside the pessimistic numbers (the model's rule) the report
gives the exact expectation with ties broken at random, for the model's
rows too.

The report's "new items into the list" section asks what it takes to
put the new items into a top 10, from the same runs' scores
(``benchmarks.cold_tradeoff``): a new-item offset added to every cold
item's score, the largest whose validation warm NDCG@10 stays within 2%
of the model's own list, and 1 to 3 slots of the list reserved for the
best cold items; each with its test cold HR@10 and warm cost, and a chart
of the whole offset curve (``<stem>-lists.png``).

The hold-out and its work files are ``benchmarks.cold_holdout``'s, the
baselines' scores and ranks ``benchmarks.cold_baselines``'.

Writes ``benchmarks/results/cold-items/cold_items-<data>-<encoder>.md``
(and ``.json``, ``.png``). Finished runs of the same configuration are
reused, so an interrupted benchmark resumes where it stopped. The JSON
records each seed's results and settings: a seed with no run in the work
folder (another machine) is carried over from the report's record when
its settings are the same, so the seeds of several machines add up.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from benchmarks.cold_baselines import (  # noqa: E402
    KS,
    baseline_results,
    expected_metrics,
    row_ties,
)
from benchmarks.cold_holdout import (  # noqa: E402
    SPLIT,
    data_label,
    hold_out_label,
    target_counts,
    write_work_files,
)
from benchmarks.cold_tradeoff import (  # noqa: E402
    OFFSET_STEPS,
    SLOTS,
    TradeOff,
    choose_offset,
)
from tfrec_tricks.data.item_features.movielens import (  # noqa: E402
    MOVIELENS_METADATA,
)
from tfrec_tricks.evaluation.full_ranking import (  # noqa: E402
    metrics_from_ranks,
    target_ranks,
)
from tfrec_tricks.training.evaluate import (  # noqa: E402
    cold_items,
    eval_batch_size,
    training_minutes,
)
from tfrec_tricks.training.resumption import finished_metrics  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402
from tfrec_tricks.training.training_data import (  # noqa: E402
    TrainingData,
    load_training_data,
)

WORK_DIR = os.path.join(common.OUTPUT_DIR, "cold-items")
REPORT_DIR = os.path.join(common.RESULTS, "cold-items")
#: What the table and the chart show of the cold targets.
METRICS = ("ndcg@10", "hr@10", "hr@100")
BASELINES = {
    "random": "uniform random ranking (exact expectation)",
    "popularity": "training count (cold items all 0)",
    "popularity within attribute": "mean genre popularity, then own count",
    "popularity before the hold-out": "reference: training count with the "
    "held-out items' interactions kept (how popular the new items turn "
    "out; no ranker can know it)",
    "new items, random order": "reference: cold items first, at random "
    "(exact expectation)",
    "new items, by attribute": "reference: cold items first, then by "
    "popularity within attribute",
}
#: The row of the model's scores with the cold items first.
MODEL_NEW_FIRST = "new items, by the model"
#: The rows that know what the model cannot: which items are new, or how
#: popular they turn out. The first of them starts the references.
REFERENCES = (
    "popularity before the hold-out",
    "new items, random order",
    "new items, by attribute",
    MODEL_NEW_FIRST,
)


# ----------------------------------------------------------- runs


def run_config(args: argparse.Namespace, paths: dict, seed: int) -> TrainConfig:
    """One seed's run on the held-out data, with item features."""
    model = {"encoder": args.encoder, **args.model}
    model["features"] = list(args.features)
    return TrainConfig(
        data="file",
        data_path=paths["interactions"],
        file_format="sasrec",
        item_features=paths["items"],
        split=SPLIT,
        epochs=args.epochs,
        patience=args.patience,
        train_windows=args.train_windows,
        seed=seed,
        output_dir=args.work_dir,
        name=f"{hold_out_label(args)}-{args.encoder}-seed{seed}",
        model=model,
    )


def cold_metrics(
    ranks: np.ndarray,
    targets: np.ndarray,
    cold: np.ndarray,
    ties: np.ndarray | None = None,
) -> dict[str, float]:
    """Metrics at ``KS`` and the median rank of the cold targets' ranks.

    With ``ties`` (the items scoring as each target does, itself
    included), also ``"ndcg@10 ties at random"``: its expectation with the
    ties broken at random (``expected_metrics``).

    >>> cold_metrics(np.array([1, 4, 50]), np.array([1, 2, 3]),
    ...              np.array([False, False, True, True]))["median rank"]
    27.0
    """
    is_cold = np.asarray(cold, bool)[np.asarray(targets)]
    ranks = np.asarray(ranks)[is_cold]
    results = {
        **metrics_from_ranks(ranks, KS),
        "median rank": float(np.median(ranks)),
    }
    if ties is not None:
        ties = np.asarray(ties)[is_cold]
        results["ndcg@10 ties at random"] = expected_metrics(
            ranks - ties, ties, len(cold) - 1, (10,)
        )["ndcg@10"]
    return results


def model_ranks(
    model, training: TrainingData, config: TrainConfig, cold: np.ndarray
) -> dict[str, np.ndarray]:
    """A trained model's test ranks, batched as its evaluation batches
    them: ``"ranks"`` over the whole catalogue (as its head scores it), ``"cold
    first"`` with every cold item ahead of every trained one (for a cold
    target: its rank among the cold items), and their ``"targets"``."""
    out: dict[str, list] = {
        key: [] for key in ("ranks", "ties", "cold first", "cold first ties")
    }
    out["targets"] = []
    for batch in training.batches(
        "test",
        eval_batch_size(training.num_items),
        bucket_by_length=config.bucket_by_length,
    ):
        target = batch["target"].numpy().reshape(-1)
        scores = model(batch, training=False).numpy()
        out["ranks"].append(target_ranks(scores, target))
        out["ties"].append(row_ties(scores, target))
        scores[:, ~cold] = -np.inf
        out["cold first"].append(target_ranks(scores, target))
        out["cold first ties"].append(row_ties(scores, target))
        out["targets"].append(target)
    return {key: np.concatenate(parts) for key, parts in out.items()}


def trade_offs(
    model, training: TrainingData, config: TrainConfig, cold: np.ndarray
) -> dict:
    """What a new-item offset and reserved slots do on validation and test
    (``benchmarks.cold_tradeoff``), and the offset chosen on validation:
    the largest whose warm NDCG@10 stays within 2% of the model's own."""
    out: dict = {"steps": list(OFFSET_STEPS)}
    for split in ("validation", "test"):
        trade = TradeOff(cold=cold, offsets=OFFSET_STEPS)
        for batch in training.batches(
            split,
            eval_batch_size(training.num_items),
            bucket_by_length=config.bucket_by_length,
        ):
            target = batch["target"].numpy().reshape(-1)
            trade.add(model(batch, training=False).numpy(), target)
        results = trade.results()
        # By step (the offset in score deviations), JSON-friendly keys.
        out[split] = {
            "offset": {
                str(step): results["offset"][step] for step in OFFSET_STEPS
            },
            "slots": {str(r): results["slots"][r] for r in SLOTS},
        }
    chosen = choose_offset(
        {float(k): v for k, v in out["validation"]["offset"].items()}
    )
    out["chosen step"] = chosen
    out["chosen"] = out["test"]["offset"][str(chosen)]
    return out


def model_results(runs: list[dict]) -> dict:
    """The runs' cold-target and overall test metrics, over the seeds.

    NDCG@10 and HR@10 are the runs' ``test_by_target["cold"]``; HR@100
    and the median rank come from the runs' test ranks (``model_ranks``),
    whose NDCG@10 must agree (``"rescored ndcg@10"``).
    """
    out = {}
    for metric in METRICS:
        official = [
            r["metrics"]["test_by_target"]["cold"].get(metric) for r in runs
        ]
        rescored = [r["rescored"][metric] for r in runs]
        out[f"cold {metric}"] = common.summarise(
            rescored if None in official else official
        )
    out["cold median rank"] = common.summarise(
        [r["rescored"]["median rank"] for r in runs]
    )
    out["rescored ndcg@10"] = [r["rescored"]["ndcg@10"] for r in runs]
    tied = "ndcg@10 ties at random"
    out[MODEL_NEW_FIRST] = {
        name: common.summarise([r["cold first"][name] for r in runs])
        for name in (*METRICS, "median rank", tied)
    }
    out[f"cold {tied}"] = common.summarise([r["rescored"][tied] for r in runs])
    for metric in ("ndcg@10", "hr@10"):
        out[f"test {metric}"] = common.summarise(
            [r["metrics"]["test"][metric] for r in runs]
        )
    out["cold share"] = runs[0]["metrics"]["test_by_target"]["cold"]["share"]
    out["epochs"] = [r["metrics"]["epochs_run"] for r in runs]
    out["training minutes"] = [training_minutes(r["metrics"]) for r in runs]
    out["new items into the list"] = list_results(runs)
    return out


#: The trade-off rows' metrics, on the test split.
TRADE_METRICS = ("cold hr@10", "cold ndcg@10", "warm ndcg@10")


def list_results(runs: list[dict]) -> dict:
    """Over the seeds, on test: the model's own list, the new-item offset
    chosen on validation (and the step chosen per seed), each reserved
    slot count, and every offset's (for the chart)."""
    trades = [r["trade-offs"] for r in runs]

    def summary(rows: list[dict]) -> dict:
        return {m: common.summarise([row[m] for row in rows])
                for m in TRADE_METRICS}  # fmt: skip

    out = {
        "model's list": summary([t["test"]["offset"]["0.0"] for t in trades]),
        "offset chosen on validation": summary([t["chosen"] for t in trades]),
        "chosen steps": [t["chosen step"] for t in trades],
        "slots": {
            r: summary([t["test"]["slots"][r] for t in trades])
            for r in trades[0]["test"]["slots"]
            if r != "0"
        },
        "offsets": {
            step: summary([t["test"]["offset"][step] for t in trades])
            for step in trades[0]["test"]["offset"]
        },
    }
    return out


# ----------------------------------------------------------- report


def cell(row: dict, digits: int = 4) -> str:
    """``mean [min, max]``, or the one value of a baseline."""
    if isinstance(row, dict):
        return (
            f"{row['mean']:.{digits}f} [{row['min']:.{digits}f}, "
            f"{row['max']:.{digits}f}]"
        )
    return f"{row:.{digits}f}"


def carried_note(runs: list[dict]) -> list[str]:
    """The report's line naming the seeds carried over from its record."""
    seeds = [str(r["seed"]) for r in runs if r.get("carried over")]
    if not seeds:
        return []
    return [
        "",
        "Carried over from this report's earlier record (trained on "
        f"another machine, same settings): seeds {', '.join(seeds)}.",
    ]


def report_text(args, numbers: dict, command: str) -> str:
    """The markdown report: what was held out, the table, the command."""
    held, targets, model = (
        numbers["held out"],
        numbers["targets"],
        numbers["model"],
    )
    lines = [
        f"# Cold items on {numbers['data']} ({numbers['encoder']})",
        "",
        f"{len(held['items'])} of {held['num_items']:,} items "
        f"({args.cold_share:.0%}, drawn with seed {args.seed}) held out of "
        f"every training sequence: {held['removed']:,} interactions "
        f"removed, {held['dropped_users']} user(s) dropped, "
        f"{held['interactions']:,} kept. Test targets: "
        f"{targets['test targets']:,}, of which {targets['cold']:,} "
        f"({targets['cold share']:.1%}) are cold items "
        f"({targets['held out']:,} held out, "
        f"{targets['cold'] - targets['held out']:,} never trained anyway; "
        f"{targets['distinct cold targets']} distinct items). Catalogue: "
        f"{targets['catalogue']:,} items, {targets['cold items']:,} cold.",
        "",
        f"Model: {numbers['encoder']}, item features "
        f"{' + '.join(args.features)} (default fusion), training windows "
        f"{'on' if args.train_windows else 'off'}, at most {args.epochs} "
        f"epochs, patience {args.patience}; seeds "
        f"{', '.join(map(str, args.seeds))}. Full ranking over the "
        "catalogue, ties pessimistic"
        + (
            ", each example's history ranked last (the run's head does; "
            "the baselines too)"
            if numbers["history ranked last"]
            else ", nothing excluded"
        )
        + "; mean [min, max] over the seeds.",
        "",
        "| ranker | cold NDCG@10 | cold HR@10 | cold HR@100 | cold median "
        f"rank (of {targets['catalogue']:,}) | cold NDCG@10, ties at random "
        "| test NDCG@10 (all targets) |",
        "|---|---|---|---|---|---|---|",
        f"| model | {cell(model['cold ndcg@10'])} | "
        f"{cell(model['cold hr@10'])} | {cell(model['cold hr@100'])} | "
        f"{cell(model['cold median rank'], 0)} | "
        f"{cell(model['cold ndcg@10 ties at random'])} | "
        f"{cell(model['test ndcg@10'])} |",
    ]
    for name, row in numbers["baselines"].items():
        lines.append(
            f"| {name} | {cell(row['cold']['ndcg@10'])} | "
            f"{cell(row['cold']['hr@10'])} | {cell(row['cold']['hr@100'])} | "
            f"{cell(row['cold']['median rank'], 0)} | "
            f"{cell(row['cold ties at random']['ndcg@10'])} | "
            f"{cell(row['all']['ndcg@10'])} |"
        )
    first = model[MODEL_NEW_FIRST]
    lines.append(
        f"| {MODEL_NEW_FIRST} | {cell(first['ndcg@10'])} | "
        f"{cell(first['hr@10'])} | {cell(first['hr@100'])} | "
        f"{cell(first['median rank'], 0)} | "
        f"{cell(first['ndcg@10 ties at random'])} | |"
    )
    lines += list_table(numbers)
    minutes = model["training minutes"]
    lines += [
        "",
        "Baselines: "
        + "; ".join(f"{k}: {v}" for k, v in BASELINES.items())
        + ". Random is the exact expectation, not a draw.",
        "",
        f"Epochs per seed: {', '.join(map(str, model['epochs']))}; training "
        f"minutes (epochs x median epoch): "
        f"{', '.join(f'{m:.1f}' for m in minutes)}.",
        *carried_note(numbers.get("runs", [])),
        "",
        "```",
        command,
        "```",
    ]
    return "\n".join(lines)


def list_table(numbers: dict) -> list[str]:
    """The report's "new items into the list" section: the model's list,
    the offset chosen on validation, reserved slots; on test."""
    lists = numbers["model"].get("new items into the list")
    if not lists:
        return []
    own = lists["model's list"]
    random_hr = numbers["baselines"]["random"]["cold"]["hr@10"]
    within = numbers["baselines"]["popularity within attribute"]["cold"]
    rows = [("the model's list", own)]
    steps = ", ".join(f"{step:g}" for step in lists["chosen steps"])
    rows.append(
        (f"new-item boost chosen on validation ({steps} sd)",
         lists["offset chosen on validation"])
    )  # fmt: skip
    for slots, row in lists["slots"].items():
        rows.append((f"{slots} reserved slot{'s' * (slots != '1')}", row))
    lines = [
        "",
        "### New items into the list (test)",
        "",
        "The same runs' scores, with every cold item's score raised by a "
        "boost (`recommend --new-item-boost`: the largest, in standard "
        "deviations of each user's scores, whose validation warm NDCG@10 "
        "stays within 2% of the model's list) or with the list's last "
        "slots reserved for the best cold items. Warm: the test targets "
        "that are trained items. Random "
        f"gives a cold HR@10 of {random_hr:.4f} (10x: {10 * random_hr:.4f}); "
        f"popularity within attribute {within['hr@10']:.4f}.",
        "",
        "| list | cold HR@10 | cold NDCG@10 | warm NDCG@10 | warm change |",
        "|---|---|---|---|---|",
    ]
    chart = numbers.get("lists chart")
    base = own["warm ndcg@10"]["mean"]
    for name, row in rows:
        change = row["warm ndcg@10"]["mean"] / base - 1 if base else 0.0
        lines.append(
            f"| {name} | {cell(row['cold hr@10'])} | "
            f"{cell(row['cold ndcg@10'])} | {cell(row['warm ndcg@10'])} | "
            f"{common.signed_percent(change) if name != rows[0][0] else ''} |"
        )
    if chart:
        lines += ["", f"![new items into the list]({chart})"]
    return lines


def draw_trade_off(numbers: dict, path: str) -> None:
    """Cold HR@10 against the warm NDCG@10's change, on test: the offsets
    as a curve, reserved slots as squares, random (x1, x10) as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lists = numbers["model"]["new items into the list"]
    base = lists["model's list"]["warm ndcg@10"]["mean"]

    def point(row: dict) -> tuple[float, float]:
        change = 100 * (row["warm ndcg@10"]["mean"] / base - 1)
        return change, row["cold hr@10"]["mean"]

    figure, axis = plt.subplots(figsize=(7, 4.5))
    curve = [point(row) for row in lists["offsets"].values()]
    axis.plot(*zip(*curve), "o-", color="#4c72b0", label="new-item offset")
    for (x, y), step in zip(curve, lists["offsets"]):
        if round(float(step) * 10) % 5:
            continue  # every half deviation
        axis.annotate(f"{float(step):g}", (x, y), fontsize=7,
                      textcoords="offset points", xytext=(3, 3))  # fmt: skip
    slots = [point(row) for row in lists["slots"].values()]
    axis.plot(*zip(*slots), "s", color="#dd8452", label="reserved slots (1-3)")
    chosen = point(lists["offset chosen on validation"])
    axis.plot(*chosen, "*", ms=14, color="#c44e52",
              label="offset chosen on validation")  # fmt: skip
    random_hr = numbers["baselines"]["random"]["cold"]["hr@10"]
    axis.axhline(random_hr, color="#999999", ls=":", label="random")
    axis.axhline(10 * random_hr, color="#999999", ls="--", label="10x random")
    axis.axvline(-2, color="k", lw=0.8, ls="--", label="-2% warm")
    axis.set_xlabel(
        "warm targets' NDCG@10, change against the model's list (%)"
    )
    axis.set_ylabel("cold targets' HR@10")
    axis.set_title(
        f"New items into the list: {numbers['data']}, {numbers['encoder']} "
        "(boosts in sd of each user's scores)"
    )
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def draw_chart(numbers: dict, path: str) -> None:
    """Horizontal bars per ranker, one panel per metric of ``METRICS``;
    the model's seeds as dots, the references below a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["model", *numbers["baselines"], MODEL_NEW_FIRST]
    model = numbers["model"]
    figure, axes = plt.subplots(1, len(METRICS), figsize=(12, 3.8), sharey=True)
    for axis, metric in zip(axes, METRICS):
        for i, name in enumerate(names):
            if name in ("model", MODEL_NEW_FIRST):
                row = (
                    model[f"cold {metric}"]
                    if name == "model"
                    else model[MODEL_NEW_FIRST][metric]
                )
                axis.barh(i, row["mean"], color="#4c72b0")
                axis.plot(row["values"], [i] * len(row["values"]), "k.", ms=6)
            else:
                value = numbers["baselines"][name]["cold"][metric]
                axis.barh(i, value, color="#999999")
        # The references know which items are new, or how popular.
        axis.axhline(
            min(names.index(name) for name in REFERENCES if name in names)
            - 0.5,
            color="k",
            ls="--",
            lw=0.8,
        )
        axis.set_xlabel(f"cold-target {metric.upper()}")
    axes[0].set_yticks(range(len(names)), names)
    axes[0].invert_yaxis()
    figure.suptitle(
        f"Cold items: {numbers['data']}, {numbers['encoder']} "
        f"({numbers['targets']['cold']} cold test targets; below the "
        "line: references that know which items are new, or how popular)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# ----------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(
        parser,
        "ml-1m",
        f"{', '.join(MOVIELENS_METADATA)} (their metadata) or file "
        "(with --item-features). Default: ml-1m",
    )
    common.add_format_option(parser)
    parser.add_argument(
        "--item-features",
        default=None,
        metavar="FILE",
        help="RecBole .item file of --data file. Default: the MovieLens "
        "dataset's metadata",
    )
    parser.add_argument(
        "--features",
        nargs="+",
        default=["genres", "year"],
        help="item features the model reads. Default: genres year",
    )
    parser.add_argument(
        "--attribute",
        default="genres",
        help="token feature of the popularity-within-attribute baseline. "
        "Default: genres",
    )
    parser.add_argument(
        "--cold-share",
        type=float,
        default=0.1,
        help="share of the items held out. Default: 0.1",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the held-out items' draw. Default: 0",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2],
        help="one run per seed (weights, shuffling). Default: 0 1 2",
    )
    parser.add_argument(
        "--encoder", choices=("gru4rec", "sasrec", "hstu"), default="gru4rec"
    )
    parser.add_argument(
        "--train-windows",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="train on windows (see tfrec-tricks train --help). Default: on",
    )
    parser.add_argument(
        "--model",
        type=common.json_object,
        default={},
        help="other model settings, a JSON object. Default: {}",
    )
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument(
        "--work-dir",
        default=WORK_DIR,
        help=f"the work files and runs. Default: {WORK_DIR}",
    )
    parser.add_argument(
        "--report-dir",
        default=REPORT_DIR,
        help="where the report goes. Default: benchmarks/results/cold-items",
    )
    return parser


def train_runs(
    args: argparse.Namespace,
    paths: dict,
    training: TrainingData,
    recorded: dict | None = None,
) -> list[dict]:
    """One run per seed (reused when finished): its metrics (their
    training minutes survive a reuse, unlike a wall clock here), whether
    its head ranks the history last, and the cold targets' metrics from
    its test scores (``model_ranks``), as they are and with the cold
    items first. A seed with no finished run here is carried over from
    ``recorded`` (``recorded_seeds``: an earlier report of the same
    hold-out, trained with the same settings), so the seeds of several
    machines add up."""
    cold = cold_items(training)
    runs = []
    for seed in args.seeds:
        config = run_config(args, paths, seed)
        record = (recorded or {}).get(seed)
        if record is not None and finished_metrics(config) is None:
            # A record without settings is not carried over: the seed
            # could have trained anything.
            carried = common.carried_over(
                (record, record.get("settings", {})),
                config,
                f"Seed {seed}",
                settings=record_settings(config),
            )
            if carried is not None:
                print(f"== {config.name}: carried over", flush=True)
                runs.append({**carried, "carried over": True})
                continue
        print(f"== {config.name}", flush=True)
        result = train(config, verbose=2)
        ranks = model_ranks(result.model, training, config, cold)
        runs.append(
            {
                "seed": seed,
                "settings": record_settings(config),
                "metrics": result.metrics,
                "excludes_history": bool(
                    result.model.head.excludes_history(False)
                ),
                "rescored": cold_metrics(
                    ranks["ranks"], ranks["targets"], cold, ranks["ties"]
                ),
                "cold first": cold_metrics(
                    ranks["cold first"],
                    ranks["targets"],
                    cold,
                    ranks["cold first ties"],
                ),
                "trade-offs": trade_offs(result.model, training, config, cold),
            }
        )
        del result
    return runs


def record_settings(config: TrainConfig) -> dict:
    """What a seed's record must match to be carried over: the run's
    settings (``common.run_settings``), the work files by name only (they
    are written again, the same, under any ``--work-dir``)."""
    settings = common.run_settings(config)
    settings["item_features"] = os.path.basename(settings["item_features"])
    return settings


def recorded_seeds(path: str) -> dict:
    """``{seed: run}`` of the report at ``path`` (``.json``), as
    ``train_runs`` recorded them; ``{}`` without a report or a record."""
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        runs = json.load(handle).get("runs", [])
    return {int(run["seed"]): run for run in runs if "seed" in run}


def check_runs(runs: list[dict], model: dict, targets: dict) -> bool:
    """Whether the runs' heads rank the history last; refuses runs whose
    cold targets are not the baselines' or whose heads differ, and warns
    when the rescored cold NDCG@10 is not the runs' own."""
    if abs(model["cold share"] - targets["cold share"]) > 1e-9:
        raise RuntimeError(
            "The runs' cold test targets are not the baselines': shares "
            f"{model['cold share']} and {targets['cold share']}"
        )
    heads = {run["excludes_history"] for run in runs}
    if len(heads) != 1:
        raise RuntimeError(
            "Some runs rank the history last and others do not: the "
            "baselines cannot follow both. Pin --model '{\"head\": ...}'."
        )
    official = [
        r["metrics"]["test_by_target"]["cold"].get("ndcg@10") for r in runs
    ]
    if None not in official and not np.allclose(
        official, model["rescored ndcg@10"], atol=1e-4
    ):
        print(
            "Warning: the runs' cold NDCG@10 and this script's rescoring "
            f"differ: {official} and {model['rescored ndcg@10']}",
            flush=True,
        )
    return heads.pop()


def report_parts(args: argparse.Namespace) -> list[str]:
    """What the report is named after: the data, the encoder, and the
    share and draw when not the defaults."""
    parts = [data_label(args), args.encoder]
    if args.cold_share != 0.1:
        parts.append(f"cold{args.cold_share * 100:g}")
    if args.seed != 0:
        parts.append(f"pick{args.seed}")
    return parts


def main(argv: list[str] | None = None) -> int:
    """Writes the work files, trains (or reuses) the runs, scores the
    baselines on the same test examples, writes the report."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.data == "file" and not (args.data_path and args.item_features):
        parser.error("--data file needs --data-path FILE and --item-features")
    if args.data != "file" and args.data not in MOVIELENS_METADATA:
        parser.error(
            f"--data takes {', '.join(MOVIELENS_METADATA)} or file. "
            f"Received: {args.data!r}"
        )
    if not 0 < args.cold_share < 1:
        parser.error(f"--cold-share is in (0, 1). Received: {args.cold_share}")
    started = time.perf_counter()
    paths, held = write_work_files(args)
    training = load_training_data(run_config(args, paths, args.seeds[0]))
    targets = target_counts(training, held.held)
    stem = common.report_stem(
        args.report_dir, "cold_items", *report_parts(args)
    )
    runs = train_runs(args, paths, training, recorded_seeds(stem + ".json"))
    model = model_results(runs)
    excludes_history = check_runs(runs, model, targets)
    numbers = {
        "data": data_label(args),
        "encoder": args.encoder,
        "features": list(args.features),
        "history ranked last": excludes_history,
        "held out": {
            "items": held.held,
            "num_items": held.num_items,
            "removed": held.removed,
            "dropped_users": held.dropped_users,
            "interactions": held.interactions,
            "files": paths,
        },
        "targets": targets,
        "model": model,
        "baselines": baseline_results(
            training, args.attribute, excludes_history, held.counts_before
        ),
        "runs": runs,
    }
    numbers["lists chart"] = os.path.basename(stem) + "-lists.png"
    command = common.command_line("cold_items", argv)
    report = write_report_files(stem, args, numbers, command)
    print(report)
    print(f"wall time: {time.perf_counter() - started:.0f} s", flush=True)
    return 0


def write_report_files(stem: str, args, numbers: dict, command: str) -> str:
    """Writes the report's markdown, JSON and chart; the markdown."""
    text = report_text(args, numbers, command)
    common.write_report(
        stem, text, numbers, lambda path: draw_chart(numbers, path)
    )
    if numbers["model"].get("new items into the list"):
        draw_trade_off(numbers, stem + "-lists.png")
    return text


if __name__ == "__main__":
    sys.exit(main())
