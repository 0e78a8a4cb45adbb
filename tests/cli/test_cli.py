"""The command line: help, a real training run, and bad input."""

import dataclasses
import json

import pytest

from tests.run_helpers import TINY_FLAGS, run_cli
from tfrec_tricks import cli
from tfrec_tricks.cli import parser as cli_parser

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


def test_tune_has_no_learning_rate_schedule(capsys):
    # Trials train for differing epochs: one schedule over --epochs would
    # not be one curve, so the search trains at a constant rate.
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    assert "--lr-schedule {constant,cosine}" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["tune", "--help"])
    text = capsys.readouterr().out
    assert "--lr-schedule" not in text and "--warmup-epochs" not in text


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


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--epochs", "-1"], "must be positive, got -1"),
        (["--max-len", "0"], "must be positive, got 0"),
        (["--data", "netflix"], "invalid choice: 'netflix'"),
        (["--dropout", "1.5"], "must be in [0, 1), got 1.5"),
        (["--batch-size", "many"], "expected an integer, got 'many'"),
        (["--steps-per-execution", "0"], "must be positive, got 0"),
        (["--split", "random"], "invalid choice: 'random'"),
        (["--cosine-temperature", "0"], "must be positive, got 0"),
    ],
)
def test_nonsensical_arguments_exit_2_with_one_message(capsys, args, fragment):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", *args])
    assert exit_info.value.code == 2
    assert fragment in capsys.readouterr().err


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


def _assert_clean_error(result, *fragments):
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr[-2000:]


@pytest.mark.slow
def test_missing_file_names_the_file(tmp_path):
    missing = str(tmp_path / "nope.dat")
    result = run_cli("train", "--data", "file", "--data-path", missing)
    _assert_clean_error(result, "not found", missing)


@pytest.mark.slow
def test_malformed_line_names_file_and_line(tmp_path):
    path = tmp_path / "ratings.dat"
    path.write_text("1::10::5::100\n1::11::4\n")
    result = run_cli(
        "train",
        "--data",
        "file",
        "--data-path",
        str(path),
        "--format",
        "grouplens",
    )
    _assert_clean_error(result, f"{path}:2:", "expected 4 fields")


@pytest.mark.slow
def test_missing_real_dataset_says_where_it_looked(tmp_path):
    result = run_cli("train", "--data", "ml-100k", "--data-path", str(tmp_path))
    _assert_clean_error(result, "ml-100k", "--data-path")


@pytest.mark.slow
def test_empty_dataset_after_filtering(tmp_path):
    path = tmp_path / "u.data"
    path.write_text("".join(f"1\t{i}\t5\t{i}\n" for i in range(1, 6)))
    result = run_cli(
        "train",
        "--data",
        "file",
        "--data-path",
        str(path),
        "--min-item-interactions",
        "2",
    )
    _assert_clean_error(result, "No interactions left", str(path))


@pytest.mark.slow
def test_too_short_sessions_for_validation(tmp_path):
    # Three-item sessions give RecBole's split a test example only.
    path = tmp_path / "sessions.tsv"
    rows = [(s, i, s * 10 + i) for s in (1, 2) for i in (1, 2, 3)]
    path.write_text(
        "SessionId\tItemId\tTime\n"
        + "".join(f"{s}\t{i}\t{t}\n" for s, i, t in rows)
    )
    args = ("train", "--data", "file", "--data-path", str(path))
    result = run_cli(*args, "--format", "sessions")
    _assert_clean_error(
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
    _assert_clean_error(result, "--tfds-manual-dir", "ml-100k.zip")


@pytest.mark.slow
def test_no_command_prints_help():
    result = run_cli()
    assert result.returncode == 2
    assert "train" in result.stdout


def test_config_file_supplies_options_and_flags_override(tmp_path):
    config = tmp_path / "best.json"
    config.write_text(
        json.dumps(
            {
                "train": {
                    "synthetic_users": 60,
                    "synthetic_items": 40,
                    "max_len": 10,
                    "epochs": 5,
                    "output_dir": str(tmp_path),
                    "name": "cfg",
                },
                "model": {
                    "num_items": 999,
                    "embedding_dim": 8,
                    "head": "cpr",
                    "cpr_reranker_ks": [5],
                    "cpr_mi": True,
                    "features": ["time_gap"],
                },
            }
        )
    )
    parser = cli_parser.build_parser()
    args = cli_parser.parse(
        parser,
        [
            "train",
            "--config",
            str(config),
            "--epochs",
            "1",
            "--dropout",
            "0.1",
            "--head-dropout",
            "0.3",
            "--cpr-random-init",
        ],
    )
    assert args.epochs == 1  # the flag wins
    assert args.synthetic_users == 60 and args.name == "cfg"  # the file
    assert args.config_model["head"] == "cpr"
    assert args.head_dropout == 0.3
    assert args.cpr_start_as_softmax is False
    assert "num_items" not in args.config_model  # derived from the data
    assert args.bucket_by_length is True  # the default
    assert args.every_position is False  # the default
    assert args.split == "recbole"  # the default
    args = cli_parser.parse(
        parser,
        [
            "train",
            "--config",
            str(config),
            "--no-bucket-by-length",
            "--every-position",
            "--split",
            "every-user",
        ],
    )
    assert args.bucket_by_length is False
    assert cli_parser.train_config(args).every_position is True
    assert cli_parser.train_config(args).split == "every-user"


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


@pytest.mark.slow
@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", ":1: not valid JSON"),
        ('{"training": {}}', "expected an object with 'train'"),
        ('{"train": {"epoch": 3}}', "unknown training options ['epoch']"),
    ],
)
def test_bad_config_file_is_reported(tmp_path, content, fragment):
    path = tmp_path / "config.json"
    path.write_text(content)
    result = run_cli("train", "--config", str(path))
    _assert_clean_error(result, fragment)


