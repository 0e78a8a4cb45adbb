"""Speed and memory of the output heads: plain, tied, Softmax-CPR, MoS.

Times one training step of the output head alone (forward and backward
under ``tf.function`` and ``tf.GradientTape``; gradients to the head's
weights, the item table and bias, and the hidden states, which the
encoder would receive) for a batch of ``B`` histories of length ``L``
with hidden size ``d``, for each catalogue size ``N``. Each step computes
what the model's train step does: the loss and the target ranks of the
training metrics. For the softmax and MoS heads that is sparse softmax
cross-entropy on the logits and ``tf_target_ranks``; for CPR heads it is
``SoftmaxCPR.cross_entropy``, which never writes the logits, unless the
head's name ends in ``+written`` (the logits written out, then the same
cross-entropy and ranks: the training path before the scatter-free
loss).

How it measures:

* Time: one subprocess per ``N`` builds every head, warms each up, then
  runs the heads round-robin ``--repeats`` times, so load from other
  processes hits all heads alike; the table reports the median and the
  ratio to the plain softmax's median from that same process.
* Memory: one subprocess per (head, ``N``) builds the head and its inputs,
  reads its resident set size (RSS), runs warm-up plus one step and reads
  the peak RSS (``resource.getrusage(...).ru_maxrss``). "Step MB" is peak
  minus the RSS before the first step: the step's working memory
  (activations, gradients, TF's allocator cache), tracing included.

Heads: ``plain`` is ``Dense(N)`` on ``h``; ``tied`` is
``TiedItemEmbedding(N, d)(h, reverse=True)`` (``h U^T + b``, padding
masked); the CPR heads and ``MoS`` score with the same tied table and bias.
``CPR:k`` means ``SoftmaxCPR(reranker_ks=(k,))`` with C and P on, ``+Mi``
adds ``use_mi=True`` over 2 layers x 3 positions, ``+add`` sets
``merge="add"``, ``+base`` adds the cross-entropy of the head's base
logits to the loss (``--cpr-base-loss 1``) and ``+written`` is the
written-out path (``--heads`` takes any of them).

The sampled objective (``--objective sampled``): ``sampled`` is the tied
softmax over the batch's ``B`` targets (in-batch negatives, the table's
gradient its rows); ``CPR:k+sampled`` is CPR scoring the same candidates,
its reranker sets chosen over the catalogue, and ``CPR:k+sampled+within``
chooses them among the candidates and the history
(``rerank_within_candidates``).

Usage::

    python -m benchmarks.output_head             # full run, ~10 min
    python -m benchmarks.output_head --quick     # N=3706,40000, 3 repeats
    python -m benchmarks.output_head --sizes 40000 --repeats 20 --no-memory

Writes ``benchmarks/results/output_head.md`` and ``output_head.png``.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from benchmarks import common

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HEADS = [
    "plain",
    "tied",
    "CP",
    "CPR:100",
    "CPR:100+Mi",
    "CPR:20,100,500+Mi",
    "MoS(K=4)",
]
DEFAULT_SIZES = (3706, 40000, 1000000)
# Sizes from which fewer repeats are run (a step takes seconds there).
LARGE = 500000


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build_steps(heads, num_items, batch, length, dim, seed=0):
    """Returns ``{head: step}`` and the step's arguments."""
    import numpy as np
    import tensorflow as tf

    from tfrec_tricks.evaluation.full_ranking import tf_target_ranks
    from tfrec_tricks.heads import MixtureOfSoftmax, SoftmaxCPR
    from tfrec_tricks.layers import TiedItemEmbedding

    rng = np.random.default_rng(seed)
    # Left-padded histories of random length 5..L; ids may repeat.
    lengths = rng.integers(5, length + 1, size=batch)
    ids = rng.integers(1, num_items, size=(batch, length)).astype("int32")
    ids[np.arange(length)[None, :] < (length - lengths)[:, None]] = 0
    ids = tf.constant(ids)
    targets = tf.constant(rng.integers(1, num_items, size=batch), tf.int32)
    hidden = tf.constant(rng.normal(size=(batch, length, dim)), tf.float32)
    first_layer = tf.constant(rng.normal(size=(batch, length, dim)), tf.float32)
    items = TiedItemEmbedding(num_items, dim, use_bias=True, tie=True)
    items.build(None)
    table, bias = items.output_embeddings, items.output_bias

    def sampled_loss(scores):
        # The in-batch sampled softmax: row i's positive is candidate i
        # (the model's sampled objective; no rank pass in its train step).
        labels = tf.eye(tf.shape(scores)[0], tf.shape(scores)[1])
        loss = tf.keras.losses.categorical_crossentropy(
            labels, scores, from_logits=True
        )
        return tf.reduce_mean(loss), tf.zeros([0])

    def cpr(ks, mi, merge="replace", base=False, written=False, sampled=None):
        layer = SoftmaxCPR(
            reranker_ks=ks,
            use_mi=mi,
            mi_layers=2,
            mi_window=3,
            merge=merge,
            rerank_within_candidates=sampled == "within",
        )

        def head_inputs(h_states, layer0, ids):
            inputs = {"hidden_states": h_states, "history_ids": ids}
            if mi:
                inputs["layer_hidden_states"] = [layer0, h_states]
            return inputs

        def logits(h_states, layer0, ids):
            return layer(
                head_inputs(h_states, layer0, ids),
                table,
                item_bias=bias,
                training=True,
                return_base_logits=base,
            )

        def loss(h_states, layer0, ids):
            # What the model's train step runs (SoftmaxCPR.cross_entropy).
            cross_entropy, base_cross_entropy, ranks = layer.cross_entropy(
                head_inputs(h_states, layer0, ids),
                table,
                targets,
                item_bias=bias,
                training=True,
            )
            if base:
                cross_entropy += base_cross_entropy
            return tf.reduce_mean(cross_entropy), ranks

        def candidate_loss(h_states, layer0, ids):
            # The model's sampled objective: the in-batch targets scored.
            scores = layer(
                head_inputs(h_states, layer0, ids),
                table,
                item_bias=bias,
                candidate_ids=targets,
                training=True,
            )
            return sampled_loss(scores)

        if sampled:
            return layer, logits, candidate_loss
        if written:
            return layer, logits, None
        return layer, logits, loss

    def make(name):
        if name == "plain":
            dense = tf.keras.layers.Dense(num_items)
            return (
                dense,
                lambda h_states, _, ids: dense(h_states[:, -1]),
                None,
            )
        if name == "tied":
            return (
                None,
                lambda h_states, _, ids: items(h_states[:, -1], reverse=True),
                None,
            )
        if name == "sampled":

            def tied_sampled_loss(h_states, _, ids):
                scores = items.logits(
                    h_states[:, -1], candidate_ids=targets, training=True
                )
                return sampled_loss(scores)

            return None, lambda h_states, _, ids: None, tied_sampled_loss
        if name == "CP":
            return cpr((), False)
        if name.startswith("CPR:"):
            # CPR:K[,K...][+Mi][+add][+base][+written][+sampled[+within]]
            sizes, *options = name[4:].split("+")
            known = {"Mi", "add", "base", "written", "sampled", "within"}
            unknown = set(options) - known
            if unknown:
                raise ValueError(f"unknown CPR options. Received: {name!r}")
            ks = tuple(int(k) for k in sizes.split(","))
            merge = "add" if "add" in options else "replace"
            return cpr(
                ks,
                "Mi" in options,
                merge,
                "base" in options,
                "written" in options,
                ("within" if "within" in options else "catalogue")
                if "sampled" in options
                else None,
            )
        if name.startswith("MoS"):
            mos = MixtureOfSoftmax(num_components=4)

            def logits(h_states, _, ids):
                inputs = {"hidden_states": h_states, "history_ids": ids}
                return mos(inputs, table, item_bias=bias, training=True)

            return mos, logits, None
        raise ValueError(f"unknown head. Received: head={name!r}")

    steps = {}
    for name in heads:
        layer, logits_fn, loss_fn = make(name)
        # Build on one row, so the peak RSS is not set here.
        logits_fn(hidden[:1], first_layer[:1], ids[:1])
        weights = [table, bias] if name != "plain" else []
        if layer is not None:
            weights += list(layer.trainable_weights)

        def written_loss(h_states, layer0, ids, logits_fn=logits_fn):
            logits = logits_fn(h_states, layer0, ids)
            # "+base": the CPR loss plus that of its base logits
            # (``--cpr-base-loss 1``).
            parts = logits if isinstance(logits, tuple) else (logits,)
            loss = tf.add_n(
                [
                    tf.reduce_mean(
                        tf.nn.sparse_softmax_cross_entropy_with_logits(
                            labels=targets, logits=part
                        )
                    )
                    for part in parts
                ]
            )
            # The training metrics' rank pass, as the model's train step.
            return loss, tf_target_ranks(parts[0], targets)

        @tf.function
        def step(
            h_states,
            layer0,
            ids,
            loss_fn=loss_fn or written_loss,
            weights=weights,
        ):
            with tf.GradientTape() as tape:
                tape.watch([h_states, layer0])
                loss, ranks = loss_fn(h_states, layer0, ids)
            grads = tape.gradient(loss, weights + [h_states, layer0])
            # Reduce every gradient so the step's work cannot be pruned.
            total = loss + tf.reduce_sum(ranks) * 0.0
            for grad in grads:
                if isinstance(grad, tf.IndexedSlices):
                    # A sparse update touches these rows only (the sampled
                    # objective's table gradient).
                    grad = grad.values
                if grad is not None:
                    total += tf.reduce_sum(tf.convert_to_tensor(grad)) * 0.0
            return total

        steps[name] = step
    return steps, (hidden, first_layer, ids)


