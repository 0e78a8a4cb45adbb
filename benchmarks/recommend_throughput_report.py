"""The report of ``benchmarks.recommend_throughput``: its Markdown and chart.

``report`` writes the throughput table and the peak-memory table (closed
by ``memory_notes``) from the results ``recommend_throughput.main``
gathers: ``{"setup": {...}, "throughput": [row, ...], "memory": [row,
...]}``; ``plot`` draws users/s per catalogue size, peak RSS against
users, and each ``recommend`` process's RSS over time. Plain Python (and
matplotlib, imported by ``plot``): no TensorFlow.
"""

#: Bytes in a megabyte, the reports' unit of memory.
MB = 1e6


def _mb(value: float) -> str:
    return f"{value / MB:,.0f}"


def report(results: dict, command: str) -> str:
    """The markdown: the throughput table, then the memory table."""
    setup = results["setup"]
    lines = [
        "# `tfrec-tricks recommend`: throughput and peak memory",
        "",
        f"Command: `{command}`",
        "",
        f"Random udata files (at least 5, on average {setup['length']} "
        "interactions per user, Zipf items, a fifth repeats); GRU4Rec, "
        f"d=64, max_len 50, top {setup['k']}, seen items excluded, batches "
        f"of {setup['batch_size']} users; runs trained one epoch on "
        f"{setup['train_examples']:,} examples a split (the lists are "
        "scored by the same model whatever its weights). Load average "
        f"{setup['load_before']} before, {setup['load_after']} after "
        "(2 cores).",
        "",
        "## Throughput",
        "",
        f"Users/s over every user of the run: median of {setup['repeats']} "
        "passes (min-max), formats taking turns, after the job was built "
        "and one batch traced; `none` ranks without writing. The floor: "
        "a bare `tf.matmul` of random `[batch, 64]` queries with a "
        "random `[items, 64]` table and the package's exact top-10 "
        "(`layers.top_k.top_k_ids`), one `tf.function`, in the same "
        "process: what the served scoring of a batch does at least (no "
        "encoder, no exclusions, no strings).",
        "",
        "| items | head | users | format | users/s | min-max | rows | "
        "MB written | job built s |",
        "|---:|---|---:|---|---:|---|---:|---:|---:|",
    ]
    args_batch = setup["batch_size"]
    for row in results["throughput"]:
        for name, times in row["seconds"].items():
            rates = [row["users"] / t for t in times]
            size = row["rows"].get(f"{name}_bytes")
            lines.append(
                f"| {row['items']:,} | {row['head']} | {row['users']:,} | "
                f"{name} | {row['users_per_second'][name]:,.0f} | "
                f"{min(rates):,.0f}-{max(rates):,.0f} | "
                f"{row['rows'][name]:,} | "
                f"{'' if size is None else f'{size / MB:,.1f}'} | "
                f"{row['load_seconds']:.1f} |"
            )
        rates = [args_batch / t for t in row["floor_seconds"]]
        lines.append(
            f"| {row['items']:,} | floor | | matmul + top_k_ids | "
            f"{row['floor_users_per_second']:,.0f} | "
            f"{min(rates):,.0f}-{max(rates):,.0f} | | | |"
        )
    if results["memory"]:
        lines += [
            "",
            "## Peak memory",
            "",
            f"At {setup['memory_items']:,} items, head "
            f"{setup['memory_head']}; RSS in MB. Three fresh processes per "
            "run: the job's data alone (TensorFlow imported, the "
            "vocabulary's items, the run's histories loaded: peak, and "
            "held once loaded), the job built (histories, vocabulary, "
            "model; nothing ranked: peak) and the command `tfrec-tricks "
            "recommend RUN --output F.csv` (peak; RSS sampled every "
            f"{setup['sample_seconds']} s while its rows were written: at "
            "the first rows, the largest, at the last rows). 'ranking adds' "
            "= the largest RSS while ranking - the data held.",
            "",
            "| users | interactions | data peak | data held | job built "
            "peak | recommend peak | ranking: first / max / last | ranking "
            "adds | load s | ranking s | users/s ranking |",
            "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|",
        ]
        for row in results["memory"]:
            run = row["recommend"]
            data = row["histories"]
            if run.get("ranking_rss_first"):
                ranking = (
                    f"{_mb(run['ranking_rss_first'])} / "
                    f"{_mb(run['ranking_rss_max'])} / "
                    f"{_mb(run['ranking_rss_last'])} | "
                    f"{(run['ranking_rss_max'] - data['rss']) / MB:+,.0f} | "
                    f"{run['load_seconds']:.0f} | "
                    f"{run['ranking_seconds']:.0f} | "
                    + (
                        f"{row['users'] / run['ranking_seconds']:,.0f}"
                        if run["ranking_seconds"] > 0
                        else "n/a"
                    )
                )
            else:  # ranked between two samples
                ranking = "n/a | n/a | n/a | n/a | n/a"
            lines.append(
                f"| {row['users']:,} | {row.get('interactions', 0):,} | "
                f"{_mb(data['peak_rss'])} | {_mb(data['rss'])} | "
                f"{_mb(row['job']['peak_rss'])} | {_mb(run['peak_rss'])} | "
                f"{ranking} |"
            )
        lines += ["", *memory_notes(results["memory"])]
    lines.append("")
    lines.append("![throughput and peak memory](recommend_throughput.png)")
    lines.append("")
    return "\n".join(lines)


