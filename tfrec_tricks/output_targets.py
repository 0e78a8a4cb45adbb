"""The folders a command writes: only its own kind, never an input, one
writer at a time.

Every command that writes a folder (``train``'s run directory,
``prepare``'s dataset, ``tune``'s search, ``ablation``'s report,
``export``'s model versions) goes through here before it writes:

- ``check_target`` refuses a target that is a file, a folder of another
  kind (``--overwrite`` replaces only what this tool wrote), the current
  directory, or a path that is, contains or lies inside one of the
  command's inputs;
- ``target_lock`` holds an OS lock (``flock``) on the target while the
  command writes it. The kernel releases it when the process dies, so a
  killed run never blocks the next one; a second live writer is refused,
  naming the holder. Holding the lock, it removes what killed writers left
  (``atomic_files.remove_leftovers``).
"""

import contextlib
import dataclasses
import fcntl
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator

from tfrec_tricks.atomic_files import (
    leftovers,
    make_folders,
    remove_empty_folders,
    remove_leftovers,
)
from tfrec_tricks.errors import OutputError, TargetBusyError

# Entries of a refused folder named in the message.
SHOWN_ENTRIES = 5


@dataclasses.dataclass(frozen=True)
class TargetKind:
    """What a command writes, and how to recognise it.

    Attributes:
        name: str. What it is called in messages, e.g. "run directory".
        option: str. The option that names the target, e.g. "--output".
        recognise: called with an existing, non-empty folder; whether it
            is of this kind (written by this tool for this command).
    """

    name: str
    option: str
    recognise: Callable[[str], bool]


def holds_only(folder: str, names: Iterable[str]) -> bool:
    """Whether every entry of ``folder`` is one of ``names``, or what a
    killed write of the folder left (``atomic_files.leftovers``): the test
    of a folder that a command may replace.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> open(os.path.join(folder, "run.json"), "w").close()
    >>> holds_only(folder, {"run.json", "model"})
    True
    >>> open(os.path.join(folder, "photo.jpg"), "w").close()
    >>> holds_only(folder, {"run.json", "model"})
    False
    """
    names = set(names)
    stale = set(leftovers(folder))
    folder = os.path.normpath(os.path.abspath(folder))
    return all(
        entry in names or os.path.join(folder, entry) in stale
        for entry in os.listdir(folder)
    )


def describe_contents(folder: str) -> str:
    """The first entries of ``folder``, folders marked with ``/``.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(folder, "photos"))
    >>> open(os.path.join(folder, "notes.txt"), "w").close()
    >>> describe_contents(folder)
    'notes.txt, photos/'
    """
    entries = sorted(os.listdir(folder))
    shown = [
        entry + ("/" if os.path.isdir(os.path.join(folder, entry)) else "")
        for entry in entries[:SHOWN_ENTRIES]
    ]
    more = len(entries) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def overlap(target: str, path: str) -> str | None:
    """How ``target`` and ``path`` overlap: "is", "contains", "lies inside"
    or None. Symbolic links are resolved.

    >>> overlap("data/out", "data/out"), overlap("data", "data/u.data")
    ('is', 'contains')
    >>> overlap("data/u.data/x", "data/u.data"), overlap("out", "data")
    ('lies inside', None)
    """
    target = os.path.realpath(target)
    path = os.path.realpath(path)
    if target == path:
        return "is"
    if os.path.commonpath([target, path]) == target:
        return "contains"
    if os.path.commonpath([target, path]) == path:
        return "lies inside"
    return None


def check_target(
    target: str,
    kind: TargetKind,
    inputs: Iterable[str] = (),
) -> None:
    """Refuses a ``target`` that the command must not write.

    Checked before anything is written, ``--overwrite`` or not: a missing
    target or an empty folder is fine, and so is a folder ``kind``
    recognises as its own.

    Args:
        target: str. The folder the command writes (or replaces).
        kind: the ``TargetKind`` of what the command writes.
        inputs: paths the command reads (data files, a prepared dataset, a
            run directory): the target may not be, contain or lie inside
            any of them.

    Raises:
        OutputError: naming the target, what is there and the option to
            change.
    """
    refuse = f"; choose another {kind.option} (it is never replaced)."
    a_kind = ("an " if kind.name[0] in "aeiou" else "a ") + kind.name
    real = os.path.realpath(target)
    if overlap(real, os.getcwd()) in ("is", "contains"):
        raise OutputError(
            f"{target!r} is the current directory or contains it, not a "
            f"place for {a_kind}" + refuse
        )
    for path in inputs:
        how = overlap(real, path)
        if how:
            raise OutputError(
                f"{target!r} {how} an input of this command ({path!r}); "
                f"writing {a_kind} there would destroy or mix with "
                "its input" + refuse
            )
    if not os.path.lexists(target):
        return
    if not os.path.isdir(target):
        raise OutputError(f"{target!r} is a file, not {a_kind}" + refuse)
    if os.listdir(target) and not kind.recognise(target):
        raise OutputError(
            f"{target!r} holds files that are not {a_kind} "
            f"({describe_contents(target)})" + refuse
        )


@contextlib.contextmanager
def target_lock(target: str, kind: TargetKind) -> Iterator[None]:
    """Holds ``target``'s write lock for the ``with`` block.

    The lock is ``flock`` on ``.<name>.lock`` beside the target, which
    records the holder (process id, command, start time) and is removed
    when the lock is released. On entry, leftovers of killed writers of
    ``target`` are removed; folders created only to hold the lock are
    removed again if the block fails.

    Raises:
        TargetBusyError: another live process holds the lock; names it.
    """
    target = os.path.normpath(os.path.abspath(target))
    parent, name = os.path.split(target)
    created = make_folders(parent)
    path = os.path.join(parent, f".{name}.lock")
    try:
        handle = _acquire(path, target, kind)
    except BaseException:
        remove_empty_folders(created)
        raise
    try:
        remove_leftovers(target)
        yield
    except BaseException:
        _release(handle, path)
        remove_empty_folders(created)
        raise
    else:
        _release(handle, path)


def _acquire(path: str, target: str, kind: TargetKind) -> int:
    while True:
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(handle)
            os.close(handle)
            raise TargetBusyError(
                f"{target} is being written by another process ({holder}); "
                f"wait for it to finish or stop it, or choose another "
                f"{kind.option}. Nothing was written."
            ) from None
        # The holder before us may have removed the file between our open
        # and our lock: then the lock is on a file nobody else sees.
        try:
            same = os.stat(path).st_ino == os.fstat(handle).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(handle)
    record = {
        "pid": os.getpid(),
        "command": " ".join(os.path.basename(a) for a in sys.argv[:1])
        + " "
        + " ".join(sys.argv[1:]),
        "since": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    os.ftruncate(handle, 0)
    os.write(handle, json.dumps(record).encode("utf-8"))
    return handle


def _read_holder(handle: int) -> str:
    try:
        record = json.loads(os.pread(handle, 4096, 0).decode("utf-8"))
        return (
            f"pid {record['pid']}, `{record['command'].strip()}`, since "
            f"{record['since']}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that is starting"


def _release(handle: int, path: str) -> None:
    # Removed before it is unlocked: a process that opened it meanwhile
    # sees a different inode and opens the path anew (``_acquire``).
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    os.close(handle)
