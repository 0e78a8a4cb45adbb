"""Loaders for the common interaction file formats.

Each returns an ``Interactions`` table.

Files are read as strict UTF-8: a byte order mark at the start is dropped
and LF, CRLF and CR line ends are accepted, so raw ids come back exactly as
written (``café_14`` stays ``café_14``). Convert a latin-1 file first, e.g.
with ``iconv -f latin1 -t utf-8``. A gzip-compressed file is decompressed
as it is read, whatever its name (``clicks.tsv.gz``); a UTF-16 or UTF-32
file, a bzip2, xz, zstd or zip file and a folder are refused, named as
what they are, with a command that converts what the file is (a gzip file
is decompressed before ``iconv`` reads it). A pipe (a FIFO, or the
``/dev/fd/N`` of ``<(zcat f.gz)``) is read once into a local copy that
every later read of its path uses (``readable_file``).

Fields are split on the format's separator and kept as written: there is
no CSV-style quoting. An id or number in double quotes (``"214"``) is an
error rather than an id with quotes in it (a file quoting some ids and not
others would otherwise split one item in two); a quote inside or at one
end of an id is part of the id. An empty (or whitespace-only) user,
session or item id is an error, and so is an item id ``[PAD]``: it is the
name of the padding item (contiguous id 0) in every vocabulary.

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

import atexit
import codecs
import contextlib
import dataclasses
import gzip
import io
import math
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
import zlib
from typing import BinaryIO, Iterator, NamedTuple

import numpy as np

from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.data.user_sequences import PADDING
from tfrec_tricks.errors import DataError, malformed_line

FORMATS = ("grouplens", "udata", "sasrec", "sessions", "recbole")


_NOT_UTF8_HINT = "tfrec-tricks reads interaction files as UTF-8: convert it"
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")
# Bytes read from the start of a file to tell what it is.
_SNIFF_BYTES = 4096
_GZIP_MAGIC = b"\x1f\x8b"
# Compressed formats that are refused: (magic bytes, name, how to undo).
_OTHER_COMPRESSION = (
    (re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)"), "bzip2", "bunzip2 -k"),
    (re.compile(rb"\xfd7zXZ\x00"), "xz", "unxz -k"),
    (re.compile(rb"\(\xb5/\xfd"), "zstd", "unzstd"),
    (re.compile(rb"PK(\x03\x04|\x05\x06)"), "zip", "unzip"),
)
_DIGITS = re.compile("([0-9]+)")
# Numeric columns are stored as float32: larger magnitudes would become inf.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def natural_sort_key(path: str) -> tuple:
    """Sorts paths with runs of digits compared as numbers.

    ``part-2`` comes before ``part-10``; paths that differ only in leading
    zeros (``part-01``, ``part-1``) are ordered by their text.

    >>> sorted(["part-10", "part-2", "part-1"], key=natural_sort_key)
    ['part-1', 'part-2', 'part-10']
    """
    parts = _DIGITS.split(path)
    # Odd places hold the digit runs, even places the text between them.
    return [int(p) if i % 2 else p for i, p in enumerate(parts)], path


def _lines(path: str) -> Iterator[tuple[int, str]]:
    """Yields ``(line_number, line)`` for each line of a UTF-8 text file.

    Streams the file in text mode with strict UTF-8 decoding (a byte order
    mark at the start is dropped; CRLF and CR line ends become LF),
    decompressing gzip. Only when a byte is not valid UTF-8 is the file
    read again, to locate that byte for the error message.

    Args:
        path: str. The file to read.

    Yields:
        The 1-based line number and the decoded line (with its line end).

    Raises:
        DataError: if the file does not exist, is a folder, is compressed
            other than with gzip, is UTF-16 or UTF-32, or is not valid
            UTF-8 (the message names the file, the line number and the
            byte offset of the first invalid byte).
    """
    binary, compressed = _open_binary(path)
    number = 0
    with io.TextIOWrapper(binary, encoding="utf-8-sig") as handle:
        try:
            for number, line in enumerate(handle, start=1):
                yield number, line
        except UnicodeDecodeError:
            raise _not_utf8(path) from None
        except (OSError, EOFError, zlib.error) as error:
            if not compressed:
                raise
            raise _damaged_gzip(path, error, number) from None


# Pipes (a FIFO, or the /dev/fd/N of a shell's process substitution
# ``<(...)``) can be read once, yet a file is read several times (its
# format guessed from its first line, hashed for a run's fingerprint, read
# again for a message): a pipe is copied to a local file when it is first
# read, and every read of its path reads that copy. Path -> (the pipe's
# device and inode, copy): a /dev/fd/N reused by another pipe later in the
# same process (a notebook, a test session) is that other pipe's data.
_PIPE_COPIES: dict[str, tuple[tuple[int, int], str]] = {}


def _pipe_identity(path: str) -> tuple[int, int] | None:
    """The device and inode of the pipe ``path`` names, or None."""
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISFIFO(status.st_mode):
        return None
    return status.st_dev, status.st_ino


def _known_copy(path: str) -> str | None:
    """The copy of the pipe ``path`` names now, if it was read before (or,
    once the pipe is gone, the last pipe read under that path)."""
    if path not in _PIPE_COPIES:
        return None
    identity, copy = _PIPE_COPIES[path]
    now = _pipe_identity(path)
    return copy if now is None or now == identity else None


def is_pipe(path: str) -> bool:
    """Whether ``path`` is a pipe: a FIFO, or the ``/dev/fd/N`` (or
    ``/dev/stdin``) of a pipe, as ``<(zcat f.gz)`` gives."""
    return _known_copy(path) is not None or _pipe_identity(path) is not None


def readable_file(path: str) -> str:
    """The regular file that holds ``path``'s bytes.

    ``path`` itself, except for a pipe (``is_pipe``): it is read once, to
    the end, into a local copy (removed when the process exits) that this
    and every later call return, so the pipe's data is read, hashed and
    parsed as a file's is. Other paths are returned unchanged (a missing
    file is refused by whoever opens it).

    Args:
        path: str. The path as the user wrote it.

    Returns:
        str. The file to open.
    """
    known = _known_copy(path)
    if known is not None:
        return known
    identity = _pipe_identity(path)
    if identity is None:
        return path
    folder = tempfile.mkdtemp(prefix="tfrec_tricks-pipe-")
    atexit.register(shutil.rmtree, folder, True)
    copy = os.path.join(folder, os.path.basename(path) or "input")
    with open(path, "rb") as source, open(copy, "wb") as target:
        shutil.copyfileobj(source, target, 1 << 20)
    _PIPE_COPIES[path] = (identity, copy)
    return copy


def _open_binary(path: str) -> tuple[BinaryIO, bool]:
    """The bytes of ``path``'s text (gzip decompressed), and whether it was
    compressed; refuses what is not a UTF-8 text file, naming what it is.
    A pipe is read from its copy (``readable_file``)."""
    if os.path.isdir(path):
        raise DataError(
            f"{path!r} is a directory, not a data file; give a file or a "
            f"glob of files (e.g. --data-path '{os.path.join(path, '*.tsv')}')"
        )
    if not os.path.exists(path) and _known_copy(path) is None:
        raise DataError(f"Data file not found. Received: path={path!r}")
    readable = readable_file(path)
    if not os.path.isfile(readable):
        raise DataError(
            f"{path!r} is neither a file nor a pipe (a device or a socket); "
            "give a data file, a FIFO or <(command)"
        )
    with open(readable, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    compressed = head.startswith(_GZIP_MAGIC)
    if compressed:
        try:
            with gzip.open(readable, "rb") as handle:
                head = handle.read(_SNIFF_BYTES)
        except (OSError, EOFError, zlib.error) as error:
            raise _damaged_gzip(path, error, 0) from None
    else:
        for magic, name, command in _OTHER_COMPRESSION:
            if magic.match(head):
                raise DataError(
                    f"{path}: the file is {name}-compressed; tfrec-tricks "
                    f"reads plain or gzip-compressed text: decompress it "
                    f"first, e.g. {command} {shlex.quote(path)}"
                )
    encoding = _wide_encoding(head)
    if encoding:
        gzipped = " (and gzip-compressed)" if compressed else ""
        raise DataError(
            f"{path}: the file is {encoding} encoded{gzipped}; "
            f"tfrec-tricks reads interaction files as UTF-8: convert it, "
            f"e.g. {_to_utf8_command(path, compressed, encoding.lower())}"
        )
    if compressed:
        return gzip.open(readable, "rb"), True
    return open(readable, "rb"), False


def _to_utf8_command(path: str, compressed: bool, encoding: str) -> str:
    """The shell command that converts ``path`` from ``encoding`` to UTF-8.

    It undoes what the file is: a gzip file is decompressed before
    ``iconv`` reads it (``iconv`` on the compressed bytes would garble
    them), and a pipe is converted where it is written.

    >>> _to_utf8_command("/no/f.tsv.gz", True, "utf-16")
    'gunzip -c /no/f.tsv.gz | iconv -f utf-16 -t utf-8 > /no/f.tsv'
    >>> _to_utf8_command("/no/f.tsv", False, "latin1")
    'iconv -f latin1 -t utf-8 /no/f.tsv > /no/f.tsv.utf8'
    """
    iconv = f"iconv -f {encoding} -t utf-8"
    if is_pipe(path):
        steps = ["...", *(["gunzip -c"] if compressed else []), iconv]
        return "<(" + " | ".join(steps) + ")"
    if compressed:
        plain = path[: -len(".gz")] if path.endswith(".gz") else path
        # Never a command that overwrites a file already there.
        if plain == path or os.path.exists(plain):
            plain += ".utf8"
        return f"gunzip -c {shlex.quote(path)} | {iconv} > {shlex.quote(plain)}"
    return f"{iconv} {shlex.quote(path)} > {shlex.quote(path + '.utf8')}"


def _wide_encoding(head: bytes) -> str | None:
    """The encoding, UTF-16 or UTF-32, of a file that starts with ``head``
    (a byte order mark, or NUL bytes in every other or three of four
    bytes); None for others."""
    if head.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "UTF-32"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "UTF-16"
    if len(head) < 4:
        return None
    even, odd = head[0::2], head[1::2]
    even_nul = even.count(0) >= 0.4 * len(even)
    odd_nul = odd.count(0) >= 0.4 * len(odd)
    if even_nul and odd_nul:
        return "UTF-32"
    if even_nul or odd_nul:
        return "UTF-16"
    return None


def _damaged_gzip(path: str, error: BaseException, line: int) -> DataError:
    where = f" after line {line}" if line else ""
    return DataError(
        f"{path}: the gzip data is damaged or truncated{where} ({error}); "
        "check the file with gzip -t"
    )


def _not_utf8(path: str) -> DataError:
    """A DataError locating the first byte of ``path`` that is not UTF-8."""
    binary, compressed = _open_binary(path)
    command = _to_utf8_command(path, compressed, "latin1")
    hint = f"{_NOT_UTF8_HINT}, e.g. {command}"
    with binary:
        offset = (
            len(codecs.BOM_UTF8) if binary.read(3) == codecs.BOM_UTF8 else 0
        )
    of = " of the decompressed text" if compressed else ""
    # Invalid bytes decode to lone surrogates U+DC80..U+DCFF, which valid
    # UTF-8 never yields; newline="" splits lines as text mode does (so line
    # numbers agree with _lines) but keeps their ends (so offsets add up).
    binary, _ = _open_binary(path)
    with io.TextIOWrapper(
        binary, encoding="utf-8-sig", errors="surrogateescape", newline=""
    ) as handle:
        for number, line in enumerate(handle, start=1):
            bad = _ESCAPED_BYTE.search(line)
            if bad is None:
                offset += len(line.encode("utf-8", "surrogateescape"))
                continue
            start = bad.start()
            offset += len(line[:start].encode("utf-8"))
            return DataError(
                f"{path}:{number}: not valid UTF-8 at byte offset {offset}"
                f"{of} (0x{ord(line[start]) - 0xDC00:02x}); {hint}"
            )
    return DataError(f"{path}: not valid UTF-8; {hint}")


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
        why = f"{what} {value!r} is not a number"
        if quoted(value):
            why += f" ({QUOTED_RULE})"
        raise malformed_line(path, number, line, why) from None
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
        tokens: tuple of str. Names of the categorical per-interaction
            columns (RecBole ``:token`` fields), in the order of each
            record's ``tokens`` values.
    """

    has_time: bool
    numeric: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()


