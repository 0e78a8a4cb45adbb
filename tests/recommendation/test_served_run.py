"""``ServedRun`` and ``RunMemory`` (``tfrec_tricks.recommendation.
served_run``) on a tiny trained run: what is held, for how long, and when
the run is read again. The facade's use: tests/test_recommender_memory.py."""

import json
import os
import shutil

import pytest

from tests.keras_env import KERAS3
from tests.recommendation.recommend_helpers import train_tiny_run
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.recommendation import served_run
from tfrec_tricks.recommendation.served_run import (
    ENGINES_KEPT,
    RunMemory,
    ServedRun,
)
from tfrec_tricks.training.run_directory import RUN_FILE


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return train_tiny_run(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def run(trained, tmp_path):
    """A copy of the run, free to change (synthetic data: no data file)."""
    return shutil.copytree(trained, tmp_path / "run", symlinks=True)


@pytest.fixture
def loads(monkeypatch):
    """The run directories ``load_model`` was called with."""
    calls = []
    load = served_run.load_model

    def counting(run_dir):
        calls.append(run_dir)
        return load(run_dir)

    monkeypatch.setattr(served_run, "load_model", counting)
    return calls


@pytest.mark.slow
def test_the_run_is_held_while_its_files_are_unchanged(run, loads):
    memory = RunMemory()
    held = memory.get(str(run))
    assert held.current()
    engine = held.engine(3)
    assert memory.get(str(run)) is held and held.engine(3) is engine
    assert held.known_users() is held.known_users()
    assert held.item_index() is held.item_index()
    assert loads == [str(run)]


@pytest.mark.slow
@pytest.mark.parametrize("change", ["run.json replaced", "model file written"])
def test_a_changed_file_of_the_run_makes_it_loaded_again(run, loads, change):
    memory = RunMemory()
    held = memory.get(str(run))
    held.engine(3)
    if change == "run.json replaced":
        # The same content, written atomically as a retrain writes it.
        record = json.loads((run / RUN_FILE).read_text())
        (run / "new.json").write_text(json.dumps(record, indent=2))
        os.replace(run / "new.json", run / RUN_FILE)
    else:
        # The weights file of the run's Keras (run_keras.weights_path).
        path = (
            run
            / "model"
            / ("weights.weights.h5" if KERAS3 else "weights.index")
        )
        status = path.stat()
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 10**9))
    assert not held.current()
    again = memory.get(str(run))
    assert again is not held and again.current()
    again.engine(3)
    assert loads == [str(run)] * 2


@pytest.mark.slow
def test_a_run_no_longer_finished_is_refused_as_a_job_refuses_it(run):
    memory = RunMemory()
    memory.get(str(run))
    record = json.loads((run / RUN_FILE).read_text())
    record["status"] = "running"
    (run / RUN_FILE).write_text(json.dumps(record))
    with pytest.raises(RunDirectoryError, match="has not finished"):
        memory.get(str(run))


@pytest.mark.slow
def test_engines_are_kept_per_k_and_the_model_loaded_once(run, loads):
    held = ServedRun(str(run))
    first = held.engine(1)
    engines = [held.engine(k) for k in range(2, ENGINES_KEPT + 2)]
    assert [engine.k for engine in engines] == list(range(2, ENGINES_KEPT + 2))
    # The least recently used went: k=1 gets a new engine.
    assert held.engine(ENGINES_KEPT + 1) is engines[-1]
    assert held.engine(1) is not first
    assert {id(engine.model) for engine in [first, *engines]} == {
        id(first.model)
    }
    assert loads == [str(run)]


@pytest.mark.slow
def test_a_one_shot_run_keeps_nothing_for_later(run):
    once = ServedRun(str(run), held=False)
    assert not once.current()
    assert once.known_users() == once.known_users()
    assert once.known_users() is not once.known_users()
    assert once.item_index() is not once.item_index()
    assert once.num_users == 60
    once.drop_users()
    with pytest.raises(TypeError):
        once.num_users  # noqa: B018
