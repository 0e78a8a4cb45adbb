"""Epoch time of the prefix protocol vs training windows, on MovieLens-1M.

Two training protocols over the same training targets (``prepare``'s
RecBole split; every target trained once per epoch by each):

- ``prefix`` (the default, RecBole's): one row per target, its history the
  ``max_len`` items before it;
- ``windowed`` (``tfrec-tricks train --train-windows``, stride ``max_len``):
  each user's training sequence cut into windows of ``max_len`` items with
  a target at every position (``tfrec_tricks.data.train_windows``); about
  ``max_len`` times fewer rows, each as long as a prefix row.

GRU4Rec (1 layer) and SASRec (2 layers), each with the Softmax head and
with CPR:100 + Mi (``epoch_speed``'s models: d=64, full softmax, Adam
1e-3), train with the training defaults: batches of 128 rows bucketed by
history length, shuffled with ``--seed``, 16 steps per compiled call.

A whole prefix epoch (about 7,700 batches) takes 5-20 minutes per model
here, so each prefix job trains ``--prefix-batches`` batches: the first K
batches of a freshly shuffled epoch (the batches' order is shuffled anew
at each pass, so the K batches are a random draw from the epoch's mix of
history lengths). The prefix epoch is then (batches per epoch) x (median
seconds per batch of those K-batch runs). A windowed job trains its whole
epoch, or its first ``--windowed-batches``. Every model/protocol pair
trains once untimed (graph tracing), then the pairs take turns, one job
each, for ``--epochs - 1`` rounds, so that a slow spell of the shared host
hits every pair alike. The target: windowed epochs at least 10x faster
than prefix epochs for each model.

A third job takes its turns with them: the full-softmax output layer
alone (``softmax_layer_job``: the logits of the epoch's targets against
the whole catalogue, the cross-entropy, its gradients and Adam's update,
in batches of the windowed epoch's mean targets per batch). Both protocols
pay it for every target, so no protocol that trains every target against
the whole catalogue has a faster epoch: prefix epoch / that floor is the
largest speed-up a windowed epoch could reach.

    python -m benchmarks.windowed_speed --data-path ../shared/data

Writes ``benchmarks/results/windowed_speed.md``, ``.json`` and ``.png``.
"""

import argparse
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import tensorflow as tf  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.epoch_speed import (  # noqa: E402
    ENCODER_LAYERS,
    HEADS,
    interleaved_epoch_seconds,
    keras_epoch,
    ours,
)
from tfrec_tricks.data import Interactions, load_source, prepare  # noqa: E402
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.data.train_windows import train_windows  # noqa: E402
from tfrec_tricks.models import ModelConfig  # noqa: E402

PROTOCOLS = ("prefix", "windowed")
#: The issue's target: windowed epochs this many times faster.
TARGET = 10.0
#: The training defaults (``tfrec-tricks train``).
BATCH_SIZE = 128
STEPS_PER_EXECUTION = 16
#: ``--models`` names: ``encoder:head`` without spaces.
MODELS = {
    f"{encoder}:{head.replace(' ', '')}": (encoder, head)
    for encoder in ENCODER_LAYERS
    for head in HEADS
}


def first_users(interactions: Interactions, count: int) -> Interactions:
    """The interactions of the first ``count`` users, in file order."""
    users = np.asarray(interactions.users)
    _, first = np.unique(users, return_index=True)
    kept = users[np.sort(first)[:count]]
    mask = np.isin(users, kept)
    return dataclasses.replace(
        interactions,
        users=users[mask],
        items=np.asarray(interactions.items)[mask],
        timestamps=None
        if interactions.timestamps is None
        else np.asarray(interactions.timestamps)[mask],
        numeric={
            name: np.asarray(column)[mask]
            for name, column in interactions.numeric.items()
        },
    )


def recorded(
    run: Callable[[], float], log: list, name: str
) -> Callable[[], float]:
    """``run``, each of its seconds appended to ``log`` and printed."""

    def job() -> float:
        seconds = run()
        log.append(seconds)
        print(f"{name} run {len(log)}: {seconds:.2f} s", flush=True)
        return seconds

    return job


#: The floor job's name in the timings.
FLOOR = "softmax layer alone"


