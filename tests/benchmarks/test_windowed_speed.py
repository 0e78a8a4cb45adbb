"""benchmarks.windowed_speed: options, the report, one tiny run."""

import json

import numpy as np
import pytest

from benchmarks import common, windowed_speed
from tfrec_tricks.data import Interactions


def test_options_and_their_defaults():
    args = windowed_speed.build_parser().parse_args([])
    assert vars(args) == {
        "data": "ml-1m",
        "data_path": None,
        "models": [
            "gru4rec:Softmax",
            "gru4rec:CPR:100+Mi",
            "sasrec:Softmax",
            "sasrec:CPR:100+Mi",
        ],
        "epochs": 3,
        "prefix_batches": 320,
        "windowed_batches": None,
        "max_users": None,
        "seed": 0,
        "report_dir": common.RESULTS,
    }
    assert windowed_speed.MODELS["sasrec:CPR:100+Mi"] == (
        "sasrec",
        "CPR:100 + Mi",
    )
    picked = windowed_speed.build_parser().parse_args(
        ["--models", "sasrec:CPR:100+Mi", "gru4rec:Softmax"]
    )
    assert picked.models == ["sasrec:CPR:100+Mi", "gru4rec:Softmax"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--models", "bert4rec:Softmax"], "invalid choice: 'bert4rec"),
        (["--prefix-batches", "0"], "must be at least 1. Received: 0"),
        (["--windowed-batches", "0"], "must be at least 1. Received: 0"),
        (["--max-users", "-3"], "must be at least 1. Received: -3"),
        (["--epochs", "1"], "--epochs must be at least 2. Received: 1"),
    ],
)
def test_bad_options_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as raised:
        windowed_speed.main(argv)
    assert raised.value.code == 2
    assert message in capsys.readouterr().err


def test_first_users_keeps_the_first_n_users_in_file_order():
    interactions = Interactions(
        users=np.array(["b", "b", "a", "c", "a", "b"]),
        items=np.array(["1", "2", "3", "4", "5", "6"]),
        timestamps=np.arange(6.0),
        numeric={"rating": np.arange(6, dtype=np.float32)},
        source="s",
    )
    kept = windowed_speed.first_users(interactions, 2)
    assert kept.users.tolist() == ["b", "b", "a", "a", "b"]
    assert kept.items.tolist() == ["1", "2", "3", "5", "6"]
    assert kept.timestamps.tolist() == [0.0, 1.0, 2.0, 4.0, 5.0]
    assert kept.numeric["rating"].tolist() == [0, 1, 2, 4, 5]
    assert kept.source == "s"


COUNTS = {
    "prefix": {"rows": 982_089, "targets": 982_089, "batches": 7_682},
    "windowed": {
        "rows": 22_546,
        "targets": 982_089,
        "stride": 50,
        "batches": 182,
    },
}


def test_prefix_epochs_are_extrapolated_and_windowed_ones_are_whole():
    times = {
        "gru4rec:Softmax": {"prefix": [16.0, 12.8, 20.0], "windowed": [25.0]},
        "sasrec:Softmax": {"prefix": [32.0], "windowed": [40.0, 20.0]},
    }
    results = windowed_speed.summarize(COUNTS, times, 320)
    gru = results["gru4rec:Softmax"]
    assert gru["prefix"]["median"] == 16.0
    assert gru["prefix"]["s_per_batch"] == pytest.approx(0.05)
    assert gru["prefix"]["epoch_seconds"] == pytest.approx(384.1)
    assert gru["windowed"]["s_per_batch"] == pytest.approx(25.0 / 182)
    assert gru["windowed"]["epoch_seconds"] == pytest.approx(25.0)
    assert gru["ratio"] == pytest.approx(15.364)
    assert gru["met"]
    sasrec = results["sasrec:Softmax"]
    assert sasrec["windowed"]["epoch_seconds"] == pytest.approx(30.0)
    assert sasrec["ratio"] == pytest.approx(768.2 / 30.0)
    # Fewer batches in the epoch than asked: the whole epoch was run.
    small = windowed_speed.summarize(
        {**COUNTS, "prefix": {**COUNTS["prefix"], "batches": 10}},
        {"m": {"prefix": [1.0], "windowed": [1.0]}},
        320,
    )["m"]
    assert small["prefix"]["batches_per_run"] == 10
    assert small["prefix"]["epoch_seconds"] == pytest.approx(1.0)
    assert not small["met"]


