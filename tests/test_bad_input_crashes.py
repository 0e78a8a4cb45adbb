"""A crash never strands a run: killed (SIGKILL, a power loss), stopped by
a full disk or by a folder made read-only at any moment of ``train``,
``tune``, ``prepare`` (both engines), ``export``, ``recommend``,
``ablation`` or the facade's ``Recommender.fit``, the same command then
resumes or redoes the work, and ``--overwrite`` replaces it.

Tested the way it fails, in the failing sequence: crash, then the same
command (in this process), and, on the same crash state put back, the
command with ``--overwrite``. Each must exit 0 (``recommend``: or refuse
a file the killed process had published whole) with no traceback, leave
no staging folder, temporary file or lock behind, and leave every file
that is not the command's output (a user's files beside the targets, the
inputs) unchanged by SHA-256 and mode; the crash itself must not change
them either.

The crash states come from ``tests/crash_helpers.py``: each command runs
once in a fresh process that copies the workspace before each of its
write events (what a SIGKILL at that instant leaves on the disk), and
the tests put back the states of the moments that stranded runs before
(``MOMENTS``) and of seeded random events. Besides: real kills
(``os._exit(137)`` at a random event, SIGKILL at a random time), a tmpfs
that fills up (then remounted bigger: space freed), and EACCES from a
random write on.

``TFREC_CRASH_POINTS`` sets the random events per command (by default 1
for the commands without a moment of their own, ``RANDOM_POINTS``) and
``TFREC_CRASH_SEED`` (default 0) their seed: ``TFREC_CRASH_POINTS=30``
explores more. docs/run-directories.md ("What a crash leaves, and how to
go on") says what each crash leaves.

Under Keras 3 (CI's Keras 3 job) the ``train`` command's crashes run:
its backup, best checkpoint and model are Keras 3's ``.weights.h5``
files. The other commands' crash handling does not depend on the Keras
(``prepare`` has none; the others write through the same code) and runs
under tf-keras.
"""

import dataclasses
import fnmatch
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.crash_helpers import (
    KILLED,
    crash_command,
    crash_states,
    sequence_command,
)
from tests.keras_env import KERAS3
from tests.run_helpers import TINY_FLAGS, run_in_process, snapshot, start_cli
from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import file_sha256

pytestmark = pytest.mark.slow

# The commands whose crashes also run under Keras 3 (see above).
KERAS_3_COMMANDS = ("train",)


def _this_keras(name: str, *values):
    """A parameter of ``name``'s command, skipped under Keras 3 unless it
    is one of ``KERAS_3_COMMANDS``."""
    skip = pytest.mark.skipif(
        KERAS3 and name not in KERAS_3_COMMANDS,
        reason=f"{name}'s crashes run under tf-keras (module docstring)",
    )
    return pytest.param(*values, marks=skip)


SEED = os.environ.get("TFREC_CRASH_SEED", "0")
SESSIONS = "SessionId\tItemId\tTime\n" + "".join(
    f"s{s}\ti{(s * 3 + k) % 25}\t{1000 * s + k}\n"
    for s in range(40)
    for k in range(6)
)
FILE = ["--data", "file", "--data-path", "clicks.tsv"]
FACADE = """
import numpy as np, pandas as pd, tfrec_tricks
rng = np.random.default_rng(0)
frame = pd.DataFrame({
    "user_id": np.repeat(np.arange(40), 6),
    "item_id": rng.integers(0, 15, 240),
    "timestamp": np.tile(np.arange(6), 40),
})
tfrec_tricks.Recommender(
    epochs=2, max_len=6, embedding_dim=8, seed=0, output_dir="runs",
    name="fit",
).fit(frame, verbose=0, overwrite=OVERWRITE)
"""


