"""tfrec_tricks.cli.quiet: TensorFlow's start-up, quiet and uninterrupted."""

import contextlib
import signal
import subprocess
import sys

import pytest

from tests.run_helpers import run_cli
from tfrec_tricks.cli import quiet

DEFERRED = """
import os, signal
from tfrec_tricks.cli.quiet import interrupts_deferred
# A child started from a background job inherits SIGINT ignored, and Python
# then installs no KeyboardInterrupt handler: install it here.
signal.signal(signal.SIGINT, signal.default_int_handler)
reached_the_end = False
try:
    with interrupts_deferred():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # each loop turn checks for signals
            pass
        reached_the_end = True
except KeyboardInterrupt:
    print("after the block" if reached_the_end else "inside the block")
"""


def test_a_ctrl_c_inside_the_block_is_raised_after_it():
    result = subprocess.run(
        [sys.executable, "-c", DEFERRED],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "after the block\n"


def test_tensorflow_loads_with_ctrl_c_deferred(monkeypatch):
    # A Ctrl-C inside TensorFlow's import made the process die by SIGINT
    # (exit -2) although main returned 130: the import holds it back.
    masks = []

    @contextlib.contextmanager
    def record_the_mask(enabled=True):
        masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, set()))
        yield

    monkeypatch.setattr(quiet, "native_stderr_silenced", record_the_mask)
    quiet.load_tensorflow(verbose=True)
    assert signal.SIGINT in masks[0]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, set())


def test_a_callers_blocked_ctrl_c_stays_blocked():
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with quiet.interrupts_deferred():
            pass
        assert signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set())
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@pytest.mark.slow
def test_help_prints_no_tensorflow_log_line():
    result = run_cli("train", "--help", env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert result.returncode == 0
    assert result.stderr == ""
    assert "--overwrite" in result.stdout and "tensorboard" in result.stdout


@pytest.mark.slow
def test_verbose_lets_tensorflow_speak():
    quiet_run = run_cli("train", "--help", env={"TF_CPP_MIN_LOG_LEVEL": "0"})
    loud = run_cli(
        "train", "--help", "--verbose", env={"TF_CPP_MIN_LOG_LEVEL": "0"}
    )
    assert loud.returncode == 0
    assert loud.stdout == quiet_run.stdout
    # What TensorFlow prints while it loads depends on the machine (CUDA
    # stubs, oneDNN); --verbose hides none of it.
    assert len(loud.stderr) >= len(quiet_run.stderr)
