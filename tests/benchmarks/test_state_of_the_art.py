"""benchmarks.state_of_the_art: rows of `train` flags, seeds, the anchors."""

import json

import pytest

from benchmarks import state_of_the_art

TINY = (
    "--data synthetic --synthetic-users 60 --synthetic-items 40 --max-len 10 "
    "--embedding-dim 8 --epochs 2 --eval-seen-excluded"
)


def run(tmp_path, *arguments):
    return state_of_the_art.main(
        [
            "--output-dir",
            str(tmp_path / "runs"),
            "--report-dir",
            str(tmp_path / "report"),
            *arguments,
        ]
    )


@pytest.mark.slow
def test_rows_train_their_seeds_and_report_them_beside_the_anchors(tmp_path):
    rows = [
        "--row",
        "history last",
        f"{TINY} --head softmax_no_dup --name last",
        "--row",
        "cosine",
        f"{TINY} --head softmax_no_dup --lr-schedule cosine",
    ]
    # Nothing trained yet: --report-only reports no seed and trains none.
    assert run(tmp_path, "--seeds", "0", "1", "--report-only", *rows) == 0
    assert not (tmp_path / "runs").exists()
    assert run(tmp_path, "--seeds", "0", "1", *rows) == 0
    report = tmp_path / "report" / "state_of_the_art-synthetic"
    numbers = json.loads(report.with_suffix(".json").read_text())
    last = numbers["rows"][0]["runs"]
    # Runs are <--name>-s<seed>, or the label made a name.
    assert (tmp_path / "runs" / "last-s1" / "metrics.json").is_file()
    assert (tmp_path / "runs" / "cosine-s0" / "metrics.json").is_file()
    tests = [last[s]["test_seen_excluded"]["ndcg@10"] for s in ("0", "1")]
    text = report.with_suffix(".md").read_text()
    row = next(line for line in text.splitlines() if "| history last" in line)
    assert f"| 2 of 2 | {sum(tests) / 2:.4f} ({tests[0]:.4f} / " in row
    # The plain ranking of the history-last head, recorded by the run.
    plain = last["0"]["test_history_kept"]["ndcg@10"]
    assert f"{plain:.4f}" in row
    assert "| SASRec+ (Klenitskiy & Vasilev, RecSys 2023) | 3,416 | 0.1821" in (
        text
    )
    assert report.with_suffix(".png").stat().st_size > 0
    # Once finished, the same command trains nothing: --report-only agrees.
    assert run(tmp_path, "--seeds", "0", "1", "--report-only", *rows) == 0
    again = json.loads(report.with_suffix(".json").read_text())
    assert again["rows"] == numbers["rows"]


@pytest.mark.parametrize(
    "flags, match",
    [
        ("--data synthetic --seed 3", "--seed is the script's"),
        ("--data nowhere", "refuses these flags"),
    ],
)
def test_a_row_the_script_cannot_run_is_named(tmp_path, capsys, flags, match):
    with pytest.raises(SystemExit) as exit_info:
        run(tmp_path, "--row", "bad", flags)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "Row 'bad'" in error and match in error
