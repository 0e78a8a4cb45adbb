"""The recipes (``tfrec_tricks.training.recipes``): each is its measured
run's command (``--recipe``'s parsing: tests/cli/test_parser.py)."""

import pytest

from tests.run_helpers import parsed_train_config
from tfrec_tricks.cli.parser import build_parser, parse
from tfrec_tricks.training.recipes import RECIPES, recipe_options
from tfrec_tricks.training.train_config import TrainConfig

#: benchmarks/results/ml-1m-long-histories' command, without the head its
#: page names (the recipe leaves it to --head auto) and the run's name.
LONG_HISTORIES_FLAGS = (
    "--encoder sasrec --num-layers 2 --num-heads 1 --embedding-dim 64 "
    "--dropout 0.1 --attention-dropout 0.1 --max-len 200 --train-windows "
    "--window-stride 100 --learning-rate 0.002 --eval-seen-excluded "
    "--epochs 200 --patience 10"
).split()


def test_long_histories_is_the_published_command():
    recipe = parsed_train_config(
        "train", "--data", "ml-1m", "--recipe", "long-histories"
    )
    flags = parsed_train_config(
        "train", "--data", "ml-1m", *LONG_HISTORIES_FLAGS
    )
    assert recipe == flags
    assert recipe != parsed_train_config("train", "--data", "ml-1m")


def test_the_one_hour_recipe_is_its_measured_run():
    # benchmarks/results/ml-1m-long-histories: sasrec200-cos25-lr5e3w1.
    hour = parsed_train_config(
        "train", "--data", "ml-1m", "--recipe", "long-histories-1h"
    )
    flags = parsed_train_config(
        "train",
        "--data",
        "ml-1m",
        "--recipe",
        "long-histories",
        *"--learning-rate 0.005 --lr-schedule cosine --warmup-epochs 1".split(),
        *"--epochs 25".split(),
    )
    assert hour == flags
    assert (hour.learning_rate, hour.lr_schedule, hour.epochs) == (
        0.005,
        "cosine",
        25,
    )


def test_the_hstu_recipe_is_its_measured_run():
    # benchmarks/results/ml-1m-long-histories: hstu200-4blocks-e50.
    hstu = parsed_train_config(
        "train", "--data", "ml-1m", "--recipe", "long-histories-hstu"
    )
    flags = parsed_train_config(
        "train",
        "--data",
        "ml-1m",
        "--recipe",
        "long-histories-1h",
        *"--encoder hstu --num-layers 4 --epochs 50".split(),
    )
    assert hstu == flags
    assert (hstu.model["encoder"], hstu.model["num_layers"], hstu.epochs) == (
        "hstu",
        4,
        50,
    )
    assert hstu.patience == 10


def test_an_unknown_recipe_is_refused_with_the_known_ones(capsys):
    with pytest.raises(SystemExit) as stop:
        parse(build_parser(), ["train", "--recipe", "long-history"])
    assert stop.value.code == 2
    assert "'long-history'" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"\['long-histories', .*'nope'"):
        recipe_options("nope")


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_recipe_is_a_valid_config_and_a_copy(name):
    options = recipe_options(name)
    TrainConfig(**options["train"], model=options["model"])
    options["model"]["encoder"] = "changed"
    assert recipe_options(name)["model"]["encoder"] != "changed"
    help_text = build_parser().command_parsers["train"].format_help()
    assert name in " ".join(help_text.split())
