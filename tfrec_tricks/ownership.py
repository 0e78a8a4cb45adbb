"""What this tool wrote, by record: the only entries it ever removes.

Every folder a command writes (a run directory, a search folder, a
prepared dataset, a model's folder of versions and each version, a run's
``model/``, an ablation report) holds a record, ``.tfrec-tricks-owned.json``:

    {"format": 1, "kind": "run directory",
     "entries": ["run.json", "checkpoints/", "checkpoints/best.index"]}

``entries`` are paths relative to the folder, ``/``-separated, folders
with a trailing ``/``. A folder the tool wrote inside an owned folder
(``model/`` in a run, ``1/`` in a model's folder of versions, a retrained
run in a search's ``selection/``) holds its own record and is listed in
its parent's.

Ownership is never guessed from names: ``--overwrite`` and the removal of
what killed writers left delete only

- recorded entries (``remove_owned``), and
- staging folders that carry the tool's marker file,
  ``.tfrec-tricks-staging`` (``mark_staging``): the folders a write is
  prepared in before one rename publishes it.

Anything else in an owned folder, at any depth, is *foreign*
(``foreign_entries``): a target that holds a foreign entry is refused,
naming it, and nothing in it is removed.

Names the tool chooses (``run.json``, ``history.csv``) are recorded before
they are written, so a killed write leaves nothing unrecorded. Files that
libraries name (Keras' checkpoints, TensorBoard's event files, KerasTuner's
trial folders) are claimed right after the write that made them
(``claim_below``); a file a user adds to such a subfolder while a command
runs is claimed with them.
"""

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from tfrec_tricks.errors import OutputError

RECORD_FILE = ".tfrec-tricks-owned.json"
RECORD_FORMAT = 1
STAGING_MARKER = ".tfrec-tricks-staging"
# Foreign entries named in a message.
SHOWN_ENTRIES = 5


class Entry(NamedTuple):
    """One entry below an owned folder.

    Attributes:
        shown: str. Its path relative to the folder examined, ``/``-separated,
            a folder with a trailing ``/``.
        path: str. Its path on disk.
        is_dir: bool. A folder (not a symbolic link to one).
        owned: bool. Recorded, the record itself, in a marked staging
            folder, or a folder holding only such entries.
    """

    shown: str
    path: str
    is_dir: bool
    owned: bool


def read_record(folder: str) -> dict | None:
    """``folder``'s record, or None when it has none (or an unreadable one,
    which is then no proof of ownership).

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> read_record(folder) is None
    True
    >>> start_record(folder, "thing")
    >>> read_record(folder)["kind"]
    'thing'
    """
    path = os.path.join(folder, RECORD_FILE)
    if os.path.islink(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    if (
        not isinstance(record, dict)
        or record.get("format") != RECORD_FORMAT
        or not isinstance(record.get("kind"), str)
        or not isinstance(record.get("entries"), list)
        or not all(isinstance(e, str) for e in record["entries"])
    ):
        return None
    return record


def record_kind(folder: str) -> str | None:
    """The kind ``folder``'s record names, or None without a record."""
    record = read_record(folder)
    return None if record is None else record["kind"]


def write_record(folder: str, kind: str, entries: Iterable[str]) -> None:
    """Writes ``folder``'s record: ``kind`` and ``entries`` (relative,
    ``/``-separated, folders with a trailing ``/``), replacing any.

    The record is written under a temporary name and renamed; one writer
    per owned folder (the target's lock), so the temporary name is the
    process's, and the foreign check counts it as part of the record.
    """
    record = {
        "format": RECORD_FORMAT,
        "kind": kind,
        "entries": sorted(set(entries)),
    }
    path = os.path.join(folder, RECORD_FILE)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1)
    os.replace(temporary, path)


def start_record(folder: str, kind: str) -> None:
    """Gives ``folder`` (created if missing) a record of ``kind``, keeping
    an existing record of the same kind, and lists ``folder`` in the
    record of the nearest owned folder above it, if any.

    Raises:
        OutputError: ``folder`` holds a record of another kind.
    """
    os.makedirs(folder, exist_ok=True)
    record = read_record(folder)
    if record is not None and record["kind"] != kind:
        raise OutputError(
            f"{folder!r} holds a {record['kind']}, not a {kind}. Received: "
            f"kind={kind!r}"
        )
    claim([folder.rstrip("/" + os.sep) + os.sep])
    if record is None:
        write_record(folder, kind, ())


def owner_of(path: str) -> str | None:
    """The nearest folder above ``path`` (``path`` itself excluded) that
    holds a record, or None."""
    folder = os.path.dirname(os.path.abspath(path.rstrip("/" + os.sep)))
    while True:
        if read_record(folder) is not None:
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _relative(path: str, folder: str) -> str:
    return os.path.relpath(path, folder).replace(os.sep, "/")


