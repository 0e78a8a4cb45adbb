"""What this tool wrote, by record: the only entries it ever removes.

Every folder a command writes (a run directory, a search folder, a
prepared dataset, a model's folder of versions and each version, a run's
``model/``, an ablation report) holds a record, ``.tfrec-tricks-owned.json``:

    {"format": 1, "kind": "run directory",
     "entries": ["run.json", "checkpoints/", "tensorboard/"],
     "whole": ["backup/", "checkpoints/", "tensorboard/"]}

``entries`` are paths relative to the folder, ``/``-separated, folders
with a trailing ``/``. A folder the tool wrote inside an owned folder
(``model/`` in a run, ``1/`` in a model's folder of versions, a retrained
run in a search's ``selection/``) holds its own record and is listed in
its parent's.

``whole`` lists the folders owned as a whole: those that libraries write
under names they choose (Keras' checkpoints and backups, TensorBoard's
event files, KerasTuner's trials). Everything below them, at any depth,
is the tool's, recorded or not, as a build folder is. They are listed
before the command creates them (``start_record``), so that no moment
leaves a library's file unowned: a command killed at any point is resumed
or replaced by the same command. A record written before ``whole``
existed owns its kind's library folders (``IMPLIED_WHOLE``).

Ownership is never guessed from names alone: ``--overwrite`` and the
removal of what killed writers left delete only

- recorded entries and what whole-owned folders hold (``remove_owned``);
- staging folders that carry the tool's marker file,
  ``.tfrec-tricks-staging`` (``mark_staging``): the folders a write is
  prepared in before one rename publishes it;
- the tool's temporaries, which hold nothing of anyone's: the record's
  temporary file (``.tfrec-tricks-owned.json.<pid>.tmp``), and a folder
  named as a staging folder (``.<name>.<8 characters>.staging``, ``.old``
  or ``.tmp``) that is empty or holds its marker file only (a writer
  killed before or while it wrote the marker). A folder holding nothing
  else is empty.

Anything else in an owned folder, at any depth, is *foreign*
(``foreign_entries``): a target that holds a foreign entry is refused,
naming it, and nothing in it is removed.

Names the tool chooses (``run.json``, ``history.csv``) are recorded before
they are written, so a killed write leaves nothing unrecorded.
"""

import contextlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from typing import IO, NamedTuple

from tfrec_tricks.errors import OutputError

RECORD_FILE = ".tfrec-tricks-owned.json"
RECORD_FORMAT = 1
STAGING_MARKER = ".tfrec-tricks-staging"
# The record's list of folders owned as a whole
# (docs/decisions.md#library-folders).
WHOLE = "whole"
# The library folders of the kinds whose records were written before
# ``whole`` existed (tfrec-tricks 0.1.0): what their libraries wrote there
# was claimed after the fact, so a crash could leave it unclaimed.
IMPLIED_WHOLE = {
    "run directory": ("backup/", "checkpoints/", "tensorboard/"),
    "search folder": ("search/", "tensorboard/"),
}
# A staging folder's name: ``tempfile.mkdtemp``'s 8 random characters
# between the target's name and the suffix (``atomic_files``).
STAGING_NAME = re.compile(r"\.(.+)\.[a-z0-9_]{8}\.(?:staging|old|tmp)")
# Foreign entries named in a message.
SHOWN_ENTRIES = 5


class Entry(NamedTuple):
    """One entry below an owned folder.

    Attributes:
        shown: str. Its path relative to the folder examined, ``/``-separated,
            a folder with a trailing ``/``.
        path: str. Its path on disk.
        is_dir: bool. A folder (not a symbolic link to one).
        owned: bool. Recorded, the record itself, below a folder owned
            as a whole, in a staging folder of the tool's, or a folder
            holding only such entries.
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
        or not isinstance(record.get(WHOLE, []), list)
        or not all(
            isinstance(e, str) and e.endswith("/")
            for e in record.get(WHOLE, [])
        )
    ):
        return None
    return record


def whole_folders(record: dict) -> frozenset[str]:
    """The folders ``record`` owns as a whole: relative, ``/``-separated,
    with a trailing ``/``.

    >>> sorted(whole_folders({"kind": "x", "entries": [], "whole": ["a/"]}))
    ['a/']
    >>> sorted(whole_folders({"kind": "search folder", "entries": []}))
    ['search/', 'tensorboard/']
    """
    if WHOLE in record:
        return frozenset(record[WHOLE])
    return frozenset(IMPLIED_WHOLE.get(record["kind"], ()))


def record_kind(folder: str) -> str | None:
    """The kind ``folder``'s record names, or None without a record."""
    record = read_record(folder)
    return None if record is None else record["kind"]


