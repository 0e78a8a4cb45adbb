"""The reports of a search: ``trials.md``, ``trials.png`` and the summary."""

import os
from typing import Any

from tfrec_tricks.tuning.trial_log import read_timing


def trial_rows(tuner: Any) -> list[dict]:
    """One dict per trial in start order.

    Each has the number, id, status, score, best step, the
    hyperparameters (KerasTuner's ``tuner/`` entries left out), the
    Hyperband epochs (None for other tuners) and the trial's ``timing``
    (start, end, seconds; None for a trial without ``timing.json``).
    """
    oracle = tuner.oracle
    order = list(getattr(oracle, "start_order", [])) or sorted(oracle.trials)
    rows = []
    for number, trial_id in enumerate(order, 1):
        trial = oracle.trials[trial_id]
        values = trial.hyperparameters.values
        rows.append(
            {
                "number": number,
                "trial_id": trial_id,
                "status": str(trial.status),
                "score": trial.score,
                "best_step": trial.best_step,
                "epochs": values.get("tuner/epochs"),
                "hyperparameters": {
                    k: v
                    for k, v in values.items()
                    if not k.startswith("tuner/")
                },
                "timing": read_timing(tuner.get_trial_dir(trial_id)),
            }
        )
    return rows


def _format(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def short_trials_note(rows: list[dict], max_epochs: int | None) -> str | None:
    """A warning when no completed Hyperband trial was given ``max_epochs``.

    Hyperband's first rounds train many trials for a few epochs; when the
    time budget runs out before any round reaches ``--epochs``, every
    search score comes from a short trial. None when some trial reached it,
    or for tuners without rounds.
    """
    epochs = [
        r["epochs"]
        for r in rows
        if r["status"] == "COMPLETED" and r["epochs"] is not None
    ]
    if max_epochs is None or not epochs or max(epochs) >= max_epochs:
        return None
    return (
        f"No trial reached --epochs ({max_epochs}): the longest Hyperband "
        f"round gave its trials {max(epochs)} epochs before the time ran out. "
        "Every search score comes from a short trial, which favours "
        "configurations that learn fast; the retraining of the best "
        "decides. For full-length trials, give more --max-minutes or "
        "fewer --epochs."
    )


def write_table(
    rows: list[dict], path: str, metric: str, max_epochs: int | None = None
) -> str:
    """Writes the trials as a markdown table; returns the text.

    Hyperparameters with one value in every trial are listed above the
    table; the others get a column each ("–" where inactive). Trial 1 is
    the defaults (see ``SearchOracle``). ``max_epochs`` (``--epochs``)
    adds ``short_trials_note`` when no trial reached it.
    """
    names = []
    for row in rows:
        names += [n for n in row["hyperparameters"] if n not in names]
    constant = {}
    for name in names:
        seen = {repr(r["hyperparameters"].get(name)) for r in rows}
        if len(seen) == 1 and all(name in r["hyperparameters"] for r in rows):
            constant[name] = rows[0]["hyperparameters"][name]
    varying = [n for n in names if n not in constant]
    scores = [r["score"] for r in rows if r["score"] is not None]
    best = max(scores) if scores else None
    lines = [
        f"# Search trials ({len(rows)}), objective {metric} (max)",
        "",
        "Trial 1 trains the defaults.",
        "",
    ]
    note = short_trials_note(rows, max_epochs)
    if note:
        lines += [note, ""]
    if constant:
        lines.append(
            "Same in every trial: "
            + ", ".join(f"{k}={_format(v)}" for k, v in constant.items())
        )
        lines.append("")
    header = ["trial", "status", metric, "epochs", "minutes", *varying]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in rows:
        score = _format(row["score"])
        if row["score"] is not None and row["score"] == best:
            score = f"**{score}**"
        minutes = row["timing"] and row["timing"]["seconds"] / 60
        cells = [
            str(row["number"]),
            row["status"],
            score,
            _format(row["epochs"]),
            "–" if minutes is None else f"{minutes:.1f}",
        ]
        cells += [_format(row["hyperparameters"].get(n)) for n in varying]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    with open(path, "w") as handle:
        handle.write(text)
    return text


def best_so_far(rows: list[dict]) -> tuple[list, list, list, str]:
    """Points of the trials and the running best, against wall time.

    Returns:
        ``(x, scores, best, label)``: x is the minutes from the first
        trial's start to each trial's end, in order of ending, when every
        scored trial has its ``timing``; else the trial number.
    """
    scored = [r for r in rows if r["score"] is not None]
    timed = bool(scored) and all(r["timing"] for r in scored)
    if timed:
        start = min(r["timing"]["started"] for r in scored)
        scored.sort(key=lambda r: r["timing"]["ended"])
        x = [(r["timing"]["ended"] - start) / 60 for r in scored]
        label = "minutes since the search started"
    else:
        x = [r["number"] for r in scored]
        label = "trial"
    scores = [r["score"] for r in scored]
    best, running = [], None
    for score in scores:
        running = score if running is None else max(running, score)
        best.append(running)
    return x, scores, best, label


def plot_trials(rows: list[dict], path: str, metric: str) -> None:
    """Saves a PNG of each trial's score and the best so far, over time."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    x, scores, best, label = best_so_far(rows)
    figure, axes = pyplot.subplots(figsize=(7, 4))
    axes.plot(x, scores, "o", alpha=0.6, label="trial")
    axes.step(x, best, where="post", label="best so far")
    axes.set_xlabel(label)
    axes.set_ylabel(metric)
    axes.set_title(f"{metric}: each trial and the best so far")
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def format_summary(
    rows: list[dict],
    best: dict | None,
    search_dir: str,
    metric: str,
    seconds: float,
    chosen: dict | None = None,
    defaults: dict | None = None,
    max_epochs: int | None = None,
) -> str:
    """The lines printed at the end of a search.

    Args:
        rows: the trial rows.
        best: the best configuration (``best_config.json``) or None.
        search_dir: str. The search's folder.
        metric: str. The objective.
        seconds: float. The search's wall time.
        chosen: dict or None. The selection's chosen row.
        defaults: dict or None. The selection's defaults row.
        max_epochs: int or None. ``--epochs``: adds ``short_trials_note``
            when no trial reached it.

    Returns:
        str.
    """
    done = sum(r["status"] == "COMPLETED" for r in rows)
    scores = [r["score"] for r in rows if r["score"] is not None]
    lines = [
        "",
        f"{len(rows)} trials ({done} completed) in {seconds / 60:.1f} min.",
    ]
    if scores:
        lines.append(f"Best {metric} in the search: {max(scores):.4f}")
    note = short_trials_note(rows, max_epochs)
    if note:
        lines.append(note)
    if chosen is not None and defaults is not None:
        if chosen is defaults:
            lines.append(
                "Retrained, no trial beat the defaults on validation "
                f"({defaults['validation_mean']:.4f}): keep them."
            )
        else:
            lines.append(
                f"Retrained, {chosen['label']} beats the defaults: "
                f"validation {chosen['validation_mean']:.4f} vs "
                f"{defaults['validation_mean']:.4f}, test "
                f"{chosen['test_mean']:.4f} vs {defaults['test_mean']:.4f}."
            )
        lines.append(f"Selection: {os.path.join(search_dir, 'selection.md')}")
    if best is not None:
        lines.append(
            "Train it: tfrec-tricks train --config "
            f"{os.path.join(search_dir, 'best_config.json')}"
        )
    lines.append(
        f"Table: {os.path.join(search_dir, 'trials.md')}; plot: "
        f"{os.path.join(search_dir, 'trials.png')}; TensorBoard: "
        f"tensorboard --logdir {os.path.join(search_dir, 'tensorboard')}"
    )
    return "\n".join(lines)
