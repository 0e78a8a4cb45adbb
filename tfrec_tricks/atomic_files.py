"""Folders published in one rename, and file hashes to check them by.

Run directories' models and prepared datasets are written aside under a
temporary name and renamed into place when complete: a reader sees the old
folder or the new one, never half of one.
"""

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable


def file_sha256(path: str) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def publish_directory(
    target: str, write: Callable[[str], None], replace: bool = False
) -> str:
    """Writes a folder with ``write(staging)``, then renames it to ``target``.

    Args:
        target: str. The folder to publish.
        write: called with the staging folder (a sibling of ``target``
            named ``.<name>-<random>``) to fill it.
        replace: bool. Replace an existing ``target`` (else it must not
            exist: ``FileExistsError``, checked before ``write`` runs).

    Returns:
        ``target``.
    """
    target = os.path.normpath(target)
    if os.path.exists(target) and not replace:
        raise FileExistsError(f"{target!r} already exists.")
    parent, name = os.path.split(target)
    parent = parent or "."
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f".{name}-", dir=parent)
    try:
        write(staging)
        if os.path.exists(target):
            old = tempfile.mkdtemp(prefix=f".old-{name}-", dir=parent)
            os.rename(target, os.path.join(old, name))
            shutil.rmtree(old)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