def softmax_layer_job(
    num_items: int, dim: int, targets: int, batches: int, seed: int = 0
) -> Callable[[], float]:
    """A job timing the full-softmax output layer alone for ``batches`` steps.

    Each step scores ``targets`` states of width ``dim`` against a
    ``[num_items, dim]`` table, takes the softmax cross-entropy, and
    applies Adam to the states' and the table's gradients: the work every
    trained target costs under any protocol.

    Returns:
        A function that runs the steps and returns their seconds.
    """
    generator = tf.random.Generator.from_seed(seed)
    states = tf.Variable(generator.normal([targets, dim]))
    table = tf.Variable(generator.normal([num_items, dim]) * 0.05)
    labels = generator.uniform([targets], 1, num_items, tf.int32)
    optimizer = tf.keras.optimizers.Adam(1e-3)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = tf.matmul(states, table, transpose_b=True)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
            )
        grads = tape.gradient(loss, [states, table])
        optimizer.apply_gradients(zip(grads, [states, table]))
        return loss

    def run() -> float:
        start = time.perf_counter()
        for _ in range(batches):
            loss = step()
        float(loss)  # waits for the last step
        return time.perf_counter() - start

    return run


def summarize(
    counts: dict,
    times: dict,
    prefix_batches: int,
    windowed_batches: int | None = None,
) -> dict:
    """Per model: each protocol's s/batch and epoch seconds, the ratio.

    Args:
        counts: {protocol: {"rows", "targets", "batches"}} per epoch.
        times: {model: {protocol: [seconds of each run]}}, the first
            (untimed) run left out.
        prefix_batches: batches of each prefix run (``--prefix-batches``;
            fewer when the epoch has fewer).
        windowed_batches: batches of each windowed run
            (``--windowed-batches``); None: the whole epoch.

    Returns:
        {model: {protocol: {"seconds", "batches_per_run", "median",
        "s_per_batch", "epoch_seconds"}, "ratio", "met"}}.
    """
    per_run = {
        "prefix": min(prefix_batches, counts["prefix"]["batches"]),
        "windowed": min(
            windowed_batches or counts["windowed"]["batches"],
            counts["windowed"]["batches"],
        ),
    }
    results = {}
    for model, runs in times.items():
        entry = {}
        for protocol in PROTOCOLS:
            median = statistics.median(runs[protocol])
            per_batch = median / per_run[protocol]
            entry[protocol] = {
                "seconds": list(runs[protocol]),
                "batches_per_run": per_run[protocol],
                "median": median,
                "s_per_batch": per_batch,
                "epoch_seconds": per_batch * counts[protocol]["batches"],
            }
        ratio = entry["prefix"]["epoch_seconds"] / max(
            entry["windowed"]["epoch_seconds"], 1e-12
        )
        entry["ratio"] = ratio
        entry["met"] = ratio >= TARGET
        results[model] = entry
    return results


