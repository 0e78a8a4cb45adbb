"""``--recipe NAME``: a measured result's settings as defaults."""

import pytest

from tfrec_tricks.cli.parser import build_parser, parse, train_config
from tfrec_tricks.errors import DataError
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


def _config(*argv):
    return train_config(parse(build_parser(), list(argv)))


def test_long_histories_is_the_published_command():
    recipe = _config("train", "--data", "ml-1m", "--recipe", "long-histories")
    flags = _config("train", "--data", "ml-1m", *LONG_HISTORIES_FLAGS)
    assert recipe == flags
    assert recipe != _config("train", "--data", "ml-1m")


def test_the_one_hour_recipe_is_its_measured_run():
    # benchmarks/results/ml-1m-long-histories: sasrec200-cos25-lr5e3w1.
    hour = _config("train", "--data", "ml-1m", "--recipe", "long-histories-1h")
    flags = _config(
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
    hstu = _config(
        "train", "--data", "ml-1m", "--recipe", "long-histories-hstu"
    )
    flags = _config(
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


@pytest.mark.parametrize("recipe", ["long-histories-1h", "long-histories-hstu"])
def test_tune_refuses_the_scheduled_recipes(recipe):
    # Hyperband's trials train for differing epochs: no one schedule.
    expected = (
        f"--recipe {recipe}: tfrec-tricks tune has no "
        "--lr-schedule .*choose another recipe"
    )
    with pytest.raises(DataError, match=expected):
        parse(build_parser(), ["tune", "--recipe", recipe])


def test_flags_beat_the_recipe():
    config = _config(
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
    args = parse(build_parser(), argv)
    assert (args.max_len, args.window_stride) == (200, 100)
    assert args.learning_rate == 0.002  # tune: fixed, as a --config's
    assert args.config_model["encoder"] == "sasrec"


def test_recipe_and_config_are_refused_together(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text('{"train": {"epochs": 3}, "model": {}}')
    argv = ["train", "--recipe", "long-histories", "--config", str(path)]
    with pytest.raises(SystemExit) as stop:
        parse(build_parser(), argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "--recipe and --config both set the defaults" in error
    assert f"--recipe long-histories --config {path}" in error


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
