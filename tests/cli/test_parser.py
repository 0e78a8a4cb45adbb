"""The ``tfrec-tricks`` parser (``tfrec_tricks.cli.parser``): the commands,
``--config`` and ``--recipe`` defaults, and what a command refuses."""

import json
import os

import pytest

from tests.run_helpers import parsed_train_config, run_cli, snapshot
from tfrec_tricks import cli
from tfrec_tricks.cli import parser as cli_parser
from tfrec_tricks.errors import DataError


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


@pytest.mark.parametrize(
    "command, setting",
    [
        ("tune", '"lr_schedule": "cosine"'),
        ("tune", '"eval_negatives": 100'),
        ("ablation", '"distribute": "mirrored"'),
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


@pytest.mark.parametrize("recipe", ["long-histories-1h", "long-histories-hstu"])
def test_tune_refuses_the_scheduled_recipes(recipe):
    # Hyperband's trials train for differing epochs: no one schedule.
    expected = (
        f"--recipe {recipe}: tfrec-tricks tune has no "
        "--lr-schedule .*choose another recipe"
    )
    with pytest.raises(DataError, match=expected):
        cli_parser.parse(
            cli_parser.build_parser(), ["tune", "--recipe", recipe]
        )


def test_flags_beat_the_recipe():
    config = parsed_train_config(
        "train",
        "--recipe",
        "long-histories",
        "--learning-rate",
        "0.001",
        "--encoder",
        "gru4rec",
    )
    assert config.learning_rate == 0.001
    assert config.model["encoder"] == "gru4rec"
    assert config.window_stride == 100
    assert config.model["num_heads"] == 1


@pytest.mark.parametrize("command", ["tune", "ablation"])
def test_tune_and_ablation_take_the_recipe(command):
    argv = [command, "--data", "ml-1m", "--recipe", "long-histories"]
    args = cli_parser.parse(cli_parser.build_parser(), argv)
    assert (args.max_len, args.window_stride) == (200, 100)
    assert args.learning_rate == 0.002  # tune: fixed, as a --config's
    assert args.config_model["encoder"] == "sasrec"


def test_recipe_and_config_are_refused_together(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text('{"train": {"epochs": 3}, "model": {}}')
    argv = ["train", "--recipe", "long-histories", "--config", str(path)]
    with pytest.raises(SystemExit) as stop:
        cli_parser.parse(cli_parser.build_parser(), argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "--recipe and --config both set the defaults" in error
    assert f"--recipe long-histories --config {path}" in error


def test_every_command_has_its_parser_and_the_help_lists_them(capsys):
    parser = cli_parser.build_parser()
    assert set(parser.command_parsers) == set(cli_parser.COMMANDS)
    parser.print_help()
    text = capsys.readouterr().out
    for name, module in cli_parser.COMMANDS.items():
        assert name in text and module.HELP in " ".join(text.split())
    # Only the commands that train take the config flags.
    assert "--config" in parser.command_parsers["train"].format_help()
    assert "--config" not in parser.command_parsers["export"].format_help()


def test_unknown_arguments_go_to_beam_only(capsys):
    parser = cli_parser.build_parser()
    extra = ["--runner", "DataflowRunner", "--project", "p"]
    argv = ["prepare", "--output", "out", "--engine", "beam", *extra]
    assert cli_parser.parse(parser, argv).pipeline_args == extra
    assert cli_parser.parse(parser, argv[:3]).pipeline_args == []
    for refused in (argv[:3] + extra, ["train", *extra]):
        with pytest.raises(SystemExit) as stop:
            cli_parser.parse(parser, refused)
        assert stop.value.code == 2
        assert "unrecognized arguments: --runner" in capsys.readouterr().err


# What each answer holds: the text of today's answer, and where it prints.
ANSWERS_BEFORE_TENSORFLOW = [
    (["--help"], 0, "Start with `tfrec-tricks train`", "stdout"),
    (["train", "--help"], 0, "examples:\n  tfrec-tricks train\n", "stdout"),
    (["tune", "--help"], 0, "--max-trials", "stdout"),
    (
        ["train", "--epochs", "0"],
        2,
        "tfrec-tricks train: error: argument --epochs: must be positive, got 0",
        "stderr",
    ),
    (
        ["train", "--data", "file", "--data-path", "missing.inter"],
        1,
        "tfrec-tricks train: error: Data file not found. Received: "
        "path='missing.inter'\n",
        "stderr",
    ),
    (
        ["train", "--data", "file", "--data-path", "bad.inter"],
        1,
        "tfrec-tricks train: error: bad.inter:1: header needs "
        "user_id:token (or session_id:token) and item_id:token. Received "
        "line: 'user\\titem'\n",
        "stderr",
    ),
    # Each other command's check (cli.<command>.check).
    (
        ["prepare", "--data", "file", "--data-path", "bad.inter"]
        + ["--output", "out"],
        1,
        "tfrec-tricks prepare: error: bad.inter:1: header needs "
        "user_id:token (or session_id:token) and item_id:token.",
        "stderr",
    ),
    (
        ["ablation", "--data", "file", "--data-path", "bad.inter"]
        + ["--report-dir", "bad.inter"],
        1,
        "tfrec-tricks ablation: error: 'bad.inter' is an input of this "
        "command ('bad.inter')",
        "stderr",
    ),
    (
        ["tune", "--window-stride", "2"],
        1,
        "tfrec-tricks tune: error: window_stride applies to train_windows "
        "only. Received: window_stride=2, train_windows=False\n",
        "stderr",
    ),
    (
        ["export", "missing_run", "--name", "shop", "--version", "3"],
        1,
        "tfrec-tricks export: error: No run directory at 'missing_run'.\n",
        "stderr",
    ),
    (
        ["export", "missing_run", "--name", "shop", "--format", "onnx"]
        + ["--scoring", "index"],
        1,
        "tfrec-tricks export: error: --format onnx scores the full catalogue",
        "stderr",
    ),
    (
        ["recommend", "missing_run", "--output", "recs.csv"],
        1,
        "tfrec-tricks recommend: error: No run directory at 'missing_run'.\n",
        "stderr",
    ),
]


@pytest.mark.parametrize(
    "args, code, answer, stream",
    ANSWERS_BEFORE_TENSORFLOW,
    ids=[" ".join(answer[0]) for answer in ANSWERS_BEFORE_TENSORFLOW],
)
def test_answers_before_tensorflow_loads(tmp_path, args, code, answer, stream):
    # A `tensorflow` that cannot be imported, first on the path: the help and
    # these refusals must not need it (its import takes seconds).
    blocker = tmp_path / "no_tensorflow" / "tensorflow"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ImportError('TensorFlow imported before the arguments were "
        "checked')\n"
    )
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "bad.inter").write_text("user\titem\nu1\ti1\n")
    before = snapshot(workspace)
    path = os.pathsep.join(
        p for p in (str(blocker.parent), os.environ.get("PYTHONPATH")) if p
    )
    result = run_cli(*args, cwd=workspace, env={"PYTHONPATH": path})
    assert result.returncode == code, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert answer in getattr(result, stream), result.stderr[-2000:]
    if stream == "stderr":
        assert result.stderr.count("\n") == 1 or code == 2
    assert snapshot(workspace) == before
