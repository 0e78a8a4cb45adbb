"""The training step with item attributes against ids only, side by side.

Each case builds two models of one catalogue, one with ids only and one
whose items also have a multi-valued attribute (a ``token_seq`` feature:
the ``ItemFeatureEncoder``'s ragged tables, fused by sum), and times
``--steps`` training steps of each on the same random batches (``--batch``
histories of ``--max-len`` items). Each model first runs once untimed
(graph tracing); then the two take turns for ``--rounds - 1`` rounds, so
that a slow spell of the shared host hits both alike. Each round gives a
pair of jobs and their ratio, in wall time and in the process's CPU time
(user + system: what the step computes, whatever else the host runs).
The table gives the median seconds per step, the median of the rounds'
ratios with their spread, and the bytes of the item tables: the ragged
tables' against what padded ``[items, widest row]`` tables would take.

The cases (synthetic attributes; row lengths 1 + Poisson(mean - 1), one
row exactly the widest):

- ``amazon-like``: 18,000 items, mean 5 values, widest 35 (the shape of
  Amazon Sports' attributes), SASRec, d = 64, full softmax;
- ``amazon-like, one 20,000-value row``: the same with one item of
  20,000 values (padded, 1.4 GB of tables);
- ``1M items, full softmax`` and ``1M items, sampled``: 1,000,000 items,
  mean 5, widest 500, d = 32 (the sampled objective is how the package
  trains a million items: ``benchmarks.large_catalogue``).

``--item-file F`` adds a case with the attributes of a real ``.item`` file
(its first ``token_seq`` column, every row an item), e.g. Amazon Sports'.
``--padded`` stores the tables padded instead (``num_values`` left out:
the layout of models saved before ragged tables); run under the code of
before, it measures the padded computation.

    python -m benchmarks.ragged_item_features \\
        --item-file ../shared/data/amazon-sports/sports.item

Writes ``<--report-dir>/ragged-item-features/ragged_item_features.md``,
``.json`` and a chart (``.png``).
"""

import argparse
import dataclasses
import os
import statistics
import sys
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402
from tfrec_tricks.data.item_features.encoding import encode_item_features  # noqa: E402
from tfrec_tricks.data.item_features.item_file import (  # noqa: E402
    SEQUENCE_KINDS,
    TOKEN_KINDS,
    read_item_features,
)
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)

#: Tokens of the synthetic attribute (ids 2 .. VOCABULARY + 1).
VOCABULARY = 2_000
FEATURE = "attributes"


@dataclasses.dataclass(frozen=True)
class Case:
    """One catalogue and model: ``items`` items whose attribute rows hold
    ``mean`` values on average, the widest ``widest`` (and one row of
    ``extra_row`` values when not 0)."""

    label: str
    items: int
    mean: float
    widest: int
    objective: str
    embedding_dim: int
    extra_row: int = 0


CASES = (
    Case("amazon-like", 18_000, 5.0, 35, "full", 64),
    Case("amazon-like, one 20,000-value row", 18_000, 5.0, 35, "full", 64,
         extra_row=20_000),
    Case("1M items, full softmax", 1_000_000, 5.0, 500, "full", 32),
    Case("1M items, sampled", 1_000_000, 5.0, 500, "sampled", 32),
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    parser.add_argument(
        "--cases",
        nargs="+",
        choices=[case.label for case in CASES],
        default=[case.label for case in CASES],
        metavar="CASE",
        help="the synthetic cases to run (default: all): "
        + "; ".join(case.label for case in CASES),
    )
    parser.add_argument(
        "--item-file",
        help="also a case with a real .item file's first token_seq column "
        "(read, never copied)",
    )
    parser.add_argument("--steps", type=common.count, default=8)
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="jobs per model, taking turns, the first not timed (>= 2). "
        "Default: 4",
    )
    parser.add_argument("--batch", type=common.count, default=128)
    parser.add_argument("--max-len", type=common.count, default=50)
    parser.add_argument(
        "--padded",
        action="store_true",
        help="padded tables (the layout before ragged tables)",
    )
    common.add_seed_option(parser)
    common.add_report_dir_option(parser)
    return parser


def synthetic_rows(case: Case, rng: np.random.Generator) -> RaggedRows:
    """Row 0 empty, the others 1 + Poisson(mean - 1) values (at most
    ``widest``), one of exactly ``widest`` and one of ``extra_row``."""
    lengths = 1 + rng.poisson(case.mean - 1, case.items)
    lengths = np.minimum(lengths, case.widest)
    lengths[0] = 0
    lengths[1] = case.widest
    if case.extra_row:
        lengths[2] = case.extra_row
    splits = np.concatenate([[0], np.cumsum(lengths)])
    values = rng.integers(2, VOCABULARY + 2, int(splits[-1]), np.int32)
    return RaggedRows(values, splits)