@dataclasses.dataclass(frozen=True)
class Command:
    """A command that writes ``outputs`` (relative paths; the first is
    its target); ``done``: the file that says it finished; ``published``:
    for a command that never replaces its output without --overwrite,
    that output's path and the words of its refusal."""

    args: tuple
    outputs: tuple
    done: str
    overwrite: bool = True
    code: str | None = None
    published: tuple[str, str] | None = None

    def run(self, capsys, overwrite=False) -> tuple[int, str]:
        """Runs it in this process: exit code, output."""
        if self.code is None:
            flag = ("--overwrite",) if overwrite else ()
            return run_in_process(capsys, *self.args, *flag)
        capsys.readouterr()
        exec(self.source(overwrite), {})
        out, err = capsys.readouterr()
        return 0, out + err

    def source(self, overwrite=False) -> str | None:
        """The facade's code, or None for a command line."""
        if self.code is None:
            return None
        return self.code.replace("OVERWRITE", str(overwrite))


COMMANDS = {
    "train": Command(
        ("train", *TINY_FLAGS, "--epochs", "2")
        + ("--output-dir", "runs", "--name", "run"),
        ("runs/run",),
        "runs/run/metrics.json",
    ),
    "tune": Command(
        ("tune", *TINY_FLAGS, "--tuner", "random", "--max-trials", "1")
        + ("--epochs", "1", "--retrain-top", "1")
        + ("--output-dir", "tuning", "--name", "s"),
        ("tuning/s",),
        "tuning/s/best_config.json",
    ),
    "prepare": Command(
        ("prepare", *FILE, "--output", "prepared"),
        ("prepared",),
        "prepared/metadata.json",
        published=("prepared", "already exists; pass --overwrite"),
    ),
    "prepare-beam": Command(
        ("prepare", "--engine", "beam", *FILE, "--output", "prepared"),
        ("prepared",),
        "prepared/metadata.json",
        published=("prepared", "already exists; pass --overwrite"),
    ),
    "export": Command(
        ("export", "runs/done", "--name", "m"),
        tuple(
            f"saved_models/{name}"
            for name in ("m", "models.config", "m.request.json")
            + ("m.filtered_request.json",)
        ),
        "saved_models/models.config",
        overwrite=False,
    ),
    "recommend": Command(
        ("recommend", "runs/done", "--output", "recs.csv", "--quiet"),
        ("recs.csv",),
        "recs.csv",
        overwrite=False,
        published=("recs.csv", "'recs.csv' exists"),
    ),
    "ablation": Command(
        ("ablation", *TINY_FLAGS, "--epochs", "1", "--rows", "Softmax")
        + ("--dropouts", "0.2", "--output-dir", "runs", "--name", "abl")
        + ("--report-dir", "report"),
        ("report", "runs/abl-softmax-dropout0.2"),
        "report/ablation.md",
    ),
    "facade-fit": Command(
        (),
        # The DataFrame is written beside the run, named by its content.
        ("runs/fit", "runs/interactions-*.inter"),
        "runs/fit/metrics.json",
        code=FACADE,
    ),
}
# Commands that read the finished run ``runs/done``.
READ_THE_RUN = ("export", "recommend")
# Random crash states rerun per command: the moments cover tune, ablation
# and the facade, whose runs are train's (and cost the most to rerun).
RANDOM_POINTS = {
    name: int(os.environ.get("TFREC_CRASH_POINTS", default))
    for name, default in (
        ("train", 1),
        ("prepare", 1),
        ("prepare-beam", 1),
        ("export", 1),
        ("recommend", 1),
        ("tune", 0),
        ("ablation", 0),
        ("facade-fit", 0),
    )
}

