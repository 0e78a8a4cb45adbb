"""``tfrec-tricks ablation`` (``tfrec_tricks.cli.ablation``): its options,
and the report folder checked before any row trains (the ablation itself:
tests/training/test_ablation.py, whose basename this file cannot share)."""

import os

import pytest

from tfrec_tricks import cli
from tfrec_tricks.cli.parser import build_parser, parse
from tfrec_tricks.training import ablation
from tfrec_tricks.training.ablation import PAPER_ROWS


def test_ablation_options_and_defaults():
    args = parse(build_parser(), ["ablation"])
    assert args.rows == list(PAPER_ROWS) and len(PAPER_ROWS) == 9
    assert args.dropouts == [0.2, 0.5] and args.report_dir is None
    args = parse(
        build_parser(),
        ["ablation", "--rows", "Softmax", "MoS", "--dropouts", "0.1"],
    )
    assert (args.rows, args.dropouts) == (["Softmax", "MoS"], [0.1])


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--rows", "Softmax", "Sofmax"], "invalid choice: 'Sofmax'"),
        (["--dropouts", "1"], "must be in [0, 1), got 1.0"),
        (["--prepared", "data"], "unrecognized arguments: --prepared"),
    ],
)
def test_bad_ablation_options_exit_2(capsys, argv, fragment):
    with pytest.raises(SystemExit) as stop:
        parse(build_parser(), ["ablation", *argv])
    assert stop.value.code == 2
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize("report_dir", [None, "reports"])
def test_the_report_folder_is_checked_before_any_row_trains(
    monkeypatch, tmp_path, report_dir
):
    calls = []

    def refuse(folder, inputs):
        calls.append(folder)
        raise ValueError(f"{folder} refused")

    def run_rows(*args, **kwargs):
        calls.append("trained")
        return []

    monkeypatch.setattr(ablation, "check_report_dir", refuse)
    monkeypatch.setattr(ablation, "run_ablation", run_rows)
    argv = ["ablation", "--output-dir", str(tmp_path), "--name", "abl"]
    if report_dir:
        argv += ["--report-dir", report_dir]
    assert cli.main(argv) == 1
    # Default: OUTPUT_DIR/NAME-ablation.
    assert calls == [report_dir or os.path.join(str(tmp_path), "abl-ablation")]