def file_rows(path: str) -> tuple[RaggedRows, int]:
    """The first token_seq column of ``path`` (every row an item) and its
    vocabulary size."""
    table = read_item_features(path)
    names = [n for n, k in table.kinds.items() if k in SEQUENCE_KINDS]
    names = [n for n in names if table.kinds[n] in TOKEN_KINDS]
    if not names:
        raise SystemExit(f"{path} has no token_seq column")
    table = table.select(names[:1])
    items = ["[PAD]", *table.rows]
    features = encode_item_features(table, items, np.ones(len(items), bool))
    return features.values[names[0]], features.specs[0].vocabulary_size


def models(case: Case, rows: RaggedRows, vocabulary: int, args) -> dict:
    """``{"ids only": model, "with attributes": model}``, compiled."""
    feature = {
        "name": FEATURE,
        "kind": "token_seq",
        "width": rows.width,
        "vocabulary_size": vocabulary,
    }
    values = rows
    if args.padded:
        values = rows.to_dense()
    else:
        feature["num_values"] = int(rows.values.size)
    built = {}
    for label, features in (("ids only", ()), ("with attributes", (feature,))):
        tf.keras.utils.set_random_seed(args.seed)
        config = ModelConfig(
            num_items=case.items,
            max_len=args.max_len,
            embedding_dim=case.embedding_dim,
            encoder="sasrec",
            objective=case.objective,
            item_features=features,
        )
        model = SequentialRetrievalModel(
            config,
            item_feature_values={
                "values": {FEATURE: values},
                "id_known": np.ones(case.items, np.float32),
            }
            if features
            else None,
        )
        model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
        built[label] = model
    return built


def batches(case: Case, args) -> tf.data.Dataset:
    """One random batch of full histories and targets, repeated."""
    rng = np.random.default_rng(args.seed)
    shape = (args.batch, args.max_len)
    batch = {
        "history": rng.integers(1, case.items, shape).astype(np.int32),
        "target": rng.integers(1, case.items, args.batch).astype(np.int32),
    }
    return tf.data.Dataset.from_tensors(batch).repeat()


def table_bytes(model) -> int:
    """Bytes of the encoder's attribute tables (values and offsets)."""
    encoder = model.item_features
    weights = [*encoder.item_values, *getattr(encoder, "item_row_splits", [])]
    return int(sum(w.numpy().nbytes for w in weights))


def timed_steps(model, batches: tf.data.Dataset) -> tuple[float, float]:
    """Wall and CPU seconds (this process, user + system) of one ``fit``
    over ``batches``."""
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(batches, epochs=1, verbose=0)
    return time.perf_counter() - wall, time.process_time() - cpu


def paired_rounds(models: dict, batches: tf.data.Dataset, rounds: int) -> list:
    """``rounds - 1`` rounds of one job per model taken in turn (after one
    untimed job each: graph tracing), the order alternating from round to
    round. Returns per round ``{label: (wall, cpu)}``."""
    for model in models.values():
        timed_steps(model, batches)
    labels = list(models)
    results = []
    for number in range(rounds - 1):
        order = labels if number % 2 == 0 else labels[::-1]
        results.append(
            {label: timed_steps(models[label], batches) for label in order}
        )
    return results


def ratio_summary(rounds: list, clock: int) -> dict:
    """Median, lowest and highest of the rounds' ratios (attributes over
    ids) on ``clock`` (0 wall, 1 CPU)."""
    ratios = sorted(
        r["with attributes"][clock] / r["ids only"][clock] for r in rounds
    )
    return {
        "median": statistics.median(ratios),
        "low": ratios[0],
        "high": ratios[-1],
    }


def run_case(case: Case, rows: RaggedRows, vocabulary: int, args) -> dict:
    """The case's medians, ratios and table sizes."""
    built = models(case, rows, vocabulary, args)
    rounds = paired_rounds(
        built, batches(case, args).take(args.steps), args.rounds
    )
    ids, attributes = (
        statistics.median(r[label][0] for r in rounds) / args.steps
        for label in ("ids only", "with attributes")
    )
    wall, cpu = ratio_summary(rounds, 0), ratio_summary(rounds, 1)
    lengths = rows.row_lengths()[1:]
    return {
        "case": case.label,
        "items": case.items,
        "objective": case.objective,
        "embedding_dim": case.embedding_dim,
        "values": int(rows.values.size),
        "mean_values": float(lengths.mean()),
        "widest": int(lengths.max()),
        "ids_seconds_per_step": ids,
        "attributes_seconds_per_step": attributes,
        "ratio": wall["median"],
        "ratio_low": wall["low"],
        "ratio_high": wall["high"],
        "cpu_ratio": cpu["median"],
        "cpu_ratio_low": cpu["low"],
        "cpu_ratio_high": cpu["high"],
        "table_bytes": table_bytes(built["with attributes"]),
        "padded_bytes": int(case.items * rows.width * 4),
        "id_table_bytes": int(case.items * case.embedding_dim * 4),
    }


