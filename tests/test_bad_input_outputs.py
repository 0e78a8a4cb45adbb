"""Outputs through the real CLI: only the command's own kind is replaced,
never an input, one writer at a time, no leftovers, modes from the umask,
and Ctrl-C at any moment exits 130 without a traceback.

Each refusal runs ``tfrec-tricks`` in this process (``run_cli_here``: the
process boundary is not what is tested) and asserts the exit code, the
message, no traceback, and every file and folder of the workspace
unchanged, byte for byte and mode for mode (``snapshot``). The writers,
locks and signals are tested on ``tfrec-tricks`` processes.
docs/run-directories.md ("Bad input") lists the same cases.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from tests.run_helpers import (
    TINY_FLAGS,
    Case,
    assert_refused,
    run_cli,
    run_cli_here,
    snapshot,
    start_cli,
)

pytestmark = pytest.mark.slow

TINY_DATA = TINY_FLAGS[:6]  # the synthetic sizes and --max-len
UDATA = "".join(
    f"{user}\t{item}\t3\t{100 + step}\n"
    for user in range(1, 13)
    for step, item in enumerate(range(1, 9))
)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """``runs/run``, a finished tiny run, and ``prepared``, a dataset."""
    root = tmp_path_factory.mktemp("outputs")
    result = run_cli(
        "train", *TINY_FLAGS, "--epochs", "1", "--name", "run", cwd=root
    )
    assert result.returncode == 0, result.stderr[-2000:]
    result = run_cli("prepare", *TINY_DATA, "--output", "prepared", cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    return root


def _files(*names):
    """Creates each name: ``x/`` a folder, else a small file."""

    def setup(workspace):
        for name in names:
            path = workspace / name
            if name.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"someone's {name}\n")

    return setup


def _udata(*names):
    def setup(workspace):
        for name in names:
            path = workspace / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(UDATA)

    return setup


OVERWRITE = "--overwrite"
FILE = ["--data", "file", "--format", "udata", "--data-path"]
EXPORT = ["export", "runs/run", "--name", "m"]

CASES = [
    # prepare --overwrite replaces only a prepared dataset.
    Case(
        "prepare-overwrite-someones-folder",
        ["prepare", *TINY_DATA, "--output", "photos", OVERWRITE],
        1,
        ["'photos' holds files that are not a prepared dataset", "cat.jpg"],
        _files("photos/cat.jpg", "photos/2024/"),
    ),
    Case(
        "prepare-overwrite-a-file",
        ["prepare", *TINY_DATA, "--output", "notes.txt", OVERWRITE],
        1,
        ["'notes.txt' is a file, not a prepared dataset"],
        _files("notes.txt"),
    ),
    Case(
        "prepare-output-is-the-data-file",
        ["prepare", *FILE, "u.data", "--output", "u.data", OVERWRITE],
        1,
        ["'u.data' is an input of this command"],
        _udata("u.data"),
    ),
    Case(
        "prepare-output-is-the-glob-folder",
        ["prepare", *FILE, "logs/*.data", "--output", "logs", OVERWRITE],
        1,
        ["'logs' contains an input of this command"],
        _udata("logs/a.data", "logs/b.data"),
    ),
    Case(
        "prepare-output-dot",
        ["prepare", *TINY_DATA, "--output", ".", OVERWRITE],
        1,
        ["'.' is the current directory or contains it"],
    ),
    Case(
        "prepare-output-parent",
        ["prepare", *TINY_DATA, "--output", "..", OVERWRITE],
        1,
        ["is the current directory or contains it"],
    ),
    # train: its run directory, never a file or an input.
    Case(
        "train-run-directory-is-a-file",
        ["train", *TINY_FLAGS, "--name", "notes.txt", "--output-dir", "."],
        1,
        ["'./notes.txt' is a file, not a run directory"],
        _files("notes.txt"),
    ),
    Case(
        "train-run-directory-is-the-data-file",
        ["train", *FILE, "data/u.data", "--output-dir", "data"]
        + ["--name", "u.data", OVERWRITE],
        1,
        ["is an input of this command"],
        _udata("data/u.data"),
    ),
    Case(
        "train-run-directory-inside-the-prepared-data",
        ["train", "--prepared", "prepared", "--output-dir", "prepared"]
        + ["--name", "r"],
        1,
        ["lies inside an input of this command ('prepared')"],
    ),
    Case(
        "train-overwrite-someones-folder",
        ["train", *TINY_FLAGS, "--name", "photos", "--output-dir", "."]
        + [OVERWRITE],
        1,
        ["holds files that are not a run directory", "cat.jpg"],
        _files("photos/cat.jpg"),
    ),
    Case(
        "train-overwrite-folder-with-a-config-json",
        ["train", *TINY_FLAGS, "--name", "mine", "--output-dir", "."]
        + [OVERWRITE],
        1,
        ["holds files that are not a run directory", "config.json"],
        _files("mine/config.json", "mine/photo.jpg"),
    ),
    # export adds versions to a folder of versions only.
    Case(
        "export-into-someones-folder",
        [*EXPORT, "--base-path", "mine"],
        1,
        ["'mine/m' holds files that are not a folder of model versions"],
        _files("mine/m/notes.txt"),
    ),
    Case(
        "export-base-path-is-a-file",
        [*EXPORT, "--base-path", "notes.txt"],
        1,
        ["'notes.txt' is a file"],
        _files("notes.txt"),
    ),
    Case(
        "export-into-the-run",
        [*EXPORT, "--base-path", "runs/run/served"],
        1,
        ["lies inside an input of this command"],
    ),
    # ablation: refused before any row trains.
    Case(
        "ablation-report-into-someones-folder",
        ["ablation", *TINY_FLAGS, "--rows", "Softmax", "--report-dir", "docs"],
        1,
        ["'docs' holds files that are not an ablation report"],
        _files("docs/index.md"),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_outputs_that_are_not_the_commands_own_are_refused(
    case, finished, tmp_path
):
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)
    assert_refused(case, tmp_path, run=run_cli_here)


HOLD = textwrap.dedent(
    """
    import sys, time
    from tfrec_tricks.output_folders import TargetKind, target_lock
    with target_lock(sys.argv[1], TargetKind("x", "--x")):
        print("locked", flush=True)
        time.sleep(120)
    """
)


@pytest.mark.parametrize(
    "target, args",
    [
        ("runs/run", ["train", *TINY_FLAGS, "--epochs", "1", "--name", "run"]),
        (
            "prepared",
            ["prepare", *TINY_DATA, "--output", "prepared", OVERWRITE],
        ),
        ("saved_models/m", [*EXPORT]),
        (
            "tuning/synthetic",
            ["tune", *TINY_FLAGS, "--tuner", "random", "--max-trials", "1"],
        ),
    ],
    ids=["train", "prepare", "export", "tune"],
)
def test_a_second_writer_is_refused_naming_the_first(
    finished, tmp_path, target, args
):
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, target, "--the-holders-flag"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = snapshot(tmp_path)
        result = run_cli(*args, cwd=tmp_path)
    finally:
        holder.kill()
        holder.wait()
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert "is being written by another process" in result.stderr
    assert f"pid {holder.pid}" in result.stderr
    assert "--the-holders-flag" in result.stderr
    assert snapshot(tmp_path) == before


def test_leftovers_of_killed_writers_are_removed_by_the_next(
    finished, tmp_path
):
    from tfrec_tricks.ownership import mark_staging

    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)
    result = run_cli(*EXPORT, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    # Marked by the tool when it made them: removed.
    stale = [
        (tmp_path / ".prepared.k1ll3d00.staging", "prepared"),
        (tmp_path / "saved_models/m/.2.k1ll3d00.staging", "saved_models/m/2"),
        (tmp_path / "saved_models/m/.x.json.k1ll3d00.tmp", "saved_models/m/x"),
    ]
    for path, target in stale:
        path.mkdir(parents=True)
        mark_staging(str(path), str(tmp_path / target))
        (path / "half.tfrecord").write_bytes(b"\0" * 10)
    # Only shaped like leftovers (an older version's, a dated copy): kept.
    kept = [tmp_path / ".prepared-k1ll3d00", tmp_path / ".prepared.2024.old"]
    for path in kept:
        path.mkdir()
        (path / "mine.txt").write_text("mine")
    result = run_cli(
        "prepare", *TINY_DATA, "--output", "prepared", OVERWRITE, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-2000:]
    result = run_cli(*EXPORT, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert [p for p, _ in stale if p.exists()] == []
    assert [(p / "mine.txt").read_text() for p in kept] == ["mine", "mine"]
    assert not list(tmp_path.glob(".*.lock"))


def _modes(folder):
    return {
        os.path.relpath(os.path.join(root, name), folder): oct(
            os.stat(os.path.join(root, name)).st_mode & 0o777
        )
        for root, dirs, files in os.walk(folder)
        for name in dirs + files
    }


def test_written_files_follow_the_umask_and_models_config_keeps_its_mode(
    tmp_path,
):
    umask = "umask 022 && "
    models = tmp_path / "saved_models"
    models.mkdir()
    config = models / "models.config"
    config.write_text("model_config_list {\n}\n")
    os.chmod(config, 0o640)
    for command in (
        f"train {' '.join(TINY_FLAGS)} --epochs 1 --name run",
        f"prepare {' '.join(TINY_DATA)} --output prepared",
        "export runs/run --name m",
    ):
        result = subprocess.run(
            umask + f"{sys.executable} -m tfrec_tricks.cli {command}",
            shell=True,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr[-2000:]
    modes = _modes(tmp_path)
    assert modes.pop("saved_models/models.config") == "0o640"
    wrong = {
        path: mode
        for path, mode in modes.items()
        if mode not in ("0o644", "0o755")
    }
    assert wrong == {}
    assert modes["runs/run/run.json"] == "0o644"
    assert modes["prepared"] == "0o755"
    assert modes["saved_models/m/1"] == "0o755"
    assert json.loads((tmp_path / "runs/run/run.json").read_text())["status"]


@pytest.mark.parametrize("seconds", [0.3, 1.5, 4.0, 8.0])
def test_ctrl_c_at_any_moment_exits_130_without_a_traceback(tmp_path, seconds):
    process = start_cli(
        "train", *TINY_FLAGS, "--epochs", "50", "--patience", "50", cwd=tmp_path
    )
    time.sleep(seconds)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    if process.returncode == 0:
        pytest.skip("finished before the signal")
    assert process.returncode == 130, output[-2000:]
    assert "Traceback" not in output, output[-2000:]
    assert "interrupted" in output
