"""Files and folders published in one rename, with the umask's modes.

Run directories' models, prepared datasets and exported versions are
written aside and renamed into place when complete: a reader sees the old
folder or the new one, never half of one. Small files (``run.json``,
``models.config``) are replaced the same way.

Everything is written in a staging folder that carries the tool's marker
(``ownership.mark_staging``), and moved out of it by one rename:
``.<name>.<random>.staging/<name>/`` beside a published folder ``<name>``,
``.<name>.<random>.old`` for the folder it replaces,
``.<name>.<random>.tmp`` beside a file ``<name>``. Until that rename the
write lies in a marked folder, and after it the folder is published: no
moment leaves an unmarked half of one. The staging folder is removed
last, its marker after the rest (``ownership.remove_staging``). The next
command that writes the same target, holding its lock
(``tfrec_tricks.output_folders``), removes what a killed process left:
only staging folders of the tool's (``ownership.remove_leftovers``), never
a name that merely looks like one.

What is published is recorded (``tfrec_tricks.ownership``): a published
folder holds the record of every file in it, and is listed, like a written
file, in the record of the nearest owned folder above it.

``tempfile`` creates its files 0600 and its folders 0700 whatever the
umask; what is published here gets the modes the umask gives (0644 / 0755
under umask 022), so that a TF Serving process running as another user can
read it. A replaced file keeps its mode.
"""

import hashlib
import os
import tempfile
from collections.abc import Callable

from tfrec_tricks import ownership
from tfrec_tricks.ownership import leftovers, remove_leftovers

__all__ = [
    "current_umask",
    "default_mode",
    "file_sha256",
    "leftovers",
    "make_folders",
    "publish_directory",
    "remove_empty_folders",
    "remove_leftovers",
    "write_text_atomic",
]


def file_sha256(path: str) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def current_umask() -> int:
    """The process's umask, read without changing it where Linux allows.

    >>> 0 <= current_umask() <= 0o777
    True
    """
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_mode(folder: bool) -> int:
    """The mode ``open`` / ``mkdir`` would give under the current umask.

    >>> import os
    >>> old = os.umask(0o022)
    >>> oct(default_mode(folder=False)), oct(default_mode(folder=True))
    ('0o644', '0o755')
    >>> _ = os.umask(old)
    """
    return (0o777 if folder else 0o666) & ~current_umask()


def make_folders(path: str) -> list[str]:
    """``os.makedirs(path, exist_ok=True)``; returns the folders it created,
    outermost first, so that a refused command can remove them again
    (``remove_empty_folders``)."""
    created = []
    path = os.path.abspath(path)
    while not os.path.exists(path):
        created.append(path)
        path = os.path.dirname(path)
    for folder in reversed(created):
        os.makedirs(folder, exist_ok=True)
    return list(reversed(created))


def remove_empty_folders(folders: list[str]) -> None:
    """Removes ``folders`` (innermost first) where they are empty."""
    for folder in reversed(folders):
        try:
            os.rmdir(folder)
        except OSError:
            return


def _staging_folder(target: str, suffix: str) -> str:
    parent, name = os.path.split(os.path.abspath(target))
    folder = tempfile.mkdtemp(prefix=f".{name}.", suffix=suffix, dir=parent)
    try:
        # Marked at once: a marked folder is removed as a leftover (and an
        # empty one, or one holding a marker cut short, by its name).
        ownership.mark_staging(folder, target)
    except BaseException:
        ownership.remove_staging(folder)
        raise
    return folder


def _record_tree(folder: str, kind: str) -> None:
    """Records everything ``write`` put in ``folder``."""
    entries = []
    for root, dirs, files in os.walk(folder):
        relative = os.path.relpath(root, folder).replace(os.sep, "/")
        prefix = "" if relative == "." else relative + "/"
        entries += [prefix + d + "/" for d in dirs]
        entries += [prefix + f for f in files]
    ownership.write_record(folder, kind, entries)


def publish_directory(
    target: str,
    write: Callable[[str], None],
    replace: bool = False,
    kind: str = "folder",
) -> str:
    """Writes a folder with ``write(staging)``, then renames it to ``target``.

    The published folder holds the record of every file ``write`` wrote
    (``tfrec_tricks.ownership``), and is listed in the record of the
    nearest owned folder above it. A symbolic link as ``target`` is
    followed: the folder it points to is replaced, the link stays.

    Args:
        target: str. The folder to publish.
        write: called with the folder to fill: ``<name>`` inside a
            marked staging folder beside ``target``
            (``.<name>.<random>.staging``), mode from the umask.
        replace: bool. Replace an existing ``target`` (else it must not
            exist: ``FileExistsError``, checked before ``write`` runs).
            The caller decides that ``target`` is its own to replace
            (``output_folders.check_target``); only a folder whose every
            entry is recorded is replaced.
        kind: str. What the folder is, recorded in it (e.g. "model").

    Returns:
        ``target``.

    Raises:
        OutputError: ``replace`` and ``target`` holds entries this tool
            did not write (named); nothing is published or removed.
    """
    target = os.path.normpath(target)
    real = os.path.realpath(target)
    if os.path.exists(real) and not replace:
        raise FileExistsError(f"{target!r} already exists.")
    os.makedirs(os.path.dirname(real), exist_ok=True)
    if replace:
        _check_replaceable(target, real)
    staging = _staging_folder(real, ".staging")
    try:
        folder = os.path.join(staging, os.path.basename(real))
        os.mkdir(folder)
        write(folder)
        _record_tree(folder, kind)
        # Listed in its parent's record before it appears there.
        ownership.claim([real + os.sep])
        if os.path.exists(real):
            _check_replaceable(target, real)
            withdraw_directory(real)
        # Out of the marked folder in one rename: published.
        os.rename(folder, real)
    finally:
        ownership.remove_staging(staging)
    return target


def withdraw_directory(folder: str) -> None:
    """Removes ``folder`` after moving it into a marked ``.old`` staging
    folder beside it, so that a reader (a server polling for versions)
    never sees half of it, and a removal cut short leaves a leftover the
    next command removes (a marked folder), never a foreign one."""
    try:
        old = _staging_folder(folder, ".old")
    except OSError:
        # A full disk may refuse even the staging folder: removed in
        # place, its record last (``ownership.remove_owned``), so that a
        # removal cut short leaves a folder still recorded.
        ownership.remove_owned(folder)
        os.rmdir(folder)
        return
    os.rename(folder, os.path.join(old, "replaced"))
    ownership.remove_staging(old)


def _check_replaceable(target: str, real: str) -> None:
    """Refuses to replace a folder holding what this tool did not write."""
    if os.path.isdir(real):
        ownership.owned_entries(target, "it is not replaced")


def write_text_atomic(path: str, text: str) -> str:
    """Replaces ``path`` with ``text`` in one rename.

    The text is written in a marked staging folder beside ``path``
    (``.<name>.<random>.tmp/``), moved out over ``path``, and the folder
    removed. A new file gets the umask's mode, an existing one keeps its
    own. ``path`` is listed in the record of the nearest owned folder
    above it (before it is written: a killed write leaves nothing
    unrecorded).

    Returns:
        ``path``.
    """
    folder, name = os.path.split(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = default_mode(folder=False)
    ownership.claim([path])
    staging = _staging_folder(path, ".tmp")
    temporary = os.path.join(staging, name)
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
            ownership.synced(out)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        ownership.remove_staging(staging)
    return path