def worker_time(args) -> dict:
    steps, step_args = build_steps(
        args.heads, args.num_items, args.batch, args.length, args.dim
    )
    repeats, warmup = args.repeats, args.warmup
    if args.num_items >= LARGE:
        repeats, warmup = min(repeats, 3), 1
    for step in steps.values():
        for _ in range(warmup):
            float(step(*step_args))
    times = {name: [] for name in steps}
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            float(step(*step_args))
            times[name].append(time.perf_counter() - start)
    return {
        name: {"median_ms": 1000 * sorted(t)[len(t) // 2], "runs": len(t)}
        for name, t in times.items()
    }


def worker_memory(args) -> dict:
    steps, step_args = build_steps(
        args.heads, args.num_items, args.batch, args.length, args.dim
    )
    (step,) = steps.values()
    before = _rss_mb()
    float(step(*step_args))
    float(step(*step_args))
    peak = _peak_rss_mb()
    return {"rss_before_mb": before, "peak_mb": peak, "step_mb": peak - before}


def _worker(mode, heads, num_items, args) -> dict:
    command = [
        *common.module_command("output_head"),
        "--worker",
        mode,
        "--num-items",
        str(num_items),
        "--heads",
        ";".join(heads),
        "--batch",
        str(args.batch),
        "--length",
        str(args.length),
        "--dim",
        str(args.dim),
        "--repeats",
        str(args.repeats),
        "--warmup",
        str(args.warmup),
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, cwd=common.ROOT
    )
    if result.returncode != 0:
        return {"error": result.stderr.strip().splitlines()[-1:]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def write_results(rows, args, out_dir: str) -> dict:
    """Writes ``output_head.md`` and ``.png`` to ``out_dir``; their paths."""
    lines = [
        "# Output head: forward + backward step time and memory",
        "",
        f"B={args.batch}, L={args.length}, d={args.dim}; CPU, "
        f"{os.cpu_count()} cores; TF_USE_LEGACY_KERAS="
        f"{os.environ.get('TF_USE_LEGACY_KERAS')}. Median of "
        f"{args.repeats} round-robin runs after {args.warmup} warm-up "
        f"(N >= {LARGE}: 3 runs after 1); ratio to `plain` from the same "
        "process. Peak RSS from a separate process per row; 'step MB' = "
        "peak RSS minus RSS before the first step. Command: "
        f"`{common.command_line('output_head', args.argv)}`",
        "",
        "| N | head | median ms | x plain | peak RSS MB | step MB |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            "| {n} | {head} | {ms} | {ratio} | {peak} | {step} |".format(
                n=row["n"],
                head=row["head"],
                ms=_fmt(row.get("median_ms"), 1),
                ratio=_fmt(row.get("ratio"), 2),
                peak=_fmt(row.get("peak_mb"), 0),
                step=_fmt(row.get("step_mb"), 0),
            )
        )
    return common.write_report(
        common.report_stem(out_dir, "output_head"),
        "\n".join(lines),
        chart=lambda path: plot(rows, args, path),
    )


def plot(rows, args, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({row["n"] for row in rows})
    heads = [h for h in args.heads if h != "plain"]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / max(len(heads), 1)
    for j, head in enumerate(heads):
        values = []
        for n in sizes:
            match = [r for r in rows if r["n"] == n and r["head"] == head]
            values.append(match[0].get("ratio") or 0.0 if match else 0.0)
        positions = [
            i + (j - (len(heads) - 1) / 2) * width for i in range(len(sizes))
        ]
        ax.bar(positions, values, width, label=head)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(1.5, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xticks(range(len(sizes)))
    ax.set_xticklabels([f"N={n}" for n in sizes])
    ax.set_ylabel("step time / plain softmax")
    ax.set_title(
        f"Output head forward+backward (B={args.batch}, L={args.length}, "
        f"d={args.dim})"
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fmt(value, digits):
    if value is None:
        return "n/a"
    return f"{value:.{digits}f}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="See the module docstring for how time and memory are measured.",
    )
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        help="comma-separated catalogue sizes N (default %(default)s)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=7,
        help="timed runs per head (default %(default)s)",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="warm-up runs per head (default %(default)s)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="N=3706,40000 only, 3 repeats, 1 warm-up",
    )
    parser.add_argument(
        "--heads",
        default=";".join(HEADS),
        help="semicolon-separated heads (default: all, i.e. %(default)s)",
    )
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--length", type=int, default=50)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument(
        "--no-memory",
        action="store_true",
        help="skip the per-head peak-memory processes",
    )
    parser.add_argument(
        "--out-dir",
        default=common.RESULTS,
        help="where to write the table and chart",
    )
    parser.add_argument(
        "--worker", choices=["time", "memory"], help=argparse.SUPPRESS
    )
    parser.add_argument("--num-items", type=int, help=argparse.SUPPRESS)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.heads = [h for h in args.heads.split(";") if h]
    if args.worker:
        work = worker_time if args.worker == "time" else worker_memory
        print(json.dumps(work(args)))
        return 0
    if args.quick:
        args.sizes, args.repeats, args.warmup = "3706,40000", 3, 1
    sizes = [int(n) for n in args.sizes.split(",") if n]
    if "plain" not in args.heads:
        args.heads.insert(0, "plain")
    rows = []
    for n in sizes:
        start = time.time()
        timed = _worker("time", args.heads, n, args)
        plain = timed.get("plain", {}).get("median_ms")
        for head in args.heads:
            row = {"n": n, "head": head}
            if head in timed:
                row["median_ms"] = timed[head]["median_ms"]
                row["ratio"] = timed[head]["median_ms"] / plain
            if not args.no_memory:
                memory = _worker("memory", [head], n, args)
                row.update({k: memory.get(k) for k in ("peak_mb", "step_mb")})
            rows.append(row)
            print(json.dumps(row), flush=True)
        if "error" in timed:
            print(f"N={n}: timing failed: {timed['error']}", file=sys.stderr)
        print(f"N={n} done in {time.time() - start:.0f}s", flush=True)
    paths = write_results(rows, args, args.out_dir)
    with open(paths["md"]) as handle:
        print(handle.read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
