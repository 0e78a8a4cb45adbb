"""benchmarks.state_of_the_art: rows of `train` flags, seeds, the anchors."""

import argparse
import json
import shutil

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
    # The anchors are ml-1m's: a report on other data has none.
    assert text.startswith("# synthetic: our rows (no published anchors")
    assert "SASRec+" not in text and numbers["anchors"] == []
    assert report.with_suffix(".png").stat().st_size > 0
    # Once finished, the same command trains nothing: --report-only agrees.
    assert run(tmp_path, "--seeds", "0", "1", "--report-only", *rows) == 0
    again = json.loads(report.with_suffix(".json").read_text())
    assert again["rows"] == numbers["rows"]
    # A seed whose run folder is gone (trained on another machine) is
    # reported from the record, not trained again.
    shutil.rmtree(tmp_path / "runs" / "last-s1")
    assert run(tmp_path, "--seeds", "0", "1", *rows) == 0
    assert not (tmp_path / "runs" / "last-s1").exists()
    carried = json.loads(report.with_suffix(".json").read_text())
    assert carried["rows"] == numbers["rows"]
    assert "history last (seeds 1)" in report.with_suffix(".md").read_text()


def recorded_seed(ndcg):
    metric = {"ndcg@10": ndcg, "hr@10": 2 * ndcg, "mrr@10": ndcg / 2}
    return {
        "validation": metric,
        "test": metric,
        "validation_seen_excluded": metric,
        "test_seen_excluded": metric,
        "epochs_run": 12,
        "best_epoch": 9,
        "seconds_per_epoch_median": 30.0,
    }


def test_seeds_recorded_by_an_earlier_report_are_reported_again(
    tmp_path, capsys
):
    flags = "--data synthetic --epochs 2 --name gone"
    report = tmp_path / "report" / "state_of_the_art-synthetic"
    report.parent.mkdir()
    record = {
        "seeds": [0, 1],
        "rows": [
            {
                "label": "an older label",
                # The same flags, spaced otherwise, still match.
                "flags": flags.replace(" ", "  "),
                "runs": {"0": recorded_seed(0.1), "1": None},
            },
            {
                "label": "other",
                "flags": "--data synthetic --epochs 3",
                "runs": {"0": recorded_seed(0.9), "1": None},
            },
        ],
    }
    report.with_suffix(".json").write_text(json.dumps(record))
    assert (
        run(
            tmp_path,
            "--report-only",
            "--seeds",
            "0",
            "1",
            "--row",
            "row",
            flags,
        )
        == 0
    )
    numbers = json.loads(report.with_suffix(".json").read_text())
    settings = numbers["rows"][0].pop("settings")
    assert settings["epochs"] == 2 and "seed" not in settings
    assert numbers["rows"] == [
        {
            "label": "row",
            "flags": flags,
            "runs": {"0": recorded_seed(0.1), "1": None},
        }
    ]
    text = report.with_suffix(".md").read_text()
    assert (
        "| row | 1 of 2 | 0.1000 | 0.2000 | 0.1000 | 0.1000 | 9/12 | 6 |"
        in (text)
    )
    carried = "not on this machine): row (seeds 0)."
    assert carried in text
    assert not (tmp_path / "runs").exists()
    # Once the flags mean other settings (here: a changed default), the
    # record is another run's and is not used.
    numbers["rows"][0]["settings"] = dict(settings, epochs=5)
    report.with_suffix(".json").write_text(json.dumps(numbers))
    assert (
        run(tmp_path, "--report-only", "--seeds", "0", "--row", "row", flags)
        == 0
    )
    assert "other settings" in capsys.readouterr().err
    again = json.loads(report.with_suffix(".json").read_text())
    assert again["rows"][0]["runs"] == {"0": None}


@pytest.mark.parametrize(
    "flags, match",
    [
        ("--data synthetic --seed 3", "--seed is the script's"),
        ("--data synthetic --seed=3", "--seed is the script's"),
        ("--data synthetic --output-dir=x", "--output-dir is the script's"),
        ("--data nowhere", "refuses these flags"),
    ],
)
def test_a_row_the_script_cannot_run_is_named(tmp_path, capsys, flags, match):
    with pytest.raises(SystemExit) as exit_info:
        run(tmp_path, "--row", "bad", flags)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "Row 'bad'" in error and match in error


def test_the_ml_1m_report_puts_the_anchors_beside_the_rows():
    args = argparse.Namespace(
        seeds=[0, 1], row=[("ours", "--data ml-1m --name ours")]
    )
    results = {"ours": [recorded_seed(0.18), None]}
    text = state_of_the_art.report(args, results, argv=[], data="ml-1m")
    assert text.startswith("# MovieLens-1M: our recipes beside")
    assert "| ours | 1 of 2 | 0.1800 |" in text
    assert "| SASRec+ (Klenitskiy & Vasilev, RecSys 2023) | 3,416 | 0.1821" in (
        text
    )
    timed = state_of_the_art.report(args, results, argv=[], data="ml-1m-timed")
    assert "| ours | 1 of 2 | 0.1800 |" in timed and "SASRec+" not in timed


def test_rows_on_different_datasets_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run(
            tmp_path,
            "--row",
            "whole",
            "--data synthetic",
            "--row",
            "half",
            "--data ml-1m-timed",
        )
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "one dataset" in error and "'half' on 'ml-1m-timed'" in error
    assert not (tmp_path / "report").exists()