def report(
    command: str,
    description: str,
    counts: dict,
    results: dict,
    rounds: int,
    load: tuple[float, ...],
    floor: dict | None = None,
) -> str:
    """The markdown report: what was measured, the table, the verdict.

    Args:
        command: the command line that reruns it.
        description: the data, e.g. ``"ml-1m: 6,040 users, ..."``.
        counts: as ``summarize``'s.
        results: ``summarize``'s answer.
        rounds: timed runs per model and protocol.
        load: the load average at the end.
        floor: ``floor_summary``'s answer, or None (not measured).
    """
    prefix_runs = next(iter(results.values()))["prefix"]["batches_per_run"]
    windowed_runs = next(iter(results.values()))["windowed"]["batches_per_run"]
    prefix, windowed = counts["prefix"], counts["windowed"]
    if windowed_runs < windowed["batches"]:
        windowed_line = (
            f"- windowed epoch (stride {windowed['stride']}): "
            f"{windowed['batches']:,} batches x median s/batch of "
            f"{windowed_runs:,}-batch runs, the first of a freshly shuffled "
            "epoch."
        )
    else:
        windowed_line = (
            f"- windowed epoch (stride {windowed['stride']}): measured "
            f"whole, {windowed['batches']:,} batches per run (median of the "
            "runs)."
        )
    met = sum(entry["met"] for entry in results.values())
    lines = [
        f"Command: `{command}`",
        "",
        f"{description}. Training only (no validation pass), batch "
        f"{BATCH_SIZE} rows bucketed by history length, shuffled, "
        f"{STEPS_PER_EXECUTION} steps per call; every model/protocol pair "
        f"trained once untimed, then {rounds} timed "
        + ("run" if rounds == 1 else "runs")
        + " each, taking turns. Load average at the end: "
        + ", ".join(f"{value:.2f}" for value in load)
        + ".",
        "",
        f"- prefix epoch: {prefix['batches']:,} batches x median s/batch "
        f"of {prefix_runs:,}-batch runs (`model.fit(dataset.take("
        f"{prefix_runs}))`). Each run's batches are the first of a freshly "
        "shuffled epoch (batch order reshuffled at every pass), a random "
        "draw from the epoch's mix of history lengths.",
        windowed_line,
        "",
        "| model | protocol | rows / epoch | targets / epoch | batches / "
        "epoch | s/batch | epoch s | prefix / windowed | >= "
        f"{TARGET:g}x |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for model, entry in results.items():
        for protocol in PROTOCOLS:
            timing, count = entry[protocol], counts[protocol]
            cells = [
                model,
                protocol,
                f"{count['rows']:,}",
                f"{count['targets']:,}",
                f"{count['batches']:,}",
                f"{timing['s_per_batch']:.4f}",
                f"{timing['epoch_seconds']:.2f}",
                "",
                "",
            ]
            if protocol == "windowed":
                cells[-2] = f"{entry['ratio']:.1f}x"
                cells[-1] = "met" if entry["met"] else "missed"
            lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Target (windowed epoch >= {TARGET:g}x faster): met by {met} of "
        f"{len(results)} models.",
    ]
    if floor is not None:
        floor_seconds = floor["epoch_seconds"]
        best = ", ".join(
            f"{model} {entry['prefix']['epoch_seconds'] / floor_seconds:.1f}x"
            for model, entry in results.items()
        )
        lines += [
            "",
            f"The full-softmax output layer alone ({floor['items']:,} items, "
            f"d={floor['dim']}, {floor['targets_per_batch']:,} targets per "
            "step: logits, cross-entropy, gradients, Adam) takes "
            f"{floor_seconds:.2f} s for the epoch's "
            f"{windowed['batches']:,} steps ({floor['s_per_batch']:.4f} s "
            "each). Every protocol that trains each target against the "
            "whole catalogue pays it, so the largest speed-up a windowed "
            f"epoch could reach is prefix epoch / {floor_seconds:.2f} s: "
            f"{best}.",
        ]
    return "\n".join(lines)


def floor_summary(
    seconds: list[float],
    batches_per_run: int,
    batches_per_epoch: int,
    targets_per_batch: int,
    items: int,
    dim: int,
) -> dict:
    """The output-layer floor: median s/step and the epoch's seconds.

    Args:
        seconds: each timed run's seconds.
        batches_per_run: steps per run.
        batches_per_epoch: the windowed epoch's batches.
        targets_per_batch: targets per step.
        items: the catalogue's rows (padding included).
        dim: the states' width.
    """
    per_batch = statistics.median(seconds) / batches_per_run
    return {
        "seconds": list(seconds),
        "batches_per_run": batches_per_run,
        "s_per_batch": per_batch,
        "epoch_seconds": per_batch * batches_per_epoch,
        "targets_per_batch": targets_per_batch,
        "items": items,
        "dim": dim,
    }


