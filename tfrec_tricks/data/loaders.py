"""Loaders for the common interaction file formats.

Each returns an ``Interactions`` table.

Files are read as strict UTF-8: a byte order mark at the start is dropped
and LF, CRLF and CR line ends are accepted, so raw ids come back exactly as
written (``café_14`` stays ``café_14``). Convert a latin-1 file first, e.g.
with ``iconv -f latin1 -t utf-8``.

A line that cannot be parsed raises ``DataError`` naming the file and the
1-based line number. So does a line that is not valid UTF-8 (the message
also gives the byte offset in the file of the first bad byte), and a
timestamp or numeric value (``rating``, RecBole ``:float`` fields) that is
not a finite number (``nan``, ``inf``, ``-Infinity``, ...); a numeric value
must also fit in float32, the dtype numeric columns are stored in.

Formats:
    grouplens: ``user::item::rating::timestamp`` (MovieLens ``ratings.dat``).
    udata: ``user<TAB>item<TAB>rating<TAB>timestamp`` (MovieLens ``u.data``).
    sasrec: ``user item`` per line, in time order within a user.
    sessions: tab-separated with a header naming ``SessionId``, ``ItemId``
        and ``Time`` (YOOCHOOSE as prepared by session-rec).
    recbole: RecBole atomic ``.inter`` files, header ``name:type`` fields.
"""

import codecs
import contextlib
import dataclasses
import math
import os
import re
import sys
from typing import Iterator, NamedTuple

import numpy as np

from tfrec_tricks.data.interactions import Interactions
from tfrec_tricks.errors import DataError, malformed_line

FORMATS = ("grouplens", "udata", "sasrec", "sessions", "recbole")


