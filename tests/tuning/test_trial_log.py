"""TrialLog: each trial's timing.json and progress line."""

import json

import pytest
from tuning_helpers import build_test_tuner, run_search

from tfrec_tricks.tuning.search_reports import best_so_far, trial_rows
from tfrec_tricks.tuning.trial_log import TIMING_FILE, read_timing


def test_read_timing_of_a_missing_or_broken_file_is_none(tmp_path):
    assert read_timing(str(tmp_path)) is None
    (tmp_path / TIMING_FILE).write_text("{not json")
    assert read_timing(str(tmp_path)) is None
    timing = {"started": 1.0, "ended": 4.5, "seconds": 3.5}
    (tmp_path / TIMING_FILE).write_text(json.dumps(timing))
    assert read_timing(str(tmp_path)) == timing


@pytest.mark.slow
def test_trials_log_their_times_and_a_progress_line(
    hypermodel, tmp_path, capsys
):
    search_tuner = build_test_tuner(hypermodel, tmp_path, max_trials=2)
    run_search(search_tuner, hypermodel)
    lines = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("Trial ")
    ]
    assert len(lines) == 2, lines
    assert "val_ndcg@10 " in lines[1] and "; best " in lines[1]
    rows = trial_rows(search_tuner)
    for row in rows:
        timing = row["timing"]
        assert timing["ended"] >= timing["started"]
        assert timing["seconds"] == pytest.approx(
            timing["ended"] - timing["started"]
        )
    x, scores, best, label = best_so_far(rows)
    assert label == "minutes since the search started"
    assert x == sorted(x) and best[-1] == max(scores)
