"""Runs the ``>>>`` examples of the benchmark scripts as doctests.

``tests/test_doctests.py`` runs the package's; the scripts' examples are
discovered the same way, one test per module whose source holds one.
"""

import doctest
import importlib
import pathlib

import pytest

import benchmarks

FOLDER = pathlib.Path(benchmarks.__file__).parent
WITH_EXAMPLES = sorted(
    path.stem for path in FOLDER.glob("*.py") if ">>>" in path.read_text()
)


def test_the_scripts_with_examples_are_found():
    assert "state_of_the_art" in WITH_EXAMPLES


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name):
    module = importlib.import_module(f"benchmarks.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
