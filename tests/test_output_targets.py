"""Output folders: only the command's own kind, never an input, one
writer at a time, nothing left behind, modes from the umask."""

import os
import subprocess
import sys
import textwrap

import pytest

from tfrec_tricks.atomic_files import (
    default_mode,
    leftovers,
    publish_directory,
    write_text_atomic,
)
from tfrec_tricks.errors import OutputError, TargetBusyError
from tfrec_tricks.output_targets import (
    TargetKind,
    check_target,
    target_lock,
)

# A kind whose folders hold a "mine" marker file.
MINE = TargetKind("thing", "--output", lambda p: os.listdir(p) == ["mine"])


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_missing_empty_and_own_targets_are_accepted(tmp_path):
    check_target(str(tmp_path / "new"), MINE)
    (tmp_path / "empty").mkdir()
    check_target(str(tmp_path / "empty"), MINE)
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "mine").write_text("")
    check_target(str(tmp_path / "own"), MINE)


def test_a_folder_of_another_kind_is_refused_naming_its_contents(tmp_path):
    folder = tmp_path / "photos"
    (folder / "2024").mkdir(parents=True)
    (folder / "cat.jpg").write_text("")
    with pytest.raises(OutputError, match=r"not a thing \(2024/, cat.jpg\)"):
        check_target(str(folder), MINE)


def test_a_file_is_refused(tmp_path):
    (tmp_path / "notes").write_text("x")
    with pytest.raises(OutputError, match="is a file, not a thing"):
        check_target(str(tmp_path / "notes"), MINE)


@pytest.mark.parametrize(
    "target, how",
    [
        ("data/u.data", "is"),
        ("data", "contains"),
        (".", "current directory"),
        ("..", "current directory"),
    ],
)
def test_inputs_and_the_current_directory_are_refused(
    tmp_path, monkeypatch, target, how
):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "u.data").write_text("1 2")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError, match=how):
        check_target(target, MINE, inputs=["data/u.data"])


def test_a_target_inside_an_input_folder_is_refused(tmp_path):
    (tmp_path / "prepared").mkdir()
    with pytest.raises(OutputError, match="lies inside an input"):
        check_target(
            str(tmp_path / "prepared" / "run"),
            MINE,
            inputs=[str(tmp_path / "prepared")],
        )


def test_a_symlink_to_an_input_is_the_input(tmp_path):
    (tmp_path / "u.data").write_text("1 2")
    os.symlink(tmp_path / "u.data", tmp_path / "link")
    with pytest.raises(OutputError, match="is an input"):
        check_target(str(tmp_path / "link"), MINE, [str(tmp_path / "u.data")])


HOLD = textwrap.dedent(
    """
    import sys, time
    from tfrec_tricks.output_targets import TargetKind, target_lock
    kind = TargetKind("thing", "--output", lambda p: True)
    with target_lock(sys.argv[1], kind):
        print("locked", flush=True)
        time.sleep(60)
    """
)


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    target = str(tmp_path / "out")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, target, "--flag"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(TargetBusyError) as error:
            with target_lock(target, MINE):
                pass
        assert f"pid {holder.pid}" in str(error.value)
        assert "--flag" in str(error.value)
    finally:
        holder.kill()
        holder.wait()
    # The kernel released the dead holder's lock: the next writer goes on
    # and removes the lock file when done.
    with target_lock(target, MINE):
        pass
    assert os.listdir(tmp_path) == []


def test_a_refused_lock_leaves_no_folder_it_created(tmp_path):
    target = tmp_path / "a" / "b" / "out"
    with pytest.raises(RuntimeError):
        with target_lock(str(target), MINE):
            raise RuntimeError("refused inside")
    assert os.listdir(tmp_path) == []


def test_leftovers_of_killed_writers_are_removed_under_the_lock(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    stale = [
        tmp_path / ".out.abcd1234.staging",
        tmp_path / ".out.abcd_234.old",
        tmp_path / ".out-zz99yy88",  # an older version's staging folder
        target / ".run.json.q1w2e3r4.tmp",
        target / ".model.q1w2e3r4.staging",
        target / ".tmp-3-q1w2e3r4",
    ]
    kept = [
        tmp_path / ".out-b.abcd1234.staging",  # another target's
        tmp_path / ".outer.abcd1234.staging",
        tmp_path / ".out.toolong123.staging",
        target / "model",
        tmp_path / "notes.txt",
    ]
    for path in stale + kept:
        if path.suffix == ".txt":
            path.write_text("")
        else:
            path.mkdir()
    assert leftovers(str(target)) == sorted(str(p) for p in stale)
    with target_lock(str(target), MINE):
        pass
    for path in stale:
        assert not path.exists(), path
    for path in kept:
        assert path.exists(), path


def test_published_files_and_folders_follow_the_umask(tmp_path, umask_022):
    def write(folder):
        with open(os.path.join(folder, "data"), "w") as handle:
            handle.write("x")

    target = publish_directory(str(tmp_path / "out"), write)
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o755)
    path = write_text_atomic(str(tmp_path / "file.json"), "{}")
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o644)
    os.umask(0o077)
    assert default_mode(folder=True) == 0o700
    assert default_mode(folder=False) == 0o600


def test_a_replaced_file_keeps_its_mode(tmp_path, umask_022):
    path = tmp_path / "models.config"
    path.write_text("old")
    os.chmod(path, 0o640)
    write_text_atomic(str(path), "new")
    assert path.read_text() == "new"
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["models.config"]


def test_publishing_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "old").write_text("1")

    def fail(folder):
        (open(os.path.join(folder, "half"), "w")).close()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        publish_directory(str(target), fail, replace=True)
    assert os.listdir(tmp_path) == ["out"]
    assert os.listdir(target) == ["old"]
