"""Why does Softmax-CPR lose new targets? The ranking or the merge.

On repeat-heavy session data CPR gains on test targets that repeat an item
of the history and loses on the others ("new" targets). Two causes are
possible:

- CPR ranks the items *outside the history* worse than the softmax (the
  shared hidden state or the base logits degraded);
- it ranks them as well, but the *merge* of the two rankings puts history
  items above the new targets.

For each encoder of ``--encoders`` this script trains the softmax and
Softmax-CPR (``Softmax + CPR:100 + Mi`` of the ablation), same data, seed
and budget (at most ``--epochs``, early stopping on validation NDCG@10
with ``--patience``, as ``tfrec-tricks train``), then on the test set:

- overall / repeat / new NDCG@10;
- each new target's rank among the items not in its history
  (``benchmarks.history_ranking.non_history_ranks``):
  NDCG@10, HR@10,
  HR@100, median and mean rank, CPR vs the softmax, with the paired
  difference's standard error; also CPR's *base logits* alone (``f_V . e_x
  + b_x``, the head without its partitions, from
  ``SequentialRetrievalModel.top_k_candidates``);
- the distribution of how many history items each model puts in its
  top-10 (``history_items_in_top_k``), on all test targets and on new
  ones;
- a verdict per encoder: which of the two causes holds, and how the
  change of new-target NDCG@10 splits between them (the non-history
  ranking's change minus the change of what the merge costs).

SASRec has 2 layers and trains every position (as the ablation), GRU4Rec
1 layer, one row per prefix; dropout 0.2, head dropout 0.3.

    python -m benchmarks.cpr_diagnosis --data-path ../shared/data
    python -m benchmarks.cpr_diagnosis --data file --format sessions \\
        --data-path ../shared/data/retailrocket-sessions/interactions.tsv \\
        --max-sessions 20000 --name retailrocket-20k

``--max-sessions N`` keeps the first N sessions (users) of a ``--data
file`` (in the file's order), written to ``<output-dir>/data/`` so that a
rerun reuses its runs. Finished runs of the same settings are reused.

Writes ``benchmarks/results/cpr_diagnosis.md`` (for the default data;
``cpr_diagnosis-<name or data>.md`` otherwise, with ``-<split>`` for
``--split every-user``), the numbers (``.json``) and a chart (``.png``).
"""

import argparse
import sys

import numpy as np

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common, seed_spread  # noqa: E402
from benchmarks.history_ranking import (  # noqa: E402
    concatenate_diagnostics,
    example_diagnostics,
    ndcg_per_example,
    paired_difference,
    summarize_diagnostics,
)
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.layers.common import PADDING_LOGIT  # noqa: E402
from tfrec_tricks.training.ablation import ROWS, row_slug  # noqa: E402
from tfrec_tricks.training.evaluate import eval_batch_size  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402
from tfrec_tricks.training.training_data import prepare_in_memory  # noqa: E402

DEFAULT_DATA = "yoochoose-100k"
K = 10
#: The two heads compared: ablation rows (``tfrec_tricks.training.ablation``).
SOFTMAX, CPR = "Softmax", "Softmax + CPR:100 + Mi"
#: The models of a report, in table order.
MODELS = ("softmax", "cpr", "cpr_base")


def model_labels(cpr_row: str) -> dict:
    """``{model key: label}`` of a report on ``cpr_row`` (an ablation row)."""
    short = cpr_row.removeprefix("Softmax + ")
    return {
        "softmax": SOFTMAX,
        "cpr": short,
        "cpr_base": f"{short}, base logits only",
    }


#: Encoder -> its model options and whether it trains every position.
ENCODERS = {
    "gru4rec": ({}, False),
    "sasrec": ({"num_layers": 2}, True),
}
#: A difference counts when it is larger than this many standard errors.
SIGNIFICANT = 2.0


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, default=DEFAULT_DATA)
    common.add_file_options(parser)
    parser.add_argument(
        "--cpr-row",
        default=CPR,
        metavar="ROW",
        help="the ablation row of the CPR model compared with the softmax. "
        f"Default: {CPR}",
    )
    common.add_synthetic_options(parser)
    parser.add_argument(
        "--encoders",
        type=common.name_list(tuple(ENCODERS), "encoders"),
        default=["gru4rec", "sasrec"],
        metavar="E[,E]",
        help="encoders, comma-separated. Default: gru4rec,sasrec",
    )
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--head-dropout", type=float, default=0.3)
    common.add_training_options(parser, epochs=10, patience=3)
    common.add_split_option(parser)
    common.add_seed_option(parser)
    common.add_report_dir_option(parser)
    parser.add_argument(
        "--name",
        default=None,
        help="names the report and prefixes the runs. Default: the data "
        "source's name",
    )
    return parser


