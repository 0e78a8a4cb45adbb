"""Files and folders published in one rename, with the umask's modes.

Run directories' models, prepared datasets and exported versions are
written aside under a temporary name and renamed into place when complete:
a reader sees the old folder or the new one, never half of one. Small files
(``run.json``, ``models.config``) are replaced the same way.

Temporary names are recognisable, so that the next command that writes the
same target, holding its lock (``tfrec_tricks.output_targets``), removes
what a killed process left behind (``remove_leftovers``):

- ``.<name>.<random>.staging`` and ``.<name>.<random>.old``: folders beside
  a published folder ``<name>``;
- ``.<name>.<random>.tmp``: a file beside ``<name>``.

``tempfile`` creates its files 0600 and its folders 0700 whatever the
umask; what is published here gets the modes the umask gives (0644 / 0755
under umask 022), so that a TF Serving process running as another user can
read it. A replaced file keeps its mode.
"""

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable

# tempfile's random part: 8 characters of this alphabet.
_RANDOM = "[a-z0-9_]{8}"
# What older versions of this package left: ``.<name>-<random>`` and
# ``.old-<name>-<random>`` folders beside a target; ``.tmp-<random>`` files
# and ``.tmp-<version>-<random>`` export folders inside one.
_LEGACY_FOLDERS = (r"\.{name}-{random}", r"\.old-{name}-{random}")
_LEGACY_INSIDE = re.compile(rf"\.tmp-([0-9]+-)?{_RANDOM}")


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
    os.chmod(folder, default_mode(folder=True))
    return folder


def publish_directory(
    target: str, write: Callable[[str], None], replace: bool = False
) -> str:
    """Writes a folder with ``write(staging)``, then renames it to ``target``.

    Args:
        target: str. The folder to publish.
        write: called with the staging folder (a sibling of ``target``
            named ``.<name>.<random>.staging``, mode from the umask) to
            fill it.
        replace: bool. Replace an existing ``target`` (else it must not
            exist: ``FileExistsError``, checked before ``write`` runs).
            The caller decides that ``target`` is its own to replace
            (``output_targets.check_target``).

    Returns:
        ``target``.
    """
    target = os.path.normpath(target)
    if os.path.exists(target) and not replace:
        raise FileExistsError(f"{target!r} already exists.")
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    staging = _staging_folder(target, ".staging")
    try:
        write(staging)
        if os.path.exists(target):
            old = _staging_folder(target, ".old")
            os.rename(target, os.path.join(old, "replaced"))
            shutil.rmtree(old)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def write_text_atomic(path: str, text: str) -> str:
    """Replaces ``path`` with ``text`` in one rename.

    The text goes to ``.<name>.<random>.tmp`` beside ``path`` first. A new
    file gets the umask's mode, an existing one keeps its own.

    Returns:
        ``path``.
    """
    folder, name = os.path.split(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = default_mode(folder=False)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{name}.", suffix=".tmp", dir=folder
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    return path


def leftovers(target: str) -> list[str]:
    """What killed writers of ``target`` left: staging and old folders
    beside it, temporary files beside it and directly inside it.

    Only safe to remove while holding ``target``'s lock: then no live
    process is writing any of them.
    """
    target = os.path.normpath(os.path.abspath(target))
    parent, name = os.path.split(target)
    name = re.escape(name)
    beside = [
        re.compile(rf"\.{name}\.{_RANDOM}\.(staging|old|tmp)"),
        *(
            re.compile(pattern.format(name=name, random=_RANDOM))
            for pattern in _LEGACY_FOLDERS
        ),
    ]
    found = [
        os.path.join(parent, entry)
        for entry in _entries(parent)
        if any(p.fullmatch(entry) for p in beside)
    ]
    inside = re.compile(rf"\..+\.{_RANDOM}\.(staging|old|tmp)")
    found += [
        os.path.join(target, entry)
        for entry in _entries(target)
        if inside.fullmatch(entry) or _LEGACY_INSIDE.fullmatch(entry)
    ]
    return sorted(found)


def remove_leftovers(target: str) -> list[str]:
    """Removes ``leftovers(target)``; returns what was removed."""
    removed = leftovers(target)
    for path in removed:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
    return removed


def _entries(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
