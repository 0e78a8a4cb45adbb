"""``tfrec-tricks export`` (``tfrec_tricks.cli.export``): its options, and
what it refuses before loading anything (the exports themselves:
tests/export/)."""

import pytest

from tests.run_helpers import snapshot
from tfrec_tricks import cli
from tfrec_tricks.cli.parser import build_parser, parse


def test_export_options_and_defaults():
    args = parse(build_parser(), ["export", "runs/x", "--name", "m-1.v2"])
    assert (args.run_dir, args.name, args.version) == ("runs/x", "m-1.v2", None)
    assert (args.k, args.base_path, args.scoring) == (
        10,
        "saved_models",
        "auto",
    )
    assert args.add_items is None
    assert args.format == "savedmodel"
    args = parse(
        build_parser(), ["export", "r", "--name", "m", "--format", "onnx"]
    )
    assert args.format == "onnx"
    args = parse(
        build_parser(), ["export", "r", "--name", "m", "--add-items", "x.item"]
    )
    assert args.add_items == "x.item"
    top = str(2**63 - 1)  # TF Serving's int64
    args = parse(
        build_parser(), ["export", "r", "--name", "m", "--version", top]
    )
    assert args.version == 2**63 - 1


def test_help_says_what_add_items_does(capsys):
    with pytest.raises(SystemExit) as stop:
        parse(build_parser(), ["export", "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "--add-items FILE a RecBole .item file: its items that are not" in text
    )
    assert "the old items' scores are unchanged" in text


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--name", "../evil"], "argument --name"),
        (["--name", "m", "--version", "0"], "must be positive, got 0"),
        (["--name", "m", "--version", str(2**63)], "TF Serving reads versions"),
        (["--name", "m", "--k", "0"], "argument --k: must be positive"),
        (["--name", "m", "--scoring", "fast"], "invalid choice: 'fast'"),
        (["--name", "m", "--format", "tflite"], "invalid choice: 'tflite'"),
        ([], "the following arguments are required: --name"),
    ],
)
def test_bad_export_options_exit_2(capsys, argv, fragment):
    with pytest.raises(SystemExit) as stop:
        parse(build_parser(), ["export", "runs/x", *argv])
    assert stop.value.code == 2
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize("made", [False, True])
def test_what_is_not_a_finished_run_is_refused_before_any_write(
    tmp_path, capsys, made
):
    run_dir = tmp_path / "run"
    if made:
        run_dir.mkdir()
        (run_dir / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    base = tmp_path / "served"
    argv = ["export", str(run_dir), "--name", "m", "--base-path", str(base)]
    assert cli.main(argv) == 1
    error = capsys.readouterr().err
    expected = "is not a training run directory" if made else "No run directory"
    assert expected in error and "Traceback" not in error
    assert snapshot(tmp_path) == before