def base_config(args: argparse.Namespace, encoder: str) -> TrainConfig:
    """The runs' shared ``TrainConfig`` for one encoder (no head yet)."""
    options, every_position = ENCODERS[encoder]
    data_path = common.data_file_path(args)
    return TrainConfig(
        data=args.data,
        data_path=data_path,
        file_format=args.file_format,
        synthetic_users=args.synthetic_users,
        synthetic_items=args.synthetic_items,
        epochs=args.epochs,
        patience=args.patience,
        every_position=every_position,
        split=args.split,
        seed=args.seed,
        output_dir=args.output_dir,
        name=f"cpr_diagnosis-{common.data_label(args)}-{encoder}",
        model={
            "encoder": encoder,
            "head_dropout": args.head_dropout,
            **options,
        },
    )


def base_logits(model, history, states) -> np.ndarray:
    """CPR's base logits ``f_V . e_x + b_x`` over the catalogue ``[B, N]``.

    From the model's top-k index over every item
    (``top_k_candidates(k=N)``: all items outside the history, then the
    history, with their base logits); padding gets ``PADDING_LOGIT``.
    """
    num_items = model.config.num_items
    ids, values = model.top_k_candidates(history, states, k=num_items)
    ids, values = ids.numpy(), values.numpy()
    logits = np.full((ids.shape[0], num_items), PADDING_LOGIT, np.float32)
    logits[np.arange(ids.shape[0])[:, None], ids] = values
    logits[:, 0] = PADDING_LOGIT  # fillers wrote into column 0
    return logits


def model_diagnostics(model, examples, k: int = K) -> dict:
    """``example_diagnostics`` of the model's test scores, per score kind.

    Returns:
        ``{"model": diagnostics}``, with ``"base"`` (``base_logits``) for
        a CPR head; and ``"targets"``, the examples' target ids.
    """
    parts = {"model": []}
    if model.config.head == "cpr":
        parts["base"] = []
    targets = []
    batch_size = eval_batch_size(model.config.num_items)
    for batch in make_dataset(examples, batch_size, bucket_by_length=False):
        history, states = model.encode(batch, training=False)
        full_history = batch["history"].numpy()
        target = batch["target"].numpy()
        targets.append(target)
        scores = model.logits(history, states).numpy()
        parts["model"].append(
            example_diagnostics(scores, full_history, target, k)
        )
        if "base" in parts:
            parts["base"].append(
                example_diagnostics(
                    base_logits(model, history, states),
                    full_history,
                    target,
                    k,
                )
            )
    result = {name: concatenate_diagnostics(p) for name, p in parts.items()}
    result["targets"] = np.concatenate(targets)
    return result


def compare(softmax: dict, cpr: dict, base: dict, k: int = K) -> dict:
    """Paired differences on new targets, CPR (and its base) vs softmax.

    Per new target: NDCG@k among non-history items (``non_history``), and
    what the merge costs, that minus NDCG@k among all items (``merge
    cost``). ``new`` = ``non_history`` - ``merge_cost``, so the change of
    new-target NDCG@k (CPR - softmax) is the change of the non-history
    ranking minus the change of the merge cost.
    """
    new = ~softmax["repeat"]
    if not np.array_equal(new, ~cpr["repeat"]):
        raise ValueError("The models were not scored on the same examples.")

    def per_example(diagnostics: dict) -> dict:
        inner = ndcg_per_example(diagnostics["non_history_rank"][new], k)
        full = ndcg_per_example(diagnostics["rank"][new], k)
        return {"non_history": inner, "merge_cost": inner - full, "new": full}

    ours = {"softmax": per_example(softmax), "cpr": per_example(cpr)}
    ours["cpr_base"] = per_example(base)
    result = {}
    for name in ("cpr", "cpr_base"):
        result[name] = {}
        for part in ("new", "non_history", "merge_cost"):
            mean, error = paired_difference(
                ours[name][part], ours["softmax"][part]
            )
            result[name][part] = {"difference": mean, "standard_error": error}
    result["merge_cost"] = {
        name: float(values["merge_cost"].mean()) if new.any() else 0.0
        for name, values in ours.items()
    }
    return result


