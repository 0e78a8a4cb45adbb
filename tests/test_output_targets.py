"""Output folders: only the command's own kind, never an input, one
writer at a time, nothing left behind, modes from the umask."""

import os
import subprocess
import sys
import textwrap

import pytest

from tfrec_tricks import ownership
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


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


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
    from tfrec_tricks.output_targets import TargetKind, target_lock
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


def test_only_marked_leftovers_are_removed_under_the_lock(tmp_path):
    target = _own(tmp_path / "out", "model/")
    stale = [
        _marked(tmp_path / ".out.abcd1234.staging", target),
        _marked(tmp_path / ".out.abcd_234.old", target),
        _marked(target / ".run.json.q1w2e3r4.tmp", target / "run.json"),
        _marked(target / "model" / ".w.q1w2e3r4.tmp", target / "model/w"),
    ]
    kept = [
        # Shaped like leftovers, but unmarked: someone's, never removed.
        tmp_path / ".out.abcd1234.old",
        tmp_path / ".out-zz99yy88",
        tmp_path / ".out.20240101.old",
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


def _write_old(folder):
    with open(os.path.join(folder, "old"), "w") as handle:
        handle.write("1")


def test_publishing_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "out"
    publish_directory(str(target), _write_old)

    def fail(folder):
        (open(os.path.join(folder, "half"), "w")).close()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        publish_directory(str(target), fail, replace=True)
    assert os.listdir(tmp_path) == ["out"]
    assert sorted(os.listdir(target)) == [ownership.RECORD_FILE, "old"]


def test_a_published_folder_records_its_tree_and_joins_its_parents(tmp_path):
    parent = _own(tmp_path / "run", "run.json")

    def write(folder):
        os.makedirs(os.path.join(folder, "assets"))
        for name in ("weights.index", "assets/vocab.txt"):
            with open(os.path.join(folder, name), "w") as handle:
                handle.write(name)

    publish_directory(str(parent / "model"), write, kind="model")
    assert ownership.read_record(str(parent / "model")) == {
        "format": 1,
        "kind": "model",
        "entries": ["assets/", "assets/vocab.txt", "weights.index"],
    }
    assert "model/" in ownership.read_record(str(parent))["entries"]
    assert ownership.foreign_entries(str(parent)) == []
    # A file written atomically joins the nearest record.
    write_text_atomic(str(parent / "model" / "assets" / "more.txt"), "x")
    assert ownership.foreign_entries(str(parent)) == []
    assert sorted(os.listdir(parent / "model" / "assets")) == [
        "more.txt",
        "vocab.txt",
    ]


def test_a_folder_holding_someones_file_is_never_replaced(tmp_path):
    target = tmp_path / "out"
    publish_directory(str(target), _write_old)
    (target / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"did not write \(notes.txt\)"):
        publish_directory(str(target), _write_old, replace=True)
    assert (target / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_publishing_through_a_symlink_replaces_the_folder_it_points_to(
    tmp_path,
):
    real = tmp_path / "real"
    publish_directory(str(real), _write_old)
    os.symlink(real, tmp_path / "link")

    def write(folder):
        with open(os.path.join(folder, "new"), "w") as handle:
            handle.write("2")

    publish_directory(str(tmp_path / "link"), write, replace=True)
    assert os.path.islink(tmp_path / "link")
    assert sorted(os.listdir(real)) == [ownership.RECORD_FILE, "new"]
    assert sorted(os.listdir(tmp_path)) == ["link", "real"]
