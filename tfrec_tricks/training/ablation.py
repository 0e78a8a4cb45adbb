"""The paper's ablation: one data set, one encoder, every technique switch.

Each row is a set of model-config overrides trained with the same seed and
budget. Every row gets the same small tuning budget, a dropout sweep: the
dropout with the best validation NDCG@10 is selected and its test metrics
are reported (RecBole's protocol, as in Chang et al., 2024).
"""

import dataclasses
import json
import os

from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import write_text_atomic
from tfrec_tricks.output_folders import check_target, target_lock

# Re-exported: the rows and the report folder's check live in a module
# without TensorFlow.
from tfrec_tricks.training.ablation_rows import (
    ABLATION_REPORT as ABLATION_REPORT,
)
from tfrec_tricks.training.ablation_rows import PAPER_ROWS as PAPER_ROWS
from tfrec_tricks.training.ablation_rows import ROWS as ROWS
from tfrec_tricks.training.ablation_rows import (
    check_report_dir as check_report_dir,
)
from tfrec_tricks.training.resumption import finished_metrics, run_directory
from tfrec_tricks.training.run_directory import RUN_DIRECTORY
from tfrec_tricks.training.run_training import train
from tfrec_tricks.training.train_config import TrainConfig


@dataclasses.dataclass
class AblationRow:
    name: str
    overrides: dict
    dropout: float
    validation: dict
    test: dict
    num_parameters: int
    #: None when the run's last process trained no epoch (resumed after
    #: its training had ended: ``persistence.run_facts``).
    seconds_per_epoch: float | None
    epochs_run: int
    #: Test metrics of repeat and new targets (``metrics_by_target_kind``);
    #: empty for runs made before it was recorded.
    test_by_target: dict = dataclasses.field(default_factory=dict)


def row_slug(row: str) -> str:
    """The row's part of its run names: ``"Softmax + C"`` -> ``"softmax_c"``."""
    slug = row.lower().replace(" ", "").replace("+", "_")
    for char in ",:/=.":
        slug = slug.replace(char, "-")
    return slug


def run_ablation(
    base: TrainConfig,
    rows: list[str] | tuple[str, ...] = PAPER_ROWS,
    dropouts: tuple[float, ...] = (0.2, 0.5),
    verbose: int = 0,
    overwrite: bool = False,
) -> list[AblationRow]:
    """Trains every row with every dropout; keeps the best by validation.

    Runs that already finished with the same configuration (same run
    directory, same fingerprint: ``training.finished_metrics``) are not
    trained again.

    Args:
        base: the shared data, budget and model settings; ``base.name``
            prefixes the run directories.
        rows: names from ``ROWS``.
        dropouts: the dropout sweep each row gets.
        verbose: Keras verbosity of each training run.
        overwrite: train every run afresh, discarding finished runs and
            runs of other settings in their directories.

    Returns:
        One ``AblationRow`` per row, in order.
    """
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        raise ValueError(
            f"Unknown ablation rows {unknown}; known: {list(ROWS)}"
        )
    if not dropouts:
        raise ValueError("The dropout sweep needs at least one value.")
    results = []
    for row in rows:
        best = None
        for dropout in dropouts:
            config = dataclasses.replace(
                base,
                name=f"{base.run_name}-{row_slug(row)}-dropout{dropout}",
                model=base.model.with_values(**ROWS[row], dropout=dropout),
            )
            metrics = None if overwrite else _finished_row(config)
            if verbose:
                done = " (finished before: reused)" if metrics else ""
                print(f"== {row}, dropout {dropout}{done}", flush=True)
            if metrics is None:
                metrics = train(
                    config, verbose=verbose, overwrite=overwrite
                ).metrics
            if best is None or (
                metrics["validation"]["ndcg@10"] > best.validation["ndcg@10"]
            ):
                best = AblationRow(
                    name=row,
                    overrides=ROWS[row],
                    dropout=dropout,
                    validation=metrics["validation"],
                    test=metrics["test"],
                    num_parameters=metrics["num_parameters"],
                    seconds_per_epoch=metrics["seconds_per_epoch_median"],
                    epochs_run=metrics["epochs_run"],
                    test_by_target=metrics.get("test_by_target", {}),
                )
        results.append(best)
    return results


def _finished_row(config: TrainConfig) -> dict | None:
    """``finished_metrics(config)``, read under the run's lock as ``train``
    reads a finished run: what a killed writer of it left (its lock file,
    a staging folder) goes, and a run another process writes is refused
    (``TargetBusyError``), not read half-written."""
    run_dir = run_directory(config)
    if not os.path.isdir(run_dir):
        return None
    with target_lock(run_dir, RUN_DIRECTORY):
        return finished_metrics(config)


def format_table(rows: list[AblationRow]) -> str:
    """Markdown table: test metrics, change vs the first row, size, speed."""
    base = rows[0].test["ndcg@10"] if rows else 0.0
    lines = [
        "| variant | dropout | test NDCG@10 | vs first | test HR@10 | "
        "test MRR@10 | NDCG@10 repeat / new targets | val NDCG@10 | "
        "parameters | s/epoch | epochs |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        change = (row.test["ndcg@10"] / base - 1) * 100 if base else 0.0
        kinds = [
            row.test_by_target.get(kind, {}).get("ndcg@10")
            for kind in ("repeat", "new")
        ]
        split = " / ".join("n/a" if v is None else f"{v:.4f}" for v in kinds)
        seconds = row.seconds_per_epoch
        speed = "n/a" if seconds is None else f"{seconds:.1f}"
        lines.append(
            f"| {row.name} | {row.dropout} | {row.test['ndcg@10']:.4f} | "
            f"{change:+.1f}% | {row.test['hr@10']:.4f} | "
            f"{row.test['mrr@10']:.4f} | {split} | "
            f"{row.validation['ndcg@10']:.4f} | "
            f"{row.num_parameters:,} | {speed} | "
            f"{row.epochs_run} |"
        )
    return "\n".join(lines)


def plot(rows: list[AblationRow], path: str, title: str) -> None:
    """Horizontal bar chart of test NDCG@10 per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    names = [r.name for r in rows][::-1]
    values = [r.test["ndcg@10"] for r in rows][::-1]
    axis.barh(names, values, color="tab:blue")
    for y, value in enumerate(values):
        axis.text(value, y, f" {value:.4f}", va="center", fontsize=8)
    axis.set_xlabel("test NDCG@10")
    axis.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


REPORT_FILES = tuple(f"ablation.{ext}" for ext in ("md", "json", "png"))


def is_ablation_report(folder: str) -> bool:
    """Whether ``folder`` is an ablation report by record (``ownership``)."""
    return ABLATION_REPORT.recognise(folder)


def write_report(
    rows: list[AblationRow], output_dir: str, title: str, command: str
) -> dict[str, str]:
    """Writes ablation.md, ablation.json and ablation.png; returns paths."""
    check_target(output_dir, ABLATION_REPORT)
    with target_lock(output_dir, ABLATION_REPORT):
        ownership.start_record(output_dir, ABLATION_REPORT.name)
        md, js, png = (os.path.join(output_dir, f) for f in REPORT_FILES)
        # Recorded before they are written (matplotlib writes the chart).
        ownership.claim([md, js, png])
        write_text_atomic(
            md, f"# {title}\n\nCommand: `{command}`\n\n{format_table(rows)}\n"
        )
        write_text_atomic(
            js, json.dumps([dataclasses.asdict(r) for r in rows], indent=2)
        )
        plot(rows, png, title)
    return {"md": md, "json": js, "png": png}