def significant(change: dict) -> int:
    """-1, 0 or +1: the sign of a difference beyond ``SIGNIFICANT`` errors."""
    margin = SIGNIFICANT * change["standard_error"]
    if change["difference"] < -margin:
        return -1
    return 1 if change["difference"] > margin else 0


#: The diagnosis: which part of the new-target NDCG@10 change is beyond
#: noise (``significant``) -> the verdict's headline.
CASES = {
    "merge": "the loss is in the merge",
    "ranking": "the non-history ranking degraded, not the merge",
    "both": "both: the non-history ranking degraded and the merge costs more",
    "neither": "neither part differs beyond noise",
}


def diagnosis_case(comparison: dict) -> str:
    """A key of ``CASES``: does CPR rank non-history items significantly
    worse than the softmax, does its merge cost significantly more, or
    both, or neither?"""
    ranking = significant(comparison["cpr"]["non_history"]) < 0
    merge = significant(comparison["cpr"]["merge_cost"]) > 0
    if ranking and merge:
        return "both"
    if ranking:
        return "ranking"
    return "merge" if merge else "neither"


def verdict(encoder: str, result: dict) -> str:
    """The diagnosis of one encoder, one paragraph with its numbers."""
    summaries, comparison = result["summaries"], result["comparison"]

    def figure(part: str, name: str, metric: str = "ndcg@10") -> float:
        return summaries[name][part].get(metric, 0.0)

    change = comparison["cpr"]["non_history"]
    word = {-1: "worse than", 0: "as well as", 1: "better than"}
    text = (
        f"**{encoder}: {CASES[diagnosis_case(comparison)]}.** CPR ranks "
        f"non-history items {word[significant(change)]} the softmax "
        "(NDCG@10 of new targets among non-history items "
        f"{figure('new_non_history', 'cpr'):.4f} vs "
        f"{figure('new_non_history', 'softmax'):.4f}, "
        f"{change['difference']:+.4f} ± {change['standard_error']:.4f})."
    )
    total = comparison["cpr"]["new"]["difference"]
    merge = comparison["cpr"]["merge_cost"]
    cost = comparison["merge_cost"]
    top = {
        name: summaries[name]["history_in_top_k"]["new"]["mean"]
        for name in MODELS
    }
    new = summaries["cpr"]["by_kind"]["new"].get("ndcg@10", 0.0)
    text += (
        f" New-target NDCG@10 {new:.4f} vs "
        f"{summaries['softmax']['by_kind']['new'].get('ndcg@10', 0.0):.4f} "
        f"({total:+.4f}) = non-history ranking {change['difference']:+.4f} "
        f"- merge cost change {merge['difference']:+.4f} ± "
        f"{merge['standard_error']:.4f} (the merge costs CPR "
        f"{cost['cpr']:.4f}, the softmax {cost['softmax']:.4f}; history "
        f"items in the top-10 of new targets: {top['cpr']:.2f} vs "
        f"{top['softmax']:.2f} on average)."
    )
    base = comparison["cpr_base"]["non_history"]
    text += (
        " CPR's base logits alone rank non-history items "
        f"{word[significant(base)]} the softmax (NDCG@10 "
        f"{figure('new_non_history', 'cpr_base'):.4f}, "
        f"{base['difference']:+.4f} ± {base['standard_error']:.4f}; "
        "HR@100, the reranker's reach, "
        f"{figure('new_non_history', 'cpr_base', 'hr@100'):.4f} vs "
        f"{figure('new_non_history', 'softmax', 'hr@100'):.4f})."
    )
    return text


