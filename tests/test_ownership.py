"""Ownership by record: only what the tool recorded is ever removed."""

import json
import os
import shutil

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
    """An owned "run directory" with a nested owned "model/", a recorded
    "logs/" and "checkpoints/" owned as a whole."""
    folder = tmp_path / "run"
    ownership.start_record(str(folder), "run directory", ["checkpoints"])
    _write(folder, "run.json", "logs/", "logs/a.txt")
    _write(folder, "checkpoints/best.index", claim=False)
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
            "logs/",
            "logs/a.txt",
            "model/",
            "run.json",
        ],
        "whole": ["checkpoints/"],
    }
    assert ownership.read_record(str(run / "model"))["entries"] == [
        "assets/",
        "assets/v.txt",
        "weights.index",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"format": 2, "kind": "x", "entries": []}',
        '{"kind": 1}',
        # A folder owned as a whole is named as a folder, in a list.
        '{"format": 1, "kind": "x", "entries": [], "whole": "a/"}',
        '{"format": 1, "kind": "x", "entries": [], "whole": ["a"]}',
    ],
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
        ("logs/notes.txt", "logs/notes.txt"),
        ("logs/a/b/c.txt", "logs/a/b/c.txt"),
        # Beside a folder owned as a whole, not in it.
        ("checkpoints.txt", "checkpoints.txt"),
        ("model/assets/photo.jpg", "model/assets/photo.jpg"),
        # Only the top's library folders are the run's.
        ("model/checkpoints/x", "model/checkpoints/x"),
        ("empty/", "empty/"),
        (".run.json.abcd1234.tmp", ".run.json.abcd1234.tmp"),
        # Named as a staging folder, unmarked, holding someone's file.
        (
            ".model.abcd1234.staging/photo.jpg",
            ".model.abcd1234.staging/photo.jpg",
        ),
        (".model.abcd1234.old/x/", ".model.abcd1234.old/x/"),
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
    os.rename(run.parent / "copy", run / "logs" / "copy")
    assert ownership.foreign_entries(str(run)) == ["logs/copy/"]


def test_a_symlink_is_an_entry_never_followed(run, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "precious.txt").write_text("x")
    os.symlink(tmp_path / "elsewhere", run / "logs" / "link")
    assert ownership.foreign_entries(str(run)) == ["logs/link"]
    # In a folder owned as a whole the link is the run's: removed, what it
    # points to untouched.
    os.rename(run / "logs" / "link", run / "checkpoints" / "link")
    ownership.remove_owned(str(run))
    assert os.listdir(run) == []
    assert (tmp_path / "elsewhere" / "precious.txt").read_text() == "x"


def test_a_folder_owned_as_a_whole_replaced_by_a_symlink_is_foreign(
    run, tmp_path
):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_text("x")
    shutil.rmtree(run / "checkpoints")
    os.symlink(tmp_path / "photos", run / "checkpoints")
    assert ownership.foreign_entries(str(run)) == ["checkpoints"]


@pytest.mark.parametrize(
    "name",
    [
        "checkpoints/notes.txt",
        "checkpoints/ckpt-1_temp/part-00000-of-00001",
        "checkpoints/a/b/c/",
        # A folder with a record, moved in: the run's too.
        "checkpoints/copy/.tfrec-tricks-owned.json",
    ],
)
def test_everything_in_a_folder_owned_as_a_whole_is_the_tools(run, name):
    # What a library writes under names it chooses, whenever a crash
    # stops the command, and anything else put there.
    _write(run, name, claim=False)
    assert ownership.foreign_entries(str(run)) == []
    ownership.remove_owned(str(run))
    assert os.listdir(run) == []


def test_claims_below_a_folder_owned_as_a_whole_are_not_recorded(run):
    before = ownership.read_record(str(run))
    ownership.claim([str(run / "checkpoints" / "trial_1" / "timing.json")])
    assert ownership.read_record(str(run)) == before


def test_a_record_without_whole_owns_its_kinds_library_folders(tmp_path):
    # A run stranded by an older version (its TensorBoard events never
    # claimed) is the run's; a kind without library folders owns none.
    for kind in ("run directory", "ablation report"):
        folder = tmp_path / kind
        folder.mkdir()
        ownership.write_record(str(folder), kind, ["run.json"])
        _write(folder, "tensorboard/events.out.tfevents.1", claim=False)
    assert ownership.foreign_entries(str(tmp_path / "run directory")) == []
    assert ownership.foreign_entries(str(tmp_path / "ablation report")) == [
        "tensorboard/events.out.tfevents.1"
    ]