def plot(results: dict, path: str, floor: dict | None = None) -> None:
    """Bars of each model's epoch seconds per protocol, log scale, and the
    softmax-layer floor as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(results)
    fig, axis = plt.subplots(figsize=(2 + 2 * len(models), 4))
    width = 0.38
    for offset, protocol in zip((-width / 2, width / 2), PROTOCOLS):
        axis.bar(
            [i + offset for i in range(len(models))],
            [results[m][protocol]["epoch_seconds"] for m in models],
            width,
            label=protocol,
        )
    for i, model in enumerate(models):
        axis.annotate(
            f"{results[model]['ratio']:.1f}x",
            (i - width / 2, results[model]["prefix"]["epoch_seconds"]),
            ha="center",
            va="bottom",
        )
    if floor is not None:
        axis.axhline(
            floor["epoch_seconds"],
            color="black",
            linestyle="--",
            label="softmax layer alone",
        )
    axis.set_yscale("log")
    axis.set_xticks(range(len(models)), models)
    axis.set_ylabel("seconds per epoch (log)")
    axis.set_title("Training epoch: prefix rows vs windows (2 CPU cores)")
    axis.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def positive(value: str) -> int:
    """argparse type: an integer of at least 1."""
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(
            f"must be at least 1. Received: {value}"
        )
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, default="ml-1m")
    parser.add_argument(
        "--models",
        nargs="+",
        choices=tuple(MODELS),
        default=list(MODELS),
        metavar="MODEL",
        help="models to time, of: " + ", ".join(MODELS) + ". Default: all",
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=3,
        help="runs per model and protocol, taking turns, the first not "
        "timed (>= 2). Default: 3",
    )
    parser.add_argument(
        "--prefix-batches",
        type=positive,
        default=320,
        help="batches per prefix run (the epoch's time is extrapolated "
        "from them). Default: 320",
    )
    parser.add_argument(
        "--windowed-batches",
        type=positive,
        default=None,
        help="batches per windowed run (the epoch's time is extrapolated "
        "from them), and steps per run of the softmax-layer floor. "
        "Default: the whole epoch",
    )
    parser.add_argument(
        "--max-users",
        type=positive,
        default=None,
        help="keep only the first N users of the source. Default: all",
    )
    common.add_seed_option(parser)
    common.add_report_dir_option(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error(f"--epochs must be at least 2. Received: {args.epochs}")

    interactions = load_source(args.data, data_path=args.data_path).interactions
    if args.max_users:
        interactions = first_users(interactions, args.max_users)
    data = prepare(interactions)
    stride = data.max_len
    options = {"shuffle": True, "seed": args.seed, "bucket_by_length": True}
    datasets = {
        "prefix": make_dataset(data.train, BATCH_SIZE, **options),
        "windowed": make_dataset(
            data.train, BATCH_SIZE, window_stride=stride, **options
        ),
    }
    windows = train_windows(data.train, stride)
    counts = {
        "prefix": {"rows": len(data.train), "targets": len(data.train)},
        "windowed": {
            "rows": len(windows["history"]),
            "targets": int((windows["position_targets"] > 0).sum()),
            "stride": stride,
        },
    }
    for protocol, dataset in datasets.items():
        counts[protocol]["batches"] = int(dataset.cardinality())
    # Steps of each windowed run, and of the softmax-layer floor's.
    windowed_steps = min(
        args.windowed_batches or counts["windowed"]["batches"],
        counts["windowed"]["batches"],
    )
    feeds = {
        "prefix": datasets["prefix"].take(args.prefix_batches),
        "windowed": datasets["windowed"].take(windowed_steps),
    }
    logs, jobs = {}, {}
    for name in args.models:
        encoder, head = MODELS[name]
        for protocol in PROTOCOLS:
            model = ours(data, encoder, HEADS[head], STEPS_PER_EXECUTION)
            logs[name, protocol] = []
            jobs[name, protocol] = recorded(
                keras_epoch(model, feeds[protocol]),
                logs[name, protocol],
                f"{name} {protocol}",
            )
    targets_per_batch = round(
        counts["windowed"]["targets"] / counts["windowed"]["batches"]
    )
    dim = ModelConfig(num_items=data.num_items).embedding_dim
    logs[FLOOR] = []
    jobs[FLOOR] = recorded(
        softmax_layer_job(
            data.num_items, dim, targets_per_batch, windowed_steps
        ),
        logs[FLOOR],
        FLOOR,
    )
    interleaved_epoch_seconds(jobs, args.epochs)
    times = {
        name: {protocol: logs[name, protocol][1:] for protocol in PROTOCOLS}
        for name in args.models
    }
    results = summarize(
        counts, times, args.prefix_batches, args.windowed_batches
    )
    floor = floor_summary(
        logs[FLOOR][1:],
        windowed_steps,
        counts["windowed"]["batches"],
        targets_per_batch,
        data.num_items,
        dim,
    )
    load = os.getloadavg()
    command = common.command_line("windowed_speed", argv)
    users = len(np.unique(np.asarray(interactions.users)))
    description = (
        f"{args.data}"
        + (f" (first {args.max_users:,} users)" if args.max_users else "")
        + f": {users:,} users, {data.num_items - 1:,} items, max_len "
        f"{data.max_len}, split recbole, seed {args.seed}"
    )
    text = report(
        command, description, counts, results, args.epochs - 1, load, floor
    )
    common.write_report(
        common.report_stem(args.report_dir, "windowed_speed"),
        text,
        {
            "command": command,
            "data": description,
            "counts": counts,
            "prefix_batches": args.prefix_batches,
            "first_run_seconds": {
                f"{key[0]}/{key[1]}": log[0]
                for key, log in logs.items()
                if key != FLOOR
            },
            "models": results,
            "softmax_layer_floor": floor,
            "load_average": list(load),
        },
        chart=lambda path: plot(results, path, floor),
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
