"""Ownership by record through the real CLI: a user's file in or beside
any folder the tool writes survives every command, ``--overwrite`` or
not, but in the folders libraries write (a run's ``checkpoints/``), which
are the tool's as a whole; a target has one real path (a symlinked name
reaches the same lock); a training that reads a prepared dataset keeps
``prepare --overwrite`` of it out.

The commands run in-process (``cli.main``), but for the live holders of a
lock, which are other processes. docs/run-directories.md ("Outputs", "One
writer at a time") lists the same cases.
"""

import os
import random
import shutil
import time

import pytest

from tests.run_helpers import (
    TINY_FLAGS,
    Interrupt,
    snapshot,
    start_cli,
    tiny_config,
)
from tests.run_helpers import run_in_process as _main
from tfrec_tricks import cli, ownership
from tfrec_tricks.atomic_files import file_sha256

pytestmark = pytest.mark.slow

TINY_DATA = TINY_FLAGS[:6]
TRAIN = ["train", *TINY_FLAGS, "--epochs", "1"]
TUNE = ["tune", *TINY_FLAGS, "--tuner", "random", "--max-trials", "1"]
TUNE += ["--epochs", "1", "--retrain-top", "1"]
PREPARE = ["prepare", *TINY_DATA, "--output", "prepared"]
EXPORT = ["export", "runs/run", "--name", "m"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """Every folder the tool writes, written once: a finished run
    (``runs/run``), an interrupted one with its ``backup/``
    (``runs/interrupted``), a search with a retrained run in its
    ``selection/`` (``tuning/synthetic``), a prepared dataset
    (``prepared``) and an exported model (``saved_models/m/1``)."""
    from tfrec_tricks.training.run_training import train

    root = tmp_path_factory.mktemp("owned")
    before = os.getcwd()
    os.chdir(root)
    try:
        for args in (
            [*TRAIN, "--name", "run"],
            TUNE,
            PREPARE,
            EXPORT,
        ):
            assert cli.main(args) == 0, args
        with pytest.raises(KeyboardInterrupt):
            train(
                tiny_config(root / "runs", name="interrupted", epochs=3),
                verbose=0,
                callbacks=[Interrupt(after_epoch=0)],
            )
    finally:
        os.chdir(before)
    assert os.listdir(root / "runs" / "interrupted" / "backup")
    for folder in (
        "runs/run",
        "runs/interrupted",
        "tuning/synthetic",
        "prepared",
        "saved_models/m",
    ):
        assert ownership.foreign_entries(str(root / folder)) == [], folder
    return root


@pytest.fixture
def copy(workspace, tmp_path, monkeypatch):
    """A copy of the workspace, as the current directory."""
    shutil.copytree(workspace, tmp_path, dirs_exist_ok=True, symlinks=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _interrupted_args():
    return [
        "train",
        *TINY_FLAGS,
        "--epochs",
        "3",
        "--patience",
        "5",
        "--output-dir",
        "runs",
        "--name",
        "interrupted",
    ]


# Each tool-written folder and the commands that write it.
COMMANDS = {
    "runs/run": [
        [*TRAIN, "--name", "run"],
        [*TRAIN, "--name", "run", "--overwrite"],
    ],
    "runs/interrupted": [
        _interrupted_args(),
        [*_interrupted_args(), "--overwrite"],
    ],
    "tuning/synthetic": [TUNE, [*TUNE, "--overwrite"]],
    "prepared": [PREPARE, [*PREPARE, "--overwrite"]],
    "saved_models/m": [EXPORT],
}


def _owned_as_a_whole(path):
    """Whether ``path`` is a folder its owner owns as a whole (a run's
    ``checkpoints/``): whatever is put there is the run's."""
    owner = ownership.owner_of(path)
    if owner is None:
        return False
    relative = os.path.relpath(path, owner).replace(os.sep, "/") + "/"
    return relative in ownership.whole_folders(ownership.read_record(owner))


def _subfolders(folder):
    """Every folder below ``folder`` (itself included), relative, but for
    the folders owned as a whole and what they hold."""
    found = [""]
    for root, dirs, _ in os.walk(folder):
        dirs[:] = [
            d
            for d in dirs
            if not d.startswith(".")
            and not _owned_as_a_whole(os.path.join(root, d))
        ]
        found += [os.path.relpath(os.path.join(root, d), folder) for d in dirs]
    return sorted(found)


def _foreign_name(rng):
    return rng.choice(
        [
            f"notes-{rng.randrange(1000)}.txt",
            f"photo{rng.randrange(10)}.jpg",
            # Shaped like the tool's leftovers: a user's dated backup.
            f".run.{rng.randrange(10**7, 10**8)}.old",
            f".model.abcd{rng.randrange(1000, 9999)}.staging",
            "best.index",
        ]
    )


@pytest.mark.parametrize("seed", range(16))
def test_a_users_entry_anywhere_survives_every_command(copy, capsys, seed):
    rng = random.Random(seed)
    target = rng.choice(sorted(COMMANDS))
    where = rng.choice(_subfolders(target))
    parts = [where] if where else []
    parts += [f"dir{rng.randrange(100)}" for _ in range(rng.randrange(3))]
    name = _foreign_name(rng)
    relative = "/".join([*parts, name])
    path = copy / target / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    if rng.random() < 0.2 and ownership.STAGING_NAME.fullmatch(name):
        # Named as a staging folder, and holding someone's file.
        path.mkdir()
        (path / "cat.jpg").write_text("someone's")
        shown = relative + "/cat.jpg"
    elif rng.random() < 0.2:
        path.mkdir()
        # What the refusal names: the empty folder, or the first folder
        # nobody recorded.
        shown = relative + "/"
    else:
        path.write_text(f"someone's {name}\n")
        os.chmod(path, rng.choice([0o600, 0o644, 0o640]))
        shown = relative
    before = snapshot(copy)
    for args in COMMANDS[target]:
        code, output = _main(capsys, *args)
        assert code == 1, (args, output[-2000:])
        assert "did not write" in output, output[-2000:]
        assert shown in output, (shown, output[-2000:])
        assert snapshot(copy) == before, args


# Each reported bug class, as the issue reported it.


def test_prepare_overwrite_keeps_a_users_notes_beside_the_data(copy, capsys):
    (copy / "prepared" / "notes.txt").write_text("my notes")
    (copy / "prepared" / "photos").mkdir()
    (copy / "prepared" / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    before = snapshot(copy)
    code, output = _main(capsys, *PREPARE, "--overwrite")
    assert code == 1
    assert "notes.txt, photos/cat.jpg" in output
    assert snapshot(copy) == before


def test_a_folder_that_only_looks_like_a_dataset_is_never_replaced(
    copy, capsys
):
    # A user's folder holding a metadata.json (no record): not ours.
    (copy / "mine").mkdir()
    shutil.copy(copy / "prepared" / "metadata.json", copy / "mine")
    (copy / "mine" / "photo.jpg").write_text("")
    before = snapshot(copy)
    code, output = _main(
        capsys, "prepare", *TINY_DATA, "--output", "mine", "--overwrite"
    )
    assert code == 1
    assert "no record" in output and "photo.jpg" in output
    assert snapshot(copy) == before


def test_a_dated_backup_beside_a_target_survives_a_rerun(copy, capsys):
    backups = [
        copy / "runs" / ".run.20240101.old",
        copy / ".prepared.backup01.old",
        copy / "saved_models" / "m" / ".1.abcd1234.old",
    ]
    shutil.copytree(copy / "runs" / "run", backups[0])
    shutil.copytree(copy / "prepared", backups[1])
    before = {path: snapshot(path) for path in backups[:2]}
    # Inside a target, unmarked: someone's, named, never removed.
    backups[2].mkdir()
    (backups[2] / "saved_model.pb").write_text("a copy")
    assert _main(capsys, *TRAIN, "--name", "run")[0] == 0
    assert _main(capsys, *PREPARE, "--overwrite")[0] == 0
    code, output = _main(capsys, *EXPORT)
    assert code == 1 and ".1.abcd1234.old/saved_model.pb" in output
    assert {path: snapshot(path) for path in backups[:2]} == before
    assert (backups[2] / "saved_model.pb").read_text() == "a copy"


@pytest.mark.parametrize(
    "target, inside, args",
    [
        ("runs/run", "notes.txt", [*TRAIN, "--name", "run"]),
        ("runs/run", "model/notes.txt", [*TRAIN, "--name", "run"]),
        ("tuning/synthetic", "selection/notes.txt", TUNE),
        ("tuning/synthetic", "selection/defaults-seed0/model/x", TUNE),
    ],
)
def test_overwrite_keeps_a_users_file_inside_a_subfolder(
    copy, capsys, target, inside, args
):
    path = copy / target / inside
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("mine")
    before = snapshot(copy)
    code, output = _main(capsys, *args, "--overwrite")
    assert code == 1
    assert inside in output
    assert snapshot(copy) == before


@pytest.mark.parametrize(
    "target, inside, args",
    [
        (
            "runs/run",
            "checkpoints/notes/ckpt-1_temp/part-0",
            [*TRAIN, "--name", "run"],
        ),
        ("tuning/synthetic", "search/notes.txt", TUNE),
    ],
)
def test_a_folder_a_library_writes_is_owned_as_a_whole(
    copy, capsys, target, inside, args
):
    # Libraries name their files (and crashes leave them unrecorded), so
    # a run's checkpoints/ or a search's search/ is the tool's, as a build
    # folder is: --overwrite replaces it with all it holds. A foreign
    # file beside it is still refused, and one beside the target kept.
    path = copy / target / inside
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("in a library's folder")
    beside = copy / target / "notes.txt"
    beside.write_text("mine")
    code, output = _main(capsys, *args, "--overwrite")
    assert code == 1 and "(notes.txt)" in output
    os.rename(beside, copy / "notes.txt")
    before = file_sha256(copy / "notes.txt")
    code, output = _main(capsys, *args, "--overwrite")
    assert code == 0, output[-2000:]
    assert not path.exists()
    assert file_sha256(copy / "notes.txt") == before
    assert ownership.foreign_entries(str(copy / target)) == []


@pytest.mark.parametrize(
    "args, owner",
    [
        ([*TRAIN, "--output-dir", "runs/run", "--name", "x"], "run directory"),
        ([*TRAIN, "--output-dir", "prepared", "--name", "x"], "prepared"),
        (
            ["prepare", *TINY_DATA, "--output", "runs/run/checkpoints/p"],
            "run directory",
        ),
        ([*EXPORT[:3], "x", "--base-path", "tuning/synthetic"], "search"),
        (
            [*TRAIN, "--output-dir", "tuning/synthetic", "--name", "x"],
            "search folder",
        ),
    ],
    ids=["run-in-run", "run-in-data", "data-in-run", "export", "run-search"],
)
def test_a_target_inside_another_commands_output_is_refused(
    copy, capsys, args, owner
):
    before = snapshot(copy)
    code, output = _main(capsys, *args)
    assert code == 1
    assert "lies inside a" in output and owner in output
    assert snapshot(copy) == before


def test_overwrite_through_a_symlink_replaces_the_folder_it_points_to(
    copy, capsys
):
    os.symlink("prepared", copy / "link")
    os.symlink("run", copy / "runs" / "link")
    args = ["prepare", *TINY_DATA, "--output", "link", "--overwrite"]
    assert _main(capsys, *args)[0] == 0
    assert _main(capsys, *TRAIN, "--name", "link", "--overwrite")[0] == 0
    for link in (copy / "link", copy / "runs" / "link"):
        assert os.path.islink(link)
        assert ownership.foreign_entries(str(link)) == []
    assert os.path.isfile(copy / "runs" / "run" / "model" / "weights.index")


def _wait_for(path, process, seconds=300):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if process.poll() is not None:
            pytest.fail(process.stdout.read()[-2000:])
        if time.monotonic() > deadline:
            pytest.fail(f"{path} did not appear")
        time.sleep(0.2)


def test_a_second_training_through_a_symlinked_name_is_refused(copy, capsys):
    live = start_cli(
        *TRAIN[:-1], "100", "--patience", "100", "--name", "live", cwd=copy
    )
    try:
        _wait_for(copy / "runs" / "live" / "run.json", live)
        os.symlink("live", copy / "runs" / "alias")
        code, output = _main(
            capsys, *TRAIN[:-1], "100", "--patience", "100", "--name", "alias"
        )
    finally:
        live.kill()
        live.wait()
    assert code == 1
    assert "is being written by another process" in output
    assert f"pid {live.pid}" in output


def test_prepare_overwrite_waits_for_a_training_that_reads_the_data(
    copy, capsys
):
    reader = start_cli(
        "train", "--prepared", "prepared", "--epochs", "100", "--patience",
        "100", "--name", "reader", cwd=copy,
    )  # fmt: skip
    try:
        _wait_for(copy / "runs" / "reader" / "run.json", reader)
        before = snapshot(copy / "prepared")
        code, output = _main(capsys, *PREPARE, "--overwrite")
        assert snapshot(copy / "prepared") == before
    finally:
        reader.kill()
        reader.wait()
    assert code == 1
    assert "prepared is being read by another process" in output
    assert f"pid {reader.pid}" in output
    assert "Nothing was written" in output