# Moments at which a kill stranded a run before: the same command and
# --overwrite refused it (entries tfrec-tricks did not write, no record),
# or a leftover stayed for good. (command, a regular expression of the
# write event's label, its occurrence; paths are absolute or relative.)
MOMENTS = {
    # TensorBoard's events file (the run's settings) before the first
    # epoch claimed it.
    "tensorboard-events": ("train", "^on_train_begin$", 1),
    # A staging folder made, its marker not yet written.
    "staging-before-marker": (
        "train",
        r"^open (.*/)?\.run\.json\.\w{8}\.tmp/\.tfrec-tricks-staging$",
        1,
    ),
    # A staging folder whose marker was removed, the folder not yet.
    "staging-after-marker": (
        "train",
        r"^rmdir (.*/)?\.run\.json\.\w{8}\.tmp$",
        1,
    ),
    # The model written whole, not yet renamed into place.
    "model-before-rename": ("train", r"^rename (.*/)?runs/run/model$", 1),
    # The epoch's checkpoints and the validation's events written, the
    # epoch not yet ended: Keras and TensorBoard name those files.
    "facade-epoch-end": ("facade-fit", "^on_epoch_end$", 1),
    # The retraining of the search's best configuration: a run, with its
    # lock, inside the search folder.
    "search-retraining": ("tune", "^on_train_begin$", 2),
    "dataset-before-rename": ("prepare", r"^rename (.*/)?prepared$", 1),
    # A folder of versions whose first record was not yet in place.
    "export-first-record": (
        "export",
        r"^replace (.*/)?saved_models/m/\.tfrec-tricks-owned\.json$",
        1,
    ),
    "version-before-marker": (
        "export",
        r"^open (.*/)?m/\.1\.\w{8}\.staging/\.tfrec-tricks-staging$",
        1,
    ),
    "recommendations-before-marker": (
        "recommend",
        r"^open (.*/)?\.recs\.csv\.\w{8}\.tmp/\.tfrec-tricks-staging$",
        1,
    ),
    # A row's run whose training had ended, killed before it finished:
    # its next process trains no epoch (no time per epoch to report).
    "row-trained-not-finished": (
        "ablation",
        r"^rename (.*/)?runs/abl-softmax-dropout0\.2/model$",
        1,
    ),
    "report-first-record": (
        "ablation",
        r"^replace (.*/)?report/\.tfrec-tricks-owned\.json$",
        1,
    ),
}


# Moments rerun with the same command only: --overwrite of a train run's
# crash state is run from tensorboard-events (and the real kills).
SAME_COMMAND_ONLY = (
    "staging-before-marker",
    "staging-after-marker",
    "model-before-rename",
)


class _Output:
    """``capsys`` for a module fixture: lets the output through."""

    @staticmethod
    def readouterr():
        return "", ""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The commands' inputs: ``clicks.tsv`` and a finished run,
    ``runs/done`` (what ``export`` and ``recommend`` read)."""
    root = tmp_path_factory.mktemp("inputs")
    (root / "clicks.tsv").write_text(SESSIONS)
    before = os.getcwd()
    os.chdir(root)
    try:
        args = ["train", *TINY_FLAGS, "--epochs", "1", "--output-dir", "runs"]
        assert run_in_process(_Output(), *args, "--name", "done")[0] == 0
    finally:
        os.chdir(before)
    return root


def _workspace(inputs, folder, name):
    """The inputs ``COMMANDS[name]`` reads, with a user's files beside
    every output, in ``folder``."""
    folder.mkdir(parents=True)
    shutil.copy(inputs / "clicks.tsv", folder)
    if name in READ_THE_RUN:
        shutil.copytree(inputs / "runs", folder / "runs", symlinks=True)
    for place in ("runs", "tuning", "saved_models", "."):
        (folder / place).mkdir(exist_ok=True)
        (folder / place / "notes.txt").write_text("someone's notes\n")
    # A user's dated backup beside a target.
    (folder / ".prepared.2024-01-01.old").mkdir()
    (folder / ".prepared.2024-01-01.old" / "metadata.json").write_text("{}")
    return folder


@dataclasses.dataclass
class Crashes:
    """Every crash state of one command: ``states`` (label, copy of the
    workspace before that write event), ``folder`` (the workspace, where
    a state is put back to run) and ``before`` (its snapshot before)."""

    states: list
    folder: object
    before: dict


@pytest.fixture(scope="module")
def crashes(inputs, tmp_path_factory):
    """``crashes(name)``: the ``Crashes`` of ``COMMANDS[name]``. Every
    command runs once, one after the other in one fresh process (one
    TensorFlow import), on first use."""
    made = {}

    def get(name):
        if not made:
            root = tmp_path_factory.mktemp("crashes")
            plan = [
                {
                    "name": each,
                    "folder": str(_workspace(inputs, root / each / "w", each)),
                    "args": list(command.args),
                    "code": command.source(),
                }
                for each, command in COMMANDS.items()
            ]
            befores = {p["name"]: snapshot(p["folder"]) for p in plan}
            result = sequence_command(plan, str(root / "states"))
            assert result.returncode == 0, result.stderr[-3000:]
            for each in COMMANDS:
                states = root / "states" / each
                status = (states / "status").read_text()
                assert status == "0", (each, status, result.stderr[-3000:])
                made[each] = Crashes(
                    crash_states(str(states)),
                    root / each / "w",
                    befores[each],
                )
        return made[name]

    return get


def _is_output(command: Command, relative: str) -> bool:
    """Whether ``relative`` is one of ``command``'s outputs or in one, or
    the lock or a staging folder of one, beside it (``.NAME.lock``,
    ``.NAME.<8 characters>.staging``)."""
    for output in command.outputs:
        if fnmatch.fnmatch(relative, output) or relative.startswith(
            output + "/"
        ):
            return True
        parent, name = os.path.split(output)
        if parent and not relative.startswith(parent + "/"):
            continue
        first = relative[len(parent) :].lstrip("/").split("/")[0]
        named = ownership.STAGING_NAME.fullmatch(first)
        if first == f".{name}.lock" or (
            named and fnmatch.fnmatch(named.group(1), name)
        ):
            return True
    return False


def _assert_others_unchanged(command: Command, before: dict, folder):
    """Every file and folder of ``before`` (a ``snapshot(folder)``) that
    is not ``command``'s output is unchanged (SHA-256 and mode), and
    nothing appeared but its outputs."""
    after = snapshot(folder)
    changed = [
        path
        for path, value in before.items()
        if not _is_output(command, path) and after.get(path) != value
    ]
    new = [
        path
        for path in after
        if path not in before and not _is_output(command, path)
    ]
    assert (changed, new) == ([], [])


def _leftovers(folder) -> list[str]:
    """The tool's temporaries below ``folder``: staging folders, record
    temporaries, lock files."""
    return [
        os.path.join(root, name)
        for root, dirs, files in os.walk(folder)
        for name in dirs + files
        if name.endswith(".lock")
        or ownership.STAGING_NAME.fullmatch(name)
        or name.startswith(ownership.RECORD_FILE + ".")
    ]


def _put_back(state, folder):
    """Puts the crash state ``state`` in the workspace's place: the
    paths a run's fingerprint records are the same."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(state, folder, symlinks=True)


