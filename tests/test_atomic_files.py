"""atomic_files: folders and files published in one rename, whole or not
at all, recorded, with the umask's modes; hashes and created folders."""

import hashlib
import os

import pytest

from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import (
    default_mode,
    file_sha256,
    make_folders,
    publish_directory,
    remove_empty_folders,
    write_text_atomic,
)
from tfrec_tricks.errors import OutputError


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_file_sha256_equals_hashlib(tmp_path):
    data = os.urandom((1 << 20) + 123)  # more than one block
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert file_sha256(str(path)) == hashlib.sha256(data).hexdigest()


def test_created_folders_are_listed_and_removed_where_empty(tmp_path):
    (tmp_path / "a").mkdir()
    created = make_folders(str(tmp_path / "a" / "b" / "c"))
    assert created == [
        str(tmp_path / "a" / "b"),
        str(tmp_path / "a" / "b" / "c"),
    ]
    assert make_folders(str(tmp_path / "a" / "b")) == []
    (tmp_path / "a" / "b" / "keep.txt").write_text("x")
    remove_empty_folders(created)  # c goes; b holds a file and stays
    assert sorted(os.listdir(tmp_path / "a" / "b")) == ["keep.txt"]
    assert not (tmp_path / "a" / "b" / "c").exists()
    (tmp_path / "a" / "b" / "keep.txt").unlink()
    remove_empty_folders(created[:1])
    assert os.listdir(tmp_path / "a") == []  # "a" was not created: kept


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
    parent = tmp_path / "run"
    ownership.start_record(str(parent), "run directory")
    ownership.claim([str(parent / "run.json")])
    (parent / "run.json").write_text("{}")

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


def test_a_folder_lies_in_a_marked_folder_until_it_is_published(tmp_path):
    # A kill at any moment before the rename leaves a staging folder of
    # the tool's (removed by the next writer), never an unmarked copy.
    seen = []

    def write(folder):
        seen.append(folder)
        with open(os.path.join(folder, "f.txt"), "w") as out:
            out.write("x")
        staging = os.path.dirname(folder)
        assert os.path.basename(folder) == "out"
        assert ownership.staging_target(staging) == str(tmp_path / "out")

    publish_directory(str(tmp_path / "out"), write, kind="thing")
    assert os.listdir(tmp_path) == ["out"]
    assert not os.path.exists(os.path.dirname(seen[0]))


def test_a_full_disk_that_refuses_the_marker_leaves_nothing(
    tmp_path, monkeypatch
):
    def no_space(folder, target):
        open(os.path.join(folder, ownership.STAGING_MARKER), "w").close()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ownership, "mark_staging", no_space)
    with pytest.raises(OSError):
        publish_directory(str(tmp_path / "out"), lambda folder: None)
    with pytest.raises(OSError):
        write_text_atomic(str(tmp_path / "f.txt"), "x")
    assert os.listdir(tmp_path) == []


def test_withdrawing_in_place_removes_the_record_last(tmp_path, monkeypatch):
    # A full disk refuses the .old staging folder: the folder is removed
    # in place, its record after every file it lists, so that a removal
    # cut short leaves it still recorded.
    from tfrec_tricks import atomic_files

    ownership.start_record(str(tmp_path), "run directory")

    def write(folder):
        os.mkdir(os.path.join(folder, "b"))
        for name in ("a", "b/c", "d"):
            with open(os.path.join(folder, name), "w") as out:
                out.write(name)

    publish_directory(str(tmp_path / "model"), write, kind="m")

    def no_space(target, suffix):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_files, "_staging_folder", no_space)
    removed = []
    remove = os.remove

    def spy(path, *args, **kwargs):
        removed.append(os.path.basename(path))
        return remove(path, *args, **kwargs)

    monkeypatch.setattr(os, "remove", spy)
    monkeypatch.setattr(os, "unlink", spy)
    atomic_files.withdraw_directory(str(tmp_path / "model"))
    assert sorted(removed) == [ownership.RECORD_FILE, "a", "c", "d"]
    assert removed[-1] == ownership.RECORD_FILE
    assert sorted(os.listdir(tmp_path)) == [ownership.RECORD_FILE]
