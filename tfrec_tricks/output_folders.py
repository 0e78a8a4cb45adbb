"""The folders a command writes: only its own kind, never an input, one
writer at a time, no writer while someone reads.

Every command that writes a folder (``train``'s run directory,
``prepare``'s dataset, ``tune``'s search, ``ablation``'s report,
``export``'s model versions) goes through here before it writes:

- ``check_target`` refuses a target that is a file, the current directory,
  a path that is, contains or lies inside one of the command's inputs, a
  path inside another command's output (but for the designed nestings,
  ``TargetKind.nests_in``), or a folder that is not of the command's kind
  *by record* (``tfrec_tricks.ownership``): a folder without a record, with
  a record of another kind, or holding an entry, at any depth, that the
  record does not list;
- ``target_lock`` holds an OS lock (``flock``) on the target while the
  command writes it. The kernel releases it when the process dies, so a
  killed run never blocks the next one; a second live writer is refused,
  naming the holder. Holding the lock, it removes the staging folders and
  temporary files killed writers left (``ownership.remove_leftovers``);
- ``read_lock`` holds the same lock shared while a command reads a
  target (``train --prepared DIR``): a writer of it is refused meanwhile.

Paths are resolved (``os.path.realpath``) first: a symbolic link and the
folder it points to are one target, with one lock.
"""

import contextlib
import dataclasses
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator

from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import make_folders, remove_empty_folders
from tfrec_tricks.errors import OutputError, TargetBusyError
from tfrec_tricks.ownership import remove_leftovers

# Entries of a refused folder named in the message.
SHOWN_ENTRIES = 5


@dataclasses.dataclass(frozen=True)
class TargetKind:
    """What a command writes, and where it may lie.

    Attributes:
        name: str. What it is called in messages and recorded as the
            folder's kind (``ownership``), e.g. "run directory".
        option: str. The option that names the target, e.g. "--output".
        nests_in: pairs ``(kind, subfolder)``: the owned folders of another
            kind this one may lie in, and in which of their subfolders
            (e.g. a run directory in a search folder's ``selection/``).
            Anywhere else inside an owned folder it is refused.
    """

    name: str
    option: str
    nests_in: tuple[tuple[str, str], ...] = ()

    def recognise(self, folder: str) -> bool:
        """Whether ``folder`` is of this kind: it has a record of this kind
        and holds nothing the record does not list, at any depth."""
        if ownership.record_kind(folder) != self.name:
            return False
        return not ownership.foreign_entries(folder)


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


def _a(name: str) -> str:
    return ("an " if name[0] in "aeiou" else "a ") + name


def check_target(
    target: str,
    kind: TargetKind,
    inputs: Iterable[str] = (),
) -> None:
    """Refuses a ``target`` that the command must not write.

    Checked before anything is written, ``--overwrite`` or not: a missing
    target or an empty folder is fine (one holding only the tool's
    temporaries, ``ownership.holds_nothing``, is empty), and so is a
    folder of ``kind`` by record (``TargetKind.recognise``).

    Args:
        target: str. The folder the command writes (or replaces).
        kind: the ``TargetKind`` of what the command writes.
        inputs: paths the command reads (data files, a prepared dataset, a
            run directory): the target may not be, contain or lie inside
            any of them.

    Raises:
        TargetBusyError: another live process writes or reads ``target``.
        OutputError: naming the target, what is there and the option to
            change.
    """
    refuse = f"; choose another {kind.option} (it is never replaced)."
    a_kind = _a(kind.name)
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
    _check_not_nested(target, real, kind, refuse)
    if os.path.islink(target) and not os.path.exists(real):
        raise OutputError(
            f"{target!r} is a symbolic link to {real!r}, which does not "
            f"exist" + refuse
        )
    if not os.path.lexists(real):
        return
    if not os.path.isdir(real):
        raise OutputError(f"{target!r} is a file, not {a_kind}" + refuse)
    # A live writer's files are not yet all recorded: busy, not foreign.
    _refuse_if_busy(real, target, kind)
    # Empty, or holding only what a writer killed before its first record
    # left (``ownership.holds_nothing``): removed under the lock.
    if ownership.holds_nothing(real):
        return
    recorded = ownership.record_kind(real)
    if recorded is None:
        raise OutputError(
            f"{target!r} holds files that are not {a_kind} "
            f"({describe_contents(real)}): it has no record of what "
            "tfrec-tricks wrote there (a folder of an older version, or not "
            "tfrec-tricks')" + refuse
        )
    if recorded != kind.name:
        raise OutputError(
            f"{target!r} holds files that are not {a_kind}: it is "
            f"{_a(recorded)}" + refuse
        )
    foreign = ownership.foreign_entries(real)
    if foreign:
        raise OutputError(
            f"{target!r} holds files that are not {a_kind}: entries "
            f"tfrec-tricks did not write ({ownership.describe(foreign)}); "
            f"move them out, or choose another {kind.option}. Nothing was "
            "written or removed."
        )