def write_record(
    folder: str,
    kind: str,
    entries: Iterable[str],
    whole: Iterable[str] | None = None,
) -> None:
    """Writes ``folder``'s record: ``kind`` and ``entries`` (relative,
    ``/``-separated, folders with a trailing ``/``), replacing any.

    The record is written under a temporary name and renamed; one writer
    per owned folder (the target's lock), so the temporary name is the
    process's, and the foreign check counts it as part of the record.

    Args:
        folder: str. The owned folder.
        kind: str. What it is ("run directory").
        entries: what the tool wrote (or will write) in it.
        whole: the folders owned as a whole (``WHOLE``), or None for a
            record without the list (its kind's ``IMPLIED_WHOLE``).
    """
    record = {
        "format": RECORD_FORMAT,
        "kind": kind,
        "entries": sorted(set(entries)),
    }
    if whole is not None:
        record[WHOLE] = sorted(set(whole))
    path = os.path.join(folder, RECORD_FILE)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=1)
            synced(handle)
        os.replace(temporary, path)
    except BaseException:
        # A full disk: the old record stands, and no temporary stays.
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise


def start_record(folder: str, kind: str, whole: Iterable[str] = ()) -> None:
    """Gives ``folder`` (created if missing) a record of ``kind``, keeping
    an existing record of the same kind, and lists ``folder`` in the
    record of the nearest owned folder above it, if any.

    Args:
        folder: str. The folder a command writes.
        kind: str. What it is.
        whole: its subfolders that libraries write (e.g. "checkpoints"),
            owned as a whole from now on (``WHOLE``): called before any
            library writes there. An existing record gains those it lacks.

    Raises:
        OutputError: ``folder`` holds a record of another kind.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> start_record(folder, "thing", whole=["logs"])
    >>> os.makedirs(os.path.join(folder, "logs", "day1"))
    >>> open(os.path.join(folder, "logs", "day1", "x.log"), "w").close()
    >>> foreign_entries(folder)
    []
    """
    os.makedirs(folder, exist_ok=True)
    record = read_record(folder)
    if record is not None and record["kind"] != kind:
        raise OutputError(
            f"{folder!r} holds a {record['kind']}, not a {kind}. Received: "
            f"kind={kind!r}"
        )
    claim([folder.rstrip("/" + os.sep) + os.sep])
    wanted = {name.strip("/") + "/" for name in whole}
    if record is None:
        write_record(folder, kind, wanted, wanted or None)
    elif not wanted <= set(record.get(WHOLE, ())):
        owned = whole_folders(record) | wanted
        write_record(folder, kind, set(record["entries"]) | owned, owned)


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
        if _below_whole(relative, owner):
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
        write_record(
            owner,
            record["kind"],
            set(record["entries"]) | names,
            record.get(WHOLE),
        )


def _below_whole(relative: str, owner: str) -> bool:
    """Whether ``relative`` (to ``owner``) lies below a folder ``owner``
    owns as a whole: owned without a claim."""
    record = read_record(owner)
    return record is not None and any(
        relative.startswith(folder) for folder in whole_folders(record)
    )


def mark_staging(folder: str, target: str) -> None:
    """Marks ``folder`` as a staging folder of ``target``: the leftover of
    a killed write, removed by the next writer of ``target``."""
    with open(os.path.join(folder, STAGING_MARKER), "w") as handle:
        json.dump({"target": os.path.abspath(target)}, handle)
        synced(handle)