def diagnose(args: argparse.Namespace, verbose: int = 0) -> dict:
    """Trains (or reuses) each encoder's two runs and diagnoses them."""
    results = {"encoders": {}, "labels": model_labels(args.cpr_row)}
    data = None
    for encoder in args.encoders:
        base = base_config(args, encoder)
        runs = {}
        for key, row in (("softmax", SOFTMAX), ("cpr", args.cpr_row)):
            config = seed_spread.row_config(base, row, args.seed, args.dropout)
            if verbose:
                print(f"== {encoder}, {row}", flush=True)
            runs[key] = (config, train(config, verbose=verbose))
        if data is None:
            # The same data options for every run: loaded once.
            data = prepare_in_memory(runs["softmax"][0])[1]
        found = {
            key: model_diagnostics(run.model, data.test)
            for key, (_, run) in runs.items()
        }
        if not np.array_equal(
            found["softmax"]["targets"], found["cpr"]["targets"]
        ):
            raise ValueError("The models were not scored on the same examples.")
        diagnostics = {
            "softmax": found["softmax"]["model"],
            "cpr": found["cpr"]["model"],
            "cpr_base": found["cpr"]["base"],
        }
        results["encoders"][encoder] = {
            "runs": {
                key: {
                    "run_dir": run.run_dir,
                    "epochs_run": run.metrics.get("epochs_run"),
                    "test": run.metrics["test"],
                    "test_by_target": run.metrics.get("test_by_target", {}),
                }
                for key, (_, run) in runs.items()
            },
            "summaries": {
                name: summarize_diagnostics(values, K)
                for name, values in diagnostics.items()
            },
            "comparison": compare(
                diagnostics["softmax"],
                diagnostics["cpr"],
                diagnostics["cpr_base"],
            ),
        }
    results["data"] = {
        "num_items": int(data.num_items),
        "test_examples": int(len(data.test.target)),
    }
    for encoder, result in results["encoders"].items():
        result["case"] = diagnosis_case(result["comparison"])
        result["verdict"] = verdict(encoder, result)
    return results


