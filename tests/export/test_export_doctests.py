"""Runs the ``>>>`` examples of ``tfrec_tricks.export`` as doctests."""

import doctest
import importlib

import pytest

MODULES = [
    "tfrec_tricks.export.serving_module",
    "tfrec_tricks.export.export_for_serving",
    "tfrec_tricks.export.warmup",
    "tfrec_tricks.export.models_config",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