def synced(handle: IO) -> None:
    """Flushes the open file ``handle`` to the disk: renamed into place
    after this, it is whole after a power loss, never empty."""
    handle.flush()
    os.fsync(handle.fileno())


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


def _is_stillborn(folder: str) -> bool:
    """A folder named as a staging folder that holds nothing but, maybe, a
    marker file (readable or not): a writer killed before or while it
    marked it. Nothing of anyone's is in it.

    >>> import os, tempfile
    >>> folder = os.path.join(tempfile.mkdtemp(), ".model.k1ll3d00.staging")
    >>> os.mkdir(folder)
    >>> _is_stillborn(folder)
    True
    >>> open(os.path.join(folder, "photo.jpg"), "w").close()
    >>> _is_stillborn(folder)
    False
    """
    if not STAGING_NAME.fullmatch(os.path.basename(folder)):
        return False
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    marker = os.path.join(folder, STAGING_MARKER)
    return not names or (
        names == [STAGING_MARKER]
        and os.path.isfile(marker)
        and not os.path.islink(marker)
    )


def _is_staging(folder: str) -> bool:
    """A staging folder of the tool's: marked, or stillborn."""
    return _is_dir(folder) and (_is_marked(folder) or _is_stillborn(folder))


def remove_staging(folder: str) -> None:
    """Removes a staging folder of the tool's, its marker last: a removal
    cut short (killed, or a file that cannot be removed) leaves a folder
    still marked, never an unmarked one with files in it."""
    for name in _listdir(folder):
        if name == STAGING_MARKER:
            continue
        path = os.path.join(folder, name)
        if _is_dir(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.remove(path)
    if set(_listdir(folder)) <= {STAGING_MARKER}:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(folder, STAGING_MARKER))
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _is_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def entries_below(folder: str) -> Iterator[Entry]:
    """Every entry below the owned folder ``folder``, children before
    their folder, each marked owned or foreign.

    A folder with its own record is examined against that record when the
    parent's record lists it; unlisted, it is foreign as a whole. A folder
    owned as a whole (``WHOLE``) and a staging folder of the tool's are
    owned with everything in them. A folder that is not recorded is owned
    only when it holds foreign entries (named instead of it). An owned
    folder's record comes after its other entries, and a staging folder's
    marker after the other files in it: a removal in this order, cut
    short, leaves what remains still owned.
    """
    yield from _walk(folder, read_record(folder), "", "")


def _walk(
    folder: str, record: dict | None, relative: str, prefix: str
) -> Iterator[Entry]:
    recorded = set(record["entries"]) if record else set()
    whole = whole_folders(record) if record else frozenset()
    here = os.path.join(folder, *relative.split("/")) if relative else folder
    try:
        names = sorted(os.listdir(here))
    except (FileNotFoundError, NotADirectoryError):
        return
    records = []
    for name in names:
        rel = relative + name
        path = os.path.join(here, name)
        shown = prefix + rel
        if not relative and _is_record_file(name):
            records.append(Entry(shown, path, False, True))
        elif not _is_dir(path):
            owned = rel in recorded or _is_record_temporary(name)
            yield Entry(shown, path, False, owned)
        elif rel + "/" in whole or _is_staging(path):
            yield from _all_below(path, shown)
        elif read_record(path) is not None:
            if rel + "/" in recorded:
                yield from _walk(path, read_record(path), "", shown + "/")
                yield Entry(shown + "/", path, True, True)
            else:
                yield Entry(shown + "/", path, True, False)
        else:
            below = list(_walk(folder, record, rel + "/", prefix))
            yield from below
            owned = rel + "/" in recorded or any(not e.owned for e in below)
            yield Entry(shown + "/", path, True, owned)
    yield from records


