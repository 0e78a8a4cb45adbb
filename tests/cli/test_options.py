"""Flags from the config fields and back (``tfrec_tricks.cli.options``)."""

import argparse
import dataclasses

import pytest

from tfrec_tricks import cli
from tfrec_tricks.cli import options
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.training.train_config import TrainConfig


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


def test_bad_model_switch_values_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--cpr-rerankers", "20,x"])
    assert exit_info.value.code == 2
    assert "comma-separated integers, got '20,x'" in capsys.readouterr().err


def test_flags_are_generated_from_the_config_fields(capsys):
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


def test_int_list_reads_sizes_and_none():
    assert options.int_list("20,100") == (20, 100)
    assert options.int_list(" None ") == () == options.int_list("")
    for text, message in (("20,0", "must be positive"), ("5;6", "integers")):
        with pytest.raises(argparse.ArgumentTypeError, match=message):
            options.int_list(text)


def test_number_types_check_the_kind_and_the_range():
    assert options.positive_int("3") == 3
    assert options.non_negative_int("0") == 0
    assert options.probability("0.25") == 0.25
    for parse, text, message in (
        (options.positive_int, "2.5", "expected an integer, got '2.5'"),
        (options.positive_float, "x", "expected a number, got 'x'"),
        (options.non_negative_int, "-1", "must be >= 0, got -1"),
        (options.probability, "1", "must be in [0, 1), got 1.0"),
    ):
        with pytest.raises(argparse.ArgumentTypeError) as error:
            parse(text)
        assert str(error.value) == message


def test_field_arguments_of_chosen_groups_and_unset_defaults():
    parser = argparse.ArgumentParser()
    names = options.add_field_arguments(
        parser, TrainConfig, {}, only_groups=("data",), skip=("prepared",)
    )
    assert "data" in names and "max_len" in names
    assert "epochs" not in names and "prepared" not in names
    assert names == [
        n for n in options.flagged_fields(TrainConfig) if n in names
    ]
    defaults = parser.parse_args([])
    assert defaults.max_len == TrainConfig().max_len
    parser = argparse.ArgumentParser()
    options.add_field_arguments(parser, ModelConfig, {}, unset_defaults=True)
    assert parser.parse_args([]).embedding_dim is None


def test_train_config_takes_flags_over_the_files_model_options():
    parser = argparse.ArgumentParser()
    groups = {}
    options.add_field_arguments(parser, TrainConfig, groups)
    options.add_field_arguments(
        parser, ModelConfig, groups, unset_defaults=True
    )
    args = parser.parse_args(["--epochs", "4", "--dropout", "0.3"])
    args.config_model = {"dropout": 0.1, "embedding_dim": 16}
    config = options.train_config(args)
    assert config.epochs == 4
    # The flag beats the file; the file fills what no flag set; an unset
    # flag leaves no value.
    assert config.model == {"dropout": 0.3, "embedding_dim": 16}
