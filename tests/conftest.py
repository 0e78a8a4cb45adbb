"""Test set-up: tf-keras unless the run asks for Keras 3.

``TF_USE_LEGACY_KERAS=0 pytest`` runs the tests written for either Keras
under Keras 3 (TensorFlow backend; ``tests/keras_env.py`` lists them); the
default is tf-keras, as for the pipeline.
"""

import os
import pathlib
import sys

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT / ".." / "shared" / "data"

#: The files named on the command line (``pytest_ignore_collect``).
_NAMED_FILES = pytest.StashKey[set]()


@pytest.fixture
def shared_data() -> pathlib.Path:
    """The real datasets folder; skips the test when it is absent."""
    path = SHARED_DATA.resolve()
    if not path.is_dir():
        pytest.skip(f"real datasets not found at {path}")
    return path


@pytest.fixture
def tiny_ablation_base(tmp_path):
    """A TrainConfig small enough for ablation rows trained in a test."""
    from tfrec_tricks.training.train_config import TrainConfig

    return TrainConfig(
        synthetic_users=80,
        synthetic_items=150,
        max_len=10,
        epochs=1,
        output_dir=str(tmp_path),
        name="abl",
        model={"embedding_dim": 8},
    )


def keras3() -> bool:
    from tests.keras_env import KERAS3

    return KERAS3


@pytest.fixture
def fake_interpreter(tmp_path):
    """Makes an executable that runs a Python script in this interpreter.

    It stands in for another interpreter (e.g. RecBole's): called as
    ``PATH worker.py ARGS``, the script sees ``sys.argv`` = (PATH,
    worker.py, ARGS...).
    """

    def make(script: str) -> str:
        path = tmp_path / "python"
        path.write_text(f"#!{sys.executable}\n{script}")
        path.chmod(0o755)
        return str(path)

    return make


def pytest_ignore_collect(collection_path, config):
    """Under Keras 3, only the tests written for either Keras
    (``tests/keras_env.KERAS3_TEST_PATHS``); a test file named on the
    command line is collected as asked."""
    from tests.keras_env import KERAS3, runs_under_keras3

    if not KERAS3:
        return None
    if _NAMED_FILES not in config.stash:  # once, not per collected path
        config.stash[_NAMED_FILES] = {
            (config.invocation_params.dir / arg.split("::")[0]).resolve()
            for arg in config.args
        }
    named = config.stash[_NAMED_FILES]
    if collection_path.is_file() and collection_path.resolve() in named:
        return None
    return None if runs_under_keras3(collection_path, ROOT) else True


def pytest_collection_modifyitems(config, items):
    """Heaviest test files first (tests/heaviest_first.py says why)."""
    from tests.heaviest_first import heaviest_first, load_seconds

    order = heaviest_first([item.nodeid for item in items], load_seconds())
    items[:] = [items[i] for i in order]
