"""The report of ``benchmarks.large_catalogue``: its Markdown and chart.

``report`` writes the setup, ``stage_table`` (seconds and peak RSS of each
stage), ``head_table`` (each head's training numbers and test metrics)
and ``batched_evaluation`` (whether each run evaluated in batches) from
the results ``large_catalogue.main`` gathers; ``plot`` draws each stage's
seconds and peak RSS. Imports no TensorFlow.
"""

import argparse
import os
from collections.abc import Sequence

import numpy as np

from benchmarks.large_catalogue_data import MIN_LENGTH, REPEAT_WINDOW

GB = 1e9


def stage_rows(results: dict) -> list[tuple[str, dict]]:
    """``(label, measurement)`` of every stage run, in order."""
    rows = [
        (name, results[name])
        for name in ("generate", "prepare")
        if name in results
    ]
    for head, stages in results.get("heads", {}).items():
        rows += [(f"{stage} ({head})", m) for stage, m in stages.items()]
    return rows


def epoch_hours(train: dict) -> float | None:
    """Hours a whole epoch would take at the run's median step time.

    >>> epoch_hours({"step_seconds": 1.2, "epoch_examples": 384_000,
    ...              "batch_size": 128})
    1.0
    """
    if train.get("step_seconds") is None:
        return None
    steps = -(-train["epoch_examples"] // train["batch_size"])
    return steps * train["step_seconds"] / 3600


def _milliseconds(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1e3:.0f}"


def _failed(result: dict) -> str:
    log = os.path.basename(result["log"])
    return f"failed (exit {result['returncode']}, {log})"


def stage_table(results: dict) -> str:
    """Markdown: seconds and peak RSS of each stage, and what it did."""
    lines = [
        "| stage | seconds | CPU seconds | peak RSS GB | |",
        "|---|---:|---:|---:|---|",
    ]
    for label, result in stage_rows(results):
        note = ""
        if result["returncode"]:
            note = _failed(result)
        elif label == "generate":
            note = (
                f"{result['interactions']:,} interactions, "
                f"{result['users']:,} users, {result['items']:,} items"
            )
        elif label == "prepare":
            note = f"N = {results['num_items']:,} (padding included)"
        elif label.startswith("train"):
            epoch = "the whole epoch"
            if not result["whole_epoch"]:
                epoch = (
                    f"{result['steps']:,} steps, {result['examples']:,} of "
                    f"the epoch's {result['epoch_examples']:,} examples"
                )
                hours = epoch_hours(result)
                if hours is not None:
                    epoch += f" (the whole epoch: {hours:.1f} h at this rate)"
            note = (
                f"{epoch}; then validation and test over all N, "
                f"{result['eval_batch_size']} examples per batch"
            )
        elif label.startswith("export"):
            note = os.path.basename(os.path.dirname(result["path"]))
        elif label.startswith("serve"):
            note = (
                f"load {result['load_seconds']:.1f} s, "
                f"{result['rows']} rows: first call "
                f"{result['first_call_seconds'] * 1e3:.0f} ms, then "
                f"{result['call_seconds'] * 1e3:.0f} ms"
            )
        lines.append(
            f"| {label} | {result['seconds']:.0f} | "
            f"{result.get('cpu_seconds', 0):.0f} | "
            f"{result['peak_rss'] / GB:.2f} | {note} |"
        )
    return "\n".join(lines)


def head_table(results: dict) -> str:
    """Markdown: per head, the training numbers and the test metrics."""
    lines = [
        "| head | ms/step | CPU ms/step | train s | validation s (in fit) "
        "| after fit s | test NDCG@10 | test HR@10 | train peak RSS GB | "
        "one [test examples, N] float32 matrix, GB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for head, stages in results.get("heads", {}).items():
        train = stages["train"]
        if train["returncode"]:
            lines.append(f"| {head} | {_failed(train)} ||||||||| ")
            continue
        test = train["metrics"]["test"]
        step = _milliseconds(train["step_seconds"])
        cpu = _milliseconds(train.get("step_cpu_seconds"))
        matrix = train["test_examples"] * train["num_items"] * 4
        lines.append(
            f"| {head} | {step} | {cpu} | {train['train_seconds']:.0f} | "
            f"{train['validation_seconds'] or 0:.0f} | "
            f"{train['after_fit_seconds']:.0f} | {test['ndcg@10']:.4f} | "
            f"{test['hr@10']:.4f} | {train['peak_rss'] / GB:.2f} | "
            f"{matrix / GB:,.0f} |"
        )
    return "\n".join(lines)


def batched_evaluation(results: dict) -> list[str]:
    """Lines on whether each run evaluated in batches."""
    lines = []
    for head, stages in results.get("heads", {}).items():
        train = stages["train"]
        if train["returncode"]:
            continue
        matrix = train["test_examples"] * train["num_items"] * 4
        batched = train["peak_rss"] < matrix / 10
        lines.append(
            f"- {head}: {train['validation_examples']:,} validation and "
            f"{train['test_examples']:,} test examples ranked over "
            f"N = {train['num_items']:,} items; peak RSS "
            f"{train['peak_rss'] / GB:.2f} GB against "
            f"{matrix / GB:,.0f} GB for one [test examples, N] float32 "
            "matrix: "
            + (
                "evaluated in batches."
                if batched
                else "NOT clearly batched (peak above a tenth of it)."
            )
        )
    return lines


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = stage_rows(results)
    at = np.arange(len(rows))
    fig, (seconds, memory) = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    seconds.barh(
        at - 0.2,
        [r["seconds"] for _, r in rows],
        height=0.4,
        color="tab:blue",
        label="wall",
    )
    seconds.barh(
        at + 0.2,
        [r.get("cpu_seconds", 0) for _, r in rows],
        height=0.4,
        color="tab:cyan",
        label="CPU (all threads)",
    )
    memory.barh(at, [r["peak_rss"] / GB for _, r in rows], color="tab:orange")
    seconds.set_yticks(at, [label for label, _ in rows])
    seconds.set_xlabel("seconds")
    seconds.legend(fontsize=8)
    memory.set_xlabel("peak RSS, GB")
    seconds.invert_yaxis()  # shared: the first stage on top in both
    for ax in (seconds, memory):
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(
        f"A catalogue of {results.get('num_items', 0) - 1:,} items, end to "
        "end (one process per stage)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(
    results: dict,
    args: argparse.Namespace,
    command: str,
    train_flags: Sequence[str],
) -> str:
    """The markdown report; ``train_flags``: every run's training options
    besides ``--prepared`` and ``--head``."""
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return "\n".join(
        [
            f"Command: `{command}`",
            "",
            f"Random udata file: {args.interactions:,} interactions of "
            f"{args.users:,} users (at least {MIN_LENGTH} each) over "
            f"{args.items:,} items (each once, the rest of Zipf popularity), "
            f"{args.repeat_probability:.0%} repeats of one of the user's "
            f"last {REPEAT_WINDOW} items. Training: `tfrec-tricks train "
            f"--prepared DIR {' '.join(train_flags)} --head H` "
            "(GRU4Rec, batch 128; in-batch sampled softmax with logQ "
            "correction)"
            + (
                f", stopped after {args.train_steps:,} steps (a prefix of "
                "the shuffled epoch; the table gives the whole epoch's time "
                "at the measured rate)"
                if args.train_steps
                else ", one epoch"
            )
            + "; validation and test rank every example over the whole "
            "catalogue. One fresh process per stage; load average at the "
            f"end: {load}.",
            "",
            stage_table(results),
            "",
            head_table(results),
            "",
            "ms/step: median of the compiled calls (16 steps each) after "
            "the first, wall time; CPU ms/step the same of the process's "
            "CPU time (user + system, all threads), which a busy shared "
            "machine inflates less. After fit: `train`'s validation pass "
            "of the restored weights, the test pass and the saving.",
            "",
            *batched_evaluation(results),
            "",
            "![seconds and peak RSS per stage](large_catalogue.png)",
        ]
    )
