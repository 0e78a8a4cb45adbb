"""benchmarks.recommend_throughput: its files, runs' numbers and report
(benchmarks.recommend_throughput_report), on hand-made numbers."""

import argparse
import json
import os
import sys

import pytest

from benchmarks import (
    common,
    recommend_throughput,
    recommend_throughput_report,
)

MB = 1e6


def test_file_users_add_users_until_every_item_can_occur():
    # Fresh draws a user: 0.8 (no repeat) x 0.95 x length.
    length_20 = argparse.Namespace(length=20)  # 15.2 fresh a user
    assert recommend_throughput.file_users(length_20, 100, 1000) == 100
    assert recommend_throughput.file_users(length_20, 10, 1000) == 66
    assert recommend_throughput.file_users(length_20, 4000, 10**6) == 65_790
    length_5 = argparse.Namespace(length=5)  # 3.8 fresh a user
    assert recommend_throughput.file_users(length_5, 10, 1000) == 264


def test_the_file_names_give_their_counts():
    path = "/w/data/u65790-i1000000-n1315800-s0.udata"
    assert recommend_throughput.interaction_count(path) == 1_315_800
    assert recommend_throughput.file_count(path) == 65_790
    assert (
        recommend_throughput.run_name(path, "softmax")
        == "u65790-i1000000-n1315800-s0-softmax"
    )


def test_data_file_writes_the_file_once(tmp_path, monkeypatch):
    args = argparse.Namespace(length=6, work_dir=str(tmp_path), seed=1)
    path = recommend_throughput.data_file(args, 50, 40)
    assert path == str(tmp_path / "data" / "u50-i40-n300-s1.udata")
    rows = [line.split("\t") for line in open(path).read().splitlines()]
    assert len(rows) == 300 == recommend_throughput.interaction_count(path)
    assert {int(row[0]) for row in rows} == set(range(1, 51))
    assert {int(row[1]) for row in rows} == set(range(1, 41))
    assert recommend_throughput.file_count(path) == 50

    def refuse(*arguments):
        raise AssertionError("the file exists: not written again")

    monkeypatch.setattr(recommend_throughput, "write_interactions", refuse)
    assert recommend_throughput.data_file(args, 50, 40) == path


def test_data_file_refuses_a_file_missing_items(tmp_path, monkeypatch):
    def short(path, interactions, users, items, probability, seed):
        open(path, "w").write("1\t1\t5\t0\n")
        return {"interactions": 1, "users": 1, "items": 39}

    monkeypatch.setattr(recommend_throughput, "write_interactions", short)
    args = argparse.Namespace(length=6, work_dir=str(tmp_path), seed=1)
    with pytest.raises(RuntimeError, match="39 distinct items, not 40"):
        recommend_throughput.data_file(args, 50, 40)
    assert not os.listdir(tmp_path / "data")


def test_trace_summary_reads_the_samples_with_rows_staged():
    trace = [
        (0.0, 100, 0),
        (0.5, 300, 0),
        (1.0, 400, 10),
        (1.5, 700, 20),
        (2.5, 600, 30),
        (3.0, 200, 0),
    ]
    assert recommend_throughput.trace_summary(trace) == {
        "ranking_rss_first": 400,
        "ranking_rss_max": 700,
        "ranking_rss_last": 600,
        "ranking_seconds": 1.5,
        "load_seconds": 1.0,
    }
    assert recommend_throughput.trace_summary([(0.0, 100, 0)]) == {}
    assert recommend_throughput.trace_summary([]) == {}


def test_rss_bytes_of_this_process_and_of_none():
    rss = recommend_throughput.rss_bytes(os.getpid())
    # VmHWM: the peak of the same count, in kB.
    with open("/proc/self/status") as handle:
        (peak,) = [line for line in handle if line.startswith("VmHWM:")]
    assert 10 * MB < rss <= int(peak.split()[1]) * 1024
    assert rss % 1024 == 0
    assert recommend_throughput.rss_bytes(0) is None  # no /proc/0