class Record(NamedTuple):
    """One parsed line: where it came from and what it says.

    ``other`` holds the line's fields that are none of the others (e.g. a
    RecBole ``:token`` column), as written: with the rest, they tell
    whether two rows are exact duplicates. ``tokens`` holds the values of
    ``Columns.tokens`` (also in ``other``), as written.
    """

    line: int
    user: str
    item: str
    time: float | None
    numeric: tuple[float, ...]
    other: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()


# Why a value in double quotes is refused: the one rule of every file
# tfrec-tricks reads (interaction files, ``.item`` files).
QUOTED_RULE = (
    "fields are read as written, without CSV quoting: remove the quotes"
)


def quoted(value: str) -> bool:
    """Whether ``value`` is in double quotes, as a CSV tool quotes it.

    >>> quoted('"i5"'), quoted('i"5'), quoted('"')
    (True, False, False)
    """
    return len(value) >= 2 and value[0] == value[-1] == '"'


def _fields(line: str, separator: str | None, count: int) -> list[str]:
    """``line``'s fields: split on ``separator`` (None: whitespace) once the
    whitespace around the line is removed, or, when that gives other than
    ``count`` fields, once only the line end is (so that an empty first or
    last field is found as such, not as a missing one)."""
    fields = line.strip().split(separator)
    if len(fields) != count and separator is not None:
        raw = line.rstrip("\r\n").split(separator)
        if len(raw) == count:
            return raw
    return fields


