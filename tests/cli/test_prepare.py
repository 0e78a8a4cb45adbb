"""``tfrec-tricks prepare`` (``tfrec_tricks.cli.prepare``): its flags,
Beam's options, and prepared data that ``train --prepared`` reads."""

import argparse
import json

import pytest

from tests.run_helpers import TINY_FLAGS, run_cli
from tfrec_tricks.cli.parser import build_parser, parse
from tfrec_tricks.cli.prepare import beam_arguments


def _parsed(*argv):
    return parse(build_parser(), ["prepare", "--output", "out", *argv])


def test_prepare_takes_the_data_flags_only(capsys):
    args = _parsed("--max-len", "20", "--shards", "3")
    assert (args.max_len, args.shards, args.engine) == (20, 3, "local")
    assert not hasattr(args, "prepared") and not hasattr(args, "epochs")
    for flag in (["--epochs", "2"], ["--prepared", "p"]):
        with pytest.raises(SystemExit) as stop:
            _parsed(*flag)
        assert stop.value.code == 2
        assert f"unrecognized arguments: {flag[0]}" in capsys.readouterr().err


def test_prepare_takes_the_item_features_and_their_selection():
    args = _parsed("--item-features", "x.item", "--features", "genre", "year")
    assert args.item_features == "x.item" and args.min_feature_count == 1
    assert args.features == ["genre", "year"]
    assert _parsed().features is None


def test_beam_arguments_put_the_runner_before_beams_own_options():
    args = _parsed("--engine", "beam", "--beam-runner", "FlinkRunner", "--x=1")
    assert beam_arguments(args) == ["--runner=FlinkRunner", "--x=1"]
    assert beam_arguments(_parsed("--engine", "beam")) == []
    assert beam_arguments(_parsed()) == []


def test_a_beam_runner_without_the_beam_engine_is_refused():
    args = argparse.Namespace(
        pipeline_args=[], beam_runner="SparkRunner", engine="local"
    )
    with pytest.raises(ValueError, match="--engine beam only.*local"):
        beam_arguments(args)


@pytest.mark.slow
def test_cli_prepare_then_train(tmp_path):
    prepared = run_cli(
        "prepare",
        *TINY_FLAGS[:6],
        "--output",
        "data",
        "--shards",
        "2",
        cwd=tmp_path,
    )
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    assert "Prepared: data: 60 users" in prepared.stdout
    trained = run_cli(
        "train",
        "--prepared",
        "data",
        "--embedding-dim",
        "8",
        "--epochs",
        "1",
        "--quiet",
        cwd=tmp_path,
    )
    assert trained.returncode == 0, trained.stderr[-2000:]
    # The run is named after the prepared dataset and records its origin.
    with open(tmp_path / "runs" / "data" / "config.json") as handle:
        recorded = json.load(handle)["train"]
    assert recorded["prepared"] == "data"
    assert recorded["max_len"] == 10 and recorded["synthetic_users"] == 60
    # The prepared files identify the run's data.
    with open(tmp_path / "runs" / "data" / "run.json") as handle:
        files = [d["file"] for d in json.load(handle)["fingerprint"]["data"]]
    assert sorted(files) == [
        "metadata.json",
        "statistics.json",
        "vocabulary.json",
    ]


@pytest.mark.slow
def test_cli_prepare_with_item_features_then_train(tmp_path):
    lines = [
        f"u{u}\ti{(u + k) % 12}\t{1 + k % 5}\t{1000 * u + k}"
        for u in range(20)
        for k in range(6)
    ]
    (tmp_path / "u.data").write_text("\n".join(lines) + "\n")
    rows = [f"i{i}\tg{i % 3} g{i % 4}\t{1990 + i}" for i in range(12)]
    (tmp_path / "x.item").write_text(
        "item_id:token\tgenre:token_seq\tyear:float\n"
        + "\n".join([*rows, "new\tg1\t2001"])
        + "\n"
    )
    data = ["--data", "file", "--data-path", "u.data", "--max-len", "5"]
    prepared = run_cli(
        "prepare",
        *data,
        "--item-features",
        "x.item",
        "--features",
        "genre",
        "--output",
        "data",
        cwd=tmp_path,
    )
    assert prepared.returncode == 0, prepared.stderr[-2000:]
    assert "item features: ['genre']" in prepared.stdout
    trained = run_cli(
        "train",
        "--prepared",
        "data",
        "--features",
        "genre",
        "time_gap",
        "--embedding-dim",
        "8",
        "--epochs",
        "1",
        "--quiet",
        cwd=tmp_path,
    )
    assert trained.returncode == 0, trained.stderr[-2000:]
    run = tmp_path / "runs" / "data"
    recorded = json.loads((run / "config.json").read_text())
    assert recorded["train"]["item_features"] == "x.item"
    assert [f["name"] for f in recorded["model"]["item_features"]] == ["genre"]
    assert recorded["model"]["features"] == ["time_gap"]
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["cold_items"] == 1
    assert json.loads((run / "vocabulary.json").read_text())["items"][-1] == (
        "new"
    )


@pytest.mark.slow
def test_cli_prepare_with_beam_equals_local(tmp_path):
    lines = [
        f"u{u}\ti{(u * 7 + k * 3) % 13}\t{1 + k % 5}\t{100 * k + u}"
        for u in range(12)
        for k in range(3 + u % 4)
    ]
    (tmp_path / "ratings.tsv").write_text("\n".join(lines) + "\n")
    # Attributes of every other item, and of one no user clicked.
    rows = [f"i{i}\tg{i % 3}" for i in range(0, 13, 2)] + ["new\tg4"]
    (tmp_path / "x.item").write_text(
        "item_id:token\tgenre:token\n" + "\n".join(rows) + "\n"
    )
    common = [
        "--item-features",
        "x.item",
        "--data",
        "file",
        "--data-path",
        "ratings.tsv",
        "--format",
    ]
    for engine, extra in (
        ("local", []),
        ("beam", ["--beam-runner", "DirectRunner"]),
    ):
        result = run_cli(
            "prepare",
            *common,
            "udata",
            "--engine",
            engine,
            *extra,
            "--output",
            engine,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert "WARNING" not in result.stderr, result.stderr[-3000:]
    for name in (
        "vocabulary.json",
        "item_features.json",
        "item_features.npz",
        "trained_items.npy",
    ):
        local, beam = (
            (tmp_path / engine / name).read_bytes()
            for engine in ("local", "beam")
        )
        assert local == beam, name