#: A child that stages its output as ``recommend`` does, then exits 3.
STAGING_CHILD = """\
import os, sys, time
output = sys.argv[1]
name = os.path.basename(output)
folder = os.path.join(os.path.dirname(output), "." + name + ".x1.tmp")
time.sleep(0.3)
os.makedirs(folder)
with open(os.path.join(folder, name), "w") as handle:
    for _ in range(5):
        handle.write("x" * 1000)
        handle.flush()
        time.sleep(0.1)
time.sleep(0.3)
sys.exit(3)
"""


def test_sampled_traces_the_rss_and_the_staged_rows(tmp_path):
    output = str(tmp_path / "recs.csv")
    log = str(tmp_path / "child.log")
    command = [sys.executable, "-c", STAGING_CHILD, output]
    run = recommend_throughput.sampled(command, log, output, 0.02)
    assert run["returncode"] == 3 and run["log"] == log
    assert run["seconds"] >= 0.8 and run["peak_rss"] > MB
    times = [t for t, _, _ in run["trace"]]
    assert times == sorted(times) and len(times) >= 5
    sizes = [size for _, _, size in run["trace"]]
    assert sizes[0] == 0  # sampled before the child staged anything
    assert 0 < max(sizes) <= 5000 and set(sizes) <= set(range(0, 5001))
    summary = recommend_throughput.trace_summary(run["trace"])
    assert 0.2 < summary["load_seconds"] < run["seconds"]
    assert 0 < summary["ranking_rss_first"] <= summary["ranking_rss_max"]


def test_floor_seconds_times_the_repeats():
    seconds = recommend_throughput.floor_seconds(50, 4, 3, dim=8)
    assert len(seconds) == 3
    assert all(0 < s < 10 for s in seconds)


def test_throughput_takes_the_median_pass(tmp_path, monkeypatch):
    children = []

    def child(command, log_path):
        options = json.loads(command[command.index("--throughput-worker") + 1])
        children.append(options)
        with open(options["result"], "w") as handle:
            json.dump(
                {
                    "users": 1000,
                    "seconds": {"csv": [0.5, 0.25, 0.4], "none": [0.2]},
                    "floor_seconds": [0.002, 0.004, 0.008],
                },
                handle,
            )
        return {"returncode": 0, "log": log_path}

    monkeypatch.setattr(common, "measured", child)
    (tmp_path / "logs").mkdir()
    args = argparse.Namespace(
        k=10, batch_size=256, formats=["csv", "none"], repeats=3,
        work_dir=str(tmp_path),
    )  # fmt: skip
    row = recommend_throughput.throughput(args, "/runs/r", "label", 1000)
    # Medians: csv 0.4 s, none 0.2 s; the floor's 0.004 s for 256 users.
    assert row["users_per_second"] == pytest.approx(
        {"csv": 2500.0, "none": 5000.0}
    )
    assert row["floor_users_per_second"] == pytest.approx(64_000.0)
    (options,) = children
    assert options == {
        "run_dir": "/runs/r", "users": 1000, "k": 10, "batch": 256,
        "formats": ["csv", "none"], "repeats": 3, "work_dir": str(tmp_path),
        "result": str(tmp_path / "logs" / "throughput-label.json"),
    }  # fmt: skip

    def failed(command, log_path):
        return {"returncode": 1, "log": log_path}

    monkeypatch.setattr(common, "measured", failed)
    with pytest.raises(RuntimeError, match="throughput of label failed"):
        recommend_throughput.throughput(args, "/runs/r", "label", 1000)


