"""ModelConfig values as hyperparameters, and what a hyperparameter takes."""

import math

import pytest

from tfrec_tricks.tuning import import_keras_tuner
from tfrec_tricks.tuning.hyperparameter_values import (
    NONE,
    decode_value,
    encode_value,
    listed_values,
    value_count,
)

keras_tuner = import_keras_tuner()


@pytest.mark.parametrize(
    "name, value, encoded",
    [
        ("cpr_reranker_ks", (20, 100), "20,100"),
        ("cpr_reranker_ks", (), NONE),
        ("features", ("time_gap", "hour"), "time_gap,hour"),
        ("dropout", 0.2, 0.2),
    ],
)
def test_encode_then_decode_is_the_value(name, value, encoded):
    assert encode_value(name, value) == encoded
    assert decode_value(name, encoded) == value


def test_decode_accepts_spaces_and_empty_strings():
    assert decode_value("cpr_reranker_ks", " 20, 100") == (20, 100)
    assert decode_value("features", "") == ()
    assert encode_value("features", "a,b") == "a,b"  # already encoded


def test_listed_values_and_value_count():
    hp = keras_tuner.HyperParameters()
    hp.Fixed("fixed", 3)
    hp.Boolean("boolean")
    hp.Choice("choice", [1, 2, 4])
    hp.Int("integer", 1, 5, step=2)
    hp.Float("real", 0.0, 0.5)
    space = {h.name: h for h in hp.space}
    assert {name: listed_values(h) for name, h in space.items()} == {
        "fixed": [3],
        "boolean": [False, True],
        "choice": [1, 2, 4],
        "integer": [1, 5],
        "real": [0.0, 0.5],
    }
    counts = {name: value_count(h) for name, h in space.items()}
    assert counts == {
        "fixed": 1,
        "boolean": 2,
        "choice": 3,
        "integer": 3,
        "real": math.inf,
    }