def _all_below(folder: str, shown: str) -> Iterator[Entry]:
    """Everything below ``folder``, owned, children first; a staging
    marker after the other entries of its folder; then ``folder``."""
    for root, dirs, files in os.walk(folder, topdown=False):
        names = sorted(files, key=lambda name: name == STAGING_MARKER)
        for entry in dirs + names:
            inner = os.path.join(root, entry)
            yield Entry(
                shown + "/" + _relative(inner, folder),
                inner,
                _is_dir(inner),
                True,
            )
    yield Entry(shown + "/", folder, True, True)


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
        if holds_nothing(real):
            return list(_temporaries(real))
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


def _temporaries(folder: str) -> Iterator[Entry]:
    """The tool's temporaries at the top of ``folder``: the record's
    temporary files and staging folders (with what they hold)."""
    for name in sorted(_listdir(folder)):
        path = os.path.join(folder, name)
        if _is_staging(path):
            yield from _all_below(path, name)
        elif _is_record_temporary(name) and not _is_dir(path):
            yield Entry(name, path, False, True)


def holds_nothing(folder: str) -> bool:
    """Whether ``folder`` is empty but for the tool's temporaries: a
    record's temporary file, staging folders (a folder whose first record
    a killed writer never completed).

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> holds_nothing(folder)
    True
    >>> open(os.path.join(folder, RECORD_FILE + ".42.tmp"), "w").close()
    >>> holds_nothing(folder)
    True
    >>> open(os.path.join(folder, "notes.txt"), "w").close()
    >>> holds_nothing(folder)
    False
    """
    tops = {entry.path for entry in _temporaries(folder)}
    return all(os.path.join(folder, name) in tops for name in _listdir(folder))


def remove_owned(folder: str, what: str = "folder") -> None:
    """Removes what ``folder``'s records list (and marked staging folders
    in it), deepest first; ``folder`` itself stays, empty.

    Refuses first, removing nothing, when ``folder`` holds a foreign entry
    or has no record (but for a folder holding only the tool's
    temporaries, ``holds_nothing``). A folder is removed only if it ends
    empty.

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
    """What killed writers of ``target`` left: staging folders of the
    tool's (marked or stillborn) beside it (marked for ``target`` or an
    entry of it, or named for it) and anywhere in it, and the record's
    temporary files in it; except inside folders with their own record
    (their own writers' to remove).

    Only safe to remove while holding ``target``'s lock.
    """
    real = os.path.realpath(target)
    parent, name = os.path.split(real)
    found = []
    for entry in _listdir(parent):
        path = os.path.join(parent, entry)
        if path == real or not _is_dir(path):
            continue
        marked_for = staging_target(path)
        if marked_for is not None:
            # By name as well as by path: a moved folder's markers still
            # name their own target's folder name.
            if os.path.basename(marked_for) == name or _inside(
                marked_for, real
            ):
                found.append(path)
        elif _is_stillborn(path):
            named = STAGING_NAME.fullmatch(entry)
            if named and named.group(1) == name:
                found.append(path)
    if _is_dir(real):
        for root, dirs, files in os.walk(real):
            found += [
                os.path.join(root, file)
                for file in files
                if _is_record_temporary(file)
            ]
            kept = []
            for entry in dirs:
                path = os.path.join(root, entry)
                if _is_staging(path):
                    found.append(path)
                elif read_record(path) is None:
                    kept.append(entry)
            dirs[:] = kept
    return sorted(found)


def remove_leftovers(target: str) -> list[str]:
    """Removes ``leftovers(target)``; returns what was removed."""
    removed = leftovers(target)
    for path in removed:
        if _is_dir(path):
            remove_staging(path)
        else:
            with contextlib.suppress(OSError):
                os.remove(path)
    return removed


def _is_record_file(name: str) -> bool:
    """The record, or its temporary file (``write_record``): never a
    user's ``.tfrec-tricks-owned.json.bak``."""
    return name == RECORD_FILE or _is_record_temporary(name)


def _is_record_temporary(name: str) -> bool:
    """The record's temporary file (``write_record``), wherever a killed
    writer left it (a folder whose first record it never completed).

    >>> _is_record_temporary(RECORD_FILE + ".4242.tmp")
    True
    >>> _is_record_temporary(RECORD_FILE + ".bak")
    False
    """
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