def test_start_record_adds_the_folders_owned_as_a_whole(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    ownership.write_record(str(folder), "run directory", ["run.json"])
    ownership.start_record(str(folder), "run directory", ["backup", "x/"])
    record = ownership.read_record(str(folder))
    assert record["whole"] == [
        "backup/",
        "checkpoints/",
        "tensorboard/",
        "x/",
    ]
    assert {"run.json", "backup/", "x/"} <= set(record["entries"])


def test_marked_staging_folders_are_the_tools(run):
    staging = run / ".model.abcd1234.staging"
    staging.mkdir()
    ownership.mark_staging(str(staging), str(run / "model"))
    (staging / "half").write_text("")
    assert ownership.foreign_entries(str(run)) == []
    assert ownership.leftovers(str(run)) == [str(staging)]


def test_remove_owned_removes_only_recorded_entries(run):
    staging = run / ".x.abcd1234.tmp"
    staging.mkdir()
    ownership.mark_staging(str(staging), str(run / "x"))
    ownership.remove_owned(str(run), "run directory")
    # The folder stays, empty: a symlink to it keeps pointing somewhere.
    assert os.listdir(run) == []


def test_remove_owned_refuses_first_and_removes_nothing(run):
    _write(run, "logs/deep/notes.txt", claim=False)
    before = snapshot(run)
    with pytest.raises(OutputError, match="logs/deep/notes.txt"):
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


def test_a_record_and_a_marker_come_after_what_they_own(run):
    # A removal in this order, cut short, leaves what remains owned: the
    # model's files before its record, a staging folder's before its
    # marker, the run's record last of all.
    staging = run / ".x.abcd1234.tmp"
    staging.mkdir()
    ownership.mark_staging(str(staging), str(run / "x"))
    (staging / "z").write_text("")
    shown = [entry.shown for entry in ownership.entries_below(str(run))]
    assert shown.index("model/weights.index") < shown.index(
        "model/.tfrec-tricks-owned.json"
    )
    assert shown.index(".x.abcd1234.tmp/z") < shown.index(
        ".x.abcd1234.tmp/.tfrec-tricks-staging"
    )
    assert shown[-1] == ".tfrec-tricks-owned.json"


@pytest.mark.parametrize(
    "marker",
    [None, "", '{"tar'],
    ids=["before-its-marker", "empty-marker", "marker-cut-short"],
)
def test_a_staging_folder_killed_before_its_marker_is_the_tools(
    run, tmp_path, marker
):
    # mkdtemp made it, a kill (or a full disk) came before the marker was
    # whole: it holds nothing of anyone's.
    inside = run / ".model.k1ll3d00.staging"
    beside = tmp_path / ".run.k1ll3d00.tmp"
    for folder in (inside, beside):
        folder.mkdir()
        if marker is not None:
            (folder / ownership.STAGING_MARKER).write_text(marker)
    assert ownership.foreign_entries(str(run)) == []
    assert ownership.leftovers(str(run)) == [str(beside), str(inside)]
    ownership.remove_leftovers(str(run))
    assert not inside.exists() and not beside.exists()


def test_a_staging_name_with_someones_files_stays_foreign(run, tmp_path):
    for folder in (run / ".model.abcd1234.staging", tmp_path / ".run.a.old"):
        folder.mkdir()
        (folder / "photo.jpg").write_text("x")
    # Empty, but named for another target or not as mkdtemp names.
    (tmp_path / ".other.k1ll3d00.staging").mkdir()
    (tmp_path / ".run.dated2024.old").mkdir()
    assert ownership.foreign_entries(str(run)) == [
        ".model.abcd1234.staging/photo.jpg"
    ]
    assert ownership.leftovers(str(run)) == []


def test_a_folder_holding_only_the_tools_temporaries_is_empty(tmp_path):
    # A writer killed before its first record was whole.
    temporary = tmp_path / (ownership.RECORD_FILE + ".4242.tmp")
    temporary.write_text('{"format": 1, "ki')
    (tmp_path / ".1.k1ll3d00.staging").mkdir()
    assert ownership.holds_nothing(str(tmp_path))
    ownership.remove_owned(str(tmp_path))
    assert os.listdir(tmp_path) == []
    (tmp_path / "notes.txt").write_text("x")
    temporary.write_text("")
    assert not ownership.holds_nothing(str(tmp_path))
    with pytest.raises(OutputError, match="no record"):
        ownership.remove_owned(str(tmp_path))


def test_the_records_temporary_file_is_the_tools_at_any_depth(run):
    # A nested folder listed by its parent whose own record a kill cut
    # short (a retrained run in a search's selection/).
    nested = run / "logs" / "retrained"
    ownership.claim([str(nested) + "/"])
    nested.mkdir()
    (nested / (ownership.RECORD_FILE + ".77.tmp")).write_text("")
    assert ownership.foreign_entries(str(run)) == []
    assert ownership.leftovers(str(run)) == [
        str(nested / (ownership.RECORD_FILE + ".77.tmp"))
    ]


def test_remove_staging_removes_the_marker_last(tmp_path, monkeypatch):
    staging = tmp_path / ".x.abcd1234.staging"
    staging.mkdir()
    ownership.mark_staging(str(staging), str(tmp_path / "x"))
    (staging / "stuck").write_text("")
    (staging / "inner").mkdir()
    (staging / "inner" / "a").write_text("")
    remove = os.remove

    def refuse_stuck(path, *args, **kwargs):
        if os.path.basename(path) == "stuck":
            raise PermissionError(13, "Permission denied", path)
        return remove(path, *args, **kwargs)

    monkeypatch.setattr(os, "remove", refuse_stuck)
    ownership.remove_staging(str(staging))
    # What stays is still marked: the tool's, removed next time.
    assert sorted(os.listdir(staging)) == [ownership.STAGING_MARKER, "stuck"]
    monkeypatch.setattr(os, "remove", remove)
    ownership.remove_staging(str(staging))
    assert not staging.exists()