def _row(cells: list) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def report(results: dict, args: argparse.Namespace, command: str) -> str:
    encoders = results["encoders"]
    first = next(iter(encoders.values()))["summaries"]["softmax"]
    history = first["history"]
    share = first["by_kind"]["repeat"]["share"]
    count = first["history_in_top_k"]["all"]["count"]
    new_count = first["new_non_history"]["count"]
    data = results["data"]
    lines = [
        f"# Why CPR loses new targets: {common.data_label(args)}",
        "",
        f"Command: `{command}`",
        "",
        f"Softmax vs {args.cpr_row}, seed {args.seed}, dropout "
        f"{args.dropout}, head dropout {args.head_dropout}, at most "
        f"{args.epochs} epochs, patience {args.patience} on validation "
        f"NDCG@10, split {args.split}; SASRec: 2 layers, every position. "
        f"Test: {count:,} examples, {data['num_items'] - 1:,} items, "
        f"{share:.1%} repeat targets ({new_count:,} new); history "
        f"{history['mean_length']:.2f} items on average "
        f'({history["mean_distinct"]:.2f} distinct). "Base logits only": '
        "CPR's f_V . e_x + b_x, the head without its partitions. They "
        "choose the reranker's top-100 and score the items outside it and "
        "the history; inside it the reranker's scores replace them, so "
        "their order there is never trained: their HR@100 among "
        "non-history items (the reranker's reach, less the slots history "
        "items take) is what counts, not their NDCG@10.",
        "",
        "## Test NDCG@10 by target kind",
        "",
        "| encoder | model | all | repeat | new | epochs |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for encoder, result in encoders.items():
        for name, label in results["labels"].items():
            summary = result["summaries"][name]
            kinds = summary["by_kind"]
            run = result["runs"].get(name, {})  # the base is no run
            lines.append(
                _row(
                    [
                        encoder,
                        label,
                        f"{summary['overall']['ndcg@10']:.4f}",
                        f"{kinds['repeat'].get('ndcg@10', 0.0):.4f}",
                        f"{kinds['new'].get('ndcg@10', 0.0):.4f}",
                        run.get("epochs_run", ""),
                    ]
                )
            )
    lines += [
        "",
        "## New targets ranked among the items not in their history",
        "",
        "Rank among non-history items (pessimistic ties); pushed out: the "
        "share of new targets in the top-10 among non-history items but not "
        "among all items (history items took their place). Difference: "
        "CPR minus softmax, paired over the same targets, ± one standard "
        "error.",
        "",
        "| encoder | model | NDCG@10 | vs softmax | HR@10 | HR@100 "
        "| median rank | mean rank | pushed out |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for encoder, result in encoders.items():
        for name, label in results["labels"].items():
            inner = result["summaries"][name]["new_non_history"]
            change = result["comparison"].get(name, {}).get("non_history")
            lines.append(
                _row(
                    [
                        encoder,
                        label,
                        f"{inner.get('ndcg@10', 0.0):.4f}",
                        f"{change['difference']:+.4f} ± "
                        f"{change['standard_error']:.4f}"
                        if change
                        else "",
                        f"{inner.get('hr@10', 0.0):.4f}",
                        f"{inner.get('hr@100', 0.0):.4f}",
                        f"{inner.get('median_rank', 0.0):g}",
                        f"{inner.get('mean_rank', 0.0):.1f}",
                        f"{result['summaries'][name]['merge_loss']:.1%}",
                    ]
                )
            )
    lines += [
        "",
        "## Where the new-target loss goes",
        "",
        "NDCG@10 of new targets = NDCG@10 among non-history items - what "
        "the merge costs; CPR minus softmax, per part (paired, ± one "
        "standard error).",
        "",
        "| encoder | new-target NDCG@10 | non-history ranking "
        "| merge cost | merge cost, softmax / CPR |",
        "|---|---:|---:|---:|---:|",
    ]
    for encoder, result in encoders.items():
        parts = result["comparison"]["cpr"]
        cost = result["comparison"]["merge_cost"]
        lines.append(
            _row(
                [
                    encoder,
                    *(
                        f"{parts[p]['difference']:+.4f} ± "
                        f"{parts[p]['standard_error']:.4f}"
                        for p in ("new", "non_history", "merge_cost")
                    ),
                    f"{cost['softmax']:.4f} / {cost['cpr']:.4f}",
                ]
            )
        )
    lines += [
        "",
        "## History items in the top-10",
        "",
        "Share of test examples with 0..10 distinct history items among "
        "their top-10 items.",
        "",
        "| encoder | model | targets | "
        + " | ".join(str(i) for i in range(K + 1))
        + " | mean |",
        "|---|---|---|" + "---:|" * (K + 2),
    ]
    for encoder, result in encoders.items():
        for kind, kind_label in (("all", "all"), ("new", "new")):
            for name, label in results["labels"].items():
                part = result["summaries"][name]["history_in_top_k"][kind]
                total = max(part["count"], 1)
                lines.append(
                    _row(
                        [
                            encoder,
                            label,
                            kind_label,
                            *(f"{c / total:.1%}" for c in part["histogram"]),
                            f"{part['mean']:.2f}",
                        ]
                    )
                )
    lines += ["", "## Verdict", ""]
    lines += [f"- {result['verdict']}" for result in encoders.values()]
    return "\n".join(lines) + "\n"


def plot(results: dict, path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    encoders = list(results["encoders"])
    kinds = (("all", "all test targets"), ("new", "new targets"))
    fig, axes = plt.subplots(
        len(encoders),
        len(kinds),
        figsize=(11, 3.2 * len(encoders)),
        squeeze=False,
    )
    positions = np.arange(K + 1)
    width = 0.4
    for i, encoder in enumerate(encoders):
        summaries = results["encoders"][encoder]["summaries"]
        for j, (kind, kind_label) in enumerate(kinds):
            axis = axes[i][j]
            for offset, name in ((-width / 2, "softmax"), (width / 2, "cpr")):
                part = summaries[name]["history_in_top_k"][kind]
                shares = np.asarray(part["histogram"]) / max(part["count"], 1)
                axis.bar(
                    positions + offset,
                    100 * shares,
                    width,
                    label=f"{results['labels'][name]} "
                    f"(mean {part['mean']:.2f})",
                )
            axis.set_xticks(positions)
            axis.set_xlabel("history items in the top-10")
            axis.set_ylabel("% of examples")
            axis.set_title(f"{encoder}, {kind_label}", fontsize=10)
            axis.legend(fontsize=8)
    fig.suptitle(f"{title}: history items in the top-10, CPR vs softmax")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report_stem(args: argparse.Namespace) -> str:
    """``cpr_diagnosis`` for the default data, else with the data's label."""
    parts = []
    if args.data != DEFAULT_DATA or args.name:
        parts.append(common.data_label(args))
    if args.cpr_row != CPR:
        parts.append(row_slug(args.cpr_row))
    return common.report_stem(
        args.report_dir, "cpr_diagnosis", *parts, split=args.split
    )


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    common.check_file_options(parser, args)
    if ROWS.get(args.cpr_row, {}).get("head") != "cpr":
        cpr_rows = [row for row, o in ROWS.items() if o.get("head") == "cpr"]
        parser.error(
            f"--cpr-row must be an ablation row of the CPR head, one of "
            f"{cpr_rows}. Received: {args.cpr_row!r}"
        )
    results = diagnose(args, verbose=2)
    text = report(results, args, common.command_line("cpr_diagnosis", argv))
    common.write_report(
        report_stem(args),
        text,
        numbers=results,
        chart=lambda path: plot(results, path, common.data_label(args)),
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
