"""Runs the ``>>>`` examples of every ``tfrec_tricks`` module as doctests.

The modules are discovered, not listed: every module of the package whose
source holds a ``>>>`` example gets one test, named after the module.

Under Keras 3 (``TF_USE_LEGACY_KERAS=0``) a module that needs tf-keras is
skipped, by a rule rather than a list: its imports reach, directly or
through what they import (parent packages included), TensorFlow
Recommenders at a module's top level or
``tfrec_tricks.keras_version.require_legacy_keras`` or
``choose_legacy_keras``, the checks a part that needs tf-keras makes
(none does now: export and the ``Recommender`` were the last).
TFRS imported inside a function does not count: that is how
``models.retrieval_base`` and ``objectives.loss_layers`` import it, under
tf-keras only, so the models' examples run under Keras 3 too.

The examples are fast, except those that train (``fit``), run a Beam
pipeline or export a SavedModel: those are marked ``slow``, as the tests
that do so are.
"""

import ast
import doctest
import functools
import importlib
import pathlib
import pkgutil
import re

import pytest

import tfrec_tricks

PACKAGE = pathlib.Path(tfrec_tricks.__file__).parent
# What makes a module tf-keras only (see the module docstring): TFRS at a
# module's top level, the check anywhere.
NEEDS_TF_KERAS_AT_TOP = {"tensorflow_recommenders"}
NEEDS_TF_KERAS = {
    "tfrec_tricks.keras_version.require_legacy_keras",
    "tfrec_tricks.keras_version.choose_legacy_keras",
}
# An example line that trains, runs a Beam pipeline or exports a SavedModel.
SLOW_EXAMPLE = re.compile(
    r"^\s*(?:>>>|\.\.\.) .*(?:\.fit\(|_beam\(|export_for_serving\(|train\()",
    re.M,
)


def walk(path: pathlib.Path, prefix: str):
    """(name, is package) of every module under ``path``, recursively.

    ``pkgutil.walk_packages`` imports each package to walk into it, and
    drops the packages whose import fails: under Keras 3 that would hide
    ``tfrec_tricks.models`` and ``tfrec_tricks.export`` instead of skipping
    them. This walks the same tree without importing anything.
    """
    for info in pkgutil.iter_modules([str(path)], prefix):
        yield info.name, info.ispkg
        if info.ispkg:
            leaf = info.name.rpartition(".")[2]
            yield from walk(path / leaf, info.name + ".")


MODULES = {"tfrec_tricks": True, **dict(walk(PACKAGE, "tfrec_tricks."))}


def source(name: str) -> pathlib.Path:
    path = PACKAGE.joinpath(*name.split(".")[1:])
    return path / "__init__.py" if MODULES[name] else path.with_suffix(".py")


@functools.cache
def imports(name: str, top_level: bool = False) -> frozenset:
    """Every name the module imports (``from a import b`` gives a, a.b);
    with ``top_level``, those imported outside any function."""
    tree = ast.parse(source(name).read_text())
    package = name if MODULES[name] else name.rpartition(".")[0]
    # A module's PEP 562 ``__getattr__`` imports on first access, not when
    # the module is imported: the root's ``Recommender``, the heads of
    # ``tfrec_tricks.layers``.
    lazy = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and (top_level or node.name == "__getattr__")
        for inner in ast.walk(node)
    }
    names = set()
    for node in ast.walk(tree):
        if id(node) in lazy:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[
                    : len(package.split(".")) + 1 - node.level
                ]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(names)


def prefixes(name: str) -> list[str]:
    """``name`` and its parent packages: importing it runs them all."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


@functools.cache
def needs_tf_keras(name: str) -> bool:
    seen, todo = set(), [name]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for imported in imports(module, top_level=True):
            if any(p in NEEDS_TF_KERAS_AT_TOP for p in prefixes(imported)):
                return True
        for imported in imports(module):
            if any(p in NEEDS_TF_KERAS for p in prefixes(imported)):
                return True
            todo.extend(p for p in prefixes(imported) if p in MODULES)
        todo.extend(p for p in prefixes(module) if p in MODULES)
    return False


def has_examples(name: str) -> bool:
    return ">>>" in source(name).read_text()


DOCTESTED = sorted(name for name in MODULES if has_examples(name))
PARAMS = [
    pytest.param(
        name,
        id=name,
        marks=[pytest.mark.slow]
        if SLOW_EXAMPLE.search(source(name).read_text())
        else [],
    )
    for name in DOCTESTED
]

from tests.keras_env import KERAS3  # noqa: E402


def test_discovery_and_the_tf_keras_rule():
    assert "tfrec_tricks.heads.cpr.softmax_cpr" in DOCTESTED
    # TFRS under tf-keras only, imported inside retrieval_base's function.
    assert not needs_tf_keras("tfrec_tricks.models.sequential_retrieval_model")
    assert not needs_tf_keras("tfrec_tricks.objectives.sampled_negatives")
    # Training runs run under either Keras (training.run_keras).
    assert not needs_tf_keras("tfrec_tricks.training.run_training")
    # Tuning too (tuning.keras_tuner_binding binds KerasTuner to either).
    assert not needs_tf_keras(
        "tfrec_tricks.tuning.sequential_retrieval_hypermodel"
    )
    # Export, recommendations and the Recommender run under either Keras
    # (export.saved_model_writer).
    assert not needs_tf_keras("tfrec_tricks.export.warmup")
    assert not needs_tf_keras("tfrec_tricks.recommendation.beam_engine")
    assert not needs_tf_keras("tfrec_tricks.heads.cpr.softmax_cpr")
    assert not needs_tf_keras("tfrec_tricks.recommender")


@pytest.mark.parametrize("name", PARAMS)
def test_docstring_examples(name):
    if KERAS3 and needs_tf_keras(name):
        pytest.skip(f"{name} needs tf-keras")
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
