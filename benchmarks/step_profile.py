"""Where a training step's time goes: op time by type, Softmax vs CPR.

Traces training steps of GRU4Rec and SASRec, each with the Softmax and the
CPR:100 + Mi head (the models of ``epoch_speed.py``: batch 128, max_len 50,
d=64, full softmax, Adam 1e-3), with the TensorFlow profiler, and sums the
kernels' run time by op type (``MatMul``, ``TopKV2``, ...). Each encoder
runs in its faster pipeline of ``epoch_speed.md``: GRU4Rec on length-bucketed
batches, SASRec with every position of a session in one row (about 128
target positions per batch). With ``--window-stride S`` both encoders
train ``train --train-windows``' batches instead: 128 windows of
``max_len`` items, ``S`` apart, a target at every position (issue 42's
windowed ml-1m epoch, where CPR's epoch took 2.2-2.7x the softmax's).

"Wall" is the median time of one step over ``--repeats`` passes over the
same ``--steps`` batches, untraced, each step one call of a compiled
``train_step``. "Op time" is the kernels' time summed over TensorFlow's
threads (two cores here), so it can exceed the wall time; what the CPR
head adds to a step is the difference of the two heads' columns, op type
by op type.

    python -m benchmarks.step_profile --data-path ../shared/data
    python -m benchmarks.step_profile --data-path ../shared/data \
        --data ml-1m --window-stride 50

Writes ``benchmarks/results/step_profile.md`` and ``step_profile.png``.
"""

import argparse
import collections
import glob
import re
import statistics
import sys
import tempfile
import time

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

import tensorflow as tf  # noqa: E402
from tensorflow.tsl.profiler.protobuf import xplane_pb2  # noqa: E402

from benchmarks import common  # noqa: E402
from benchmarks.epoch_speed import HEADS, ours  # noqa: E402
from tfrec_tricks.data import load_source, prepare  # noqa: E402
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.data.train_windows import check_stride  # noqa: E402

#: Each encoder's faster pipeline in epoch_speed.md: every position?
EVERY_POSITION = {"gru4rec": False, "sasrec": True}
#: A kernel's trace event is named "<op name>:<op type>"; the executor's
#: own events ("ExecutorState::Process", ...) wrap kernels and are skipped.
KERNEL_EVENT = re.compile(r"^[^:]+:([A-Za-z0-9_]+)$")


def op_times(xspace_path: str) -> collections.Counter:
    """Milliseconds of kernel time per op type in a profiler trace.

    Args:
        xspace_path: an ``*.xplane.pb`` file written by
            ``tf.profiler.experimental``.

    Returns:
        ``Counter`` {op type: ms}, over the host's TensorFlow threads.
    """
    space = xplane_pb2.XSpace()
    with open(xspace_path, "rb") as handle:
        space.ParseFromString(handle.read())
    times = collections.Counter()
    for plane in space.planes:
        if not plane.name.startswith("/host:CPU"):
            continue
        for line in plane.lines:
            # Kernels run on the inter-op threads ("tf_Compute"); the
            # intra-op (Eigen) threads' events are inside those.
            if not line.name.startswith("tf_Compute"):
                continue
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                match = KERNEL_EVENT.match(name)
                if match:
                    times[match.group(1)] += event.duration_ps / 1e9
    return times


def profile_steps(model, batches: list, repeats: int) -> tuple:
    """Median wall ms per step and op ms per step by type.

    Args:
        model: a compiled ``SequentialRetrievalModel``.
        batches: a list of training batches (dicts of tensors).
        repeats: untraced passes over ``batches`` for the wall time.

    Returns:
        ``(wall_ms, op_ms)``: a float and a ``Counter`` {op type: ms}.
    """
    step = tf.function(model.train_step, reduce_retracing=True)
    for _ in range(2):  # trace every batch shape, warm the caches
        for batch in batches:
            logs = step(batch)
    float(logs["loss"])
    passes = []
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            logs = step(batch)
        float(logs["loss"])
        passes.append((time.perf_counter() - start) / len(batches) * 1e3)
    with tempfile.TemporaryDirectory() as logdir:
        tf.profiler.experimental.start(logdir)
        for batch in batches:
            logs = step(batch)
        float(logs["loss"])
        tf.profiler.experimental.stop()
        (path,) = glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)
        times = op_times(path)
    per_step = collections.Counter(
        {op: ms / len(batches) for op, ms in times.items()}
    )
    return statistics.median(passes), per_step


