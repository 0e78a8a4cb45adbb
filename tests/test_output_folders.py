"""Output folders: only the command's own kind, never an input, one
writer at a time, nothing left behind."""

import os
import subprocess
import sys
import textwrap

import pytest

from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import leftovers
from tfrec_tricks.errors import OutputError, TargetBusyError
from tfrec_tricks.output_folders import (
    TargetKind,
    check_target,
    read_lock,
    target_lock,
)

MINE = TargetKind("thing", "--output")
# A kind that may lie in a thing's "parts/" (as runs in a search's
# selection/).
PART = TargetKind("part", "--part", nests_in=(("thing", "parts"),))


def _own(folder, *names):
    """A folder of kind "thing" that wrote ``names`` (``x/``: a folder)."""
    ownership.start_record(str(folder), MINE.name)
    for name in names:
        path = folder / name
        ownership.claim([str(path) + ("/" if name.endswith("/") else "")])
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(name)
    return folder


def test_missing_empty_and_own_targets_are_accepted(tmp_path):
    check_target(str(tmp_path / "new"), MINE)
    (tmp_path / "empty").mkdir()
    check_target(str(tmp_path / "empty"), MINE)
    _own(tmp_path / "own", "mine", "logs/", "logs/a/b.txt")
    check_target(str(tmp_path / "own"), MINE)


def test_a_folder_of_another_kind_is_refused_naming_its_contents(tmp_path):
    folder = tmp_path / "photos"
    (folder / "2024").mkdir(parents=True)
    (folder / "cat.jpg").write_text("")
    with pytest.raises(OutputError, match=r"not a thing \(2024/, cat.jpg\)"):
        check_target(str(folder), MINE)


def test_a_folder_without_a_record_is_refused_saying_so(tmp_path):
    # An older version's folder, or one that only looks like a thing:
    # names prove nothing.
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "mine").write_text("")
    with pytest.raises(OutputError, match=r"no record .* \(it is never"):
        check_target(str(folder), MINE)


def test_a_folder_of_another_recorded_kind_is_refused(tmp_path):
    folder = tmp_path / "part"
    ownership.start_record(str(folder), PART.name)
    (folder / "x").write_text("")
    ownership.claim([str(folder / "x")])
    with pytest.raises(OutputError, match="not a thing: it is a part"):
        check_target(str(folder), MINE)


@pytest.mark.parametrize(
    "foreign",
    ["notes.txt", "logs/notes.txt", "logs/a/deep/photo.jpg", "logs/mine/"],
)
def test_a_foreign_entry_at_any_depth_is_refused_and_named(tmp_path, foreign):
    folder = _own(tmp_path / "own", "mine", "logs/", "logs/a/b.txt")
    path = folder / foreign
    if foreign.endswith("/"):
        path.mkdir(parents=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("someone's")
    with pytest.raises(OutputError, match="did not write") as error:
        check_target(str(folder), MINE)
    assert foreign in str(error.value)


def test_a_target_inside_another_commands_output_is_refused(tmp_path):
    folder = _own(tmp_path / "own", "mine", "parts/")
    # A thing in a thing, or a part outside the thing's parts/.
    for target, kind in [
        (folder / "inner", MINE),
        (folder / "parts" / "x", MINE),
        (folder / "inner" / "deeper", MINE),
        (folder / "elsewhere", PART),
    ]:
        with pytest.raises(OutputError, match="lies inside a thing"):
            check_target(str(target), kind)
    # The designed nesting.
    check_target(str(folder / "parts" / "x"), PART)


def test_a_dangling_symlink_is_refused(tmp_path):
    os.symlink(tmp_path / "gone", tmp_path / "link")
    with pytest.raises(OutputError, match="does not exist"):
        check_target(str(tmp_path / "link"), MINE)


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
    from tfrec_tricks.output_folders import TargetKind, target_lock
    kind = TargetKind("thing", "--output")
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


def test_a_symlinked_name_reaches_the_same_lock(tmp_path):
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "out", tmp_path / "link")
    with target_lock(str(tmp_path / "out"), MINE):
        with pytest.raises(TargetBusyError, match="being written"):
            with target_lock(str(tmp_path / "link"), MINE):
                pass
        # check_target says busy too, before looking at the contents.
        with pytest.raises(TargetBusyError):
            check_target(str(tmp_path / "link"), MINE)