def test_memory_gathers_the_three_processes(tmp_path, monkeypatch):
    def child(command, log_path):
        options = json.loads(command[command.index("--load-worker") + 1])
        peak = {"histories": 600 * MB, "job": 700 * MB}[options["mode"]]
        with open(options["result"], "w") as handle:
            json.dump({"users": 10, "peak_rss": 1, "rss": 500 * MB}, handle)
        return {"returncode": 0, "log": log_path, "peak_rss": peak}

    def recommend(command, log_path, output, period):
        assert command[3:] == [
            "recommend", "/runs/r", "--k", "10", "--output", output,
            "--batch-size", "256", "--quiet",
        ]  # fmt: skip
        assert period == 0.5
        with open(output, "w") as handle:
            handle.write("x" * 1234)
        trace = [(0.004, 1 * MB, 0), (1.0061, 560 * MB, 5), (1.5, 590 * MB, 9)]
        return {"returncode": 0, "peak_rss": 800 * MB, "seconds": 2.0,
                "log": log_path, "trace": trace}  # fmt: skip

    monkeypatch.setattr(common, "measured", child)
    monkeypatch.setattr(recommend_throughput, "sampled", recommend)
    (tmp_path / "logs").mkdir()
    args = argparse.Namespace(
        k=10, batch_size=256, sample_seconds=0.5, work_dir=str(tmp_path)
    )
    numbers = recommend_throughput.memory(args, "/runs/r", 10)
    assert numbers["users"] == 10
    # The parent's measurement (its peak from wait4) overrides the child's.
    assert numbers["histories"]["peak_rss"] == 600 * MB
    assert numbers["job"]["peak_rss"] == 700 * MB
    assert numbers["histories"]["rss"] == 500 * MB
    run = numbers["recommend"]
    assert run["file_bytes"] == 1234
    assert run["trace"] == [
        [0.0, MB, 0],
        [1.01, 560 * MB, 5],
        [1.5, 590 * MB, 9],
    ]
    assert (run["ranking_rss_first"], run["ranking_rss_max"]) == (
        560 * MB,
        590 * MB,
    )
    assert run["ranking_seconds"] == pytest.approx(0.4939)
    assert not os.path.exists(tmp_path / "outputs" / "recs-10.csv")


# ------------------------------------------------------------ the report


def setup():
    return {
        "length": 20, "k": 10, "batch_size": 256, "repeats": 2,
        "train_examples": 1024, "sample_seconds": 0.2,
        "memory_items": 3706, "memory_head": "softmax",
        "load_before": "1.5", "load_after": "2.0",
    }  # fmt: skip


def throughput_row():
    return {
        "users": 1000,
        "items": 3706,
        "head": "softmax",
        "load_seconds": 1.5,
        "seconds": {"csv": [0.5, 0.25], "none": [0.2, 0.4]},
        "rows": {"csv": 10_000, "csv_bytes": 2_500_000, "none": 10_000},
        "floor_seconds": [0.002, 0.004],
        # Medians: 1000 users / 0.375 s, / 0.3 s; 256 users / 0.003 s.
        "users_per_second": {"csv": 2666.7, "none": 3333.3},
        "floor_users_per_second": 85_333.3,
        "interactions": 20_000,
        "run_users": 1000,
    }


def memory_row(users, histories, rss, job, peak, ranking=None, seconds=0):
    """Sizes in MB; ``ranking``: the RSS at the first, largest and last
    sample with rows staged (None: no such sample)."""
    trace = [[0.0, 1 * MB, 0], [1.0, histories * MB, 0]]
    recommend = {"peak_rss": peak * MB, "trace": trace}
    if ranking:
        first, largest, last = ranking
        recommend.update(
            ranking_rss_first=first * MB,
            ranking_rss_max=largest * MB,
            ranking_rss_last=last * MB,
            load_seconds=seconds[0],
            ranking_seconds=seconds[1],
        )
        trace += [[seconds[0], first * MB, 10], [seconds[0] + 1, last * MB, 20]]
    return {
        "users": users,
        "interactions": users * 20,
        "histories": {"peak_rss": histories * MB, "rss": rss * MB},
        "job": {"peak_rss": job * MB},
        "recommend": recommend,
    }


