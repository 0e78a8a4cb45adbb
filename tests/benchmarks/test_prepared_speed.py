"""benchmarks.prepared_speed: the commands and the report."""

import argparse

from benchmarks import prepared_speed


def test_both_paths_train_the_same_run_but_for_the_data():
    args = argparse.Namespace(
        data="yoochoose-100k", data_path="/d", epochs=3, work_dir="/w"
    )
    prepared = prepared_speed.train_command("prepared", args, "p")
    memory = prepared_speed.train_command("memory", args, "m")
    assert prepared[1:3] == ["-m", "tfrec_tricks.cli"]
    assert prepared[3:6] == ["train", "--prepared", "/w/prepared"]
    assert memory[3:8] == [
        "train", "--data", "yoochoose-100k", "--data-path", "/d"
    ]  # fmt: skip
    # Same epochs, no early stop, the same runs folder, a name each.
    assert prepared[6:] == [
        "--epochs", "3", "--patience", "3", "--output-dir", "/w/runs",
        "--name", "p", "--overwrite", "--quiet",
    ]  # fmt: skip
    assert memory[8:-4] == prepared[6:-4]


def test_report_gives_medians_ratio_and_input_headroom():
    runs = {"prepared": [3.0, 2.0, 2.2], "memory": [2.0, 2.1, 4.0]}
    rates = {"prepared": (500.0, 100), "memory": (2000.0, 100)}
    steps = {"prepared": 100, "memory": 100, "cached": 100}
    epoch = {"prepared": 2.1, "memory": 2.0, "cached": 2.0}
    waits = {"prepared": 0.5, "memory": 0.25, "cached": 0.01}
    text = prepared_speed.report(runs, rates, steps, epoch, waits)
    lines = text.splitlines()
    assert "| `--prepared DIR` | 3.00, 2.00, 2.20 | 2.20 |" in lines
    assert "| `--data` (in memory) | 2.00, 2.10, 4.00 | 2.10 |" in lines
    assert "On disk / in memory: 1.05x the time per epoch." in lines
    assert (
        "| on disk (`OnDiskDataset.batches`) | 100 | 500 | 2.10 | 48 | "
        "0.50 |" in lines
    )
    assert (
        "| on disk, cached in memory (model alone) | 100 |  | 2.00 | 50 | "
        "0.01 |" in lines
    )
    assert lines[-1] == (
        "The prepared input alone yields 10.0x the batches per second the "
        "model trains on (cached batches); an epoch from it takes 1.05x "
        "the cached epoch's time."
    )
