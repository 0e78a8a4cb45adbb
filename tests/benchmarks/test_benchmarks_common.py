"""benchmarks.common: shared options, run naming and report files."""

import argparse
import json
import os
import pathlib
import shlex
import subprocess
import sys

import pytest

from benchmarks import common
from tfrec_tricks.data.in_memory_dataset import SPLITS

REPO = pathlib.Path(__file__).resolve().parents[2]

DOC = """A benchmark.

    python -m benchmarks.thing --data ml-1m \\
        --epochs 3
"""


def full_parser():
    parser = common.build_parser(DOC)
    common.add_data_options(parser, default="ml-100k")
    common.add_split_option(parser)
    common.add_training_options(parser, epochs=30, patience=3)
    common.add_seed_option(parser)
    common.add_report_dir_option(parser)
    return parser


@pytest.mark.parametrize(
    "text, expected",
    [("1000", 1000), ("250k", 250_000), ("50M", 50_000_000), (" 2m ", 2e6)],
)
def test_a_count_takes_k_and_m(text, expected):
    assert common.count(text) == expected


@pytest.mark.parametrize("text", ["0", "1.5M", "-3", "ten", "5G", ""])
def test_a_bad_count_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="Received"):
        common.count(text)


def test_a_count_list_keeps_the_order_given():
    assert common.count_list("3706, 1M,3706") == [3706, 1_000_000, 3706]
    for text in (",", "", "5,0"):
        with pytest.raises(argparse.ArgumentTypeError, match="Received"):
            common.count_list(text)


def test_the_shared_options_and_their_defaults():
    args = full_parser().parse_args([])
    assert vars(args) == {
        "data": "ml-100k",
        "data_path": None,
        "split": "recbole",
        "epochs": 30,
        "patience": 3,
        "output_dir": "runs/benchmarks",
        "seed": 0,
        "report_dir": common.RESULTS,
    }
    assert common.RESULTS == str(REPO / "benchmarks" / "results")


def test_the_shared_options_parse_their_values():
    argv = [
        "--data", "yoochoose-100k", "--data-path", "d", "--split",
        "every-user", "--epochs", "7", "--patience", "2", "--output-dir",
        "out", "--seed", "4", "--report-dir", "rep",
    ]  # fmt: skip
    args = full_parser().parse_args(argv)
    assert (args.data, args.data_path, args.split) == (
        "yoochoose-100k",
        "d",
        "every-user",
    )
    assert (args.epochs, args.patience, args.seed) == (7, 2, 4)
    assert (args.output_dir, args.report_dir) == ("out", "rep")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--split", "random"], "invalid choice: 'random'"),
        (["--epochs", "many"], "invalid int value: 'many'"),
        (["--patience", "1.5"], "invalid int value: '1.5'"),
        (["--seed", "x"], "invalid int value: 'x'"),
    ],
)
def test_bad_shared_options_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        full_parser().parse_args(argv)
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_split_choices_are_the_data_splits():
    parser = common.build_parser(DOC)
    common.add_split_option(parser)
    (split,) = [a for a in parser._actions if a.dest == "split"]
    assert tuple(split.choices) == tuple(SPLITS)


def test_help_keeps_the_description_lines_and_names_defaults():
    parser = common.build_parser(DOC)
    common.add_data_options(
        parser, default="ml-100k", data_help="ml-100k or yoochoose-100k"
    )
    common.add_training_options(
        parser, epochs=30, patience=3, epochs_help="maximum epochs per dataset"
    )
    text = parser.format_help()
    # The usage example is shown as written (RawTextHelpFormatter).
    assert "    python -m benchmarks.thing --data ml-1m \\\n" in text
    assert "ml-100k or yoochoose-100k" in text
    assert "maximum epochs per dataset. Default: 30" in text
    assert "Default: runs/benchmarks" in text


def test_data_help_names_the_default():
    parser = common.build_parser(DOC)
    common.add_data_options(parser, default="yoochoose-100k")
    assert "Default: yoochoose-100k" in parser.format_help()


def test_data_path_option_alone():
    parser = common.build_parser(DOC)
    common.add_data_path_option(parser)
    assert vars(parser.parse_args([])) == {"data_path": None}


def test_executable_file(tmp_path, capsys):
    parser = common.build_parser(DOC)
    parser.add_argument("--python", type=common.executable_file)
    assert parser.parse_args(["--python", sys.executable]).python == (
        sys.executable
    )
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program")
    for value in (str(tmp_path / "missing"), str(plain), str(tmp_path)):
        with pytest.raises(SystemExit) as stop:
            parser.parse_args(["--python", value])
        assert stop.value.code == 2
        assert (
            f"--python: not an executable file. Received: {value!r}"
            in capsys.readouterr().err
        )