def memory_rows():
    return [
        memory_row(1000, 600, 500, 700, 800, (550, 580, 570), (4.0, 2.0)),
        memory_row(2000, 700, 650, 800, 900),  # ranked between two samples
        memory_row(5000, 1000, 820, 1200, 1500, (950, 1010, 1000), (10, 4)),
    ]


def test_the_throughput_table_and_its_floor():
    results = {"setup": setup(), "throughput": [throughput_row()], "memory": []}
    text = recommend_throughput_report.report(results, "python -m x")
    assert text.startswith(
        "# `tfrec-tricks recommend`: throughput and peak memory\n\n"
        "Command: `python -m x`\n"
    )
    assert "batches of 256 users" in text
    assert "on 1,024 examples a split" in text
    assert "Load average 1.5 before, 2.0 after (2 cores)." in text
    assert "median of 2 passes" in text
    lines = text.splitlines()
    header = lines.index("|---:|---|---:|---|---:|---|---:|---:|---:|")
    assert lines[header + 1 : header + 4] == [
        "| 3,706 | softmax | 1,000 | csv | 2,667 | 2,000-4,000 | 10,000 | "
        "2.5 | 1.5 |",
        "| 3,706 | softmax | 1,000 | none | 3,333 | 2,500-5,000 | 10,000 |  "
        "| 1.5 |",
        "| 3,706 | floor | | matmul + top_k_ids | 85,333 | 64,000-128,000 | "
        "| | |",
    ]
    assert "## Peak memory" not in text
    assert text.endswith(
        "\n\n![throughput and peak memory](recommend_throughput.png)\n"
    )


def test_the_memory_table_and_notes():
    results = {"setup": setup(), "throughput": [], "memory": memory_rows()}
    text = recommend_throughput_report.report(results, "python -m x")
    assert "At 3,706 items, head softmax; RSS in MB." in text
    assert "RSS sampled every 0.2 s" in text
    users = ("| 1,000 |", "| 2,000 |", "| 5,000 |")
    rows = [line for line in text.splitlines() if line.startswith(users)]
    assert rows == [
        "| 1,000 | 20,000 | 600 | 500 | 700 | 800 | 550 / 580 / 570 | +80 | "
        "4 | 2 | 500 |",
        "| 2,000 | 40,000 | 700 | 650 | 800 | 900 | n/a | n/a | n/a | n/a | "
        "n/a |",
        "| 5,000 | 100,000 | 1,000 | 820 | 1,200 | 1,500 | 950 / 1,010 / "
        "1,000 | +190 | 10 | 4 | 1,250 |",
    ]
    notes = recommend_throughput_report.memory_notes(memory_rows())
    assert notes == [
        "- Per extra user, from 1,000 to 5,000 users: the data 100,000 B at "
        "its peak and 80,000 B held; the job built 125,000 B; recommend "
        "175,000 B at its peak.",
        "- The ranking adds +80 MB (1,000 users), +190 MB (5,000 users) to "
        "the data held.",
        "- While 5,000 users streamed through recommend (4 s), its RSS went "
        "from 950 MB at the first rows to 1,000 MB at the last (+50 MB, "
        "10,000.0 B per user; largest 1,010 MB). Its peak, 1,500 MB, came "
        "while the data loaded.",
    ]
    assert "\n".join(notes) in text


def test_memory_notes_need_two_runs_and_place_the_peak():
    rows = memory_rows()
    assert recommend_throughput_report.memory_notes(rows[:1]) == []
    # A peak within 16 MB of the largest RSS while ranking: while ranking.
    rows[-1]["recommend"]["peak_rss"] = 1020 * MB
    notes = recommend_throughput_report.memory_notes(rows)
    assert notes[-1].endswith("Its peak, 1,020 MB, came while ranking.")
    # No run of the largest with a sample while ranking: two notes.
    notes = recommend_throughput_report.memory_notes(rows[:2])
    assert (
        notes[1] == "- The ranking adds +80 MB (1,000 users) to the data held."
    )
    assert len(notes) == 2


