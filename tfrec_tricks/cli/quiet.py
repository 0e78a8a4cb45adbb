"""TensorFlow's start-up lines kept off the terminal, unless --verbose.

TensorFlow and its CUDA stubs write C++ log lines ("Could not find cuda
drivers", oneDNN notices) straight to file descriptor 2 while they load,
before any Python logging setting applies. They say nothing a user of this
command can act on, and they bury its output.
"""

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def native_stderr_silenced(enabled: bool = True) -> Iterator[None]:
    """Points file descriptor 2 at /dev/null inside the block.

    Python exceptions raised inside still propagate (and print after the
    block), so an import that fails is never hidden.
    """
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Holds a Ctrl-C (SIGINT), SIGTERM and SIGHUP back until the block
    ends, then delivers them.

    The ``KeyboardInterrupt`` (or ``cli.Signalled``) is raised right after
    the block instead of inside it. Where signals cannot be blocked (not
    POSIX), the block runs as it is.
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(
        signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    )
    try:
        yield
    finally:
        # The caller's mask again; a SIGINT that arrived meanwhile is
        # delivered before this call returns (unless the caller blocked it).
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def hide_native_logs(verbose: bool) -> None:
    """TensorFlow's C++ INFO and WARNING lines after start-up stay off the
    terminal (errors still show), unless ``verbose``. Read by TensorFlow
    when it loads: set before anything imports it."""
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def load_tensorflow(verbose: bool) -> None:
    """Imports TensorFlow under tf-keras (or the Keras 3 the environment
    chose, ``use_command_keras``), quietly unless ``verbose``.

    A Ctrl-C (or SIGTERM, SIGHUP) during the import takes effect when it
    ends (a few seconds).
    Raised inside TensorFlow's import, it can interrupt Python code that
    its C++ runs through the C API; CPython then counts the interrupt as
    unhandled and ends the process by SIGINT on exit, even after ``main``
    caught it and returned 130.
    """
    hide_native_logs(verbose)
    from tfrec_tricks.keras_version import use_command_keras

    use_command_keras()
    with interrupts_deferred(), native_stderr_silenced(not verbose):
        import tensorflow as tf

        # The models' Keras (tf-keras and TFRS by default; tfrec_tricks.
        # models imports its models lazily).
        from tfrec_tricks.models import SequentialRetrievalModel  # noqa: F401

        # Device discovery logs a CUDA error on machines without a GPU.
        tf.config.list_physical_devices()
    if not verbose:
        tf.get_logger().setLevel(logging.ERROR)
