"""training.compiled_steps: one step per call when an epoch is shorter
than ``--steps-per-execution``, the requested count otherwise."""

import pytest

from tests.run_helpers import tiny_config
from tfrec_tricks.training.compiled_steps import steps_per_call
from tfrec_tricks.training.run_training import training_model


@pytest.mark.parametrize(
    ("requested", "steps", "expected"),
    [
        (16, 1490, 16),
        (16, 16, 16),
        (16, 15, 1),
        (16, 1, 1),
        (16, 0, 1),
        (1, 1, 1),
        (8, None, 8),  # unknown: files read as a stream
        (8, -2, 8),  # tf.data's UNKNOWN_CARDINALITY
        (8, -1, 8),  # tf.data's INFINITE_CARDINALITY
    ],
)
def test_steps_per_call(requested, steps, expected):
    assert steps_per_call(requested, steps) == expected


def test_fewer_than_one_step_per_call_is_refused_naming_it():
    with pytest.raises(ValueError, match="at least 1. Received: 0"):
        steps_per_call(0, 10)


def _compiled_steps(model) -> int:
    return int(model._steps_per_execution.numpy())


def test_a_run_compiles_one_step_per_call_when_its_epoch_is_shorter(tmp_path):
    # 60 users' prefixes in batches of 256: fewer than 16 steps an epoch.
    model, inputs = training_model(tiny_config(tmp_path))
    assert 1 < int(inputs.train.cardinality()) < 16
    assert _compiled_steps(model) == 1


def test_a_run_keeps_its_steps_per_call_when_an_epoch_holds_them(tmp_path):
    model, inputs = training_model(tiny_config(tmp_path, steps_per_execution=3))
    assert int(inputs.train.cardinality()) >= 3
    assert _compiled_steps(model) == 3