def report(results: dict, steps_per_epoch: dict, top: int) -> str:
    """Markdown table: one column per model, one row per op type."""
    columns = list(results)
    extra = {}
    for encoder in EVERY_POSITION:
        softmax, cpr = (encoder, "Softmax"), (encoder, "CPR:100 + Mi")
        if softmax in results and cpr in results:
            extra[encoder] = (softmax, cpr)
    names = [f"{encoder} {head}" for encoder, head in columns]
    names += [f"{encoder}: CPR extra" for encoder in extra]
    lines = [
        "| ms per step | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]

    def row(label, values):
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    def with_extra(value_of):
        values = [value_of(key) for key in columns]
        values += [value_of(cpr) - value_of(sm) for sm, cpr in extra.values()]
        return values

    row("wall", [f"{v:.2f}" for v in with_extra(lambda k: results[k][0])])
    row(
        "op time, all types",
        [f"{v:.2f}" for v in with_extra(lambda k: sum(results[k][1].values()))],
    )
    total = collections.Counter()
    for _, times in results.values():
        total.update(times)
    shown = [op for op, _ in total.most_common(top)]
    for op in shown:
        row(
            f"`{op}`",
            [f"{v:.2f}" for v in with_extra(lambda k: results[k][1][op])],
        )
    row(
        "other types",
        [
            f"{v:.2f}"
            for v in with_extra(
                lambda k: sum(
                    ms for op, ms in results[k][1].items() if op not in shown
                )
            )
        ],
    )
    row(
        "steps per epoch",
        [str(steps_per_epoch[encoder]) for encoder, _ in columns]
        + [""] * len(extra),
    )
    return "\n".join(lines)


def plot(results: dict, path: str, top: int, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    total = collections.Counter()
    for _, times in results.values():
        total.update(times)
    shown = [op for op, _ in total.most_common(top)]
    labels = [f"{encoder}\n{head}" for encoder, head in results]
    fig, ax = plt.subplots(figsize=(11, 4.5))
    left = [0.0] * len(results)
    colours = plt.get_cmap("tab20").colors
    for i, op in enumerate([*shown, "other"]):
        widths = [
            times[op]
            if op != "other"
            else sum(ms for name, ms in times.items() if name not in shown)
            for _, times in results.values()
        ]
        # Matplotlib hides labels starting with "_" ("_MklEinsum").
        label = op.lstrip("_")
        ax.barh(labels, widths, left=left, label=label, color=colours[i % 20])
        left = [a + b for a, b in zip(left, widths)]
    ax.set_xlabel("kernel time per training step, ms (summed over threads)")
    ax.invert_yaxis()
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(parser, default="yoochoose-100k")
    common.add_split_option(parser)
    parser.add_argument(
        "--steps", type=int, default=40, help="batches per pass. Default: 40"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="untraced passes for the wall time. Default: 5",
    )
    parser.add_argument(
        "--top", type=int, default=12, help="op types shown. Default: 12"
    )
    parser.add_argument(
        "--window-stride",
        type=int,
        default=None,
        metavar="S",
        help="both encoders train windows of max_len items S apart\n"
        "(train --train-windows --window-stride S), 128 windows per\n"
        "batch. Default: each encoder's faster pipeline",
    )
    common.add_report_dir_option(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name in ("steps", "repeats", "top"):
        if getattr(args, name) < 1:
            raise SystemExit(
                f"--{name} must be at least 1. Received: {getattr(args, name)}"
            )
    data = prepare(
        load_source(args.data, data_path=args.data_path).interactions,
        split=args.split,
    )
    if args.window_stride is not None:
        try:
            check_stride(args.window_stride, data.max_len)
        except ValueError as error:
            raise SystemExit(f"--window-stride: {error}") from None
    results, steps_per_epoch = {}, {}
    for encoder, every_position in EVERY_POSITION.items():
        dataset = make_dataset(
            data.train,
            128,
            shuffle=True,
            seed=0,
            bucket_by_length=True,
            every_position=every_position and args.window_stride is None,
            window_stride=args.window_stride,
        )
        steps_per_epoch[encoder] = sum(1 for _ in dataset)
        batches = list(dataset.take(args.steps))
        for head_name, head in HEADS.items():
            model = ours(data, encoder, head, steps_per_execution=1)
            results[encoder, head_name] = profile_steps(
                model, batches, args.repeats
            )
            print(encoder, head_name, f"{results[encoder, head_name][0]:.2f}")
    command = common.command_line("step_profile", argv)
    pipelines = ", ".join(
        f"{encoder} {'every position' if every else 'bucketed batches'}"
        for encoder, every in EVERY_POSITION.items()
    )
    if args.window_stride is not None:
        pipelines = (
            f"both encoders on windows of {data.max_len} items, "
            f"{args.window_stride} apart, 128 per batch"
        )
    text = "\n".join(
        [
            f"Command: `{command}`",
            "",
            f"{args.data}, split {args.split}, {len(data.train):,} training "
            f"examples, {data.num_items:,} items; {pipelines}; "
            f"{args.steps} batches, wall time the median of {args.repeats} "
            "passes; op time from one traced pass, summed over threads.",
            "",
            report(results, steps_per_epoch, args.top),
        ]
    )
    common.write_report(
        common.report_stem(args.report_dir, "step_profile"),
        text,
        chart=lambda path: plot(
            results,
            path,
            args.top,
            f"Where a training step's time goes ({args.data})",
        ),
    )
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
