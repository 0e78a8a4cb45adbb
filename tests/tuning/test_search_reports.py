"""The search's reports: the warning for a search of short trials only,
the best score so far."""

from tfrec_tricks.tuning.search_reports import (
    best_so_far,
    format_summary,
    short_trials_note,
    write_table,
)


def _row(number, epochs, status="COMPLETED"):
    return {
        "number": number,
        "trial_id": f"{number:04d}",
        "status": status,
        "score": 0.1 * number,
        "best_step": epochs,
        "epochs": epochs,
        "hyperparameters": {"dropout": 0.1 * number},
        "timing": None,
    }


def test_short_trials_note_only_when_no_trial_reached_the_epochs():
    short = [_row(1, 3), _row(2, 3), _row(3, 7, status="RUNNING")]
    note = short_trials_note(short, 20)
    assert note.startswith(
        "No trial reached --epochs (20): the longest Hyperband round "
        "gave its trials 3 epochs"
    )
    assert short_trials_note([*short, _row(4, 20)], 20) is None
    # Random and Bayesian trials have no rounds (epochs None).
    assert short_trials_note([_row(1, None)], 20) is None
    assert short_trials_note(short, None) is None


def test_the_note_is_in_the_table_and_the_summary(tmp_path):
    rows = [_row(1, 3), _row(2, 3)]
    text = write_table(rows, str(tmp_path / "trials.md"), "val_ndcg@10", 20)
    assert "No trial reached --epochs (20)" in text
    summary = format_summary(
        rows, None, str(tmp_path), "val_ndcg@10", 60.0, max_epochs=20
    )
    assert "No trial reached --epochs (20)" in summary
    text = write_table(rows, str(tmp_path / "trials.md"), "val_ndcg@10", 3)
    assert "No trial reached" not in text


def test_best_so_far_falls_back_to_trial_numbers():
    rows = [
        {"number": 1, "score": 0.2, "timing": None},
        {"number": 2, "score": None, "timing": None},
        {"number": 3, "score": 0.3, "timing": None},
        {"number": 4, "score": 0.1, "timing": None},
    ]
    assert best_so_far(rows) == ([1, 3, 4], [0.2, 0.3, 0.1], [0.2, 0.3, 0.3],
                                 "trial")  # fmt: skip
