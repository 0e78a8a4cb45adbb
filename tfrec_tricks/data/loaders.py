"""Loaders for the common interaction file formats.

Each returns an ``Interactions`` table. A line that cannot be parsed raises
``DataError`` naming the file and the 1-based line number.

Formats:
    grouplens: ``user::item::rating::timestamp`` (MovieLens ``ratings.dat``).
    udata: ``user<TAB>item<TAB>rating<TAB>timestamp`` (MovieLens ``u.data``).
    sasrec: ``user item`` per line, in time order within a user.
    sessions: tab-separated with a header naming ``SessionId``, ``ItemId``
        and ``Time`` (YOOCHOOSE as prepared by session-rec).
    recbole: RecBole atomic ``.inter`` files, header ``name:type`` fields.
"""

import os
from typing import Callable

import numpy as np

from tfrec_tricks.data.interactions import Interactions
from tfrec_tricks.errors import DataError, malformed_line

FORMATS = ("grouplens", "udata", "sasrec", "sessions", "recbole")


def _lines(path: str, encoding: str = "utf-8"):
    if not os.path.isfile(path):
        raise DataError(f"Data file not found. Received: path={path!r}")
    with open(path, encoding=encoding, errors="replace") as handle:
        yield from enumerate(handle, start=1)


def _float(value: str, path: str, number: int, line: str, what: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise malformed_line(
            path, number, line, f"{what} {value!r} is not a number"
        ) from None


def _build(users, items, times, numeric, path) -> Interactions:
    if not users:
        raise DataError(f"No interactions in {path!r}: the file is empty.")
    return Interactions(
        users=np.asarray(users, dtype=str),
        items=np.asarray(items, dtype=str),
        timestamps=None if times is None else np.asarray(times, np.float64),
        numeric={k: np.asarray(v, np.float32) for k, v in numeric.items()},
        source=path,
    )


def _delimited_ratings(path: str, separator: str | None, encoding: str):
    users, items, ratings, times = [], [], [], []
    for number, line in _lines(path, encoding):
        if not line.strip():
            continue
        fields = line.strip().split(separator)
        if len(fields) != 4:
            raise malformed_line(
                path,
                number,
                line,
                f"expected 4 fields user, item, rating, timestamp, found "
                f"{len(fields)}",
            )
        users.append(fields[0])
        items.append(fields[1])
        ratings.append(_float(fields[2], path, number, line, "rating"))
        times.append(_float(fields[3], path, number, line, "timestamp"))
    return _build(users, items, times, {"rating": ratings}, path)


def load_grouplens_ratings(path: str) -> Interactions:
    """Reads ``UserID::MovieID::Rating::Timestamp`` lines (``ratings.dat``)."""
    return _delimited_ratings(path, "::", "latin-1")


def load_udata(path: str) -> Interactions:
    """Reads ``user<TAB>item<TAB>rating<TAB>timestamp`` lines (``u.data``)."""
    return _delimited_ratings(path, "\t", "latin-1")


def load_sasrec(path: str) -> Interactions:
    """Reads ``user item`` lines; line order is the time order per user."""
    users, items = [], []
    for number, line in _lines(path):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            raise malformed_line(
                path,
                number,
                line,
                f"expected 2 fields 'user item', found {len(fields)}",
            )
        users.append(fields[0])
        items.append(fields[1])
    return _build(users, items, None, {}, path)


def load_sessions(path: str) -> Interactions:
    """Reads a session file with header ``SessionId ItemId Time``."""
    rows = _lines(path)
    try:
        _, header_line = next(rows)
    except StopIteration:
        raise DataError(f"No interactions in {path!r}: the file is empty.")
    separator = "\t" if "\t" in header_line else None
    header = header_line.strip().split(separator)
    missing = [c for c in ("SessionId", "ItemId", "Time") if c not in header]
    if missing:
        raise malformed_line(
            path, 1, header_line, f"header lacks column(s) {missing}"
        )
    session_col = header.index("SessionId")
    item_col = header.index("ItemId")
    time_col = header.index("Time")
    users, items, times = [], [], []
    for number, line in rows:
        if not line.strip():
            continue
        fields = line.strip().split(separator)
        if len(fields) != len(header):
            raise malformed_line(
                path,
                number,
                line,
                f"expected {len(header)} fields, found {len(fields)}",
            )
        users.append(fields[session_col])
        items.append(fields[item_col])
        times.append(_float(fields[time_col], path, number, line, "Time"))
    return _build(users, items, times, {}, path)


_RECBOLE_USER = ("user_id", "session_id")


def load_recbole(path: str) -> Interactions:
    """Reads a RecBole atomic ``.inter`` file (header ``name:type`` fields).

    The user column is ``user_id`` or ``session_id``; ``item_id`` is the
    item; ``timestamp`` is the time; other ``:float`` columns become numeric
    columns (``rating`` among them).
    """
    rows = _lines(path)
    try:
        _, header_line = next(rows)
    except StopIteration:
        raise DataError(f"No interactions in {path!r}: the file is empty.")
    names, types = [], []
    for field in header_line.rstrip("\n").split("\t"):
        name, _, kind = field.partition(":")
        names.append(name)
        types.append(kind)
    user_names = [n for n in _RECBOLE_USER if n in names]
    if not user_names or "item_id" not in names:
        raise malformed_line(
            path,
            1,
            header_line,
            "header needs user_id:token (or session_id:token) and "
            "item_id:token",
        )
    user_col = names.index(user_names[0])
    item_col = names.index("item_id")
    time_col = names.index("timestamp") if "timestamp" in names else None
    float_cols = [
        i
        for i, (n, t) in enumerate(zip(names, types))
        if t == "float" and i != time_col
    ]
    users, items, times = [], [], [] if time_col is not None else None
    numeric = {names[i]: [] for i in float_cols}
    for number, line in rows:
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("\t")
        if len(fields) != len(names):
            raise malformed_line(
                path,
                number,
                line,
                f"expected {len(names)} tab-separated fields, found "
                f"{len(fields)}",
            )
        users.append(fields[user_col])
        items.append(fields[item_col])
        if time_col is not None:
            times.append(
                _float(fields[time_col], path, number, line, "timestamp")
            )
        for i in float_cols:
            numeric[names[i]].append(
                _float(fields[i], path, number, line, names[i])
            )
    return _build(users, items, times, numeric, path)


_LOADERS: dict[str, Callable[[str], Interactions]] = {
    "grouplens": load_grouplens_ratings,
    "udata": load_udata,
    "sasrec": load_sasrec,
    "sessions": load_sessions,
    "recbole": load_recbole,
}


def guess_format(path: str) -> str:
    """Guesses the format from the file name and its first line."""
    name = os.path.basename(path)
    if name.endswith(".inter"):
        return "recbole"
    if name.endswith(".dat") and "::" in _first_line(path):
        return "grouplens"
    first = _first_line(path)
    if "SessionId" in first:
        return "sessions"
    fields = first.split("\t")
    if len(fields) == 4:
        return "udata"
    if len(first.split()) == 2:
        return "sasrec"
    raise DataError(
        f"Cannot tell the format of {path!r} from its first line "
        f"{first.strip()[:60]!r}; pass one of {FORMATS} explicitly."
    )


def _first_line(path: str) -> str:
    for _, line in _lines(path, "latin-1"):
        return line
    raise DataError(f"No interactions in {path!r}: the file is empty.")


def load_file(path: str, file_format: str = "auto") -> Interactions:
    """Loads ``path`` in ``file_format`` (one of FORMATS, or "auto")."""
    if file_format == "auto":
        file_format = guess_format(path)
    if file_format not in _LOADERS:
        raise DataError(
            f"Unknown file format. Expected one of {FORMATS} or 'auto'. "
            f"Received: file_format={file_format!r}"
        )
    return _LOADERS[file_format](path)
