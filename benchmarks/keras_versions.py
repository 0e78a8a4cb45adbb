"""tf-keras against Keras 3: the same runs' quality, and their step time.

The models train under tf-keras (the default) and under Keras 3 with
keras-rs (``TF_USE_LEGACY_KERAS=0``, docs/keras-versions.md). A process
holds one Keras, so every run and every timing here is a child process
started with ``TF_USE_LEGACY_KERAS=1`` or ``0``. Two parts (``--parts``):

- **Quality.** For each dataset of ``--data``, encoder of ``--encoders``,
  head of ``--heads`` and seed of ``--seeds``, one run under each Keras:
  ``tfrec-tricks train --data D --encoder E --head H --seed S`` with
  train's defaults otherwise (``--epochs`` and ``--patience`` passed
  through; ``--flags`` adds train flags to every run), named
  ``<data>-<encoder>-<head>-<keras>-s<seed>`` in ``--output-dir``. The
  report gives, per (data, encoder, head) and metric (validation and test
  NDCG@10 and HR@10, and their seen-items-excluded variants where the runs
  have them), each Keras' mean [min, max] over the seeds, and whether the
  Keras 3 mean lies inside the tf-keras seeds' range, and the reverse.
- **Step time.** For each encoder and head on ``--step-data`` (the first
  ``--data`` by default), two workers, one per Keras, build the run's
  compiled model and training batches as ``train`` does
  (``training_model``, seed the first of ``--seeds``) and run ``--steps``
  steps untimed (graph tracing). Then they take turns, one job of
  ``--steps`` steps each, for ``--rounds`` rounds (the order alternating),
  so that a slow spell of the shared host hits both alike. The report
  gives each Keras' median seconds per step and the median of the rounds'
  ratios (Keras 3 / tf-keras) with their lowest and highest, in wall time
  and in the worker's CPU time (user + system, which other jobs on the
  host do not inflate); a median ratio above 1.2 is flagged.

The full benchmark (issue 74: 2 datasets x 2 encoders x 2 heads x 3 seeds
x 2 Kerases = 48 runs, hours on 2 cores):

    python -m benchmarks.keras_versions --data ml-100k yoochoose-100k \\
        --data-path ../shared/data --seeds 0 1 2

Only the step times (minutes):

    python -m benchmarks.keras_versions --parts step-time --rounds 5

Writes ``benchmarks/results/keras-versions/keras_versions.md`` (and
``.json``, ``.png``). Finished runs of the same settings are reused (the
run's ``run.json`` fingerprint, which names a Keras 3 run's Keras), so an
interrupted benchmark resumes where it stopped. The JSON records each
seed's metrics with the settings it trained with (``common.run_settings``):
a later run of the script carries a recorded seed over when no run folder
of it is here and the settings still match. ``--report-only`` trains and
times nothing: it reports the seeds finished here or recorded, and the
step times recorded; so does a part left out of ``--parts``. A run or a
timing that fails is named in the report with its log (``--output-dir``
``/logs``), and the others go on.
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

from tfrec_tricks.keras_version import use_command_keras

# The Keras of the environment: a worker is started with
# TF_USE_LEGACY_KERAS set; the parent (tf-keras, as every script) only
# reads and writes files.
use_command_keras()

from benchmarks import common, train_rows  # noqa: E402
from tfrec_tricks.config_fields import field_default  # noqa: E402
from tfrec_tricks.data.sources.named_sources import (  # noqa: E402
    default_data_path,
)
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402

#: The Kerases, as a run records them (``run_keras``), and the
#: ``TF_USE_LEGACY_KERAS`` value that selects each.
KERASES = {"tf-keras": "1", "keras-3": "0"}
LABELS = {"tf-keras": "tf-keras", "keras-3": "Keras 3"}
ENCODERS = ("gru4rec", "sasrec")
HEADS = ("softmax", "cpr")
PARTS = ("quality", "step-time")
#: The metrics of ``metrics.json`` compared, where the runs have them.
SPLITS = (
    "validation",
    "test",
    "validation_seen_excluded",
    "test_seen_excluded",
)
METRICS = ("ndcg@10", "hr@10")
#: What a seed's record keeps of its run's metrics.json.
RECORDED_METRICS = (*SPLITS, "seconds_per_epoch_median", "epochs_run")
#: A step-time ratio (Keras 3 / tf-keras) above this is flagged.
STEP_RATIO_LIMIT = 1.2
#: The report's folder under ``--report-dir``.
FOLDER = "keras-versions"


# ------------------------------------------------------------ runs


def run_flags(args, data: str, encoder: str, head: str, keras: str) -> str:
    """The ``tfrec-tricks train`` flags of one run, less its seed."""
    flags = [
        "--data", data, "--encoder", encoder, "--head", head,
        "--epochs", str(args.epochs), "--patience", str(args.patience),
        "--name", f"{data_name(args, data)}-{encoder}-{head}-{keras}",
    ]  # fmt: skip
    if data == "synthetic":
        flags += [
            "--synthetic-users", str(args.synthetic_users),
            "--synthetic-items", str(args.synthetic_items),
        ]  # fmt: skip
    return shlex.join(flags) + (f" {args.flags}" if args.flags else "")


def data_name(args, data: str) -> str:
    """The data in run names: ``data``, with ``-UxI`` for synthetic data
    of other sizes than train's (``common.data_label``)."""
    return common.data_label(
        argparse.Namespace(
            data=data,
            data_path=None,
            max_sessions=None,
            synthetic_users=args.synthetic_users,
            synthetic_items=args.synthetic_items,
        ),
        by_name=False,
    )