def test_plot_writes_a_png_with_and_without_memory_runs(tmp_path):
    results = {
        "setup": setup(),
        "throughput": [throughput_row()],
        "memory": memory_rows(),
    }
    for name, memory in (("full.png", memory_rows()), ("bare.png", [])):
        path = tmp_path / name
        recommend_throughput_report.plot({**results, "memory": memory}, path)
        data = path.read_bytes()
        assert data[:4] == b"\x89PNG" and len(data) > 10_000


def test_main_gathers_every_run_into_the_report(tmp_path, monkeypatch):
    calls = []

    def data_file(args, users, items):
        calls.append(("data", users, items))
        return f"/w/data/u{users}-i{items}-n{users * 20}-s0.udata"

    def train_run(args, path, head):
        calls.append(("train", os.path.basename(path), head))
        return "/w/runs/" + recommend_throughput.run_name(path, head)

    def throughput(args, run_dir, label, users):
        assert label == "u1000-i3706-n20000-s0-softmax"
        row = throughput_row()
        for key in ("head", "interactions", "run_users"):
            del row[key]
        return row

    def memory(args, run_dir, users):
        row = {r["users"]: r for r in memory_rows()}[users]
        assert run_dir == f"/w/runs/u{users}-i3706-n{users * 20}-s0-softmax"
        return {
            key: value for key, value in row.items() if key != "interactions"
        }

    for function in (data_file, train_run, throughput, memory):
        monkeypatch.setattr(recommend_throughput, function.__name__, function)
    report_dir = tmp_path / "report"
    argv = [
        "--items", "3706", "--users", "1000", "--memory-users", "1000,5000",
        "--repeats", "2", "--work-dir", str(tmp_path / "work"),
        "--report-dir", str(report_dir),
    ]  # fmt: skip
    assert recommend_throughput.main([*argv, "--build-only"]) == 0
    # The run of 1,000 users serves the throughput and the memory rows.
    assert calls == [
        ("data", 1000, 3706),
        ("train", "u1000-i3706-n20000-s0.udata", "softmax"),
        ("data", 5000, 3706),
        ("train", "u5000-i3706-n100000-s0.udata", "softmax"),
    ]
    assert not report_dir.exists()
    assert recommend_throughput.main(argv) == 0
    text = (report_dir / "recommend_throughput.md").read_text()
    assert text.startswith(
        "# `tfrec-tricks recommend`: throughput and peak memory\n\n"
        "Command: `python -m benchmarks.recommend_throughput --items 3706 "
    )
    assert "| 3,706 | softmax | 1,000 | csv | 2,667 | 2,000-4,000 |" in text
    assert "| 1,000 | 20,000 | 600 | 500 | 700 | 800 | 550 / 580 / " in text
    assert "| 5,000 | 100,000 | 1,000 | 820 | 1,200 | 1,500 | " in text
    numbers = json.loads((report_dir / "recommend_throughput.json").read_text())
    (row,) = numbers["throughput"]
    assert (row["head"], row["interactions"], row["run_users"]) == (
        "softmax",
        20_000,
        1000,
    )
    assert [r["interactions"] for r in numbers["memory"]] == [20_000, 100_000]
    assert numbers["setup"]["repeats"] == 2
    png = (report_dir / "recommend_throughput.png").read_bytes()
    assert png[:4] == b"\x89PNG"


def test_main_refuses_bad_counts(capsys):
    for argv in (["--repeats", "0"], ["--length", "4"], ["--k", "0"]):
        with pytest.raises(SystemExit) as raised:
            recommend_throughput.main(argv)
        assert raised.value.code == 2
    assert "--length at least 5. Received: --repeats 5 --length 20 --k 0" in (
        capsys.readouterr().err
    )
