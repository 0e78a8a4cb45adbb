"""Helpers shared by the tests of training runs, run directories and the
command line."""

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
from collections.abc import Callable

import tensorflow as tf

from tfrec_tricks.training.train_config import TrainConfig

# The CLI flags of a tiny synthetic run (what ``tiny_config`` trains on).
TINY_FLAGS = [
    "--synthetic-users",
    "60",
    "--synthetic-items",
    "40",
    "--max-len",
    "10",
    "--embedding-dim",
    "8",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cluster_env(workers: int) -> list[dict]:
    """One environment per worker: the same TF_CONFIG cluster on 127.0.0.1
    (free ports), each with its own task index."""
    cluster = {"worker": [f"127.0.0.1:{free_port()}" for _ in range(workers)]}
    return [
        {
            "TF_CONFIG": json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": i}}
            )
        }
        for i in range(workers)
    ]


def _signals_at_default() -> None:
    # A test runner started in the background (`cmd &` in a script) passes
    # SIGINT on ignored, one started with nohup SIGHUP; the CLI leaves an
    # ignored signal ignored, as programs do. The child starts as a
    # terminal's foreground job would, so the signal tests test the CLI.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def start_cli(*args, cwd=None, env=None) -> subprocess.Popen:
    """Starts ``tfrec-tricks ARGS`` in a fresh process, output to a pipe,
    SIGINT, SIGTERM and SIGHUP at their defaults."""
    return subprocess.Popen(
        [sys.executable, "-m", "tfrec_tricks.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        preexec_fn=_signals_at_default,
    )


def run_cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Runs ``tfrec-tricks ARGS`` in a fresh process; captures its output."""
    return subprocess.run(
        [sys.executable, "-m", "tfrec_tricks.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def run_cli_here(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """``run_cli`` in this process: ``cli.main`` with ARGS, run in ``cwd``
    with ``env`` added to the environment, its ``sys.stdout`` and
    ``sys.stderr`` captured (argparse's exit as its code). For refusals,
    where the process boundary is not what is tested: no TensorFlow
    import to wait for. tests/cli/test_quiet.py checks refusals from a
    fresh process."""
    from tfrec_tricks import cli

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    previous = os.getcwd()
    saved = {name: os.environ.get(name) for name in env or {}}
    try:
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(argv)
            except SystemExit as exit_info:  # argparse: usage, exit 2
                code = exit_info.code
    finally:
        os.chdir(previous)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return subprocess.CompletedProcess(
        ["tfrec-tricks", *argv], code, out.getvalue(), err.getvalue()
    )


def run_in_process(capsys, *args) -> tuple[int, str]:
    """``tfrec-tricks ARGS`` in this process (``cli.main``, no TensorFlow
    import to wait for): its exit code and all its output, which must hold
    no traceback."""
    from tfrec_tricks import cli

    capsys.readouterr()
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, (out + err)[-3000:]
    return code, out + err


def assert_clean_error(result: subprocess.CompletedProcess, *fragments):
    """``result`` (``run_cli``'s) exited 1 with a message holding every
    fragment, and no traceback."""
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr[-2000:]


def parsed_train_config(*argv) -> TrainConfig:
    """The ``TrainConfig`` that ``tfrec-tricks ARGV`` would train."""
    from tfrec_tricks.cli.parser import build_parser, parse, train_config

    return train_config(parse(build_parser(), list(argv)))


def tiny_config(tmp_path, **overrides) -> TrainConfig:
    """A run on 60 synthetic users and 40 items, in ``tmp_path/run``."""
    values = dict(
        synthetic_users=60,
        synthetic_items=40,
        max_len=10,
        epochs=3,
        patience=5,
        output_dir=str(tmp_path),
        name="run",
        model={"embedding_dim": 8},
    )
    values.update(overrides)
    return TrainConfig(**values)


class Interrupt(tf.keras.callbacks.Callback):
    """Stops the process-like run after an epoch, as a crash would."""

    def __init__(self, after_epoch=0):
        super().__init__()
        self.after_epoch = after_epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.after_epoch:
            raise KeyboardInterrupt


def snapshot(folder) -> dict:
    """Every file (its SHA-256 and mode) and folder (its mode) below
    ``folder``, hidden ones included: equal snapshots mean nothing was
    changed, replaced, re-permissioned or left behind."""
    entries = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            path = os.path.join(root, name)
            mode = oct(os.stat(path).st_mode & 0o7777)
            entries[os.path.relpath(path, folder)] = ("/", mode)
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                digest = hashlib.sha256(handle.read()).hexdigest()
            mode = oct(os.stat(path).st_mode & 0o7777)
            entries[os.path.relpath(path, folder)] = (digest, mode)
    return entries


@dataclasses.dataclass
class Case:
    """A bad-input case of the CLI.

    Attributes:
        id: the test id.
        args: the ``tfrec-tricks`` arguments.
        code: the exit code expected.
        messages: texts the error output must hold.
        setup: called with the workspace before the command runs, or None.
    """

    id: str
    args: list
    code: int
    messages: list
    setup: Callable | None = None


def assert_refused(
    case: Case, workspace, run=run_cli
) -> subprocess.CompletedProcess:
    """Runs ``case`` in ``workspace`` (after its ``setup``) and asserts its
    exit code and messages, no traceback, and every file and folder of the
    workspace unchanged, byte for byte and mode for mode.

    ``run``: ``run_cli`` (a fresh process) or ``run_cli_here`` (this one).

    Returns:
        The finished process, for further checks.
    """
    if case.setup:
        case.setup(workspace)
    before = snapshot(workspace)
    result = run(*case.args, cwd=workspace)
    assert result.returncode == case.code, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    for message in case.messages:
        assert message in result.stderr, result.stderr[-2000:]
    assert snapshot(workspace) == before
    return result


def write_token_interactions(path, users=12, length=8, empty=False) -> str:
    """A RecBole ``.inter`` file with two ``token`` columns, ``device``
    (``web``, ``app``, ``tv``; ``kiosk`` only at each user's last, test,
    position) and ``channel``; with ``empty``, some devices are empty.
    Returns ``path`` as a str."""
    lines = ["user_id:token\titem_id:token\ttimestamp:float\tdevice:token"
             "\tchannel:token"]  # fmt: skip
    devices = ["web", "app", "web", "tv"]
    for user in range(users):
        for step in range(length):
            device = devices[(user + step) % len(devices)]
            if step == length - 1:
                device = "kiosk"
            elif empty and step == 2:
                device = ""
            item = (user * 3 + step * 5) % 20 + 1
            channel = "ads" if step % 3 == 0 else "organic"
            lines.append(
                f"u{user}\ti{item}\t{1000 + 60 * step}\t{device}\t{channel}"
            )
    pathlib.Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)
