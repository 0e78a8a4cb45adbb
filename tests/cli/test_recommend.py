"""``tfrec-tricks recommend`` (``tfrec_tricks.cli.recommend``): its
options and help, the files it writes (the lists ``recommend_frame``
gives), and nothing left by Ctrl-C or an error midway; ``--engine beam``'s
folder of shards (the same lists). Bad input:
tests/test_bad_input_recommend.py."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from tests.recommendation.recommend_helpers import train_tiny_run
from tests.run_helpers import snapshot
from tfrec_tricks import cli
from tfrec_tricks.cli import recommend
from tfrec_tricks.cli.parser import build_parser, parse
from tfrec_tricks.recommendation import recommend_frame, writers


def test_options_and_defaults():
    args = parse(build_parser(), ["recommend", "runs/x", "--output", "r.csv"])
    assert (args.run_dir, args.output, args.format, args.k) == (
        "runs/x",
        "r.csv",
        None,
        10,
    )
    assert args.users is args.items is args.exclude_items is None
    assert args.histories is None and args.histories_format == "auto"
    assert (args.keep_seen, args.batch_size, args.quiet) == (False, 256, False)


def test_format_choices_are_the_writers():
    parser = build_parser().command_parsers["recommend"]
    (action,) = [a for a in parser._actions if a.dest == "format"]
    assert sorted(action.choices) == sorted(writers.FORMATS)


def test_help_reads_as_documentation(capsys):
    with pytest.raises(SystemExit) as stop:
        parse(build_parser(), ["recommend", "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for fragment in (
        "a row per (user, rank), raw ids",
        "whole known history",
        "A user's own items are never recommended (--keep-seen allows them)",
        "An existing file is never replaced",
        "examples: tfrec-tricks recommend runs/ml-1m --k 10 --output recs.csv",
        "--histories-format {auto,grouplens,udata,sasrec,sessions,recbole}",
    ):
        assert fragment in text


@pytest.mark.parametrize(
    "argv, fragment",
    [
        ([], "the following arguments are required: --output"),
        (["--output", "r.csv", "--k", "0"], "argument --k: must be positive"),
        (["--output", "r.csv", "--format", "xml"], "invalid choice: 'xml'"),
        (["--output", "r.csv", "--batch-size", "0"], "--batch-size: must be"),
        (["--output", "r", "--histories-format", "csv"], "invalid choice"),
    ],
)
def test_bad_options_exit_2(capsys, argv, fragment):
    with pytest.raises(SystemExit) as stop:
        parse(build_parser(), ["recommend", "runs/x", *argv])
    assert stop.value.code == 2
    assert fragment in capsys.readouterr().err


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return train_tiny_run(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def expected(run):
    return recommend_frame(run, k=5)


def read(path, file_format):
    if file_format == "csv":
        return pd.read_csv(path, dtype={"user_id": str, "item_id": str})
    if file_format == "jsonl":
        return pd.read_json(path, lines=True, dtype={"user_id": str})
    return pd.read_parquet(path)


def assert_frames(got, expected):
    assert got.columns.tolist() == ["user_id", "rank", "item_id", "score"]
    for column in ("user_id", "rank", "item_id"):
        assert got[column].tolist() == expected[column].tolist()
    # Batches of other sizes may differ in the last float32 bit.
    np.testing.assert_allclose(got["score"], expected["score"], atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, flags, file_format",
    [
        ("recs.csv", [], "csv"),
        ("recs.jsonl", [], "jsonl"),
        ("recs.parquet", ["--quiet"], "parquet"),
        ("recs.out", ["--format", "jsonl"], "jsonl"),
    ],
)
def test_writes_the_lists_of_recommend_frame(
    run, expected, tmp_path, capsys, name, flags, file_format
):
    path = tmp_path / "out" / name
    argv = ["recommend", run, "--k", "5", "--output", str(path)]
    assert cli.main([*argv, "--batch-size", "7", *flags]) == 0
    assert f"Wrote 300 recommendations for 60 users to {path}" in (
        capsys.readouterr().out
    )
    assert_frames(read(path, file_format), expected)
    assert sorted(p.name for p in path.parent.iterdir()) == [name]


@pytest.mark.slow
def test_id_files_and_new_histories(run, tmp_path, capsys):
    (tmp_path / "users.txt").write_text("u7\n\nu3\n")
    (tmp_path / "allowed.txt").write_text(
        "\n".join(f"i{i}" for i in range(1, 9))
    )
    (tmp_path / "denied.txt").write_text("i1\ni2\n")
    path = tmp_path / "recs.csv"
    argv = ["recommend", run, "--k", "3", "--users", "users.txt", "--items"]
    argv += ["allowed.txt", "--exclude-items", "denied.txt", "--output"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        assert cli.main([*argv, "recs.csv"]) == 0
    assert "(top 3, seen items excluded, among 8 allowed items, 2 items " in (
        capsys.readouterr().out
    )
    expected = recommend_frame(
        run,
        k=3,
        users=["u3", "u7"],
        items=[f"i{i}" for i in range(1, 9)],
        exclude_items=["i1", "i2"],
    )
    assert_frames(read(path, "csv"), expected)

    (tmp_path / "new.dat").write_text(
        "n1::i3::5::100\nn1::i9::4::160\nn2::i4::3::10\nn2::nope::3::20\n"
    )
    argv = ["recommend", run, "--histories", str(tmp_path / "new.dat")]
    argv += ["--histories-format", "grouplens", "--keep-seen", "--output"]
    assert cli.main([*argv, str(tmp_path / "new.jsonl")]) == 0
    histories = pd.DataFrame(
        {
            "user_id": ["n1", "n1", "n2", "n2"],
            "item_id": ["i3", "i9", "i4", "nope"],
            "timestamp": [100.0, 160.0, 10.0, 20.0],
            "rating": [5.0, 4.0, 3.0, 3.0],
        }
    )
    expected = recommend_frame(run, histories=histories, keep_seen=True)
    assert_frames(read(tmp_path / "new.jsonl", "jsonl"), expected)


def _fail_on_second_batch(monkeypatch, error):
    calls = []
    write = writers.CsvWriter._write

    def failing(self, frame):
        calls.append(len(frame))
        if len(calls) == 2:
            raise error
        write(self, frame)

    monkeypatch.setattr(writers.CsvWriter, "_write", failing)
    return calls


@pytest.mark.slow
@pytest.mark.parametrize(
    "error, code, message",
    [
        (KeyboardInterrupt(), 130, "interrupted."),
        (OSError("disk on fire"), 1, "recommend: error: disk on fire"),
    ],
)
def test_an_interruption_or_error_midway_leaves_nothing(
    run, tmp_path, monkeypatch, capsys, error, code, message
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    before = snapshot(tmp_path)
    calls = _fail_on_second_batch(monkeypatch, error)
    argv = ["recommend", run, "--batch-size", "10", "--output", "out/r.csv"]
    assert cli.main(argv) == code
    assert len(calls) == 2
    assert message in capsys.readouterr().err
    assert snapshot(tmp_path) == before
    monkeypatch.undo()
    # The same command then writes the file.
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 0
    assert len(read(tmp_path / "out" / "r.csv", "csv")) == 600


@pytest.mark.slow
def test_a_new_output_folder_goes_again_after_an_error(
    run, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    _fail_on_second_batch(monkeypatch, RuntimeError("boom"))
    argv = ["recommend", run, "--batch-size", "10", "--output", "a/b/r.csv"]
    with pytest.raises(RuntimeError):
        cli.main(argv)
    assert list(tmp_path.iterdir()) == []


def test_jsonl_reads_back_with_json(tmp_path):
    path = tmp_path / "r.jsonl"
    with writers.staged_output(str(path), "jsonl") as writer:
        writer.write(
            pd.DataFrame(
                {
                    "user_id": ["1"],
                    "rank": [1],
                    "item_id": ["02"],
                    "score": pd.Series([0.1], dtype="float32"),
                }
            )
        )
    assert json.loads(path.read_text()) == {
        "user_id": "1",
        "rank": 1,
        "item_id": "02",
        "score": 0.1,
    }


# --- --engine beam --------------------------------------------------------


def test_engine_options_and_defaults():
    argv = ["recommend", "runs/x", "--output", "r.csv"]
    args = parse(build_parser(), argv)
    assert args.engine == "local"
    assert args.saved_model is args.shards is args.beam_runner is None
    assert recommend._beam_arguments(args) == []
    args = parse(
        build_parser(),
        [*argv, "--engine", "beam", "--saved-model", "m/1", "--shards", "3"],
    )
    assert (args.engine, args.saved_model, args.shards) == ("beam", "m/1", 3)
    assert recommend._beam_arguments(args) == []


def test_beam_runner_and_pipeline_options_go_to_beam():
    argv = ["recommend", "runs/x", "--output", "r.csv", "--engine", "beam"]
    args = parse(build_parser(), [*argv, "--beam-runner", "FlinkRunner"])
    args.pipeline_args = ["--flink_master=host:8081"]
    assert recommend._beam_arguments(args) == [
        "--runner=FlinkRunner",
        "--flink_master=host:8081",
    ]


def test_the_parser_passes_unknown_flags_on_to_beam():
    argv = ["recommend", "runs/x", "--output", "r.csv", "--engine", "beam"]
    args = parse(build_parser(), [*argv, "--project", "P"])
    assert args.pipeline_args == ["--project", "P"]


def test_help_describes_the_engines(capsys):
    with pytest.raises(SystemExit):
        parse(build_parser(), ["recommend", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for fragment in (
        "--engine {local,beam}",
        "local ranks in this process, a batch of users at a time, into one "
        "file",
        "ranks in an Apache Beam pipeline with RunInference, each worker "
        "loading the SavedModel TF Serving serves",
        "--output is then a folder of shards, OUTPUT/part-00000-of-00004.csv",
        '(pip install "tfrec_tricks[beam]")',
        "--saved-model DIR",
    ):
        assert fragment in text, fragment


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--shards", "2"], "--shards applies to --engine beam only"),
        (
            ["--saved-model", "m/1", "--beam-runner", "DirectRunner"],
            "--saved-model --beam-runner apply to --engine beam only. "
            "Received: --engine local",
        ),
        (
            ["--engine", "beam", "--output", "recs"],
            "Cannot tell the output format from 'recs'",
        ),
    ],
)
def test_beam_refusals_exit_1(tmp_path, monkeypatch, capsys, flags, message):
    monkeypatch.chdir(tmp_path)
    argv = ["recommend", "runs/x", "--output", "r.csv", *flags]
    assert cli.main(argv) == 1
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def read_folder(path, file_format):
    names = sorted(
        name for name in os.listdir(path) if name.startswith("part-")
    )
    frames = [read(path / name, file_format) for name in names]
    frames = [frame for frame in frames if len(frame)]
    frame = pd.concat(frames, ignore_index=True)
    return frame.sort_values(["user_id", "rank"], ignore_index=True)


@pytest.mark.slow
def test_engine_beam_writes_the_lists_in_shards(
    run, expected, tmp_path, capsys
):
    path = tmp_path / "out" / "recs.jsonl"
    argv = ["recommend", run, "--k", "5", "--engine", "beam", "--shards", "2"]
    argv += ["--beam-runner", "DirectRunner", "--batch-size", "7"]
    assert cli.main([*argv, "--output", str(path)]) == 0
    names = ["part-00000-of-00002.jsonl", "part-00001-of-00002.jsonl"]
    assert (
        f"Wrote 300 recommendations for 60 users to {path} (2 files: "
        f"{names[0]}, {names[1]}; top 5, seen items excluded)."
    ) in capsys.readouterr().out
    assert sorted(os.listdir(path)) == [".tfrec-tricks-owned.json", *names]
    assert os.listdir(path.parent) == ["recs.jsonl"]
    assert_frames(
        read_folder(path, "jsonl"),
        expected.sort_values(["user_id", "rank"], ignore_index=True),
    )
    # An existing folder is refused, never replaced.
    before = snapshot(tmp_path)
    assert cli.main([*argv, "--output", str(path)]) == 1
    assert "recs.jsonl' exists (a folder)" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_engine_beam_with_an_export_and_id_files(run, tmp_path, capsys):
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.chdir(tmp_path)
    try:
        export = ["export", run, "--name", "tiny", "--base-path", "served"]
        assert cli.main([*export, "--k", "4"]) == 0
        (tmp_path / "users.txt").write_text("u7\nu3\nu12\n")
        (tmp_path / "allowed.txt").write_text(
            "\n".join(f"i{i}" for i in range(1, 12))
        )
        argv = ["recommend", run, "--engine", "beam", "--k", "3", "--users"]
        argv += ["users.txt", "--items", "allowed.txt", "--saved-model"]
        argv += ["served/tiny/1", "--output", "recs.parquet"]
        assert cli.main(argv) == 0
    finally:
        monkeypatch.undo()
    assert "(1 files: part-00000-of-00001.parquet; top 3, seen items " in (
        capsys.readouterr().out
    )
    expected = recommend_frame(
        run,
        k=3,
        users=["u3", "u7", "u12"],
        items=[f"i{i}" for i in range(1, 12)],
    )
    assert_frames(
        read_folder(tmp_path / "recs.parquet", "parquet"),
        expected.sort_values(["user_id", "rank"], ignore_index=True),
    )