def megabytes(count: int) -> str:
    return f"{count / 1e6:,.1f} MB"


def report(args, results: list, argv: list | None) -> str:
    layout = "padded" if args.padded else "ragged"
    lines = [
        "# Item attributes at the price of ids: the training step",
        "",
        f"Command: `{common.command_line('ragged_item_features', argv)}`",
        "",
        f"{args.rounds - 1} rounds per case: in each, one job of "
        f"{args.steps} SASRec training steps (batch {args.batch}, histories "
        f"of {args.max_len}) per model, the two models taking turns on the "
        f"machine as it was; {layout} attribute tables, fused by sum. "
        "s/step: the median job's wall time. Ratios: the median of the "
        "rounds' ratios (attributes / ids only), lowest to highest in "
        "brackets; CPU: this process's user + system time, which other "
        "jobs on the host do not inflate.",
        "",
        "| case | items | values (mean, widest) | objective, d | ids s/step "
        "| attributes s/step | ratio (wall) | ratio (CPU) "
        "| attribute tables | padded would be |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results:
        lines.append(
            f"| {row['case']} | {row['items']:,} | {row['values']:,} "
            f"({row['mean_values']:.1f}, {row['widest']:,}) | "
            f"{row['objective']}, {row['embedding_dim']} | "
            f"{row['ids_seconds_per_step']:.4f} | "
            f"{row['attributes_seconds_per_step']:.4f} | "
            f"**{row['ratio']:.2f}x** ({row['ratio_low']:.2f}-"
            f"{row['ratio_high']:.2f}) | **{row['cpu_ratio']:.2f}x** "
            f"({row['cpu_ratio_low']:.2f}-{row['cpu_ratio_high']:.2f}) | "
            f"{megabytes(row['table_bytes'])} | "
            f"{megabytes(row['padded_bytes'])} |"
        )
    return "\n".join(lines) + "\n"


def plot(results: list, path: str) -> None:
    """The ratios of each case (wall and CPU time), with the 1.25x
    target."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [row["case"] for row in results]
    ratios = [row["ratio"] for row in results]
    cpu = [row["cpu_ratio"] for row in results]
    fig, axis = plt.subplots(figsize=(7, 0.8 * len(labels) + 1.4))
    places = np.arange(len(labels))
    for shift, values, name, colour in (
        (-0.2, ratios, "wall time", "tab:blue"),
        (0.2, cpu, "CPU time", "tab:green"),
    ):
        axis.barh(places + shift, values, 0.4, color=colour, label=name)
        for place, value in zip(places + shift, values):
            axis.text(value, place, f" {value:.2f}x", va="center", fontsize=8)
    axis.axvline(1.25, color="tab:red", linestyle="--", label="1.25x target")
    axis.set_yticks(range(len(labels)), labels)
    axis.invert_yaxis()
    axis.set_xlim(0, 1.2 * max(ratios + cpu + [1.25]))
    axis.set_xlabel("training step with attributes / ids only")
    axis.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.rounds < 2:
        parser.error(f"--rounds must be at least 2. Received: {args.rounds}")
    rng = np.random.default_rng(args.seed)
    results = []
    for case in CASES:
        if case.label in args.cases:
            rows = synthetic_rows(case, rng)
            results.append(run_case(case, rows, VOCABULARY + 2, args))
            print(results[-1], flush=True)
    if args.item_file:
        rows, vocabulary = file_rows(args.item_file)
        name = os.path.basename(args.item_file)
        case = Case(name, rows.num_rows, 0.0, rows.width, "full", 64)
        results.append(run_case(case, rows, vocabulary, args))
        print(results[-1], flush=True)
    folder = os.path.join(args.report_dir, "ragged-item-features")
    stem = common.report_stem(
        folder, "ragged_item_features", *(["padded"] if args.padded else [])
    )
    paths = common.write_report(
        stem,
        report(args, results, argv),
        {"cases": results},
        lambda path: plot(results, path),
    )
    print(open(paths["md"]).read())
    print(f"Wrote {', '.join(paths.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
