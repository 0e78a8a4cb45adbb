"""Errors users see: each message names the problem and what was received."""

import contextlib
import dataclasses
import errno
import os
from collections.abc import Iterator
from typing import TypeVar


class DataError(ValueError):
    """A data file, data source or dataset that cannot be used as given."""


def malformed_line(
    path: str, line_number: int, line: str, why: str
) -> DataError:
    """A DataError naming the file, the 1-based line number and the line."""
    shown = line.rstrip("\n")
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return DataError(f"{path}:{line_number}: {why}. Received line: {shown!r}")


class RunDirectoryError(ValueError):
    """A run directory that holds another run, or an unfinished or mixed one."""


class OutputError(ValueError):
    """An output that a command may not write: something that is not its
    own kind, one of its inputs, or a folder another process is writing."""


class TargetBusyError(OutputError):
    """An output folder that another live process holds the lock of."""


class TrainingFailedError(ValueError):
    """A training run that cannot go on (diverged, or out of memory): its
    run directory is recorded as failed, with this message as the reason."""


class TrainingDivergedError(TrainingFailedError):
    """A training loss that became NaN or infinite."""


class InsufficientMemoryError(ValueError):
    """A run that cannot fit in the memory available, refused before it
    starts (nothing written)."""


class WriteFailedError(OSError):
    """A write that failed for lack of space or of permission.

    Not the run's fault: nothing is recorded as failed, and the same
    command goes on once space is freed or the permissions are restored.

    Attributes:
        kind: ``NO_SPACE`` or ``NOT_WRITABLE``.
        target: the folder the command writes.
        path: the file or folder whose write failed, when known.
    """

    def __init__(self, message: str, kind: str, target: str, path: str | None):
        super().__init__(message)
        self.kind = kind
        self.target = target
        self.path = path


NO_SPACE = "no space"
NOT_WRITABLE = "not writable"
# A disk quota is a full disk to the user; EROFS is a folder made
# read-only (a remount), EPERM one whose attributes forbid writes.
_WRITE_ERRNOS = {
    errno.ENOSPC: NO_SPACE,
    errno.EDQUOT: NO_SPACE,
    errno.EACCES: NOT_WRITABLE,
    errno.EPERM: NOT_WRITABLE,
    errno.EROFS: NOT_WRITABLE,
}
# TensorFlow's errors carry the OS's message, not its errno (it reports
# ENOSPC as ResourceExhaustedError, EACCES as PermissionDeniedError), and
# Beam raises a worker's OSError again without its errno.
_WRITE_TEXTS = {os.strerror(code): kind for code, kind in _WRITE_ERRNOS.items()}
# Characters of the original error shown in a message.
_DETAIL_CHARACTERS = 300


@dataclasses.dataclass(frozen=True)
class WriteFailure:
    """What ``write_failure`` found.

    Attributes:
        kind: ``NO_SPACE`` or ``NOT_WRITABLE``.
        path: the path the OS named (an ``OSError``'s filename), or None.
        detail: the original error's first line.
        text: the original error's whole message.
    """

    kind: str
    path: str | None
    detail: str
    text: str


