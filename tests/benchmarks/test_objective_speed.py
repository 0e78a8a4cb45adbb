"""benchmarks.objective_speed: step times of train command lines."""

import json

import pytest

from benchmarks import objective_speed

TINY = (
    "--data synthetic --synthetic-users 60 --synthetic-items 40 --max-len 10 "
    "--embedding-dim 8 --encoder sasrec --train-windows --head softmax_no_dup "
    "--steps-per-execution 1"
)


@pytest.mark.slow
def test_rows_take_turns_and_report_their_step_times(tmp_path):
    code = objective_speed.main(
        [
            "--report-dir",
            str(tmp_path),
            "--steps",
            "2",
            "--rounds",
            "2",
            "--row",
            "full",
            TINY,
            "--row",
            "negatives",
            f"{TINY} --objective sampled --num-sampled-negatives 8",
        ]
    )
    assert code == 0
    stem = tmp_path / "objective_speed-synthetic"
    rows = json.loads(stem.with_suffix(".json").read_text())["rows"]
    assert [row["label"] for row in rows] == ["full", "negatives"]
    for row in rows:
        assert row["seconds_per_step"] > 0 and row["steps_per_epoch"] >= 1
        assert row["epoch_seconds"] == pytest.approx(
            row["seconds_per_step"] * row["steps_per_epoch"]
        )
    text = stem.with_suffix(".md").read_text()
    assert "| full |" in text and "| 1.00x |" in text
    assert stem.with_suffix(".png").stat().st_size > 0


def test_a_bad_row_or_count_is_named(capsys):
    with pytest.raises(SystemExit) as exit_info:
        objective_speed.main(
            ["--rounds", "1", "--row", "a", "--data synthetic"]
        )
    assert exit_info.value.code == 2
    assert "--rounds at least 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        objective_speed.main(["--row", "a", "--data synthetic --seed=1"])
    assert "--seed is the script's" in capsys.readouterr().err