def claim(paths: Iterable[str]) -> None:
    """Adds ``paths`` to the record of their nearest owned folder, with
    every folder between. A path ending in a separator is a folder; a path
    need not exist yet (recorded before it is written, a killed write
    leaves nothing unrecorded). Paths with no owned folder above them are
    left as they are.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> start_record(folder, "thing")
    >>> claim([os.path.join(folder, "logs", "a.txt")])
    >>> read_record(folder)["entries"]
    ['logs/', 'logs/a.txt']
    """
    by_owner: dict[str, set[str]] = {}
    for path in paths:
        is_folder = path.endswith(("/", os.sep))
        owner = owner_of(path)
        if owner is None:
            continue
        relative = _relative(os.path.abspath(path), owner)
        if relative.startswith("../") or relative == "..":
            continue
        parts = relative.split("/")
        names = by_owner.setdefault(owner, set())
        for depth in range(1, len(parts)):
            names.add("/".join(parts[:depth]) + "/")
        names.add(relative + ("/" if is_folder else ""))
    for owner, names in by_owner.items():
        record = read_record(owner)
        if record is None or names <= set(record["entries"]):
            continue
        write_record(owner, record["kind"], set(record["entries"]) | names)


def claim_below(folder: str, names: Iterable[str]) -> list[str]:
    """Claims every entry below ``folder``'s ``names`` (files or folders,
    at any depth) that its record does not list yet: what libraries wrote
    there under names they choose; recorded entries below ``names`` that
    are gone are dropped. ``folder`` without a record is left as it is.

    Only for subfolders this command writes, after the command's start
    refused any foreign entry there (``output_targets.check_target``).

    Returns:
        The entries claimed, relative to ``folder``.
    """
    record = read_record(folder)
    if record is None:
        return []
    recorded = set(record["entries"])
    found = []
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            found.append(name.rstrip("/") + "/")
            for root, dirs, files in os.walk(path):
                if _is_marked(root) or (
                    root != path and read_record(root) is not None
                ):
                    dirs[:] = []
                    continue
                relative = _relative(root, folder)
                found += [f"{relative}/{d}/" for d in dirs]
                found += [f"{relative}/{f}" for f in files]
        elif os.path.lexists(path):
            found.append(name)
    new = sorted(set(found) - recorded)
    # What the libraries deleted again (Keras keeps its last checkpoints
    # only) leaves the record, so that it does not grow with every epoch;
    # files here are recorded after they appear, never before.
    prefixes = tuple(name.rstrip("/") + "/" for name in names)
    gone = {
        entry
        for entry in recorded
        if entry.startswith(prefixes) and entry not in found
    }
    if new or gone:
        record = read_record(folder)
        entries = (set(record["entries"]) - gone) | set(new)
        write_record(folder, record["kind"], entries)
    return new


def mark_staging(folder: str, target: str) -> None:
    """Marks ``folder`` as a staging folder of ``target``: the leftover of
    a killed write, removed by the next writer of ``target``."""
    with open(os.path.join(folder, STAGING_MARKER), "w") as handle:
        json.dump({"target": os.path.abspath(target)}, handle)


def staging_target(folder: str) -> str | None:
    """The target a marked staging folder was written for, else None."""
    path = os.path.join(folder, STAGING_MARKER)
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            target = json.load(handle).get("target")
    except (OSError, ValueError, AttributeError):
        return None
    return target if isinstance(target, str) else None


def _is_marked(folder: str) -> bool:
    return staging_target(folder) is not None


def _is_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def entries_below(folder: str) -> Iterator[Entry]:
    """Every entry below the owned folder ``folder``, children before
    their folder, each marked owned or foreign.

    A folder with its own record is examined against that record when the
    parent's record lists it; unlisted, it is foreign as a whole. A marked
    staging folder is owned as a whole. A folder that is not recorded is
    owned only when it holds foreign entries (named instead of it).
    """
    yield from _walk(folder, _recorded(folder), "", "")


def _recorded(folder: str) -> set[str]:
    record = read_record(folder)
    return set(record["entries"]) if record else set()


def _walk(
    folder: str, recorded: set[str], relative: str, prefix: str
) -> Iterator[Entry]:
    here = os.path.join(folder, *relative.split("/")) if relative else folder
    try:
        names = sorted(os.listdir(here))
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        rel = relative + name
        path = os.path.join(here, name)
        shown = prefix + rel
        if not relative and _is_record_file(name):
            yield Entry(shown, path, False, True)
        elif not _is_dir(path):
            yield Entry(shown, path, False, rel in recorded)
        elif _is_marked(path):
            for root, dirs, files in os.walk(path, topdown=False):
                for entry in files + dirs:
                    inner = os.path.join(root, entry)
                    yield Entry(
                        shown + "/" + _relative(inner, path),
                        inner,
                        _is_dir(inner),
                        True,
                    )
            yield Entry(shown + "/", path, True, True)
        elif read_record(path) is not None:
            if rel + "/" in recorded:
                yield from _walk(path, _recorded(path), "", shown + "/")
                yield Entry(shown + "/", path, True, True)
            else:
                yield Entry(shown + "/", path, True, False)
        else:
            below = list(_walk(folder, recorded, rel + "/", prefix))
            yield from below
            owned = rel + "/" in recorded or any(not e.owned for e in below)
            yield Entry(shown + "/", path, True, owned)