_NOT_UTF8_HINT = (
    "tfrec-tricks reads interaction files as UTF-8: convert it, e.g. "
    "iconv -f latin1 -t utf-8"
)
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# Numeric columns are stored as float32: larger magnitudes would become inf.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """Yields ``(line_number, line)`` for each line of a UTF-8 text file.

    Streams the file in text mode with strict UTF-8 decoding (a byte order
    mark at the start is dropped; CRLF and CR line ends become LF). Only
    when a byte is not valid UTF-8 is the file read again, to locate that
    byte for the error message.

    Args:
        path: str. The file to read.

    Yields:
        The 1-based line number and the decoded line (with its line end).

    Raises:
        DataError: if the file does not exist, or is not valid UTF-8 (the
            message names the file, the line number and the byte offset in
            the file of the first invalid byte).
    """
    if not os.path.isfile(path):
        raise DataError(f"Data file not found. Received: path={path!r}")
    with open(path, encoding="utf-8-sig") as handle:
        try:
            yield from enumerate(handle, start=1)
        except UnicodeDecodeError:
            raise _not_utf8(path) from None


def _not_utf8(path: str) -> DataError:
    """A DataError locating the first byte of ``path`` that is not UTF-8."""
    with open(path, "rb") as handle:
        offset = (
            len(codecs.BOM_UTF8) if handle.read(3) == codecs.BOM_UTF8 else 0
        )
    # Invalid bytes decode to lone surrogates U+DC80..U+DCFF, which valid
    # UTF-8 never yields; newline="" splits lines as text mode does (so line
    # numbers agree with _lines) but keeps their ends (so offsets add up).
    with open(
        path, encoding="utf-8-sig", errors="surrogateescape", newline=""
    ) as handle:
        for number, line in enumerate(handle, start=1):
            bad = _ESCAPED_BYTE.search(line)
            if bad is None:
                offset += len(line.encode("utf-8"))
                continue
            start = bad.start()
            offset += len(line[:start].encode("utf-8"))
            return DataError(
                f"{path}:{number}: not valid UTF-8 at byte offset {offset} "
                f"(0x{ord(line[start]) - 0xDC00:02x}); {_NOT_UTF8_HINT}"
            )
    return DataError(f"{path}: not valid UTF-8; {_NOT_UTF8_HINT}")


def _float(
    value: str,
    path: str,
    number: int,
    line: str,
    what: str,
    limit: float = sys.float_info.max,
) -> float:
    """Parses ``value`` as a finite float of magnitude at most ``limit``.

    Raises:
        DataError: naming the file, the line and ``what`` when ``value`` is
            not a number, not finite (``nan``, ``inf``, ...) or larger in
            magnitude than ``limit``.
    """
    try:
        result = float(value)
    except ValueError:
        raise malformed_line(
            path, number, line, f"{what} {value!r} is not a number"
        ) from None
    if -limit <= result <= limit:  # False for nan and +-inf too
        return result
    if math.isfinite(result):
        why = f"{what} {value!r} does not fit in float32 (|x| <= {limit:.7g})"
    else:
        why = f"{what} {value!r} is not a finite number"
    raise malformed_line(path, number, line, why)


@dataclasses.dataclass(frozen=True)
class Columns:
    """What each record of a file holds besides its user and item.

    Attributes:
        has_time: bool. Records carry a timestamp (else None: the line
            order within a user is the time order).
        numeric: tuple of str. Names of the numeric columns, in the order
            of each record's ``numeric`` values.
    """

    has_time: bool
    numeric: tuple[str, ...] = ()


class Record(NamedTuple):
    """One parsed line: where it came from and what it says."""

    line: int
    user: str
    item: str
    time: float | None
    numeric: tuple[float, ...]


def read_records(
    path: str, file_format: str = "auto"
) -> tuple[Columns, Iterator[Record]]:
    r"""Streams the records of ``path``, one parsed line at a time.

    ``load_file`` collects them into an ``Interactions`` table; the on-disk
    and Apache Beam preparation engines read them without holding the file
    in memory. Blank lines are skipped; every other line becomes a record
    or raises ``DataError`` naming the file and the line.

    Args:
        path: str. The file.
        file_format: str. One of ``FORMATS``, or "auto" (``guess_format``).

    Returns:
        The file's ``Columns`` (its header is read and checked here) and
        an iterator over its ``Record``s.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "u.data")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write("196\t242\t3\t881250949\n")
    >>> columns, records = read_records(path)
    >>> columns
    Columns(has_time=True, numeric=('rating',))
    >>> record = next(records)
    >>> record.line, record.user, record.item, record.time, record.numeric
    (1, '196', '242', 881250949.0, (3.0,))
    """
    if file_format == "auto":
        file_format = guess_format(path)
    if file_format not in _READERS:
        raise DataError(
            f"Unknown file format. Expected one of {FORMATS} or 'auto'. "
            f"Received: file_format={file_format!r}"
        )
    return _READERS[file_format](path, _lines(path))


def _build(path: str, columns: Columns, records: Iterator[Record]):
    users, items, times = [], [], []
    numeric = {name: [] for name in columns.numeric}
    values = list(numeric.values())
    for record in records:
        users.append(record.user)
        items.append(record.item)
        times.append(record.time)
        for column, value in zip(values, record.numeric):
            column.append(value)
    if not users:
        raise DataError(f"No interactions in {path!r}: the file is empty.")
    return Interactions(
        users=np.asarray(users, dtype=str),
        items=np.asarray(items, dtype=str),
        timestamps=np.asarray(times, np.float64) if columns.has_time else None,
        numeric={k: np.asarray(v, np.float32) for k, v in numeric.items()},
        source=path,
    )


def _header(path: str, rows: Iterator[tuple[int, str]]) -> str:
    try:
        return next(rows)[1]
    except StopIteration:
        raise DataError(f"No interactions in {path!r}: the file is empty.")


def _delimited_ratings(separator: str | None):
    def reader(path: str, rows) -> tuple[Columns, Iterator[Record]]:
        return Columns(True, ("rating",)), _ratings(path, rows, separator)

    return reader


def _ratings(path, rows, separator) -> Iterator[Record]:
    for number, line in rows:
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
        rating = _float(fields[2], path, number, line, "rating", _FLOAT32_MAX)
        time = _float(fields[3], path, number, line, "timestamp")
        yield Record(number, fields[0], fields[1], time, (rating,))


def load_grouplens_ratings(path: str) -> Interactions:
    """Reads ``UserID::MovieID::Rating::Timestamp`` lines (``ratings.dat``)."""
    return _build(path, *read_records(path, "grouplens"))


def load_udata(path: str) -> Interactions:
    """Reads ``user<TAB>item<TAB>rating<TAB>timestamp`` lines (``u.data``)."""
    return _build(path, *read_records(path, "udata"))


def _sasrec(path: str, rows) -> tuple[Columns, Iterator[Record]]:
    def records() -> Iterator[Record]:
        for number, line in rows:
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
            yield Record(number, fields[0], fields[1], None, ())

    return Columns(False), records()


def load_sasrec(path: str) -> Interactions:
    """Reads ``user item`` lines; line order is the time order per user."""
    return _build(path, *read_records(path, "sasrec"))


def _sessions(path: str, rows) -> tuple[Columns, Iterator[Record]]:
    header_line = _header(path, rows)
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

    def records() -> Iterator[Record]:
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
            time = _float(fields[time_col], path, number, line, "Time")
            yield Record(
                number, fields[session_col], fields[item_col], time, ()
            )

    return Columns(True), records()


def load_sessions(path: str) -> Interactions:
    """Reads a session file with header ``SessionId ItemId Time``."""
    return _build(path, *read_records(path, "sessions"))


_RECBOLE_USER = ("user_id", "session_id")


def _recbole(path: str, rows) -> tuple[Columns, Iterator[Record]]:
    header_line = _header(path, rows)
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

    def records() -> Iterator[Record]:
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
            time = None
            if time_col is not None:
                time = _float(fields[time_col], path, number, line, "timestamp")
            numeric = tuple(
                _float(fields[i], path, number, line, names[i], _FLOAT32_MAX)
                for i in float_cols
            )
            yield Record(
                number, fields[user_col], fields[item_col], time, numeric
            )

    columns = Columns(time_col is not None, tuple(names[i] for i in float_cols))
    return columns, records()


def load_recbole(path: str) -> Interactions:
    """Reads a RecBole atomic ``.inter`` file (header ``name:type`` fields).

    The user column is ``user_id`` or ``session_id``; ``item_id`` is the
    item; ``timestamp`` is the time; other ``:float`` columns become numeric
    columns (``rating`` among them).
    """
    return _build(path, *read_records(path, "recbole"))


_READERS = {
    "grouplens": _delimited_ratings("::"),
    "udata": _delimited_ratings("\t"),
    "sasrec": _sasrec,
    "sessions": _sessions,
    "recbole": _recbole,
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
    with contextlib.closing(_lines(path)) as rows:
        for _, line in rows:
            return line
    raise DataError(f"No interactions in {path!r}: the file is empty.")


def load_file(path: str, file_format: str = "auto") -> Interactions:
    """Loads ``path`` in ``file_format`` (one of FORMATS, or "auto")."""
    return _build(path, *read_records(path, file_format))
