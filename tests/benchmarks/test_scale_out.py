"""benchmarks.scale_out: sizes, the plan, the random files, the report."""

import numpy as np
import pytest

from benchmarks import common, scale_out
from tfrec_tricks.data.sources.loaders import read_records

GB = scale_out.GB


def parse(*argv):
    return scale_out.build_parser().parse_args(list(argv))


def test_sizes_are_sorted_and_unique():
    assert parse("--sizes", "10M,1M,1000000").sizes == [1_000_000, 10_000_000]
    with pytest.raises(SystemExit):
        parse("--sizes", ",")


def test_engines_keep_their_order_and_refuse_unknown_ones(capsys):
    assert parse("--engines", "beam,local").engines == ["local", "beam"]
    with pytest.raises(SystemExit):
        parse("--engines", "local,spark")
    assert "engines are memory, local, beam" in capsys.readouterr().err


def test_human_sizes_read_back():
    for count in (1000, 250_000, 50_000_000, 1234):
        assert common.count(scale_out.human(count)) == count


def test_steps_and_eval_batches_must_be_positive():
    for flag in ("--steps", "--eval-batches"):
        with pytest.raises(SystemExit):
            scale_out.main([flag, "0", "--work-dir", "/nonexistent"])


def test_plan_skips_what_does_not_fit_and_trains_steps_above_epoch_max():
    args = parse("--sizes", "1M,10M,50M")
    jobs = {(j.engine, j.size): j for j in scale_out.plan(args)}
    assert len(jobs) == 9
    assert jobs["memory", 50_000_000].skip.startswith("needs about 60 GB")
    assert jobs["beam", 50_000_000].skip == "DirectRunner only up to 10M"
    assert not jobs["local", 50_000_000].skip
    assert jobs["local", 1_000_000].training == "epoch"
    assert jobs["local", 10_000_000].training == "steps"
    assert jobs["local", 50_000_000].training == "steps"
    args = parse("--sizes", "1M", "--engines", "local", "--no-train")
    assert [j.training for j in scale_out.plan(args)] == [None]


def test_random_file_is_a_udata_log(tmp_path):
    path = str(tmp_path / "x.udata")
    scale_out.write_interactions(path, 2000, seed=3)
    columns, records = read_records(path, "udata")
    records = list(records)
    assert len(records) == 2000
    assert columns.has_time and columns.numeric == ("rating",)
    users = {r.user for r in records}
    items = [int(r.item) for r in records]
    assert len(users) <= 2000 // scale_out.PER_USER
    assert 1 <= min(items) and max(items) <= 2000 // scale_out.PER_ITEM
    # Zipf popularity: the most popular item is far above the mean.
    assert np.bincount(items).max() > 5 * 2000 / (2000 // scale_out.PER_ITEM)
    times = [r.time for r in records]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert {r.numeric[0] for r in records} <= {1.0, 2.0, 3.0, 4.0, 5.0}
    again = str(tmp_path / "y.udata")
    scale_out.write_interactions(again, 2000, seed=3)
    assert open(path).read() == open(again).read()
    assert not (tmp_path / "x.udata.part").exists()


def measured(seconds, gb, **extra):
    return {
        "seconds": seconds,
        "peak_rss": gb * GB,
        "returncode": 0,
        "log": "/w/logs/x.log",
        **extra,
    }


ROWS = [
    {
        "engine": "memory",
        "size": 50_000_000,
        "training": "steps",
        "skip": "needs about 60 GB (> --memory-max 10M)",
    },
    {
        "engine": "local",
        "size": 1_000_000,
        "training": "epoch",
        "skip": "",
        "prepare": measured(20.0, 0.69),
        "users": 40_000,
        "items": 20_000,
        "vocabulary_bytes": 4_000_000,
        "bytes_per_interaction": 45.0,
        "train": measured(
            150.0,
            1.1,
            steps=0,
            train_seconds=100.0,
            examples=880_000,
            steady_seconds=90.0,
            steady_examples=792_000,
        ),
    },
    {
        "engine": "local",
        "size": 50_000_000,
        "training": "steps",
        "skip": "",
        "prepare": measured(450.0, 2.8),
        "users": 2_000_000,
        "items": 1_000_000,
        "vocabulary_bytes": 200_000_000,
        "bytes_per_interaction": 42.0,
        "train": measured(
            300.0,
            3.2,
            steps=320,
            train_seconds=60.0,
            examples=40_960,
            steady_seconds=50.0,
            steady_examples=38_912,
        ),
    },
    {
        "engine": "beam",
        "size": 1_000_000,
        "training": "epoch",
        "skip": "",
        "prepare": {**measured(99.0, 1.0), "returncode": 1},
    },
]


def test_table_gives_a_row_per_job():
    text = scale_out.table(ROWS, {"local": measured(6.0, 0.6)})
    lines = text.splitlines()
    assert lines[0].count("|") == lines[1].count("|") == 13
    assert all(line.count("|") == 13 for line in lines[2:6])
    assert lines[2] == (
        "| memory | 50,000,000 |  |  | not run: needs about 60 GB "
        "(> --memory-max 10M) |" + "  |" * 7
    )
    assert lines[3] == (
        "| local | 1,000,000 | 40,000 | 20,000 | 20 | 0.69 | 41 + 4 MB | "
        "1 epoch | 880,000 | 100 | 8,800 | 1.10 |"
    )
    assert lines[4] == (
        "| local | 50,000,000 | 2,000,000 | 1,000,000 | 450 | 2.80 | "
        "38 + 200 MB | 320 steps | 40,960 | 60 | 778 | 3.20 |"
    )
    assert "failed (exit 1, x.log)" in lines[5]
    assert lines[-1] == (
        "Baselines (the same preparation of 1,000 interactions): local "
        "0.60 GB, 6 s."
    )


def test_targets_read_the_largest_local_run():
    lines = scale_out.targets(ROWS)
    assert lines == [
        "- Largest local run, 50,000,000 interactions: peak 3.20 GB over "
        "preparation and training (target: at most 4 GB): met.",
        "- Its preparation: 38 B per interaction besides the raw ids' "
        "strings (target: at most 40): met.",
    ]
    heavy = [dict(ROWS[1], bytes_per_interaction=60.0)]
    assert scale_out.targets(heavy)[1].endswith("missed.")
    assert scale_out.targets(ROWS[:1]) == []


def test_plot_writes_a_png(tmp_path):
    path = tmp_path / "chart.png"
    scale_out.plot(ROWS, str(path))
    assert path.read_bytes()[:4] == b"\x89PNG"
