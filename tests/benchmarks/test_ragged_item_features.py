"""benchmarks/ragged_item_features.py: its synthetic rows, and a tiny run
that writes the table, the numbers and the chart."""

import json

import numpy as np
import pytest

from benchmarks import ragged_item_features as script


def test_synthetic_rows_have_the_case_shape():
    case = script.Case("x", 5_000, 5.0, 35, "full", 8, extra_row=20_000)
    rows = script.synthetic_rows(case, np.random.default_rng(0))
    lengths = rows.row_lengths()
    assert rows.num_rows == 5_000 and lengths[0] == 0
    assert lengths[1] == 35 and lengths[2] == 20_000
    assert lengths[3:].max() <= 35 and abs(lengths[3:].mean() - 5.0) < 0.2
    assert rows.values.min() >= 2 and rows.values.max() < script.VOCABULARY + 2


@pytest.mark.slow
def test_a_tiny_run_writes_its_report(tmp_path, monkeypatch):
    tiny = script.Case("tiny", 60, 3.0, 9, "full", 8, extra_row=40)
    monkeypatch.setattr(script, "CASES", (tiny,))
    argv = [
        "--cases", "tiny", "--steps", "2", "--rounds", "4", "--batch", "4",
        "--max-len", "5", "--report-dir", str(tmp_path),
    ]  # fmt: skip
    assert script.main(argv) == 0
    folder = tmp_path / "ragged-item-features"
    (row,) = json.loads((folder / "ragged_item_features.json").read_text())[
        "cases"
    ]
    assert row["case"] == "tiny" and row["widest"] == 40
    assert row["values"] == int(row["table_bytes"] - 61 * 8) // 4
    for clock in ("ratio", "cpu_ratio"):
        assert 0 < row[f"{clock}_low"] <= row[clock] <= row[f"{clock}_high"]
    assert row["padded_bytes"] == 60 * 40 * 4
    text = (folder / "ragged_item_features.md").read_text()
    assert "| tiny | 60 |" in text and "ratio (CPU)" in text
    assert (folder / "ragged_item_features.png").stat().st_size > 0


def test_ratios_are_taken_round_by_round():
    # A slow spell hits both jobs of its round (the second round): each
    # round's ratio, then their median, lowest and highest.
    rounds = [
        {"ids only": (1.0, 1.0), "with attributes": (1.2, 1.5)},
        {"ids only": (3.0, 1.0), "with attributes": (6.0, 1.5)},
        {"ids only": (1.0, 1.0), "with attributes": (1.1, 1.5)},
    ]
    assert script.ratio_summary(rounds, 0) == {
        "median": 1.2, "low": 1.1, "high": 2.0,
    }  # fmt: skip
    assert script.ratio_summary(rounds, 1)["median"] == 1.5
