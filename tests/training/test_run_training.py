"""``train`` (``tfrec_tricks.training.run_training``), the whole run; its
phases have their modules' test files (``test_resumption.py``,
``test_training_data.py``, ``test_fit.py``, ``test_evaluate.py``,
``test_persistence.py``)."""

import pytest

from tests.run_helpers import tiny_config
from tfrec_tricks.training.run_training import train

pytestmark = pytest.mark.slow


def test_same_seed_same_metrics(tmp_path):
    first = train(tiny_config(tmp_path / "a", epochs=1), verbose=0)
    second = train(tiny_config(tmp_path / "b", epochs=1), verbose=0)
    assert first.metrics["test"] == second.metrics["test"]
