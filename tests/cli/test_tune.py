"""``tfrec-tricks tune`` (``tfrec_tricks.cli.tune``): its options and
what it hands the search (the searches themselves:
tests/tuning/test_search.py)."""

import types

import pytest

from tfrec_tricks import cli
from tfrec_tricks.cli.parser import build_parser, parse
from tfrec_tricks.config_fields import field_default
from tfrec_tricks.training.train_config import TrainConfig


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


def test_tune_options_and_defaults():
    args = build_parser().parse_args(
        ["tune", "--tuner", "hyperband", "--max-trials", "5", "--head", "cpr"]
    )
    assert (args.tuner, args.max_trials, args.head) == ("hyperband", 5, "cpr")
    # Tuned unless given; the search goes to tuning/, not runs/.
    assert args.batch_size is None and args.learning_rate is None
    assert args.output_dir == "tuning"
    assert not args.overwrite
    defaults = build_parser().parse_args(["tune"])
    assert (defaults.tuner, defaults.max_trials, defaults.max_minutes) == (
        "hyperband",
        None,
        None,
    )
    assert (defaults.retrain_top, defaults.seeds) == (3, 1)


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--max-minutes", "0", "must be positive, got 0.0"),
        ("--retrain-top", "-1", "must be >= 0, got -1"),
        ("--seeds", "0", "must be positive, got 0"),
    ],
)
def test_bad_search_options_are_rejected(flag, value, message, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", flag, value])
    assert message in capsys.readouterr().err


def test_unknown_tuner_is_rejected(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", "--tuner", "grid"])
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, fixed",
    [
        ([], {}),
        (["--batch-size", "64"], {"batch_size": 64}),
        (["--learning-rate", "0.01"], {"learning_rate": 0.01}),
    ],
)
def test_run_fixes_what_is_given_and_searches_into_its_folder(
    monkeypatch, capsys, argv, fixed
):
    from tfrec_tricks.tuning import search

    calls = []

    def fake_search(config, options):
        calls.append((config, options))
        return types.SimpleNamespace(role="worker", output_dir="tuning/x")

    monkeypatch.setattr(search, "run_search", fake_search)
    args = parse(build_parser(), ["tune", "--choices", "dropout=0.1,0.2"])
    assert args.output_dir == "tuning"
    argv = ["tune", "--epochs", "3", "--choices", "dropout=0.1,0.2", *argv]
    assert cli.main(argv) == 0
    [(config, options)] = calls
    # Given settings stay fixed; the defaults' run takes train's values.
    assert options.fixed == fixed
    for name in ("batch_size", "learning_rate"):
        expected = fixed.get(name, field_default(TrainConfig, name))
        assert getattr(config, name) == expected
    # The search goes to tune's folder; the chosen runs to train's.
    assert options.output_dir == "tuning"
    assert config.output_dir == field_default(TrainConfig, "output_dir")
    assert config.epochs == 3
    assert [h.name for h in options.hyperparameters.space] == ["dropout"]
    assert "Worker finished" in capsys.readouterr().out