def memory_notes(rows: list) -> list[str]:
    """What each extra user costs, from the smallest to the largest run,
    and how the RSS moved while the largest run's users streamed."""
    if len(rows) < 2:
        return []
    small, large = rows[0], rows[-1]
    users = large["users"] - small["users"]

    def per_user(key: str, field: str = "peak_rss") -> str:
        change = large[key][field] - small[key][field]
        return f"{change / users:,.0f} B"

    span = f"from {small['users']:,} to {large['users']:,} users"
    notes = [
        f"- Per extra user, {span}: the data {per_user('histories')} at "
        f"its peak and {per_user('histories', 'rss')} held; the job built "
        f"{per_user('job')}; recommend {per_user('recommend')} at its "
        "peak.",
    ]
    adds = [
        f"{(run['ranking_rss_max'] - r['histories']['rss']) / MB:+,.0f} MB "
        f"({r['users']:,} users)"
        for r in rows
        if (run := r["recommend"]).get("ranking_rss_max")
    ]
    if adds:
        notes.append(f"- The ranking adds {', '.join(adds)} to the data held.")
    run = large["recommend"]
    if run.get("ranking_rss_first"):
        drift = run["ranking_rss_last"] - run["ranking_rss_first"]
        notes.append(
            f"- While {large['users']:,} users streamed through recommend "
            f"({run['ranking_seconds']:.0f} s), its RSS went from "
            f"{_mb(run['ranking_rss_first'])} MB at the first rows to "
            f"{_mb(run['ranking_rss_last'])} MB at the last "
            f"({drift / MB:+,.0f} MB, {drift / large['users']:,.1f} B per "
            f"user; largest {_mb(run['ranking_rss_max'])} MB). Its peak, "
            f"{_mb(run['peak_rss'])} MB, "
            + (
                "came while the data loaded."
                if run["peak_rss"] > run["ranking_rss_max"] + 16 * MB
                else "came while ranking."
            )
        )
    return notes


def plot(results: dict, path: str) -> None:
    """Users/s per catalogue size; peak RSS against users; the RSS of
    each ``recommend`` process over time, its ranking part marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    memory_rows = results["memory"]
    panels = 3 if memory_rows else 1
    figure, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.5))
    axes = [axes] if panels == 1 else list(axes)
    rows = results["throughput"]
    formats = [*(rows[0]["seconds"] if rows else []), "floor"]
    width = 0.8 / len(formats)
    for j, name in enumerate(formats):
        x = [i + j * width for i in range(len(rows))]
        rates = [
            r["floor_users_per_second"]
            if name == "floor"
            else r["users_per_second"][name]
            for r in rows
        ]
        axes[0].bar(x, rates, width, label=name)
    axes[0].set_xticks(
        [i + width * (len(formats) - 1) / 2 for i in range(len(rows))]
    )
    axes[0].set_xticklabels(
        [f"{r['items']:,} items\n{r['head']}" for r in rows]
    )
    axes[0].set_yscale("log")
    axes[0].set_ylabel("users / s (median pass)")
    axes[0].set_title("throughput")
    axes[0].legend(fontsize=8)
    if not memory_rows:
        figure.tight_layout()
        figure.savefig(path, dpi=120)
        plt.close(figure)
        return
    users = [r["users"] for r in memory_rows]
    for values, label in (
        ([r["recommend"]["peak_rss"] for r in memory_rows], "recommend peak"),
        ([r["job"]["peak_rss"] for r in memory_rows], "job built, peak"),
        ([r["histories"]["peak_rss"] for r in memory_rows], "data alone, peak"),
        ([r["histories"]["rss"] for r in memory_rows], "data alone, held"),
        (
            [
                r["recommend"].get("ranking_rss_max", float("nan"))
                for r in memory_rows
            ],
            "recommend while ranking, max",
        ),
    ):
        axes[1].plot(users, [v / 1e9 for v in values], marker="o", label=label)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("users")
    axes[1].set_ylabel("RSS (GB)")
    axes[1].set_title(f"memory, {results['setup']['memory_items']:,} items")
    axes[1].legend(fontsize=8)
    for row in memory_rows:
        trace = row["recommend"]["trace"]
        line = axes[2].plot(
            [t for t, _, _ in trace],
            [rss / 1e9 for _, rss, _ in trace],
            label=f"{row['users']:,} users",
        )
        ranking = [(t, rss) for t, rss, size in trace if size > 0]
        if ranking:
            axes[2].plot(
                [t for t, _ in ranking],
                [rss / 1e9 for _, rss in ranking],
                linewidth=4,
                alpha=0.4,
                color=line[0].get_color(),
            )
    axes[2].set_xlabel("seconds since start")
    axes[2].set_ylabel("RSS (GB)")
    axes[2].set_title("recommend's RSS (thick: rows being written)")
    axes[2].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