def run_config(flags: str, seed: int, places: dict) -> TrainConfig:
    """The ``TrainConfig`` of ``flags`` at ``seed``, as ``train`` parses
    it (``train_rows.row_configs``: named ``<--name>-s<seed>``)."""
    return train_rows.row_configs(
        "--flags", flags, [seed], argparse.Namespace(**places)
    )[0]


def keras_command(keras: str, worker: str, options: dict) -> list[str]:
    """The argv of a ``--<worker>-worker`` child under ``keras``."""
    return [
        "env",
        f"TF_USE_LEGACY_KERAS={KERASES[keras]}",
        "KERAS_BACKEND=tensorflow",
        *common.module_command("keras_versions"),
        f"--{worker}-worker",
        json.dumps(options),
    ]


def check_keras(expected: str) -> None:
    """Exits the worker when its process holds another Keras."""
    from tfrec_tricks.training.run_keras import keras_in_use

    if keras_in_use() != expected:
        raise SystemExit(
            f"The worker should run under {expected} but holds "
            f"{keras_in_use()}: TF_USE_LEGACY_KERAS was not honoured."
        )


def run_worker(options: dict) -> int:
    """Child: one run's metrics, a finished run's or, when ``train``, a
    new (or resumed) run's; ``{"metrics": None}`` otherwise."""
    from tfrec_tricks.training.resumption import finished_metrics
    from tfrec_tricks.training.run_training import train

    check_keras(options["keras"])
    config = run_config(options["flags"], options["seed"], options["places"])
    metrics = finished_metrics(config)
    if metrics is None and options["train"]:
        metrics = train(config, verbose=2).metrics
    with open(options["result"], "w") as handle:
        json.dump({"metrics": metrics}, handle)
    return 0


