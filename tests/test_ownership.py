"""Ownership by record: only what the tool recorded is ever removed."""

import json
import os

import pytest

from tests.run_helpers import snapshot
from tfrec_tricks import ownership
from tfrec_tricks.errors import OutputError


def _write(folder, *names, claim=True):
    """Creates each name below ``folder`` (``x/``: a folder), claimed."""
    for name in names:
        path = folder / name
        if claim:
            ownership.claim([str(path) + ("/" if name.endswith("/") else "")])
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(name)


@pytest.fixture
def run(tmp_path):
    """An owned "run directory" with a nested owned "model/"."""
    folder = tmp_path / "run"
    ownership.start_record(str(folder), "run directory")
    _write(folder, "run.json", "checkpoints/", "checkpoints/best.index")
    ownership.start_record(str(folder / "model"), "model")
    _write(folder / "model", "weights.index", "assets/", "assets/v.txt")
    return folder


def test_the_record_lists_relative_paths_folders_with_a_slash(run):
    record = json.loads((run / ownership.RECORD_FILE).read_text())
    assert record == {
        "format": 1,
        "kind": "run directory",
        "entries": [
            "checkpoints/",
            "checkpoints/best.index",
            "model/",
            "run.json",
        ],
    }
    assert ownership.read_record(str(run / "model"))["entries"] == [
        "assets/",
        "assets/v.txt",
        "weights.index",
    ]


@pytest.mark.parametrize(
    "text",
    ["", "[]", '{"format": 2, "kind": "x", "entries": []}', '{"kind": 1}'],
)
def test_an_unreadable_record_proves_nothing(tmp_path, text):
    (tmp_path / ownership.RECORD_FILE).write_text(text)
    assert ownership.read_record(str(tmp_path)) is None


def test_a_record_of_another_kind_is_not_taken_over(run):
    with pytest.raises(OutputError, match="holds a run directory, not a"):
        ownership.start_record(str(run), "search folder")


def test_paths_outside_any_owned_folder_are_not_claimed(tmp_path):
    ownership.claim([str(tmp_path / "notes.txt")])
    assert os.listdir(tmp_path) == []


def test_what_the_tool_wrote_is_not_foreign(run):
    assert ownership.foreign_entries(str(run)) == []


@pytest.mark.parametrize(
    "name, shown",
    [
        ("notes.txt", "notes.txt"),
        ("checkpoints/notes.txt", "checkpoints/notes.txt"),
        ("tensorboard/a/b/c.txt", "tensorboard/a/b/c.txt"),
        ("model/assets/photo.jpg", "model/assets/photo.jpg"),
        ("empty/", "empty/"),
        (".run.json.abcd1234.tmp", ".run.json.abcd1234.tmp"),
        # Named like the record, but no record nor its temporary file.
        (".tfrec-tricks-owned.json.bak", ".tfrec-tricks-owned.json.bak"),
        (".tfrec-tricks-owned.json.1.old", ".tfrec-tricks-owned.json.1.old"),
    ],
)
def test_anything_else_is_foreign_at_any_depth(run, name, shown):
    _write(run, name, claim=False)
    assert ownership.foreign_entries(str(run)) == [shown]


def test_an_owned_folder_not_listed_by_its_parent_is_foreign(run):
    # Someone's copy of a run, placed in this run: not this run's.
    ownership.start_record(str(run.parent / "copy"), "run directory")
    os.rename(run.parent / "copy", run / "checkpoints" / "copy")
    assert ownership.foreign_entries(str(run)) == ["checkpoints/copy/"]


def test_a_symlink_is_an_entry_never_followed(run, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "precious.txt").write_text("x")
    os.symlink(tmp_path / "elsewhere", run / "checkpoints" / "link")
    assert ownership.foreign_entries(str(run)) == ["checkpoints/link"]


def test_marked_staging_folders_are_the_tools(run):
    staging = run / ".model.abcd1234.staging"
    staging.mkdir()
    ownership.mark_staging(str(staging), str(run / "model"))
    (staging / "half").write_text("")
    assert ownership.foreign_entries(str(run)) == []
    assert ownership.leftovers(str(run)) == [str(staging)]


