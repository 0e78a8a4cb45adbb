"""Every value of a custom hyperparameter is checked before the first trial."""

import pytest

from tfrec_tricks.tuning import import_keras_tuner
from tfrec_tricks.tuning.custom_value_checks import (
    check_batch_size,
    check_custom_values,
)

keras_tuner = import_keras_tuner()


def _custom(**choices):
    hp = keras_tuner.HyperParameters()
    for name, values in choices.items():
        hp.Choice(name, values)
    return {h.name: h for h in hp.space}


def _model_config(checked):
    """A stand-in for ``model_config``: records the values it is given,
    refuses a dropout of 1 or more."""

    def model_config(hp):
        checked.append(dict(hp.values))
        if hp.values.get("dropout", 0) >= 1:
            raise ValueError("dropout must be below 1")

    return model_config


def test_every_value_is_checked_and_the_bad_one_named():
    checked = []
    with pytest.raises(ValueError) as raised:
        check_custom_values(
            _custom(dropout=[0.1, 1.5]), {}, {}, _model_config(checked)
        )
    assert str(raised.value).startswith(
        "--choices dropout: the value 1.5 cannot train (dropout must be"
    )
    assert checked == [{"dropout": 0.1}, {"dropout": 1.5}]


def test_a_conditional_value_is_checked_under_its_switch():
    checked = []
    conditions = {"cpr_mi": ("head", ["cpr"])}
    model_config = _model_config(checked)
    check_custom_values(_custom(cpr_mi=[True]), conditions, {}, model_config)
    assert checked == [{"cpr_mi": True, "head": "cpr"}]
    # Never active under a fixed head: never trained, never checked.
    checked.clear()
    fixed = {"head": "softmax"}
    check_custom_values(_custom(cpr_mi=[True]), conditions, fixed, model_config)
    assert checked == []


def test_batch_sizes_are_checked_without_a_model():
    with pytest.raises(ValueError, match="--choices batch_size: the value -1"):
        check_custom_values(
            _custom(batch_size=[64, -1]), {}, {}, _model_config([])
        )


@pytest.mark.parametrize("value", [0, -1, 2.0, True, "64"])
def test_check_batch_size_refuses(value):
    with pytest.raises(ValueError, match="positive integer"):
        check_batch_size(value)