def _finishes(command: Command, folder, capsys, overwrite=False):
    """Runs ``command`` in ``folder`` and asserts that it finishes: exit
    0, its result there, every other file unchanged, no temporaries."""
    before = snapshot(folder)
    code, output = _run_in(folder, command, capsys, overwrite)
    assert code == 0, output[-3000:]
    assert (folder / command.done).exists(), output[-3000:]
    _assert_others_unchanged(command, before, folder)
    assert _leftovers(folder) == []
    target = folder / command.outputs[0]
    if target.is_dir():
        assert ownership.foreign_entries(str(target)) == []


def _after_a_crash(command: Command, state, folder, capsys, overwrite=True):
    """On the crash state put back: the command with ``--overwrite`` (when
    ``overwrite``), and (put back again) the same command, both finish."""
    if overwrite and command.overwrite:
        _put_back(state, folder)
        _finishes(command, folder, capsys, overwrite=True)
    _put_back(state, folder)
    if command.published and (folder / command.published[0]).exists():
        # Killed after its output was published whole: refused as any
        # existing output is, and kept (the refusal removes only what the
        # killed process left beside it).
        output_path, refusal = command.published
        before = snapshot(folder)
        kept = _as_it_is(folder / output_path)
        code, output = _run_in(folder, command, capsys)
        assert code == 1 and refusal in output, output[-3000:]
        assert _as_it_is(folder / output_path) == kept
        _assert_others_unchanged(command, before, folder)
        return
    _finishes(command, folder, capsys)


def _as_it_is(path):
    """A folder's snapshot, or a file's SHA-256 and mode."""
    if path.is_dir():
        return snapshot(path)
    return file_sha256(path), oct(path.stat().st_mode & 0o7777)


def _run_in(folder, command: Command, capsys, overwrite=False):
    """``command.run`` with ``folder`` as the current folder."""
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        return command.run(capsys, overwrite)
    finally:
        os.chdir(cwd)


