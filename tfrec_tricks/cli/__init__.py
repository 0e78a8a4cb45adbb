"""The ``tfrec-tricks`` command line: one module per command.

Run ``tfrec-tricks --help`` or ``tfrec-tricks train --help``. The flags of
``train``, ``ablation`` and ``tune`` are generated from the fields of
``TrainConfig`` and ``ModelConfig`` (``tfrec_tricks.cli.options``).
"""

import contextlib
import os
import signal
import sys
import threading
import warnings

from tfrec_tricks.cli.quiet import hide_native_logs, load_tensorflow
from tfrec_tricks.keras_version import use_command_keras

# The command line's Keras-version check: tf-keras is chosen before
# anything resolves tf.keras, also when this package is imported, unless
# the environment chose Keras 3 (TF_USE_LEGACY_KERAS=0: every command runs
# under it).
use_command_keras()


# Signals that end a command as Ctrl-C does: the message printed, the
# exit code (128 + the signal's number, the shells' convention).
ENDINGS = {
    signal.SIGINT: ("interrupted.", 130),
    signal.SIGTERM: ("terminated.", 143),
    signal.SIGHUP: ("hung up.", 129),
}
# What running the same command again does, after an interruption, a full
# disk or a folder that was not writable.
RESUMES = {
    "train": "Run the same command again to resume from the last "
    "completed epoch.",
    "tune": "Run the same command again to resume the search.",
    "ablation": "Run the same command again: finished rows are reused.",
}


class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, as SIGINT raises
    ``KeyboardInterrupt``: every ``except BaseException`` and ``finally``
    on the way (locks, staging folders) runs, and nothing records a run
    as failed.

    Attributes:
        signum: the signal's number.
    """

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def run() -> None:
    """The ``tfrec-tricks`` program: ``main``, then the process exits with
    its code.

    After a failed command with an HDF5 file still open (a Keras 3
    ``.weights.h5`` whose close a full disk failed), the process ends at
    once, its output flushed: HDF5 would crash (SIGSEGV) closing the file
    again at the interpreter's exit (``_hdf5_file_left_open``). The run is
    left as a kill would leave it, which the same command resumes.
    """
    code = main()
    if code == 1 and _hdf5_file_left_open():
        _end_now(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> int:
    """Runs one ``tfrec-tricks`` command; returns its exit code.

    Exit codes: 0 done; 1 an error with a message (bad data, a refused run
    directory, a failed export, a full disk or a folder that is not
    writable); 2 bad arguments (argparse); 130 interrupted (Ctrl-C), 143
    terminated (SIGTERM), 129 hung up (SIGHUP), at any moment, start-up
    included. After an interruption, a full disk or a folder that was not
    writable, nothing is recorded as failed: the same command resumes a
    run or search, once space is freed or the permissions restored.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    command = None
    previous = _install_signal_handlers()
    show_warning = warnings.showwarning
    hooks = sys.unraisablehook, sys.excepthook
    sys.unraisablehook, sys.excepthook = _quiet_hdf5_write_failures(*hooks)
    interrupted = False
    verbose = "--verbose" in argv
    # Before anything can import TensorFlow: its C++ log level.
    hide_native_logs(verbose)
    try:
        # The parser and the commands' checks import no TensorFlow (its
        # import takes seconds): --help and a refused argument, path or data
        # header answer at once. A command module imports what needs
        # TensorFlow inside its run, never at its top.
        from tfrec_tricks.cli.parser import COMMANDS, build_parser, parse

        # Named already for an error raised while the arguments are parsed
        # (a type check that needs tf-keras, under Keras 3).
        command = next((a for a in argv if not a.startswith("-")), None)
        command = command if command in COMMANDS else None
        parser = build_parser()
        args, _ = parser.parse_known_args(argv)
        command = args.command
        if command is None:
            parser.print_help()
            return 2
        warnings.showwarning = _warning_line(command, show_warning)
        args = parse(parser, argv)
        module = COMMANDS[command]
        if hasattr(module, "check"):
            module.check(args)
        # Now, once the arguments have passed; its start-up lines stay off
        # the terminal.
        load_tensorflow(verbose=verbose)
        return module.run(args)
    except KeyboardInterrupt as interrupt:
        interrupted = True
        return _interrupted(command, getattr(interrupt, "signum", None))
    except Exception as error:
        message = _write_failure_message(error, command)
        if message is None:
            if not isinstance(error, (ValueError, OSError, ImportError)):
                raise
            message = str(error)
        _print_error(f"tfrec-tricks {command}: error: {message}")
        return 1
    finally:
        warnings.showwarning = show_warning
        sys.unraisablehook, sys.excepthook = hooks
        # After an interruption the signals stay ignored: the process is
        # ending, and a second Ctrl-C in TensorFlow's teardown would print
        # a traceback.
        if not interrupted:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


