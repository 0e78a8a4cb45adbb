"""Lists of raw ids a recommendation job reads: users, allowed, denied items.

``tfrec-tricks recommend --users FILE`` (and ``--items``,
``--exclude-items``) reads one raw id a line (``read_id_list``); Python
callers pass a list. Either way every id is checked against what the run
knows (``check_known``), and an unknown one is named where it was given:
``users.txt:3`` for a file, ``users[2]`` for a list.
"""

import os
from collections.abc import Iterable, Sequence

from tfrec_tricks.errors import DataError


class IdList(list):
    """Raw ids read from a file, each with the line it was on.

    A ``list`` of str, so it goes wherever a list of ids does; the lines
    let a check name ``file:line`` (``where``).

    Args:
        ids: the raw ids, in file order.
        source: str. The file they were read from.
        lines: the 1-based line number of each id.

    Example:

    >>> ids = IdList(["u1", "u7"], "users.txt", [1, 3])
    >>> ids, where(ids, 1, "users")
    (['u1', 'u7'], 'users.txt:3')
    """

    def __init__(self, ids: Iterable[str], source: str, lines: Iterable[int]):
        super().__init__(ids)
        self.source = source
        self.lines = list(lines)
        if len(self.lines) != len(self):
            raise ValueError(
                "`lines` must give one line number per id. Received: "
                f"{len(self)} ids, {len(self.lines)} line numbers"
            )


def where(ids: Sequence[str], index: int, name: str) -> str:
    """Where ``ids[index]`` was given: ``file:line``, or ``name[index]``.

    >>> where(["a", "b"], 1, "items")
    'items[1]'
    """
    if isinstance(ids, IdList):
        return f"{ids.source}:{ids.lines[index]}"
    return f"{name}[{index}]"


def read_id_list(path: str) -> IdList:
    """Reads one raw id a line from the UTF-8 file at ``path``.

    Surrounding white space is stripped and blank lines are skipped; a
    byte order mark is dropped. Every other line is an id, as written.

    Args:
        path: str. The file.

    Returns:
        An ``IdList`` (ids in file order, with their line numbers).

    Raises:
        DataError: the file is missing or a folder, a line is not UTF-8
            (named ``file:line``), or the file holds no id.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "users.txt")
    >>> _ = open(path, "w").write("u1\\n\\n  u7 \\n")
    >>> ids = read_id_list(path)
    >>> ids, ids.lines
    (['u1', 'u7'], [1, 3])
    """
    if os.path.isdir(path):
        raise DataError(f"{path!r} is a folder, not a file of ids.")
    try:
        handle = open(path, "rb")
    except OSError as error:
        raise DataError(
            f"Cannot read {path!r}: {error.strerror or error}."
        ) from None
    ids, lines = [], []
    with handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(b"\xef\xbb\xbf")
            try:
                text = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                raise DataError(
                    f"{path}:{number}: not valid UTF-8; a file of ids is "
                    "read as UTF-8 (convert it, e.g. with iconv -f latin1 "
                    "-t utf-8)."
                ) from None
            if text:
                ids.append(text)
                lines.append(number)
    if not ids:
        raise DataError(f"{path} holds no id (one raw id a line).")
    return IdList(ids, path, lines)


def check_known(
    ids: Sequence[str],
    known: dict | set,
    name: str,
    what: str,
    among: str,
) -> list[str]:
    """``ids`` without repeats, in order; refuses one not in ``known``.

    Args:
        ids: raw ids (an ``IdList`` or any sequence of str).
        known: the ids that may be given (a set, or a dict keyed by them).
        name: str. The argument's name, for ids of a list (``items``).
        what: str. What one id is, e.g. "user" or "item".
        among: str. What ``known`` is, e.g. "the run's 6,040 users".

    Returns:
        list of str: the ids, each once, in the order first given.

    Raises:
        DataError: an id is not a str or not in ``known``: names where it
            was given (``where``) and the id.

    Example:

    >>> check_known(["b", "a", "b"], {"a", "b"}, "items", "item", "x")
    ['b', 'a']
    >>> check_known(["a", "z"], {"a"}, "items", "item", "the catalogue")
    Traceback (most recent call last):
    ...
    tfrec_tricks.errors.DataError: items[1]: item 'z' is not in the \
catalogue. Received: item 'z'
    """
    if isinstance(ids, (str, bytes)):
        raise DataError(
            f"`{name}` must be a list of raw ids, not one string. "
            f"Received: {name}={ids!r}"
        )
    kept = dict.fromkeys(ids)
    for index, value in enumerate(ids):
        if not isinstance(value, str):
            raise DataError(
                f"{where(ids, index, name)}: a raw {what} id must be a str. "
                f"Received: {value!r} ({type(value).__name__})"
            )
        if value not in known:
            raise DataError(
                f"{where(ids, index, name)}: {what} {value!r} is not in "
                f"{among}. Received: {what} {value!r}"
            )
    return list(kept)
