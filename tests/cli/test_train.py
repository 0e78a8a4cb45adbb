"""``tfrec-tricks train`` (``tfrec_tricks.cli.train``): its help, a real
run, and the errors it reports."""

import json

import pytest

from tests.run_helpers import (
    TINY_FLAGS,
    assert_clean_error,
    run_cli,
    run_cli_here,
)
from tfrec_tricks import cli

TINY = [*TINY_FLAGS, "--epochs", "1"]


def test_help_reads_like_documentation(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for expected in (
        "--data",
        "--epochs",
        "--batch-size",
        "--learning-rate",
        "--max-len",
        "--seed",
        "--output-dir",
        "yoochoose-100k",
        "resumes",
    ):
        assert expected in text


@pytest.mark.slow
def test_train_one_epoch_on_tiny_synthetic_data(tmp_path):
    result = run_cli(
        "train", *TINY, "--output-dir", str(tmp_path), "--name", "tiny"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "ndcg@10" in result.stdout and "test" in result.stdout
    run_dir = tmp_path / "tiny"
    for name in (
        "config.json",
        "vocabulary.json",
        "metrics.json",
        "history.csv",
    ):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "checkpoints").iterdir())
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for split in ("validation", "test"):
        assert set(metrics[split]) == {"ndcg@10", "hr@10", "mrr@10"}
        assert 0.0 <= metrics[split]["ndcg@10"] <= 1.0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["train"]["epochs"] == 1
    vocabulary = json.loads((run_dir / "vocabulary.json").read_text())
    assert vocabulary["items"][0] == "[PAD]"
    assert len(vocabulary["items"]) == config["model"]["num_items"]


def test_cosine_scores_with_a_head_other_than_softmax_are_refused(
    tmp_path, capsys
):
    code = cli.main(
        [
            "train",
            *TINY,
            "--cosine-temperature",
            "0.05",
            "--head",
            "mos",
            "--output-dir",
            str(tmp_path),
        ]
    )
    assert code == 1
    error = capsys.readouterr().err
    assert "cosine_temperature applies to the softmax heads" in error
    assert "head='mos'" in error and "Traceback" not in error
    assert not any(tmp_path.iterdir())


def test_missing_file_names_the_file(tmp_path):
    missing = str(tmp_path / "nope.dat")
    result = run_cli_here("train", "--data", "file", "--data-path", missing)
    assert_clean_error(result, "not found", missing)


def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "ratings.dat"
    path.write_text("1::10::5::100\n1::11::4\n")
    result = run_cli_here(
        "train",
        "--data",
        "file",
        "--data-path",
        str(path),
        "--format",
        "grouplens",
    )
    assert_clean_error(result, f"{path}:2:", "expected 4 fields")


def test_missing_real_dataset_says_where_it_looked(tmp_path):
    result = run_cli_here(
        "train", "--data", "ml-100k", "--data-path", str(tmp_path)
    )
    assert_clean_error(result, "ml-100k", "--data-path")


def test_empty_dataset_after_filtering(tmp_path):
    path = tmp_path / "u.data"
    path.write_text("".join(f"1\t{i}\t5\t{i}\n" for i in range(1, 6)))
    result = run_cli_here(
        "train",
        "--data",
        "file",
        "--data-path",
        str(path),
        "--min-item-interactions",
        "2",
    )
    assert_clean_error(result, "No interactions left", str(path))


def test_too_short_sessions_for_validation(tmp_path):
    # Three-item sessions give RecBole's split a test example only.
    path = tmp_path / "sessions.tsv"
    rows = [(s, i, s * 10 + i) for s in (1, 2) for i in (1, 2, 3)]
    path.write_text(
        "SessionId\tItemId\tTime\n"
        + "".join(f"{s}\t{i}\t{t}\n" for s, i, t in rows)
    )
    args = ("train", "--data", "file", "--data-path", str(path))
    result = run_cli_here(*args, "--format", "sessions")
    assert_clean_error(
        result, "No validation examples", str(path), "from 4 interactions"
    )


@pytest.mark.slow
def test_tfds_offline_without_copy_says_what_to_provide(tmp_path):
    result = run_cli(
        "train",
        "--data",
        "tfds:movielens/100k-ratings",
        "--tfds-data-dir",
        str(tmp_path),
    )
    assert_clean_error(result, "--tfds-manual-dir", "ml-100k.zip")


@pytest.mark.slow
def test_run_config_json_is_accepted_by_train_config(tmp_path):
    first = run_cli(
        "train",
        *TINY,
        "--head",
        "cpr",
        "--cpr-rerankers",
        "5",
        "--output-dir",
        str(tmp_path),
        "--name",
        "a",
        "--quiet",
    )
    assert first.returncode == 0, first.stderr[-3000:]
    second = run_cli(
        "train",
        "--config",
        str(tmp_path / "a" / "config.json"),
        "--name",
        "b",
        "--quiet",
    )
    assert second.returncode == 0, second.stderr[-3000:]
    a = json.loads((tmp_path / "a" / "config.json").read_text())
    b = json.loads((tmp_path / "b" / "config.json").read_text())
    assert a["model"] == b["model"]
    assert b["model"]["head"] == "cpr" and b["model"]["cpr_reranker_ks"] == [5]


@pytest.mark.parametrize("quiet", [False, True])
def test_run_trains_the_parsed_config_and_prints_the_table_when_quiet(
    monkeypatch, capsys, quiet
):
    # Without --quiet the training prints its own progress and table; with
    # it, training is silent (verbose=0) and the command prints the table.
    import types

    from tfrec_tricks.training import run_training

    calls = []

    def fake_train(config, verbose=None, overwrite=False):
        calls.append((config, verbose, overwrite))
        metrics = {s: {"ndcg@10": 0.25} for s in ("validation", "test")}
        metrics.update(
            seconds_per_epoch_median=None, epochs_run=2, num_parameters=9
        )
        return types.SimpleNamespace(metrics=metrics, run_dir="runs/x")

    monkeypatch.setattr(run_training, "train", fake_train)
    argv = ["train", "--epochs", "2", "--embedding-dim", "8", "--overwrite"]
    assert cli.main(argv + ["--quiet"] * quiet) == 0
    [(config, verbose, overwrite)] = calls
    assert (config.epochs, config.model["embedding_dim"]) == (2, 8)
    assert verbose == (0 if quiet else None) and overwrite is True
    out = capsys.readouterr().out
    assert ("0.2500" in out and "runs/x" in out) == quiet