def foreign_entries(folder: str) -> list[str]:
    """What ``folder`` holds that this tool did not record, at any depth,
    as paths relative to it (folders with a trailing ``/``), sorted.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> start_record(folder, "thing")
    >>> claim([os.path.join(folder, "run.json")])
    >>> for name in ("run.json", "notes.txt"):
    ...     open(os.path.join(folder, name), "w").close()
    >>> foreign_entries(folder)
    ['notes.txt']
    """
    return sorted(e.shown for e in entries_below(folder) if not e.owned)


def describe(entries: list[str]) -> str:
    """The first entries, and how many more.

    >>> describe(["a", "b/"])
    'a, b/'
    >>> describe([str(n) for n in range(7)])
    '0, 1, 2, 3, 4 and 2 more'
    """
    shown = entries[:SHOWN_ENTRIES]
    more = len(entries) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def owned_entries(folder: str, consequence: str) -> list[Entry]:
    """``entries_below(folder)``, all of them the tool's; else refused.

    The one test of a folder the tool may replace or empty: it has a
    record (or is empty) and holds no foreign entry.

    Args:
        folder: str. An existing folder (a symbolic link to one is
            followed).
        consequence: str. What the refusal means, for the message: "so
            <consequence>" (e.g. "this run directory is not replaced").

    Raises:
        OutputError: no record (the folder's entries named), or foreign
            entries (named); nothing is removed or written.
    """
    real = os.path.realpath(folder)
    if read_record(real) is None:
        if not os.listdir(real):
            return []
        raise OutputError(
            f"{folder!r} has no record of what tfrec-tricks wrote there, so "
            f"{consequence} ({describe(sorted(os.listdir(real)))}). Nothing "
            "was written or removed."
        )
    entries = list(entries_below(real))
    foreign = sorted(e.shown for e in entries if not e.owned)
    if foreign:
        raise OutputError(
            f"{folder!r} holds entries tfrec-tricks did not write "
            f"({describe(foreign)}), so {consequence}; move them out first. "
            "Nothing was written or removed."
        )
    return entries


def remove_owned(folder: str, what: str = "folder") -> None:
    """Removes what ``folder``'s records list (and marked staging folders
    in it), deepest first; ``folder`` itself stays, empty.

    Refuses first, removing nothing, when ``folder`` holds a foreign entry
    or has no record. A folder is removed only if it ends empty.

    Args:
        folder: str. An owned folder (a symbolic link to one: its target's
            contents are removed, the link stays).
        what: str. What the folder is, for the message ("run directory").

    Raises:
        OutputError: no record, or foreign entries (named).
    """
    real = os.path.realpath(folder)
    if not _is_dir(real):
        return
    entries = owned_entries(folder, f"this {what} is not replaced")
    record_files = []
    for entry in entries:
        if os.path.dirname(entry.path) == real and _is_record_file(
            os.path.basename(entry.path)
        ):
            record_files.append(entry.path)
        elif entry.is_dir:
            try:
                os.rmdir(entry.path)
            except OSError:
                # Not empty: something appeared since the check; kept.
                pass
        else:
            try:
                os.remove(entry.path)
            except FileNotFoundError:
                pass
    # Last: a removal killed half-way leaves a folder still recorded.
    for path in record_files:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def leftovers(target: str) -> list[str]:
    """The marked staging folders killed writers of ``target`` left: beside
    it (marked for ``target`` or an entry of it) and anywhere in it, except
    inside folders with their own record (their own writers' to remove).

    Only safe to remove while holding ``target``'s lock.
    """
    real = os.path.realpath(target)
    parent, name = os.path.split(real)
    found = []
    for entry in _listdir(parent):
        path = os.path.join(parent, entry)
        marked_for = staging_target(path) if _is_dir(path) else None
        if marked_for is None or path == real:
            continue
        # By name as well as by path: a moved folder's markers still name
        # their own target's folder name.
        if os.path.basename(marked_for) == name or _inside(marked_for, real):
            found.append(path)
    if _is_dir(real):
        for root, dirs, _ in os.walk(real):
            kept = []
            for entry in dirs:
                path = os.path.join(root, entry)
                if _is_marked(path):
                    found.append(path)
                elif read_record(path) is None:
                    kept.append(entry)
            dirs[:] = kept
    return sorted(found)


def remove_leftovers(target: str) -> list[str]:
    """Removes ``leftovers(target)``; returns what was removed."""
    removed = leftovers(target)
    for path in removed:
        shutil.rmtree(path, ignore_errors=True)
    return removed


def _is_record_file(name: str) -> bool:
    """The record, or its temporary file (``write_record``): never a
    user's ``.tfrec-tricks-owned.json.bak``."""
    if name == RECORD_FILE:
        return True
    pid, _, suffix = name[len(RECORD_FILE) + 1 :].partition(".")
    return (
        name.startswith(RECORD_FILE + ".") and pid.isdigit() and suffix == "tmp"
    )


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return os.path.commonpath([path, folder]) == folder


def _listdir(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