def test_windowed_epochs_are_extrapolated_from_partial_runs():
    times = {"m": {"prefix": [16.0], "windowed": [10.0, 12.0, 14.0]}}
    entry = windowed_speed.summarize(COUNTS, times, 320, 20)["m"]
    assert entry["windowed"]["batches_per_run"] == 20
    assert entry["windowed"]["s_per_batch"] == pytest.approx(0.6)
    assert entry["windowed"]["epoch_seconds"] == pytest.approx(0.6 * 182)
    # More batches asked than the epoch has: the whole epoch.
    whole = windowed_speed.summarize(COUNTS, times, 320, 500)["m"]
    assert whole["windowed"]["epoch_seconds"] == pytest.approx(12.0)


def test_the_floor_is_the_median_step_times_the_windowed_epoch():
    floor = windowed_speed.floor_summary(
        [4.0, 2.0, 3.0], 10, 182, 5396, 3707, 64
    )
    assert floor["s_per_batch"] == pytest.approx(0.3)
    assert floor["epoch_seconds"] == pytest.approx(54.6)
    assert floor["seconds"] == [4.0, 2.0, 3.0]
    assert (floor["targets_per_batch"], floor["items"], floor["dim"]) == (
        5396,
        3707,
        64,
    )


def test_the_softmax_layer_job_trains_its_steps():
    run = windowed_speed.softmax_layer_job(50, 8, 16, 3)
    assert run() > 0
    assert run() > 0


def test_report_lines_and_verdicts():
    times = {
        "gru4rec:Softmax": {"prefix": [16.0, 12.8], "windowed": [25.0, 25.0]},
        "sasrec:CPR:100+Mi": {
            "prefix": [9.6, 9.6],
            "windowed": [91.0, 91.0],
        },
    }
    results = windowed_speed.summarize(COUNTS, times, 320)
    text = windowed_speed.report(
        "python -m benchmarks.windowed_speed --epochs 3",
        "ml-1m: 6,040 users, 3,706 items, max_len 50, split recbole, seed 0",
        COUNTS,
        results,
        2,
        (2.5, 2.25, 2.0),
    )
    lines = text.splitlines()
    assert lines[0] == (
        "Command: `python -m benchmarks.windowed_speed --epochs 3`"
    )
    assert lines[2] == (
        "ml-1m: 6,040 users, 3,706 items, max_len 50, split recbole, seed 0."
        " Training only (no validation pass), batch 128 rows bucketed by "
        "history length, shuffled, 16 steps per call; every model/protocol "
        "pair trained once untimed, then 2 timed runs each, taking turns. "
        "Load average at the end: 2.50, 2.25, 2.00."
    )
    assert lines[4].startswith(
        "- prefix epoch: 7,682 batches x median s/batch of 320-batch runs "
        "(`model.fit(dataset.take(320))`). Each run's batches are the first "
        "of a freshly shuffled epoch"
    )
    assert lines[5] == (
        "- windowed epoch (stride 50): measured whole, 182 batches per run "
        "(median of the runs)."
    )
    assert lines[7] == (
        "| model | protocol | rows / epoch | targets / epoch | batches / "
        "epoch | s/batch | epoch s | prefix / windowed | >= 10x |"
    )
    # gru4rec: median 14.4 s / 320 batches = 0.045 s; x 7,682 = 345.69 s.
    assert lines[9:] == [
        "| gru4rec:Softmax | prefix | 982,089 | 982,089 | 7,682 | 0.0450 | "
        "345.69 |  |  |",
        "| gru4rec:Softmax | windowed | 22,546 | 982,089 | 182 | 0.1374 | "
        "25.00 | 13.8x | met |",
        "| sasrec:CPR:100+Mi | prefix | 982,089 | 982,089 | 7,682 | 0.0300 | "
        "230.46 |  |  |",
        "| sasrec:CPR:100+Mi | windowed | 22,546 | 982,089 | 182 | 0.5000 | "
        "91.00 | 2.5x | missed |",
        "",
        "Target (windowed epoch >= 10x faster): met by 1 of 2 models.",
    ]
    floor = windowed_speed.floor_summary([9.1], 182, 182, 5396, 3707, 64)
    text = windowed_speed.report(
        "c", "d", COUNTS, results, 2, (1.0, 1.0, 1.0), floor
    )
    assert text.splitlines()[-1] == (
        "The full-softmax output layer alone (3,707 items, d=64, 5,396 "
        "targets per step: logits, cross-entropy, gradients, Adam) takes "
        "9.10 s for the epoch's 182 steps (0.0500 s each). Every protocol "
        "that trains each target against the whole catalogue pays it, so "
        "the largest speed-up a windowed epoch could reach is prefix epoch "
        "/ 9.10 s: gru4rec:Softmax 38.0x, sasrec:CPR:100+Mi 25.3x."
    )
    partial = windowed_speed.summarize(COUNTS, times, 320, 20)
    text = windowed_speed.report("c", "d", COUNTS, partial, 2, (1.0,) * 3)
    assert text.splitlines()[5] == (
        "- windowed epoch (stride 50): 182 batches x median s/batch of "
        "20-batch runs, the first of a freshly shuffled epoch."
    )