def seed_result(
    args,
    flags: str,
    keras: str,
    seed: int,
    recorded: tuple | None,
    failures: list,
) -> dict | None:
    """One seed's record: a finished run folder's metrics, else the
    report's record (same settings), else a new run's (none with
    ``--report-only`` or this part left out). A run that fails is named
    in ``failures`` (with its log) and the benchmark goes on."""
    config = run_config(flags, seed, places(args))
    who = f"{config.run_name} ({LABELS[keras]})"
    settings = common.run_settings(config)
    carried = common.carried_over(recorded, config, who, settings)
    folder = os.path.join(config.output_dir, config.run_name)
    may_train = carried is None and "quality" in measured_parts(args)
    if not (os.path.exists(os.path.join(folder, "run.json")) or may_train):
        return carried and record(carried, settings, True)
    logs = os.path.join(args.output_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    result = os.path.join(logs, f"{config.run_name}.json")
    print(f"== {who}", flush=True)
    options = {
        "flags": flags, "seed": seed, "places": places(args),
        "keras": keras, "train": may_train, "result": result,
    }  # fmt: skip
    child = common.measured(
        keras_command(keras, "run", options),
        os.path.join(logs, f"{config.run_name}.log"),
    )
    if child["returncode"] != 0:
        failures.append(f"{who}: exit {child['returncode']}, {child['log']}")
        print(f"{who} failed: see {child['log']}", file=sys.stderr)
        return carried and record(carried, settings, True)
    with open(result) as handle:
        metrics = json.load(handle)["metrics"]
    if metrics is None:
        return carried and record(carried, settings, True)
    return record(metrics, settings, False)


def record(metrics: dict, settings: dict, carried: bool) -> dict:
    """A seed as the JSON records it."""
    return {
        "metrics": {k: metrics[k] for k in RECORDED_METRICS if k in metrics},
        "settings": settings,
        "carried_over": carried,
    }


def places(args) -> dict:
    """Where a run goes and reads its data: absolute, since the children
    run in the repository's root."""
    return {
        "output_dir": os.path.abspath(args.output_dir),
        "data_path": os.path.abspath(args.data_path or default_data_path()),
    }


def measured_parts(args) -> tuple:
    """The parts this invocation trains or times (none: report only)."""
    return () if args.report_only else tuple(args.parts)


def recorded_runs(numbers: dict) -> dict:
    """The seeds an earlier report recorded: ``{(group, keras, seed):
    (metrics, settings)}``."""
    return {
        (group, keras, int(seed)): (run["metrics"], run["settings"])
        for group, row in numbers.get("quality", {}).items()
        for keras, side in row.items()
        for seed, run in side.get("runs", {}).items()
    }


def quality(args, earlier: dict, failures: list) -> dict:
    """``{"<data>/<encoder>/<head>": {keras: {"runs", metric: summary}}}``
    of the seeds finished, recorded or trained now."""
    recorded = recorded_runs(earlier)
    groups = {}
    for data in args.data:
        for encoder in args.encoders:
            for head in args.heads:
                group = f"{data_name(args, data)}/{encoder}/{head}"
                row = {}
                for keras in KERASES:
                    flags = run_flags(args, data, encoder, head, keras)
                    runs = {}
                    for seed in args.seeds:
                        found = seed_result(
                            args,
                            flags,
                            keras,
                            seed,
                            recorded.get((group, keras, seed)),
                            failures,
                        )
                        if found is not None:
                            runs[str(seed)] = found
                    if runs:
                        row[keras] = {**summaries(runs), "runs": runs}
                groups[group] = row
    return groups


def summaries(runs: dict) -> dict:
    """``{"metrics": {"<split> <metric>": summary}, "epochs", "seconds per
    epoch", "training minutes"}``: each metric's ``common.summarise`` over
    the seeds (those the runs all have), the epochs run, the medians of
    the seconds per epoch and of the training minutes."""
    from tfrec_tricks.training.evaluate import training_minutes

    out = {"metrics": {}}
    metrics = [run["metrics"] for run in runs.values()]
    for split in SPLITS:
        if all(split in m for m in metrics):
            for metric in METRICS:
                out["metrics"][f"{split} {metric}"] = common.summarise(
                    [m[split][metric] for m in metrics]
                )
    out["epochs"] = [m.get("epochs_run") for m in metrics]
    per_epoch = [m["seconds_per_epoch_median"] for m in metrics]
    out["seconds per epoch"] = statistics.median(per_epoch)
    out["training minutes"] = statistics.median(map(training_minutes, metrics))
    return out


def inside(value: float, summary: dict) -> bool:
    """Whether ``value`` lies in ``summary``'s seed range."""
    return summary["min"] <= value <= summary["max"]


def chance_inside(seeds: int, trials: int = 200_000) -> float:
    """How often the mean of ``seeds`` runs lands inside the range of
    ``seeds`` other runs when all come from one normal distribution: what
    "inside" counts when the two Kerases train one model. Far from 1 (0.63
    for 3 seeds), so a few rows outside are expected; a Keras that trains
    worse shows as far fewer, and on one side.

    Monte Carlo with a fixed seed, so the report is reproducible.

    >>> round(chance_inside(3), 2)
    0.63
    """
    import numpy as np

    draws = np.random.default_rng(0).normal(size=(trials, 2 * seeds))
    means = draws[:, seeds:].mean(axis=1)
    ranges = draws[:, :seeds]
    found = (ranges.min(axis=1) <= means) & (means <= ranges.max(axis=1))
    return float(found.mean())


# ------------------------------------------------------------ step time


def steps_worker(options: dict) -> int:
    """Child: builds the run's model and batches, runs them once untimed,
    prints ``{"ready": ...}``; then each line on stdin times one job of
    the steps and prints ``{"seconds", "cpu_seconds"}``."""
    from tfrec_tricks.training.run_training import training_model

    check_keras(options["keras"])
    config = run_config(options["flags"], options["seed"], options["places"])
    model, inputs = training_model(config)
    steps_per_epoch = int(inputs.train.cardinality())
    steps = min(options["steps"], steps_per_epoch)
    batches = inputs.train.take(steps)

    def job() -> dict:
        wall, cpu = time.perf_counter(), time.process_time()
        model.fit(batches, epochs=1, verbose=0)
        return {
            "seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu,
        }

    warm_up = job()
    ready = {"steps": steps, "steps_per_epoch": steps_per_epoch, **warm_up}
    print(json.dumps({"ready": ready}), flush=True)
    for _ in sys.stdin:
        print(json.dumps(job()), flush=True)
    return 0


class StepWorker:
    """A ``--steps-worker`` child under one Keras, started at once;
    ``wait_ready`` waits for its warm-up, ``job`` asks for a timed job."""

    def __init__(self, keras: str, options: dict, log_path: str):
        self.keras = keras
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            keras_command(keras, "steps", {**options, "keras": keras}),
            cwd=common.ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.ready = None  # the warm-up's answer (``wait_ready``)

    def wait_ready(self) -> None:
        """Waits for the model built and its untimed job run."""
        self.ready = self.answer()["ready"]

    def answer(self) -> dict:
        """The child's next JSON line (other output is skipped)."""
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(
            f"The {LABELS[self.keras]} step worker ended "
            f"(exit {self.process.wait()}): see {self.log.name}"
        )

    def job(self) -> dict:
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        return self.answer()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()
        self.log.close()


def step_rounds(workers: dict, rounds: int) -> list[dict]:
    """``rounds`` rounds of one job per worker taken in turn, the order
    alternating; per round ``{keras: {"seconds", "cpu_seconds"}}``."""
    names = list(workers)
    results = []
    for number in range(rounds):
        order = names if number % 2 == 0 else names[::-1]
        results.append({name: workers[name].job() for name in order})
    return results


def ratio_summary(rounds: list[dict], clock: str) -> dict:
    """Median, lowest and highest of the rounds' Keras 3 / tf-keras
    ratios on ``clock`` (``"seconds"`` or ``"cpu_seconds"``).

    >>> ratio_summary([{"keras-3": {"s": 3}, "tf-keras": {"s": 2}},
    ...                {"keras-3": {"s": 2}, "tf-keras": {"s": 2}}], "s")
    {'median': 1.25, 'low': 1.0, 'high': 1.5, 'over': 1}
    """
    ratios = sorted(r["keras-3"][clock] / r["tf-keras"][clock] for r in rounds)
    return {
        "median": statistics.median(ratios),
        "low": ratios[0],
        "high": ratios[-1],
        "over": sum(ratio > STEP_RATIO_LIMIT for ratio in ratios),
    }


def step_times(args, failures: list) -> dict:
    """``{"data", "steps", "rounds", "seed", "rows": [...]}``: each
    encoder and head's step times under both Kerases."""
    data = args.step_data or args.data[0]
    label = data_name(args, data)
    logs = os.path.join(args.output_dir, "logs")
    os.makedirs(logs, exist_ok=True)
    rows = []
    for encoder in args.encoders:
        for head in args.heads:
            print(f"== step time: {encoder}, {head}", flush=True)
            workers = {}
            try:
                for keras in KERASES:
                    options = {
                        "flags": run_flags(args, data, encoder, head, keras),
                        "seed": args.seeds[0],
                        "places": places(args),
                        "steps": args.steps,
                    }
                    log = f"steps-{label}-{encoder}-{head}-{keras}.log"
                    workers[keras] = StepWorker(
                        keras, options, os.path.join(logs, log)
                    )
                # Built and warmed up side by side: nothing is timed yet.
                for worker in workers.values():
                    worker.wait_ready()
                rounds = step_rounds(workers, args.rounds)
            except (RuntimeError, OSError) as error:  # a worker ended
                failures.append(f"step time {encoder}, {head}: {error}")
                print(error, file=sys.stderr)
                continue
            finally:
                for worker in workers.values():
                    worker.close()
            steps = workers["tf-keras"].ready["steps"]
            row = {"encoder": encoder, "head": head, "steps": steps}
            for keras in KERASES:
                row[f"{keras} seconds per step"] = (
                    statistics.median(r[keras]["seconds"] for r in rounds)
                    / steps
                )
            row["ratio"] = ratio_summary(rounds, "seconds")
            row["cpu ratio"] = ratio_summary(rounds, "cpu_seconds")
            row["rounds"] = rounds
            rows.append(row)
    return {
        "data": label,
        "steps": args.steps,
        "rounds": args.rounds,
        "seed": args.seeds[0],
        "rows": rows,
    }


# ------------------------------------------------------------ report


def quality_lines(args, groups: dict) -> list[str]:
    """The quality tables and notes, as markdown lines."""
    lines = [
        "## Quality",
        "",
        f"`tfrec-tricks train` with its defaults (epochs at most {args.epochs}"
        f", patience {args.patience}"
        + (f", `{args.flags}`" if args.flags else "")
        + f"), seeds {', '.join(map(str, args.seeds))}, once under each "
        "Keras. Mean [min, max] over the seeds. Inside: the mean lies in "
        "the other Keras' seed range.",
        "",
        "| data | encoder | head | metric | tf-keras | Keras 3 | Keras 3 "
        "mean inside tf-keras range | tf-keras mean inside Keras 3 range |",
        "|---|---|---|---|---|---|---|---|",
    ]
    counts = [0, 0, 0]
    for group, row in groups.items():
        if len(row) < 2:
            continue
        old, new = row["tf-keras"]["metrics"], row["keras-3"]["metrics"]
        for key in old:
            if key not in new:
                continue
            forward = inside(new[key]["mean"], old[key])
            backward = inside(old[key]["mean"], new[key])
            counts = [counts[0] + forward, counts[1] + backward, counts[2] + 1]
            lines.append(
                f"| {' | '.join(group.split('/'))} | {key} | "
                f"{spread(old[key])} | {spread(new[key])} | "
                f"{yes_no(forward)} | {yes_no(backward)} |"
            )
    chance = chance_inside(len(args.seeds))
    lines += [
        "",
        f"Keras 3 means inside the tf-keras seed range: {counts[0]} of "
        f"{counts[2]}; tf-keras means inside the Keras 3 range: "
        f"{counts[1]} of {counts[2]}. Were both Kerases one model, a mean "
        f"of {len(args.seeds)} seeds would land inside the other's range "
        f"{chance:.0%} of the time (about {round(chance * counts[2])} of "
        f"{counts[2]}).",
        "",
        "Epochs run (per seed), median seconds per epoch and median "
        "training minutes of each Keras' runs:",
        "",
        "| data | encoder | head | epochs tf-keras | epochs Keras 3 | "
        "s/epoch tf-keras | s/epoch Keras 3 | min tf-keras | min Keras 3 |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
    ]
    for group, row in groups.items():
        cells = (
            [
                ", ".join(map(str, row[k]["epochs"])) if k in row else "-"
                for k in KERASES
            ]
            + [
                f"{row[k]['seconds per epoch']:.1f}" if k in row else "-"
                for k in KERASES
            ]
            + [
                f"{row[k]['training minutes']:.1f}" if k in row else "-"
                for k in KERASES
            ]
        )
        lines.append(
            f"| {' | '.join(group.split('/'))} | {' | '.join(cells)} |"
        )
    return lines + seed_notes(args, groups)


def seed_notes(args, groups: dict) -> list[str]:
    """Markdown lines naming the seeds carried over from the earlier
    record and those not finished yet."""
    carried, missing = [], []
    for group, row in groups.items():
        for keras in KERASES:
            runs = row.get(keras, {}).get("runs", {})
            over = [s for s in args.seeds if runs.get(str(s), {}).get(
                "carried_over"
            )]  # fmt: skip
            absent = [s for s in args.seeds if str(s) not in runs]
            name = f"{group} {LABELS[keras]} seeds "
            if over:
                carried.append(name + ", ".join(map(str, over)))
            if absent:
                missing.append(name + ", ".join(map(str, absent)))
    return common.seed_notes(carried, missing, "same settings")


def step_lines(steps: dict) -> list[str]:
    """The step-time table, as markdown lines."""
    lines = [
        "## Step time",
        "",
        f"On {steps['data']} (seed {steps['seed']}): each Keras in its own "
        f"process ran {steps['steps']} training steps untimed, then the "
        f"two took turns for {steps['rounds']} rounds of one job of "
        f"{steps['steps']} steps each (the order alternating). s/step: "
        "the median job's wall time. Ratios: the median of the rounds' "
        "Keras 3 / tf-keras ratios, lowest to highest in brackets; CPU: "
        "the worker's user + system time. Over: rounds whose ratio is "
        f"above {STEP_RATIO_LIMIT}x.",
        "",
        "| encoder | head | tf-keras s/step | Keras 3 s/step | ratio (wall) "
        f"| ratio (CPU) | over {STEP_RATIO_LIMIT}x (wall, CPU) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row in steps["rows"]:
        wall, cpu = row["ratio"], row["cpu ratio"]
        lines.append(
            f"| {row['encoder']} | {row['head']} | "
            f"{row['tf-keras seconds per step']:.4f} | "
            f"{row['keras-3 seconds per step']:.4f} | {ratio_cell(wall)} | "
            f"{ratio_cell(cpu)} | {wall['over']}/{steps['rounds']}, "
            f"{cpu['over']}/{steps['rounds']} |"
        )
    return lines


def ratio_cell(ratio: dict) -> str:
    """``1.05x (0.98-1.10)``, flagged when the median is over the limit."""
    text = f"{ratio['median']:.2f}x ({ratio['low']:.2f}-{ratio['high']:.2f})"
    if ratio["median"] > STEP_RATIO_LIMIT:
        return f"**{text} over {STEP_RATIO_LIMIT}x**"
    return text


def spread(summary: dict) -> str:
    return f"{summary['mean']:.4f} [{summary['min']:.4f}, {summary['max']:.4f}]"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "**no**"


def report_text(args, numbers: dict, command: str) -> str:
    lines = [
        "# tf-keras and Keras 3: quality and step time",
        "",
        f"Command: `{command}`",
        "",
    ]
    if numbers.get("quality"):
        lines += quality_lines(args, numbers["quality"]) + [""]
    if numbers.get("step_time"):
        if numbers.get("step_time_recorded"):
            lines += ["(Step times from this report's earlier record.)", ""]
        lines += step_lines(numbers["step_time"])
    if numbers.get("failed"):
        lines += ["", "**Failed** (their logs; rerun to retry):", ""]
        lines += [f"- {failure}" for failure in numbers["failed"]]
    return "\n".join(lines)


def draw_chart(numbers: dict, path: str) -> None:
    """Test NDCG@10 per group and Keras (seeds as dots), and the step-time
    ratios with the 1.2x limit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = {g: r for g, r in numbers.get("quality", {}).items() if r}
    steps = numbers.get("step_time", {}).get("rows", [])
    panels = [part for part, shown in (("q", groups), ("s", steps)) if shown]
    figure, axes = plt.subplots(
        1, max(len(panels), 1), figsize=(6 * max(len(panels), 1), 4),
        squeeze=False,
    )  # fmt: skip
    for axis, panel in zip(axes[0], panels):
        if panel == "q":
            _draw_quality(axis, groups)
        else:
            _draw_steps(axis, steps)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


COLOURS = {"tf-keras": "#777777", "keras-3": "#4c72b0"}


def _draw_quality(axis, groups: dict) -> None:
    """Each group's test NDCG@10 as % from the tf-keras mean: tf-keras'
    seed range as a grey bar (what "inside" means), each Keras' seeds as
    dots and Keras 3's mean as a diamond. Relative, so that ml-100k's
    0.06 and yoochoose-100k's 0.43 share one axis."""
    shown = [
        (group, row) for group, row in groups.items()
        if all("test ndcg@10" in row.get(k, {}).get("metrics", {})
               for k in ("tf-keras", "keras-3"))
    ]  # fmt: skip
    for i, (_, row) in enumerate(shown):
        old = row["tf-keras"]["metrics"]["test ndcg@10"]
        new = row["keras-3"]["metrics"]["test ndcg@10"]

        def percent(value, base=old["mean"]):
            return 100 * (value / base - 1)

        first = i == 0
        axis.barh(
            i, percent(old["max"]) - percent(old["min"]), 0.5,
            left=percent(old["min"]), color="#dddddd",
            label="tf-keras seed range" if first else None,
        )  # fmt: skip
        sides = (("tf-keras", old, -0.12), ("keras-3", new, 0.12))
        for keras, side, shift in sides:
            values = [percent(v) for v in side["values"]]
            axis.plot(
                values, [i + shift] * len(values), ".", ms=6,
                color=COLOURS[keras],
                label=f"{LABELS[keras]} seeds" if first else None,
            )  # fmt: skip
        axis.plot(
            percent(new["mean"]), i, "D", color=COLOURS["keras-3"], ms=7,
            mfc="none",
            label="Keras 3 mean" if first else None,
        )  # fmt: skip
    axis.axvline(0, color=COLOURS["tf-keras"], linewidth=0.8)  # its mean
    axis.margins(x=0.05)
    axis.set_yticks(
        range(len(shown)), [g.replace("/", " ") for g, _ in shown], fontsize=8
    )
    axis.invert_yaxis()
    axis.set_xlabel("test NDCG@10, % from the tf-keras mean")
    axis.legend(fontsize=7, loc="best")


def _draw_steps(axis, rows: list) -> None:
    labels = [f"{r['encoder']}\n{r['head']}" for r in rows]
    for shift, key, name, colour in (
        (-0.2, "ratio", "wall time", "tab:blue"),
        (0.2, "cpu ratio", "CPU time", "tab:green"),
    ):
        values = [r[key]["median"] for r in rows]
        errors = [
            [v - r[key]["low"] for v, r in zip(values, rows)],
            [r[key]["high"] - v for v, r in zip(values, rows)],
        ]
        places = [i + shift for i in range(len(rows))]
        axis.barh(places, values, 0.4, xerr=errors, color=colour, label=name)
    axis.axvline(
        STEP_RATIO_LIMIT, color="tab:red", linestyle="--",
        label=f"{STEP_RATIO_LIMIT}x",
    )  # fmt: skip
    axis.set_yticks(range(len(rows)), labels)
    axis.invert_yaxis()
    axis.set_xlabel("training step, Keras 3 / tf-keras (median, range)")
    axis.legend(loc="lower left", fontsize=8, framealpha=0.9)


# ------------------------------------------------------------ command


def build_parser() -> argparse.ArgumentParser:
    """The script's options."""
    parser = common.build_parser(__doc__)
    parser.add_argument(
        "--data",
        nargs="+",
        default=["ml-100k", "yoochoose-100k"],
        help="datasets of the quality runs (train's --data, e.g. "
        "synthetic). Default: ml-100k yoochoose-100k",
    )
    common.add_data_path_option(parser)
    common.add_synthetic_options(parser)
    parser.add_argument(
        "--encoders", nargs="+", choices=ENCODERS, default=list(ENCODERS)
    )
    parser.add_argument(
        "--heads", nargs="+", choices=HEADS, default=list(HEADS)
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--flags",
        default="",
        help="more `tfrec-tricks train` flags of every run, one string "
        "(e.g. '--max-len 10'); other flags are other runs: give them "
        "their own --output-dir. Default: none",
    )
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=PARTS,
        default=list(PARTS),
        help="what to train and time; a part left out is reported from "
        "what is finished or recorded. Default: quality step-time",
    )
    parser.add_argument(
        "--step-data",
        default=None,
        help="dataset of the step times. Default: the first of --data",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=64,
        help="training steps per timed job. Default: 64",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="timed jobs per Keras, taking turns (after one untimed). "
        "Default: 5",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="train and time nothing: report the seeds finished here or "
        "recorded in the report's JSON, and the step times recorded",
    )
    common.add_training_options(
        parser,
        epochs=field_default(TrainConfig, "epochs"),
        patience=field_default(TrainConfig, "patience"),
    )
    common.add_report_dir_option(parser)
    parser.add_argument("--run-worker", help=argparse.SUPPRESS)
    parser.add_argument("--steps-worker", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.run_worker:
        return run_worker(json.loads(args.run_worker))
    if args.steps_worker:
        return steps_worker(json.loads(args.steps_worker))
    if args.steps < 1 or args.rounds < 1:
        parser.error(
            "--steps and --rounds must be positive. Received: "
            f"--steps {args.steps} --rounds {args.rounds}"
        )
    try:  # flags train refuses end the script before any run
        for data in {*args.data, args.step_data or args.data[0]}:
            flags = run_flags(args, data, ENCODERS[0], HEADS[0], "tf-keras")
            run_config(flags, args.seeds[0], places(args))
    except ValueError as error:
        parser.error(str(error))
    stem = common.report_stem(
        os.path.join(args.report_dir, FOLDER), "keras_versions"
    )
    earlier = {}
    if os.path.exists(stem + ".json"):
        with open(stem + ".json") as handle:
            earlier = json.load(handle)
    failures = []
    numbers = {"quality": quality(args, earlier, failures)}
    if "step-time" in measured_parts(args):
        numbers["step_time"] = step_times(args, failures)
    elif earlier.get("step_time"):
        numbers["step_time"] = earlier["step_time"]
        numbers["step_time_recorded"] = True
    numbers["failed"] = failures
    if not any(numbers["quality"].values()) and not numbers.get("step_time"):
        print(
            "Nothing is finished or recorded: nothing to report (run "
            "without --report-only to train).",
            file=sys.stderr,
        )
        return 1
    # The command that measures what the report shows: without
    # --report-only, which only reports what is finished or recorded.
    given = sys.argv[1:] if argv is None else argv
    command = common.command_line(
        "keras_versions", [a for a in given if a != "--report-only"]
    )
    paths = common.write_report(
        stem,
        report_text(args, numbers, command),
        numbers,
        lambda path: draw_chart(numbers, path),
    )
    print(open(paths["md"]).read())
    print(f"Wrote {', '.join(paths.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