def _check_not_nested(
    target: str, real: str, kind: TargetKind, refuse: str
) -> None:
    """Refuses a target inside a folder another command owns, but for the
    nestings ``kind.nests_in`` allows."""
    owner = ownership.owner_of(real)
    if owner is None:
        return
    owner_kind = ownership.record_kind(owner)
    where = os.path.relpath(os.path.dirname(real), owner).replace(os.sep, "/")
    if (owner_kind, where) in kind.nests_in:
        return
    raise OutputError(
        f"{target!r} lies inside {_a(owner_kind)} ({owner}); {_a(kind.name)} "
        "there would mix with it" + refuse
    )


def _lock_path(real: str) -> str:
    parent, name = os.path.split(real)
    return os.path.join(parent, f".{name}.lock")


def _refuse_if_busy(real: str, target: str, kind: TargetKind) -> None:
    """Refuses ``target`` when a live process holds its lock (without
    creating the lock file)."""
    try:
        handle = os.open(_lock_path(real), os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _busy(handle, target, kind) from None
    finally:
        os.close(handle)


def _busy(handle: int, target: str, kind: TargetKind) -> TargetBusyError:
    holder, mode = _read_holder(handle)
    doing = "read" if mode == "read" else "written"
    return TargetBusyError(
        f"{target} is being {doing} by another process ({holder}); "
        f"wait for it to finish or stop it, or choose another "
        f"{kind.option}. Nothing was written."
    )


@contextlib.contextmanager
def target_lock(target: str, kind: TargetKind) -> Iterator[None]:
    """Holds ``target``'s write lock for the ``with`` block.

    The lock is ``flock`` on ``.<name>.lock`` beside the target's real
    path (a symbolic link and its folder share it), which records the
    holder (process id, command, start time) and is removed when the lock
    is released. On entry, what killed writers of ``target`` left (staging
    folders, the record's temporary files) is removed; folders created
    only to hold the lock are removed again if the block fails.

    Raises:
        TargetBusyError: another live process holds the lock (writing or
            reading); names it.
    """
    real = os.path.realpath(target)
    created = make_folders(os.path.dirname(real))
    path = _lock_path(real)
    try:
        # Inside an owned folder (a run in a search's ``selection/``), the
        # lock file is recorded before it exists: one a killed holder left
        # there is the tool's.
        ownership.claim([path])
        handle = _acquire(path, target, kind, fcntl.LOCK_EX)
    except BaseException:
        remove_empty_folders(created)
        raise
    try:
        remove_leftovers(real)
        yield
    except BaseException:
        _release(handle, path)
        remove_empty_folders(created)
        raise
    else:
        _release(handle, path)


@contextlib.contextmanager
def read_lock(target: str, kind: TargetKind) -> Iterator[None]:
    """Holds ``target``'s lock shared for the ``with`` block: readers go
    together, a writer (``target_lock``) is refused meanwhile, naming a
    reader.

    Where the lock file cannot be created (a read-only folder, a missing
    one) the block runs without it: nothing there is written by this
    process, and a missing target fails on reading.

    Raises:
        TargetBusyError: a live process is writing ``target``.
    """
    path = _lock_path(os.path.realpath(target))
    try:
        handle = _acquire(path, target, kind, fcntl.LOCK_SH)
    except OSError:
        handle = None
    try:
        yield
    finally:
        if handle is not None:
            _release_shared(handle, path)


def _acquire(path: str, target: str, kind: TargetKind, mode: int) -> int:
    while True:
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            error = _busy(handle, target, kind)
            os.close(handle)
            raise error from None
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
        "mode": "read" if mode == fcntl.LOCK_SH else "write",
    }
    os.ftruncate(handle, 0)
    os.pwrite(handle, json.dumps(record).encode("utf-8"), 0)
    return handle


def _read_holder(handle: int) -> tuple[str, str]:
    try:
        record = json.loads(os.pread(handle, 4096, 0).decode("utf-8"))
        return (
            f"pid {record['pid']}, `{record['command'].strip()}`, since "
            f"{record['since']}",
            record.get("mode", "write"),
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "a process that is starting", "write"


def _release(handle: int, path: str) -> None:
    # Removed before it is unlocked: a process that opened it meanwhile
    # sees a different inode and opens the path anew (``_acquire``). In a
    # folder made read-only it stays, harmless (the next holder locks it),
    # and the error that stopped the command is the one reported.
    with contextlib.suppress(OSError):
        os.remove(path)
    os.close(handle)


def _release_shared(handle: int, path: str) -> None:
    # The last reader removes the file; while another still reads, it
    # must stay (a writer locking a new file would not see the reader).
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(handle)
        return
    _release(handle, path)