@pytest.mark.slow
def test_a_tiny_run_writes_the_report_numbers_and_chart(tmp_path):
    argv = [
        "--data", "synthetic", "--max-users", "6", "--models",
        "gru4rec:Softmax", "--epochs", "2", "--prefix-batches", "16",
        "--windowed-batches", "4", "--report-dir", str(tmp_path),
    ]  # fmt: skip
    assert windowed_speed.main(argv) == 0
    text = (tmp_path / "windowed_speed.md").read_text()
    assert text.startswith(
        "Command: `python -m benchmarks.windowed_speed --data synthetic "
        "--max-users 6 --models gru4rec:Softmax --epochs 2 --prefix-batches"
        f" 16 --windowed-batches 4 --report-dir {tmp_path}`\n\nsynthetic "
        "(first 6 users): 6 users,"
    )
    numbers = json.loads((tmp_path / "windowed_speed.json").read_text())
    counts = numbers["counts"]
    # Every target trained once by each protocol, in fewer windowed rows.
    assert counts["windowed"]["targets"] == counts["prefix"]["targets"]
    assert counts["prefix"]["rows"] == counts["prefix"]["targets"]
    assert 6 <= counts["windowed"]["rows"] < counts["prefix"]["rows"]
    assert counts["windowed"]["stride"] == 50
    model = numbers["models"]["gru4rec:Softmax"]
    # --epochs 2: one untimed run, one timed run per protocol.
    assert len(model["prefix"]["seconds"]) == 1
    assert len(model["windowed"]["seconds"]) == 1
    assert set(numbers["first_run_seconds"]) == {
        "gru4rec:Softmax/prefix",
        "gru4rec:Softmax/windowed",
    }
    assert model["prefix"]["batches_per_run"] == min(
        16, counts["prefix"]["batches"]
    )
    assert model["ratio"] > 0
    verdict = "met" if model["met"] else "missed"
    assert f"x | {verdict} |" in text
    floor = numbers["softmax_layer_floor"]
    assert len(floor["seconds"]) == 1
    assert floor["batches_per_run"] == min(4, counts["windowed"]["batches"])
    assert floor["targets_per_batch"] == round(
        counts["windowed"]["targets"] / counts["windowed"]["batches"]
    )
    assert "The full-softmax output layer alone" in text
    assert (tmp_path / "windowed_speed.png").read_bytes()[:4] == b"\x89PNG"