def _the_moment(states, match, occurrence):
    found = [state for label, state in states if re.search(match, label)]
    assert len(found) >= occurrence, (match, [label for label, _ in states])
    return found[occurrence - 1]


@pytest.mark.parametrize(
    "moment",
    [_this_keras(name, moment) for moment, (name, _, _) in MOMENTS.items()],
    ids=list(MOMENTS),
)
def test_a_kill_at_a_moment_that_stranded_runs_then_the_same_command(
    moment, crashes, capsys
):
    name, match, occurrence = MOMENTS[moment]
    command, crashed = COMMANDS[name], crashes(name)
    state = _the_moment(crashed.states, match, occurrence)
    _assert_others_unchanged(command, crashed.before, state)
    _after_a_crash(
        command,
        state,
        crashed.folder,
        capsys,
        overwrite=moment not in SAME_COMMAND_ONLY,
    )


def _points():
    return [
        (name, point)
        for name, points in RANDOM_POINTS.items()
        for point in range(points)
    ]


@pytest.mark.parametrize(
    "name, point",
    [_this_keras(name, name, point) for name, point in _points()],
    ids=[f"{n}-{p}" for n, p in _points()],
)
def test_a_kill_at_a_random_write_then_the_same_command(
    name, point, crashes, capsys
):
    command, crashed = COMMANDS[name], crashes(name)
    rng = random.Random(f"{SEED}-{name}-{point}")
    label, state = rng.choice(crashed.states)
    _assert_others_unchanged(command, crashed.before, state)
    # --overwrite from the states of the moments, and of the real kills.
    _after_a_crash(command, state, crashed.folder, capsys, overwrite=False)


def _keep(folder, tmp_path):
    """A copy of what a crash left in ``folder``, to put back."""
    state = tmp_path / "state"
    shutil.copytree(folder, state, symlinks=True)
    return state


def _fault_a_process(name, fault, crashes, inputs, tmp_path):
    """Runs ``COMMANDS[name]`` in a fresh process that meets ``fault`` at
    a seeded write event (of as many as it has crash states).

    Returns:
        ``(folder, before, process, labels)``: the workspace, its snapshot
        before, the finished process, and the labels of the events from
        the fault on (in the crash states' run).
    """
    states = crashes(name).states
    at = random.Random(f"{SEED}-{fault}-{name}").randint(1, len(states))
    folder = _workspace(inputs, tmp_path / "w", name)
    before = snapshot(folder)
    process = crash_command(COMMANDS[name].args, at, fault, cwd=folder)
    return folder, before, process, [label for label, _ in states[at - 1 :]]


@pytest.mark.skipif(KERAS3, reason="prepare has no Keras")
def test_a_process_killed_at_a_random_write_then_the_same_command(
    crashes, inputs, tmp_path, capsys
):
    # The real thing the crash states stand for: the process dies
    # (os._exit, as SIGKILL) at a seeded write, maybe in a Beam worker's
    # thread.
    command = COMMANDS["prepare-beam"]
    folder, before, crashed, _ = _fault_a_process(
        "prepare-beam", "kill", crashes, inputs, tmp_path
    )
    assert crashed.returncode == KILLED, crashed.stderr[-3000:]
    _assert_others_unchanged(command, before, folder)
    _after_a_crash(command, _keep(folder, tmp_path), folder, capsys)


def test_a_sigkill_at_a_random_time_then_the_same_command(
    inputs, tmp_path, capsys
):
    # Between the writes a wrapper sees too: inside TensorFlow's
    # checkpoint and event writes, at any instant of the first epochs.
    command = COMMANDS["train"]
    folder = _workspace(inputs, tmp_path / "w", "train")
    before = snapshot(folder)
    process = start_cli(*command.args, cwd=folder)
    started = folder / "runs" / "run" / "run.json"
    deadline = time.monotonic() + 300
    while not started.exists() and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(random.Random(f"{SEED}-sigkill").uniform(0, 4))
    process.send_signal(signal.SIGKILL)
    process.communicate()
    _assert_others_unchanged(command, before, folder)
    _after_a_crash(command, _keep(folder, tmp_path), folder, capsys)