def write_failure(error: BaseException) -> WriteFailure | None:
    """The full disk or missing permission behind ``error``, if any.

    ``error`` and the errors it was raised from or during are searched:
    an ``OSError`` by its errno, any other error (TensorFlow's, Beam's) by
    the OS's message in its text.

    >>> write_failure(OSError(errno.ENOSPC, "No space left on device", "a"))
    WriteFailure(kind='no space', path='a', detail='No space left on device', \
text="[Errno 28] No space left on device: 'a'")
    >>> write_failure(RuntimeError("x.ckpt; Permission denied")).kind
    'not writable'
    >>> write_failure(MemoryError("OOM when allocating tensor")) is None
    True
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, WriteFailedError):
            return WriteFailure(error.kind, error.path, str(error), str(error))
        if isinstance(error, OSError) and error.errno in _WRITE_ERRNOS:
            path = error.filename
            return WriteFailure(
                _WRITE_ERRNOS[error.errno],
                None if path is None else os.fsdecode(path),
                error.strerror or str(error),
                str(error),
            )
        text = str(getattr(error, "message", "") or error)
        for strerror, kind in _WRITE_TEXTS.items():
            if strerror in text:
                return WriteFailure(kind, None, _first_line(text), text)
        error = error.__cause__ or error.__context__
    return None


def write_failed(error: BaseException, target: str) -> WriteFailedError | None:
    """``error`` as a ``WriteFailedError`` of a command writing ``target``,
    or None when it is no failed write of ``target``.

    A full disk is always one. A missing permission is one only when it
    concerns ``target``: the path the OS named is ``target``, lies inside
    it, is a folder made for it or its lock or staging folder beside it
    (``.<name>.*``), or, without a path, the error's text names
    ``target``. An input that cannot be read stays its own error.

    >>> print(write_failed(OSError(errno.ENOSPC, "No space left on device",
    ...                            "runs/a/history.csv"), "runs/a"))
    no space left on 'runs/a' (writing 'runs/a/history.csv': No space left \
on device). Free some space on its device
    >>> print(write_failed(PermissionError(errno.EACCES, "Permission denied",
    ...                                    "runs/a/run.json"), "runs/a"))
    'runs/a' is not writable (writing 'runs/a/run.json': Permission denied). \
Make it writable again
    >>> write_failed(PermissionError(errno.EACCES, "Permission denied",
    ...                              "data/u.data"), "runs/a") is None
    True
    """
    named = named_write_failure(error)
    if named is not None:
        return named
    failure = write_failure(error)
    if failure is None:
        return None
    if failure.kind == NOT_WRITABLE and not _concerns(failure, target):
        return None
    path = failure.path
    shown = os.path.normpath(target)
    writing = ""
    if path and os.path.abspath(path) != os.path.abspath(target):
        writing = f"writing {path!r}: "
    if failure.kind == NO_SPACE:
        message = (
            f"no space left on {shown!r} ({writing}{failure.detail}). Free "
            "some space on its device"
        )
    else:
        message = (
            f"{shown!r} is not writable ({writing}{failure.detail}). Make it "
            "writable again"
        )
    return WriteFailedError(message, failure.kind, shown, path)


@contextlib.contextmanager
def writes_named(target: str) -> Iterator[None]:
    """Raises a failed write of ``target`` in the block (``write_failed``)
    as a ``WriteFailedError`` naming ``target``; other errors as they are.
    """
    try:
        yield
    except Exception as error:
        failed = write_failed(error, target)
        if failed is None or failed is error:
            raise
        raise failed from error


_E = TypeVar("_E", bound=BaseException)


def named_write_failure(error: BaseException) -> WriteFailedError | None:
    """The ``WriteFailedError`` in ``error``'s chain, or None: a failed
    write already named by the step that made it (a run of an ablation or
    a search)."""
    return in_chain(error, WriteFailedError)


def in_chain(error: BaseException | None, kind: type[_E]) -> _E | None:
    """The first exception of ``kind`` in ``error`` or its chain (its
    ``__cause__``, else its ``__context__``), or None.

    >>> try:
    ...     try:
    ...         raise KeyboardInterrupt
    ...     except KeyboardInterrupt:
    ...         raise RuntimeError("KeyboardInterrupt [while running 'Map']")
    ... except RuntimeError as wrapped:
    ...     type(in_chain(wrapped, KeyboardInterrupt)).__name__
    'KeyboardInterrupt'
    >>> in_chain(ValueError("other"), KeyboardInterrupt) is None
    True
    """
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, kind):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def _concerns(failure: WriteFailure, target: str) -> bool:
    """Whether a missing permission is one to write ``target``."""
    target = os.path.abspath(target)
    if failure.path is None:
        return target in failure.text or os.path.relpath(target) in failure.text
    path = os.path.abspath(failure.path)
    parent, name = os.path.split(target)
    return (
        path == target
        or path.startswith(target + os.sep)
        or target.startswith(path + os.sep)
        or (
            os.path.dirname(path) == parent
            and os.path.basename(path).startswith(f".{name}.")
        )
    )


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    line = lines[0] if lines else ""
    if len(line) > _DETAIL_CHARACTERS:
        line = line[: _DETAIL_CHARACTERS - 3] + "..."
    return line