def test_readers_share_the_lock_and_keep_writers_out(tmp_path):
    target = str(tmp_path / "out")
    with read_lock(target, MINE), read_lock(target, MINE):
        with pytest.raises(TargetBusyError, match="being read") as error:
            with target_lock(target, MINE):
                pass
        assert f"pid {os.getpid()}" in str(error.value)
    # The last reader removed the lock file; a writer goes on.
    assert os.listdir(tmp_path) == []
    with target_lock(target, MINE):
        with pytest.raises(TargetBusyError, match="being written"):
            with read_lock(target, MINE):
                pass


def test_a_reader_of_a_read_only_folder_goes_without_the_lock(tmp_path):
    with read_lock(str(tmp_path / "missing" / "out"), MINE):
        pass


def _marked(path, target):
    path.mkdir(parents=True)
    ownership.mark_staging(str(path), str(target))
    (path / "half.tfrecord").write_bytes(b"\0")
    return path


def _holding(path, name="photo.jpg"):
    path.mkdir()
    (path / name).write_text("someone's")
    return path


def test_only_the_tools_leftovers_are_removed_under_the_lock(tmp_path):
    target = _own(tmp_path / "out", "model/")
    stale = [
        _marked(tmp_path / ".out.abcd1234.staging", target),
        _marked(tmp_path / ".out.abcd_234.old", target),
        _marked(target / ".run.json.q1w2e3r4.tmp", target / "run.json"),
        _marked(target / "model" / ".w.q1w2e3r4.tmp", target / "model/w"),
        # Killed before its marker was written: empty, named for the
        # target by mkdtemp's pattern.
        tmp_path / ".out.k1ll3d00.tmp",
        target / ".model.k1ll3d00.staging",
        # The record's temporary file of a killed writer.
        target / (ownership.RECORD_FILE + ".4242.tmp"),
    ]
    stale[4].mkdir()
    stale[5].mkdir()
    stale[6].write_text("")
    kept = [
        # Shaped like leftovers, but unmarked and holding something:
        # someone's, never removed.
        _holding(tmp_path / ".out.abcd1234.old"),
        _holding(tmp_path / ".out.20240101.old", "saved_model.pb"),
        # Empty, but not named as mkdtemp names.
        tmp_path / ".out-zz99yy88",
        tmp_path / ".out.2024-01-01.old",
        # Another target's leftover.
        _marked(tmp_path / ".outer.abcd1234.staging", tmp_path / "outer"),
        target / "model",
    ]
    for path in kept:
        path.mkdir(exist_ok=True)
    assert leftovers(str(target)) == sorted(str(p) for p in stale)
    with target_lock(str(target), MINE):
        pass
    for path in stale:
        assert not path.exists(), path
    for path in kept:
        assert path.exists(), path


def test_a_lock_file_that_cannot_be_removed_hides_no_error(
    tmp_path, monkeypatch
):
    # A folder made read-only mid-command: the write that failed is
    # reported, not the lock file's removal, and the lock is released.
    target = str(tmp_path / "out")
    remove = os.remove

    def read_only(path, *args, **kwargs):
        if path.endswith(".lock"):
            raise PermissionError(13, "Permission denied", path)
        return remove(path, *args, **kwargs)

    monkeypatch.setattr(os, "remove", read_only)
    with pytest.raises(OSError, match="No space left"):
        with target_lock(target, MINE):
            raise OSError(28, "No space left on device")
    with target_lock(target, MINE):
        pass