def _warning_line(command: str, show_warning):
    """``warnings.showwarning`` for a command: a warning of this package
    (``UserWarning``: a header-only ``.item`` file, an item row far wider
    than the others) prints as one line naming the command, as its errors
    do; any other warning as ``show_warning`` prints it."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def show(message, category, filename, lineno, file=None, line=None):
        ours = os.path.abspath(filename).startswith(package + os.sep)
        if not (ours and issubclass(category, UserWarning)):
            show_warning(message, category, filename, lineno, file, line)
            return
        _print_error(f"tfrec-tricks {command}: warning: {message}")

    return show


def _install_signal_handlers() -> dict:
    """SIGTERM and SIGHUP raise ``Signalled``; returns the handlers they
    had (``main`` puts them back, so that a caller in the same process
    keeps its own). A signal the process was started to ignore (``nohup``
    ignores SIGHUP) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        handler = signal.getsignal(signum)
        if handler == signal.SIG_DFL:
            previous[signum] = handler
            signal.signal(signum, _raise_signalled)
    return previous


def _raise_signalled(signum: int, frame: object) -> None:
    # A supervisor that repeats its SIGTERM must not cut short the cleanup
    # the first one started (SIGKILL still ends the process).
    for other in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(other) is _raise_signalled:
            signal.signal(other, signal.SIG_IGN)
    raise Signalled(signum)


def _write_failure_message(error: Exception, command: str | None) -> str | None:
    """The message of a full disk or a missing permission (``error`` or
    its chain), with what running the same command again does; None for
    any other error.

    A command names the folder it writes (``errors.writes_named``); any
    other write failure is named by the path the OS gave, if any.
    """
    from tfrec_tricks.errors import (
        NO_SPACE,
        named_write_failure,
        write_failure,
    )

    failed = named_write_failure(error)
    if failed is None:
        failure = write_failure(error)
        if failure is None:
            return None
        if failure.kind != NO_SPACE:
            # Not known to be a write: a file that cannot be read either.
            where = f" on {failure.path!r}" if failure.path else ""
            return f"permission denied{where} ({failure.detail})"
        where = repr(failure.path) if failure.path else "the device"
        message = (
            f"no space left on {where} ({failure.detail}). Free some space"
        )
    else:
        message = str(failed)
    rerun = RESUMES.get(command, "Run the same command again.")
    # One line: HDF5's messages (Keras 3's weights files) hold newlines.
    return " ".join(f"{message}. {rerun}".split())


def _interrupted(command: str | None, signum: int | None) -> int:
    # A second Ctrl-C (or SIGTERM, SIGHUP) while the message prints must
    # not end in a traceback.
    for ignored in ENDINGS:
        signal.signal(ignored, signal.SIG_IGN)
    text, code = ENDINGS[signum or signal.SIGINT]
    resume = RESUMES.get(command)
    _print_error(f"\n{text}" + (f" {resume}" if resume else ""))
    return code


def _quiet_hdf5_write_failures(unraisable_hook, excepthook):
    """``sys.unraisablehook`` and ``sys.excepthook`` without h5py's reports
    of a failed write.

    A full disk fails Keras 3's ``.weights.h5`` writes; h5py then reports
    the failure again as each of the file's objects is freed, twice each
    (Cython prints the traceback through ``sys.excepthook``, then "Exception
    ignored in: h5py._objects.ObjectID.__dealloc__" through
    ``sys.unraisablehook``). The command's error already names it, in one
    line.
    """

    def failed_write(error: BaseException | None) -> bool:
        return isinstance(error, RuntimeError) and "file write failed" in str(
            error
        )

    def quiet_unraisable(unraisable) -> None:
        if not failed_write(unraisable.exc_value):
            unraisable_hook(unraisable)

    def quiet_except(kind, error, traceback) -> None:
        if not failed_write(error):
            excepthook(kind, error, traceback)

    return quiet_unraisable, quiet_except


def _hdf5_file_left_open() -> bool:
    """Whether an HDF5 file (Keras 3's ``.weights.h5``) is still open.

    When a full disk fails a Keras 3 weights file's close, HDF5 keeps the
    file open, and closes it again when the interpreter exits, where it
    crashes (SIGSEGV, measured with h5py 3 on a full tmpfs).
    """
    h5py = sys.modules.get("h5py")
    if h5py is None:
        return False
    try:
        return bool(h5py.h5f.get_obj_ids(types=h5py.h5f.OBJ_FILE))
    except Exception:  # noqa: BLE001 - HDF5 in a failed state: assume so.
        return True


def _end_now(code: int) -> None:
    """Ends the process with ``code`` without the interpreter's exit, after
    the output is flushed (``run`` says when)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _print_error(text: str) -> None:
    # After SIGHUP the terminal may be gone: the exit code still tells.
    with contextlib.suppress(OSError):
        print(text, file=sys.stderr, flush=True)