def check_ids(path: str, number: int, line: str, ids: dict, item: str) -> None:
    """Raises DataError when an id of ``ids`` (what -> value) is empty,
    whitespace only, or in double quotes, or when the item id (``ids[item]``)
    is the reserved padding token: the rule of the ids of every file read
    (interaction files here, ``.item`` files in ``item_features.item_file``)."""
    if ids[item] == PADDING:
        # Contiguous item id 0 is padding, named PADDING in every
        # vocabulary: an item of that name would be a second "[PAD]", which
        # trains, then cannot be exported (its raw ids are not distinct).
        raise malformed_line(
            path,
            number,
            line,
            f"the {item} {PADDING!r} is the reserved padding token "
            "(contiguous id 0, what pads short histories); rename that item",
        )
    for what, value in ids.items():
        if not value.strip():
            raise malformed_line(path, number, line, f"the {what} is empty")
        if quoted(value):
            raise malformed_line(
                path,
                number,
                line,
                f"the {what} {value!r} is in quotes; {QUOTED_RULE}",
            )


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
    Columns(has_time=True, numeric=('rating',), tokens=())
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
    tokens = {name: [] for name in columns.tokens}
    values = [*numeric.values(), *tokens.values()]
    for record in records:
        users.append(record.user)
        items.append(record.item)
        times.append(record.time)
        for column, value in zip(values, record.numeric + record.tokens):
            column.append(value)
    if not users:
        raise DataError(f"No interactions in {path!r}: the file is empty.")
    return Interactions(
        users=np.asarray(users, dtype=str),
        items=np.asarray(items, dtype=str),
        timestamps=np.asarray(times, np.float64) if columns.has_time else None,
        numeric={k: np.asarray(v, np.float32) for k, v in numeric.items()},
        tokens={k: np.asarray(v, dtype=str) for k, v in tokens.items()},
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
        fields = _fields(line, separator, 4)
        if len(fields) != 4:
            raise malformed_line(
                path,
                number,
                line,
                f"expected 4 fields user, item, rating, timestamp, found "
                f"{len(fields)}",
            )
        check_ids(
            path,
            number,
            line,
            {"user id": fields[0], "item id": fields[1]},
            "item id",
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
            check_ids(
                path,
                number,
                line,
                {"user id": fields[0], "item id": fields[1]},
                "item id",
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
    other_cols = [
        i
        for i in range(len(header))
        if i not in (session_col, item_col, time_col)
    ]

    def records() -> Iterator[Record]:
        for number, line in rows:
            if not line.strip():
                continue
            fields = _fields(line, separator, len(header))
            if len(fields) != len(header):
                raise malformed_line(
                    path,
                    number,
                    line,
                    f"expected {len(header)} fields, found {len(fields)}",
                )
            check_ids(
                path,
                number,
                line,
                {"SessionId": fields[session_col], "ItemId": fields[item_col]},
                "ItemId",
            )
            time = _float(fields[time_col], path, number, line, "Time")
            yield Record(
                number,
                fields[session_col],
                fields[item_col],
                time,
                (),
                tuple(fields[i] for i in other_cols),
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
    used = {user_col, item_col, time_col, *float_cols}
    other_cols = [i for i in range(len(names)) if i not in used]
    token_cols = [i for i in other_cols if types[i] == "token"]

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
            check_ids(
                path,
                number,
                line,
                {
                    names[user_col]: fields[user_col],
                    "item_id": fields[item_col],
                },
                "item_id",
            )
            time = None
            if time_col is not None:
                time = _float(fields[time_col], path, number, line, "timestamp")
            numeric = tuple(
                _float(fields[i], path, number, line, names[i], _FLOAT32_MAX)
                for i in float_cols
            )
            yield Record(
                number,
                fields[user_col],
                fields[item_col],
                time,
                numeric,
                tuple(fields[i] for i in other_cols),
                tuple(fields[i].strip() for i in token_cols),
            )

    columns = Columns(
        time_col is not None,
        tuple(names[i] for i in float_cols),
        tuple(names[i] for i in token_cols),
    )
    return columns, records()


def load_recbole(path: str) -> Interactions:
    """Reads a RecBole atomic ``.inter`` file (header ``name:type`` fields).

    The user column is ``user_id`` or ``session_id``; ``item_id`` is the
    item; ``timestamp`` is the time; other ``:float`` columns become numeric
    columns (``rating`` among them), other ``:token`` columns categorical
    per-interaction columns (``device``; an empty value is no value).
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
    r"""Guesses the format from the file name and its first line.

    The first line that is not blank decides, with the whitespace at its
    end (a trailing tab or space, the line end) left out, as the readers
    leave it out.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "clicks")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write("\n196\t242\t3\t881250949\t \n")
    >>> guess_format(path)
    'udata'
    """
    name = os.path.basename(path).removesuffix(".gz")
    if name.endswith(".inter"):
        return "recbole"
    line = _first_line(path)
    first = line.rstrip()
    if name.endswith(".dat") and "::" in first:
        return "grouplens"
    if "SessionId" in first:
        return "sessions"
    fields = first.split("\t")
    if len(fields) == 4:
        return "udata"
    if len(first.split()) == 2:
        return "sasrec"
    shown = line if len(line) <= 80 else line[:77] + "..."
    raise DataError(
        f"Cannot tell the format of {path!r} from its first line {shown!r} "
        f"({len(fields)} tab-separated fields, {len(first.split())} "
        f"whitespace-separated); pass --format, one of {FORMATS}."
    )


def _first_line(path: str) -> str:
    """The first line of ``path`` that is not blank, with its line end."""
    with contextlib.closing(_lines(path)) as rows:
        for _, line in rows:
            if line.strip():
                return line
    raise DataError(f"No interactions in {path!r}: the file is empty.")


def load_file(path: str, file_format: str = "auto") -> Interactions:
    """Loads ``path`` in ``file_format`` (one of FORMATS, or "auto")."""
    return _build(path, *read_records(path, file_format))
