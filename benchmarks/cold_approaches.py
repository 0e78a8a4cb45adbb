"""Every way tried to get new items into a list, on one chart and table.

``benchmarks.cold_items`` reports one training (one ``--model``) with its
ways to let new items into the lists: the model's own list, a new-item
boost chosen on validation (``recommend --new-item-boost``), 1-3 reserved
slots (``--new-item-slots``). This puts several such
reports of one dataset and hold-out side by side. Each training is a row
group; the warm targets' NDCG@10 is compared with the first report's
model's list (today's defaults), so a training that costs the warm
targets shows it even before any slot is reserved.

    python -m benchmarks.cold_approaches \\
        --report "defaults=benchmarks/results/cold-items/base/X.json" \\
        --report "id dropout 0.3=benchmarks/results/cold-items/drop/X.json" \\
        --output benchmarks/results/cold-items/approaches-ml-100k

Writes ``<output>.md`` (the table and the command) and ``<output>.png``
(cold HR@10 against the warm change, one colour per training: the
boost curve as a line, the reserved slots as squares, with random x1
and x10, popularity within attribute and the -2% warm budget drawn in).
"""

import argparse
import json
import os
import shlex
import sys

#: The list policies of a ``cold_items`` report, in table order.
POLICIES = ("model's list", "offset chosen on validation", "1", "2", "3")
#: How the table names a policy of a report (the report's key otherwise).
POLICY_NAMES = {
    "offset chosen on validation": "--new-item-boost chosen on validation",
}
#: The warm budget the issue sets (percent).
WARM_BUDGET = -2.0


def read_report(text: str) -> tuple[str, dict]:
    """``LABEL=PATH`` -> ``(label, numbers)``."""
    label, sep, path = text.partition("=")
    if not sep or not label or not path:
        raise ValueError(f"a report is LABEL=PATH.json. Received: {text!r}")
    with open(path, encoding="utf-8") as handle:
        return label, json.load(handle)


def _policy_rows(lists: dict) -> list[tuple[str, dict]]:
    """A training's list policies: ``(name, row)`` in ``POLICIES`` order."""
    rows = []
    for policy in POLICIES:
        if policy in lists:
            rows.append((POLICY_NAMES.get(policy, policy), lists[policy]))
        elif policy in lists.get("slots", {}):
            plural = "s" if policy != "1" else ""
            rows.append(
                (f"{policy} reserved slot{plural}", lists["slots"][policy])
            )
    return rows


def table(reports: list[tuple[str, dict]]) -> str:
    """The markdown table: a row per (training, list policy)."""
    reference = _warm(reports[0][1]["model"]["new items into the list"])
    lines = [
        "| training | list | cold HR@10 | cold NDCG@10 | warm NDCG@10 "
        "| warm change against the first training's list |",
        "|---|---|---|---|---|---|",
    ]
    for label, numbers in reports:
        lists = numbers["model"]["new items into the list"]
        for policy, row in _policy_rows(lists):
            warm = row["warm ndcg@10"]["mean"]
            change = 100 * (warm / reference - 1)
            cells = [label, policy] + [
                _spread(row[metric])
                for metric in ("cold hr@10", "cold ndcg@10", "warm ndcg@10")
            ]
            lines.append(f"| {' | '.join(cells)} | {change:+.1f}% |")
    return "\n".join(lines)


def _warm(lists: dict) -> float:
    return lists["model's list"]["warm ndcg@10"]["mean"]


def _spread(row: dict) -> str:
    return f"{row['mean']:.4f} [{row['min']:.4f}, {row['max']:.4f}]"


def draw(reports: list[tuple[str, dict]], path: str) -> None:
    """Cold HR@10 against the warm change, one colour per training."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reference = _warm(reports[0][1]["model"]["new items into the list"])
    figure, axis = plt.subplots(figsize=(8, 5))
    for index, (label, numbers) in enumerate(reports):
        lists = numbers["model"]["new items into the list"]
        colour = f"C{index}"

        def point(row: dict) -> tuple[float, float]:
            change = 100 * (row["warm ndcg@10"]["mean"] / reference - 1)
            return change, row["cold hr@10"]["mean"]

        curve = [point(row) for row in lists["offsets"].values()]
        axis.plot(
            *zip(*curve), "-", color=colour, lw=1, label=f"{label}: boosts"
        )
        slots = [point(row) for row in lists["slots"].values()]
        axis.plot(*zip(*slots), "s", color=colour, label=f"{label}: 1-3 slots")
        for (x, y), count in zip(slots, lists["slots"]):
            axis.annotate(count, (x, y), fontsize=7, textcoords="offset points",
                          xytext=(4, -3))  # fmt: skip
        axis.plot(*point(lists["model's list"]), "o", color=colour)
    baselines = reports[0][1]["baselines"]
    random_hr = baselines["random"]["cold"]["hr@10"]
    axis.axhline(random_hr, color="#999999", ls=":", label="random")
    axis.axhline(10 * random_hr, color="#999999", ls="--", label="10x random")
    within = baselines["popularity within attribute"]["cold"]["hr@10"]
    if within > 0:
        axis.axhline(within, color="#8c564b", ls="-.",
                     label="popularity within attribute")  # fmt: skip
    axis.axvline(WARM_BUDGET, color="k", lw=0.8, ls="--", label="-2% warm")
    # Offsets that cost more than half the warm NDCG@10 say nothing more.
    axis.set_xlim(left=max(axis.get_xlim()[0], -50))
    axis.set_xlabel(
        "warm targets' NDCG@10, change against the first training's list (%)"
    )
    axis.set_ylabel("cold targets' HR@10")
    axis.set_title(f"New items into the list: {reports[0][1]['data']}")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--report",
        action="append",
        required=True,
        metavar="LABEL=PATH",
        help="a cold_items JSON report and its training's label; the first "
        "is the reference",
    )
    parser.add_argument(
        "--output",
        required=True,
        metavar="STEM",
        help="writes STEM.md and STEM.png",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        reports = [read_report(text) for text in args.report]
    except (ValueError, OSError) as error:
        parser.error(str(error))
    datasets = {numbers["data"] for _, numbers in reports}
    if len(datasets) > 1:
        parser.error(f"the reports hold different datasets: {sorted(datasets)}")
    folder = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(folder, exist_ok=True)
    draw(reports, args.output + ".png")
    command = "python -m benchmarks.cold_approaches " + shlex.join(argv)
    text = (
        f"# New items into the list: {reports[0][1]['data']}\n\n"
        f"{table(reports)}\n\n"
        f"![approaches]({os.path.basename(args.output)}.png)\n\n"
        f"```\n{command}\n```\n"
    )
    with open(args.output + ".md", "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"Wrote {args.output}.md and .png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