def test_claim_below_records_what_libraries_named(run):
    _write(run, "checkpoints/best.data-00000-of-00001", claim=False)
    _write(run, "tensorboard/train/events.out", claim=False)
    claimed = ownership.claim_below(str(run), ["checkpoints", "tensorboard"])
    assert claimed == [
        "checkpoints/best.data-00000-of-00001",
        "tensorboard/",
        "tensorboard/train/",
        "tensorboard/train/events.out",
    ]
    assert ownership.foreign_entries(str(run)) == []
    # Only below the names given.
    _write(run, "notes.txt", claim=False)
    assert ownership.claim_below(str(run), ["checkpoints"]) == []
    assert ownership.foreign_entries(str(run)) == ["notes.txt"]


def test_claim_below_forgets_what_libraries_deleted(run):
    # Keras keeps its last backups only: the record does not grow with them.
    for epoch in range(3):
        if epoch:
            os.remove(run / "backup" / f"ckpt-{epoch - 1}.index")
        _write(run, f"backup/ckpt-{epoch}.index", claim=False)
        ownership.claim_below(str(run), ["backup"])
    entries = ownership.read_record(str(run))["entries"]
    assert [e for e in entries if e.startswith("backup/")] == [
        "backup/",
        "backup/ckpt-2.index",
    ]
    # A deleted file that comes back is claimed again, only below names.
    _write(run, "backup/ckpt-0.index", claim=False)
    assert ownership.claim_below(str(run), ["backup"]) == [
        "backup/ckpt-0.index"
    ]
    assert "run.json" in ownership.read_record(str(run))["entries"]


def test_remove_owned_removes_only_recorded_entries(run):
    staging = run / ".x.abcd1234.tmp"
    staging.mkdir()
    ownership.mark_staging(str(staging), str(run / "x"))
    ownership.remove_owned(str(run), "run directory")
    # The folder stays, empty: a symlink to it keeps pointing somewhere.
    assert os.listdir(run) == []


def test_remove_owned_refuses_first_and_removes_nothing(run):
    _write(run, "checkpoints/deep/notes.txt", claim=False)
    before = snapshot(run)
    with pytest.raises(OutputError, match="checkpoints/deep/notes.txt"):
        ownership.remove_owned(str(run), "run directory")
    assert snapshot(run) == before


def test_remove_owned_refuses_a_folder_without_a_record(tmp_path):
    (tmp_path / "photo.jpg").write_text("")
    with pytest.raises(OutputError, match=r"no record .*\(photo.jpg\)"):
        ownership.remove_owned(str(tmp_path))
    assert os.listdir(tmp_path) == ["photo.jpg"]


def test_remove_owned_through_a_symlink_empties_its_target(run, tmp_path):
    os.symlink(run, tmp_path / "link")
    ownership.remove_owned(str(tmp_path / "link"))
    assert os.path.islink(tmp_path / "link")
    assert os.listdir(run) == []


def test_a_recorded_folder_that_is_not_empty_stays(run, monkeypatch):
    # A file appearing between the check and the removal is kept.
    entries = list(ownership.entries_below(str(run)))
    late = run / "checkpoints" / "late.txt"

    def with_a_late_file(folder):
        late.write_text("late")
        yield from entries

    monkeypatch.setattr(ownership, "entries_below", with_a_late_file)
    ownership.remove_owned(str(run))
    assert late.read_text() == "late"
    assert sorted(os.listdir(run)) == ["checkpoints"]


def test_leftovers_beside_a_target_are_marked_folders_for_it(tmp_path):
    target = tmp_path / "out"
    mine = tmp_path / ".out.abcd1234.staging"
    mine.mkdir()
    ownership.mark_staging(str(mine), str(target))
    other = tmp_path / ".other.abcd1234.staging"
    other.mkdir()
    ownership.mark_staging(str(other), str(tmp_path / "other"))
    unmarked = tmp_path / ".out.dated2024.old"
    unmarked.mkdir()
    assert ownership.leftovers(str(target)) == [str(mine)]
    assert ownership.remove_leftovers(str(target)) == [str(mine)]
    assert sorted(os.listdir(tmp_path)) == [
        ".other.abcd1234.staging",
        ".out.dated2024.old",
    ]


def test_leftovers_inside_a_nested_owned_folder_are_its_own(run):
    # The model's own writer removes them, under its own lock.
    staging = run / "model" / ".w.abcd1234.tmp"
    staging.mkdir()
    ownership.mark_staging(str(staging), str(run / "model" / "w"))
    assert ownership.leftovers(str(run)) == []
    assert ownership.leftovers(str(run / "model")) == [str(staging)]
