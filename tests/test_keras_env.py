"""Which tests run under Keras 3: the list, and the collection it gives."""

import os
import pathlib
import subprocess
import sys

import pytest

from tests.keras_env import KERAS3_TEST_PATHS, runs_under_keras3

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_listed_path_exists():
    missing = [path for path in KERAS3_TEST_PATHS if not (ROOT / path).exists()]
    assert not missing, f"tests/keras_env.py lists missing paths: {missing}"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tests/layers", True),  # listed
        ("tests/layers/test_top_k.py", True),  # inside a listed folder
        ("tests/training", True),  # holds a listed file
        ("tests", True),
        (".", True),
        ("tests/training/test_run_keras.py", True),
        ("tests/training/test_fit.py", False),  # a sibling
        ("tests/recommendation", False),
        ("tests/test_recommender.py", False),  # a name's prefix is not enough
    ],
)
def test_a_path_runs_under_keras3_when_listed_inside_or_holding(path, expected):
    assert runs_under_keras3(ROOT / path, ROOT) is expected


def test_a_path_outside_the_repository_is_not_filtered(tmp_path):
    assert runs_under_keras3(tmp_path / "test_x.py", ROOT)


def _collected_files(*args: str) -> set[str]:
    environment = {**os.environ, "TF_USE_LEGACY_KERAS": "0"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q"]
        + ["-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {
        line.split("::")[0]
        for line in result.stdout.splitlines()
        if "::" in line
    }


@pytest.mark.slow
def test_keras3_collection_is_the_listed_tests_and_a_named_file():
    listed = set()
    for path in map(ROOT.joinpath, KERAS3_TEST_PATHS):
        files = path.rglob("test_*.py") if path.is_dir() else [path]
        listed |= {file.relative_to(ROOT).as_posix() for file in files}
    assert _collected_files() == listed
    # Named on the command line: collected although not listed.
    assert _collected_files("tests/test_keras_version.py") == {
        "tests/test_keras_version.py"
    }
