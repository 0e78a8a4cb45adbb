"""data.beam.temporary_files: a Beam run's temporary directory, and what
is removed after the run (the empty folders Beam left), when."""

import atexit
import os
import tempfile

import pytest

from tfrec_tricks.data.beam.temporary_files import (
    PRIVATE_PREFIX,
    BeamTemporaryDirectory,
    remove_leftovers,
)


@pytest.fixture
def temporary(tmp_path, monkeypatch):
    """``tempfile``'s directory for the test: an empty folder."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _leave_what_beam_leaves():
    # What the DirectRunner's Prism attempt leaves offline (empty).
    for prefix in ("beam-temp", "tmp", "tmp"):
        tempfile.mkdtemp(prefix=prefix)
    os.mkdir(os.path.join(tempfile.gettempdir(), "beam-requirements-cache"))


def test_a_run_finished_here_leaves_nothing(temporary):
    with BeamTemporaryDirectory() as run:
        assert tempfile.gettempdir() == run.path
        assert os.path.basename(run.path).startswith(PRIVATE_PREFIX)
        _leave_what_beam_leaves()
        run.finished_here()
    assert tempfile.gettempdir() == str(temporary)
    assert os.listdir(temporary) == []


def test_a_file_made_there_meanwhile_is_kept(temporary):
    with BeamTemporaryDirectory() as run:
        _leave_what_beam_leaves()
        with open(os.path.join(run.path, "notes.txt"), "w") as handle:
            handle.write("another thread's")
        folder = tempfile.mkdtemp()
        open(os.path.join(folder, "kept"), "w").close()
        run.finished_here()
    assert sorted(os.listdir(run.path)) == sorted(
        ["notes.txt", os.path.basename(folder)]
    )


def test_an_unfinished_run_is_cleared_at_exit(temporary, monkeypatch):
    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    with pytest.raises(KeyboardInterrupt):
        with BeamTemporaryDirectory() as run:
            _leave_what_beam_leaves()
            raise KeyboardInterrupt
    # Interrupted, or served by a job server that lives until exit: the
    # folders stay until then, the exit handler removes them.
    assert len(os.listdir(run.path)) == 4
    assert tempfile.gettempdir() == str(temporary)
    (at_exit,) = registered
    at_exit()
    assert os.listdir(temporary) == []


def test_remove_leftovers_says_whether_the_folder_is_gone(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert remove_leftovers(str(tmp_path)) is False
    assert sorted(os.listdir(tmp_path)) == ["full"]
    (tmp_path / "full" / "x").unlink()
    assert remove_leftovers(str(tmp_path)) is True
    assert remove_leftovers(str(tmp_path)) is True  # already gone