@pytest.mark.skipif(KERAS3, reason="export's crashes run under tf-keras")
def test_a_folder_made_read_only_then_the_same_command(
    crashes, inputs, tmp_path, capsys
):
    # EACCES from a seeded write on (the tests run as root, which ignores
    # permission bits): exit 1 naming the folder; writable again, the
    # same command finishes.
    command = COMMANDS["export"]
    folder, before, failed, labels = _fault_a_process(
        "export", "EACCES", crashes, inputs, tmp_path
    )
    assert "Traceback" not in failed.stderr
    if all(re.match(r"remove .*\.lock$", label) for label in labels):
        # Only the lock files' removal failed: they stay, harmless (the
        # next export locks them), and the export is whole.
        assert failed.returncode == 0, failed.stderr[-3000:]
    else:
        assert failed.returncode == 1, failed.stderr[-3000:]
        assert "is not writable" in failed.stderr, failed.stderr[-2000:]
    _assert_others_unchanged(command, before, folder)
    _after_a_crash(command, _keep(folder, tmp_path), folder, capsys)


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs at ``tmp_path / "disk"``: ``small_disk(kib)`` (re)mounts it
    with that size. Skips where mounting one is not permitted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    mounted = []

    def resize(kib: int):
        options = ("remount," if mounted else "") + f"size={kib}k"
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            pytest.skip(
                "a disk that fills up is a small tmpfs, and mounting one "
                f"is not permitted here: {result.stderr.strip()}"
            )
        mounted.append(kib)
        return mount

    yield resize
    if mounted:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_disk_that_fills_up_then_the_same_command(
    inputs, small_disk, tmp_path, capsys
):
    # A real full disk, wherever it comes: in Python's writes, in
    # TensorFlow's checkpoints and event files.
    command = COMMANDS["train"]
    kib = random.Random(f"{SEED}-disk").randint(8, 96)
    folder = _workspace(inputs, small_disk(kib) / "w", "train")
    before = snapshot(folder)
    failed = subprocess.run(
        [sys.executable, "-m", "tfrec_tricks.cli", *command.args],
        capture_output=True,
        text=True,
        cwd=folder,
    )
    assert failed.returncode == 1, (kib, failed.stderr[-3000:])
    assert "Traceback" not in failed.stderr
    assert "no space left on" in failed.stderr, failed.stderr[-2000:]
    _assert_others_unchanged(command, before, folder)
    state = _keep(folder, tmp_path)
    small_disk(64 * 1024)  # space freed
    _after_a_crash(command, state, folder, capsys)


def test_a_backup_a_power_loss_cut_short_is_named(crashes, capsys):
    # A kill never cuts a checkpoint short (TensorFlow renames it into
    # place), but a power loss may lose what had not reached the disk:
    # the same command then names the backup and --overwrite; the run
    # stays as it was.
    command, crashed = COMMANDS["train"], crashes("train")
    state = _the_moment(crashed.states, "^on_epoch_begin$", 2)
    _put_back(state, crashed.folder)
    backup = crashed.folder / "runs" / "run" / "backup"
    if KERAS3:
        # latest.weights.h5, and its copy of the epoch before (.bkp) if
        # there is one: Keras 3 resumes from either that reads whole.
        cut = sorted(backup.glob("latest.weights.h5*"))
        assert cut, sorted(p.name for p in backup.iterdir())
        reason = "latest.weights.h5: Unable to"
    else:
        cut = list(backup.glob("*/ckpt-*.data-*"))
        assert len(cut) == 1, cut
        reason = "cannot be read (Read less bytes than requested)"
    for data in cut:
        data.write_bytes(data.read_bytes()[:100])
    before = _without_locks(snapshot(crashed.folder))
    code, output = _run_in(crashed.folder, command, capsys)
    assert code == 1, output[-3000:]
    assert "runs/run cannot be resumed" in output
    assert reason in output, output[-3000:]
    assert "Pass --overwrite" in output
    # The killed process's lock file went with the lock.
    assert _without_locks(snapshot(crashed.folder)) == before
    _finishes(command, crashed.folder, capsys, overwrite=True)


def _without_locks(files: dict) -> dict:
    return {path: v for path, v in files.items() if not path.endswith(".lock")}