def test_command_line_quotes_what_needs_it():
    argv = ["--rows", "Softmax", "Softmax + CPR:100 + Mi", "--data", "ml-1m"]
    command = common.command_line("seed_spread", argv)
    assert command == (
        "python -m benchmarks.seed_spread --rows Softmax "
        "'Softmax + CPR:100 + Mi' --data ml-1m"
    )
    # The shell gives the script the same arguments back.
    assert shlex.split(command)[3:] == argv


def test_command_line_without_arguments_has_no_trailing_space():
    assert common.command_line("step_profile", []) == (
        "python -m benchmarks.step_profile"
    )


def test_command_line_reads_sys_argv_by_default(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["ignored.py", "--data", "ml-1m"])
    assert common.command_line("baseline") == (
        "python -m benchmarks.baseline --data ml-1m"
    )
    assert common.command_line("baseline", None) == (
        "python -m benchmarks.baseline --data ml-1m"
    )


def test_module_command_runs_a_script_as_a_package_module(tmp_path):
    # recbole_worker imports nothing heavy: it answers a usage error.
    command = common.module_command("recbole_worker")
    assert command == [sys.executable, "-m", "benchmarks.recbole_worker"]
    done = subprocess.run(
        command, cwd=common.ROOT, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"].startswith(
        "usage: recbole_worker.py DATA_DIR"
    )
    assert common.ROOT == str(REPO)


def test_report_stem_joins_kind_and_parts_and_makes_the_folder(tmp_path):
    folder = tmp_path / "a" / "reports"
    assert common.report_stem(str(folder), "epoch_speed") == str(
        folder / "epoch_speed"
    )
    assert folder.is_dir()
    assert common.report_stem(str(folder), "sse_sweep", "ml-100k") == str(
        folder / "sse_sweep-ml-100k"
    )


def test_report_stem_names_only_a_non_default_split(tmp_path):
    stem = common.report_stem(
        str(tmp_path), "seed_spread", "ml-1m", "sasrec", split="recbole"
    )
    assert stem == str(tmp_path / "seed_spread-ml-1m-sasrec")
    stem = common.report_stem(
        str(tmp_path), "seed_spread", "ml-1m", "sasrec", split="every-user"
    )
    assert stem == str(tmp_path / "seed_spread-ml-1m-sasrec-every-user")
    assert common.DEFAULT_SPLIT == "recbole"


def test_write_report_writes_markdown_json_and_chart(tmp_path):
    stem = str(tmp_path / "new" / "folder" / "kind-data")
    numbers = {"ml-1m": {"test": {"ndcg@10": 0.25}}, "runs": [1, 2]}
    drawn = []

    def chart(path):
        drawn.append(path)
        with open(path, "wb") as handle:
            handle.write(b"\x89PNG")

    paths = common.write_report(
        stem, "# Title\n\n| a |", numbers=numbers, chart=chart
    )
    assert paths == {
        "md": stem + ".md",
        "json": stem + ".json",
        "png": stem + ".png",
    }
    assert drawn == [stem + ".png"]
    with open(paths["md"]) as handle:
        assert handle.read() == "# Title\n\n| a |\n"
    with open(paths["json"]) as handle:
        assert handle.read() == json.dumps(numbers, indent=2)
    with open(paths["png"], "rb") as handle:
        assert handle.read() == b"\x89PNG"


def test_write_report_keeps_a_final_newline_and_writes_only_the_markdown(
    tmp_path,
):
    stem = str(tmp_path / "report")
    paths = common.write_report(stem, "text\n")
    assert paths == {"md": stem + ".md"}
    with open(paths["md"]) as handle:
        assert handle.read() == "text\n"
    assert sorted(os.listdir(tmp_path)) == ["report.md"]


def test_write_report_writes_falsy_numbers(tmp_path):
    # Only None means "no numbers": an empty result is still written.
    paths = common.write_report(str(tmp_path / "r"), "t", numbers={})
    with open(paths["json"]) as handle:
        assert json.load(handle) == {}


def test_a_record_carries_over_only_while_its_settings_hold(capsys):
    from tfrec_tricks.training.train_config import TrainConfig

    config = TrainConfig(synthetic_users=60, synthetic_items=40, seed=1)
    settings = common.run_settings(config)
    metrics = {"test": {"ndcg@10": 0.25}}
    assert common.carried_over((metrics, settings), config, "seed 1") == metrics
    # The seed, run name and folders are not settings: another machine's
    # run of the same options carries over.
    elsewhere = TrainConfig(
        synthetic_users=60, synthetic_items=40, seed=1, output_dir="/elsewhere"
    )
    assert common.carried_over((metrics, settings), elsewhere, "x") == metrics
    # Records from before settings were recorded are taken as they are.
    assert common.carried_over((metrics, None), config, "seed 1") == metrics
    assert common.carried_over(None, config, "seed 1") is None
    assert capsys.readouterr().err == ""
    changed = TrainConfig(synthetic_users=60, synthetic_items=40, max_len=7)
    assert common.carried_over((metrics, settings), changed, "Row 'a'") is None
    assert capsys.readouterr().err.startswith(
        "Row 'a': the record was trained with other settings"
    )