@pytest.mark.parametrize(
    "command, setting",
    [
        ("tune", '"lr_schedule": "cosine"'),
        ("tune", '"eval_negatives": 100'),
        ("ablation", '"distribute": "multi-worker"'),
    ],
)
def test_a_file_setting_the_command_has_no_flag_for_is_refused(
    tmp_path, capsys, command, setting
):
    # The command would drop it without a word (a search at a constant
    # rate, ranking without negatives).
    path = tmp_path / "config.json"
    path.write_text('{"train": {%s}}' % setting)
    assert cli.main([command, "--config", str(path)]) != 0
    error = capsys.readouterr().err
    name = setting.split('"')[1]
    assert str(path) in error and f"Received: {name}=" in error
    assert f"has no --{name.replace('_', '-')}" in error


def test_a_file_holding_a_skipped_setting_at_its_default_is_accepted(tmp_path):
    # e.g. a run's config.json, which records every training option.
    path = tmp_path / "config.json"
    path.write_text('{"train": {"lr_schedule": "constant", "prepared": null}}')
    parser = cli_parser.build_parser()
    args = cli_parser.parse(parser, ["tune", "--config", str(path)])
    assert args.lr_schedule == "constant" and args.prepared is None


def test_bad_model_switch_values_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--cpr-rerankers", "20,x"])
    assert exit_info.value.code == 2
    assert "comma-separated integers, got '20,x'" in capsys.readouterr().err


@pytest.mark.slow
def test_help_prints_no_tensorflow_log_line():
    result = run_cli("train", "--help", env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert result.returncode == 0
    assert result.stderr == ""
    assert "--overwrite" in result.stdout and "tensorboard" in result.stdout


@pytest.mark.slow
def test_verbose_lets_tensorflow_speak():
    quiet = run_cli("train", "--help", env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    loud = run_cli(
        "train", "--help", "--verbose", env={"TF_CPP_MIN_LOG_LEVEL": "0"}
    )
    assert loud.returncode == 0
    assert loud.stdout == quiet.stdout
    # What TensorFlow prints while it loads depends on the machine (CUDA
    # stubs, oneDNN); --verbose hides none of it.
    assert len(loud.stderr) >= len(quiet.stderr)


def test_flags_are_generated_from_the_config_fields(capsys):
    from tfrec_tricks.models.config import ModelConfig
    from tfrec_tricks.training.train_config import TrainConfig

    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for cls in (TrainConfig, ModelConfig):
        for field in dataclasses.fields(cls):
            if not field.metadata.get("cli"):
                continue
            settings = field.metadata["flag"]
            flag = settings.get("flag", "--" + field.name.replace("_", "-"))
            assert flag in text, field.name
            help_text = " ".join(
                settings.get("switch_help", field.metadata["help"]).split()
            )
            assert help_text[:40] in text, field.name
    # Each default is the dataclass's, written once.
    assert "history length. Default: 50" in text
    assert "item embedding size d. Default: 64" in text
    assert "CPR reranker sizes k" in text and "Default: 100" in text
