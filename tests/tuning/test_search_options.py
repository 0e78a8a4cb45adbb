"""``SearchOptions``: its defaults and the values it refuses (no training)."""

import dataclasses
import re
import subprocess
import sys

import pytest

from tests.run_helpers import tiny_config
from tfrec_tricks.cli.parser import build_parser
from tfrec_tricks.tuning.search import run_search
from tfrec_tricks.tuning.search_budget import DEFAULT_RETRAIN_TOP, DEFAULT_TUNER
from tfrec_tricks.tuning.search_options import SearchOptions


def test_defaults():
    assert dataclasses.asdict(SearchOptions()) == {
        "tuner": DEFAULT_TUNER,
        "max_trials": None,
        "output_dir": "tuning",
        "fixed": None,
        "hyperparameters": None,
        "overwrite": False,
        "verbose": None,
        "compile_options": None,
        "callbacks": None,
        "tuner_options": None,
        "max_minutes": None,
        "retrain_top": DEFAULT_RETRAIN_TOP,
        "seeds": 1,
    }
    assert (DEFAULT_TUNER, DEFAULT_RETRAIN_TOP) == ("hyperband", 3)


def test_defaults_are_the_command_lines():
    args = build_parser().parse_args(["tune"])
    options = SearchOptions()
    for name in (
        "tuner",
        "max_trials",
        "output_dir",
        "overwrite",
        "max_minutes",
        "retrain_top",
        "seeds",
    ):
        assert getattr(options, name) == getattr(args, name), name


def test_frozen_and_keyword_only():
    options = SearchOptions(tuner="random", max_trials=4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seeds = 2
    with pytest.raises(TypeError):
        SearchOptions("random")  # an argument's place says nothing here


def test_the_smallest_values_are_accepted():
    options = SearchOptions(
        tuner="bayesian", max_trials=1, max_minutes=1e-6, retrain_top=0
    )
    assert (options.retrain_top, options.seeds) == (0, 1)


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"retrain_top": -1},
            "retrain_top must be at least 0 and seeds at least 1. "
            "Received: retrain_top=-1, seeds=1",
        ),
        (
            {"seeds": 0},
            "retrain_top must be at least 0 and seeds at least 1. "
            "Received: retrain_top=3, seeds=0",
        ),
        (
            {"max_minutes": 0},
            "max_minutes must be positive. Received: max_minutes=0",
        ),
        (
            {"max_minutes": -5.0},
            "max_minutes must be positive. Received: max_minutes=-5.0",
        ),
        (
            {"tuner": "grid"},
            "tuner must be one of ('hyperband', 'bayesian', 'random'). "
            "Received: tuner='grid'",
        ),
        (
            {"max_trials": 0},
            "max_trials must be positive. Received: max_trials=0",
        ),
        # Several wrong values: the first check's message, in run_search's
        # order before the checks moved here.
        (
            {"seeds": 0, "max_minutes": 0, "tuner": "grid", "max_trials": 0},
            "retrain_top must be at least 0 and seeds at least 1. "
            "Received: retrain_top=3, seeds=0",
        ),
        (
            {"max_minutes": 0, "tuner": "grid"},
            "max_minutes must be positive. Received: max_minutes=0",
        ),
        (
            {"tuner": "grid", "max_trials": 0},
            "tuner must be one of ('hyperband', 'bayesian', 'random'). "
            "Received: tuner='grid'",
        ),
    ],
)
def test_refused_values(values, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        SearchOptions(**values)


def test_replace_checks_again():
    with pytest.raises(ValueError, match="seeds at least 1"):
        dataclasses.replace(SearchOptions(), seeds=0)


def test_run_search_without_options_takes_the_defaults(tmp_path, monkeypatch):
    # Hyperband, the default tuner, refuses 1 epoch before anything is read
    # or written (the default output_dir, tuning/, is relative).
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="max_epochs=1 \\(--epochs\\) below 3"):
        run_search(tiny_config(tmp_path, epochs=1))
    assert not list(tmp_path.iterdir())


def test_importing_it_binds_no_keras_tuner():
    code = (
        "import sys; import tfrec_tricks.tuning.search_options; "
        "assert 'keras_tuner' not in sys.modules; "
        "assert 'tensorflow' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
