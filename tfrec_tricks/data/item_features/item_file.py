r"""Item side-information: RecBole atomic ``.item`` files, read and checked.

The file is tab-separated. Its first line names the columns as
``name:type``; one column is ``item_id:token``, the others are features of
one of ``FEATURE_KINDS`` (the registered ``FeatureKind`` specs,
``feature_kind_registry``; a new kind is one registered class):

- ``token``: one categorical value (``release_year:token`` ``1995``);
- ``token_seq``: space-separated tokens (``class:token_seq``
  ``Animation Comedy``);
- ``float``: one number;
- ``float_seq``: space-separated numbers.

Every other line is one item. An empty field is no value for that item
(counted as the feature's coverage, not an error); so is a ``token_seq`` or
``float_seq`` field without tokens. Blank lines are skipped. The file is
read as strict UTF-8 (a byte order mark at its start is dropped, CRLF line
ends are accepted, a gzip-compressed file is decompressed as it is read);
values are kept as written, except that the tokens of a ``*_seq`` field
are split on single spaces with the empty ones dropped, as RecBole does.

Every refusal is a ``DataError`` naming ``file:line``, the column and the
value: a header without ``item_id:token``, a header field without
``:type``, with an unknown type or in double quotes, a feature named
twice, a line with another number of fields than the header, an empty
item id, one in double quotes (``"i0"``, as a CSV tool writes it) or the
reserved ``[PAD]`` (the rule of interaction files, ``loaders.check_ids``),
an item listed twice (both lines named), a number that does not parse, is
NaN or infinite, or does not fit in float32 (the dtype feature values are
stored in). As in interaction files, a ``token`` value is kept as written,
quotes included. A file with a header and no item rows is read, with a
``UserWarning`` naming it.

``tfrec_tricks.data.item_features.encoding`` encodes the table against a
catalogue of contiguous item ids.
"""

import codecs
import dataclasses
import gzip
import math
import os
import shlex
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from tfrec_tricks.data.item_features.feature_kind_registry import (
    FEATURE_KINDS as FEATURE_KINDS,
)
from tfrec_tricks.data.item_features.feature_kind_registry import (
    FLOAT_KINDS as FLOAT_KINDS,
)
from tfrec_tricks.data.item_features.feature_kind_registry import (
    SEQUENCE_KINDS as SEQUENCE_KINDS,
)
from tfrec_tricks.data.item_features.feature_kind_registry import (
    TOKEN_KINDS as TOKEN_KINDS,
)
from tfrec_tricks.data.item_features.feature_kind_registry import (
    feature_kind,
)
from tfrec_tricks.data.sources.loaders import (
    QUOTED_RULE,
    check_ids,
    quoted,
    readable_file,
)
from tfrec_tricks.errors import DataError, malformed_line

# The kinds are specs (``feature_kind_registry``); their live name views
# are re-exported above (``X as X``), where the Keras layers (``features.
# item_feature_checks``) and the data modules have always read them.
ITEM_ID = "item_id"
# What ``select`` takes for every feature of the file.
ALL = "all"

_GZIP_MAGIC = b"\x1f\x8b"
# Feature values are stored as float32: larger magnitudes would become inf.
_FLOAT32_MAX = float(np.finfo(np.float32).max)


@dataclasses.dataclass(frozen=True)
class ItemFeatureTable:
    """The raw attributes of each raw item id, as an ``.item`` file has them.

    Attributes:
        kinds: dict of str to str. Feature name -> its kind (one of
            ``FEATURE_KINDS``), in file order; the item id is not a
            feature.
        rows: dict of str to dict. Raw item id -> ``{name: value}``, in
            file order. A value is a ``str`` (``token``), a tuple of str
            (``token_seq``), a ``float`` (``float``) or a tuple of float
            (``float_seq``); a feature the item has no value of is absent
            from its dict (an item may have an empty dict: it has a row).
        source: str. The file read, for messages.
        lines: dict of str to int. Raw item id -> the line of its row in
            ``source`` (1-based), for messages; empty when not read from a
            file.

    Example:

    >>> table = ItemFeatureTable(
    ...     kinds={"genres": "token_seq", "year": "float"},
    ...     rows={"7": {"genres": ("Drama",)}},
    ...     source="movies.item",
    ... )
    >>> table.names()
    ['genres', 'year']
    >>> table.select(["year"]).kinds
    {'year': 'float'}
    >>> table.select(["year"]).rows
    {'7': {}}
    """

    kinds: dict[str, str]
    rows: dict[str, dict[str, Any]]
    source: str = ""
    lines: dict[str, int] = dataclasses.field(
        default_factory=dict, compare=False
    )

    def names(self) -> list[str]:
        """The feature names, in file order."""
        return list(self.kinds)

    def select(self, names: str | Iterable[str]) -> "ItemFeatureTable":
        """The table restricted to some features (every row is kept).

        Args:
            names: str or list of str. The features to keep, or ``"all"``
                (also ``["all"]``) for every feature of the file. The
                features keep their file order, whatever the order of
                ``names``.

        Returns:
            ItemFeatureTable. The same items, with only those features.

        Raises:
            ValueError: if ``names`` is empty, mixes ``"all"`` with names,
                or names a feature the file does not have (the message
                lists the features it has).
        """
        wanted = [names] if isinstance(names, str) else list(names)
        if wanted == [ALL]:
            return self
        if not wanted or ALL in wanted:
            raise ValueError(
                "--features takes feature names, or 'all' alone. "
                f"Received: names={wanted!r}"
            )
        unknown = [name for name in wanted if name not in self.kinds]
        if unknown:
            has = ", ".join(sorted(self.kinds)) or "no features"
            raise ValueError(
                f"--features names {', '.join(map(repr, unknown))} but "
                f"{self.source} has: {has}"
            )
        kept = {
            name: kind for name, kind in self.kinds.items() if name in wanted
        }
        rows = {
            item: {name: v for name, v in values.items() if name in kept}
            for item, values in self.rows.items()
        }
        return ItemFeatureTable(kept, rows, self.source, self.lines)


def read_item_features(path: str) -> ItemFeatureTable:
    r"""Reads and checks a RecBole atomic ``.item`` file.

    Args:
        path: str. The file (plain or gzip-compressed UTF-8 text; a pipe
            such as ``<(zcat f.item.gz)`` is read like a file).

    Returns:
        ItemFeatureTable. The features and the values of each item.

    Raises:
        DataError: if the file is missing, empty or not UTF-8, or a line
            is refused (see the module docstring); the message names
            ``file:line``, the column and the value.

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "movies.item")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write(
    ...         "item_id:token\tclass:token_seq\tyear:float\n"
    ...         "1\tAnimation Comedy\t1995\n"
    ...         "2\t\t1994\n"
    ...     )
    >>> table = read_item_features(path)
    >>> table.kinds
    {'class': 'token_seq', 'year': 'float'}
    >>> table.rows["1"]
    {'class': ('Animation', 'Comedy'), 'year': 1995.0}
    >>> table.rows["2"]
    {'year': 1994.0}
    """
    lines = _text_lines(path)
    try:
        number, header = next(lines)
    except StopIteration:
        raise DataError(
            f"{path}: the file is empty; an .item file starts with a header "
            "of name:type fields, one of them item_id:token"
        ) from None
    columns = _header(path, number, header)
    item_column = columns.index((ITEM_ID, "token"))
    kinds = {name: kind for name, kind in columns if name != ITEM_ID}
    rows: dict[str, dict[str, Any]] = {}
    first_line: dict[str, int] = {}
    for number, line in lines:
        text = line.rstrip("\r\n")
        if not text.strip(" "):
            continue
        fields = text.split("\t")
        if len(fields) != len(columns):
            raise malformed_line(
                path,
                number,
                line,
                f"expected {len(columns)} tab-separated fields "
                f"({', '.join(name for name, _ in columns)}), received "
                f"{len(fields)}",
            )
        item = fields[item_column]
        _check_item(path, number, line, item, first_line)
        first_line[item] = number
        values = {}
        for (name, kind), field in zip(columns, fields):
            if name == ITEM_ID:
                continue
            value = _value(kind, field, path, number, line, name)
            if value is not None:
                values[name] = value
        rows[item] = values
    if not rows:
        # Not an error (an item without a row has no attributes), but
        # most likely a file cut short, or the wrong one.
        warnings.warn(
            f"{path} holds a header and no item rows: no item has "
            "attributes from it",
            UserWarning,
            stacklevel=2,
        )
    return ItemFeatureTable(kinds, rows, path, first_line)


def _header(path: str, number: int, line: str) -> list[tuple[str, str]]:
    """The ``(name, kind)`` of each column of the header ``line``.

    Raises:
        DataError: a field without ``:type`` or without a name, an unknown
            type, a name given twice, or no ``item_id:token`` column.
    """
    columns: list[tuple[str, str]] = []
    for field in line.rstrip("\r\n").split("\t"):
        if quoted(field):
            raise malformed_line(
                path,
                number,
                line,
                f"header field {field!r} is in quotes; {QUOTED_RULE}",
            )
        name, colon, kind = field.partition(":")
        if not colon or not name:
            raise malformed_line(
                path,
                number,
                line,
                f"header field {field!r} is not name:type (type one of "
                f"{', '.join(FEATURE_KINDS)})",
            )
        if kind not in FEATURE_KINDS:
            raise malformed_line(
                path,
                number,
                line,
                f"header field {field!r} has the unknown type {kind!r}; "
                f"the types are {', '.join(FEATURE_KINDS)}",
            )
        if any(name == seen for seen, _ in columns):
            raise malformed_line(
                path, number, line, f"the header names {name!r} twice"
            )
        columns.append((name, kind))
    if (ITEM_ID, "token") not in columns:
        raise malformed_line(
            path,
            number,
            line,
            f"the header has no {ITEM_ID}:token column (received "
            f"{', '.join(f'{n}:{k}' for n, k in columns)})",
        )
    return columns


def _check_item(
    path: str, number: int, line: str, item: str, first_line: dict[str, int]
) -> None:
    """Refuses an empty, quoted, reserved or repeated item id.

    The first three as interaction files refuse them (``loaders.
    check_ids``): a quoted id (``"i0"``, as a CSV tool writes it) would be
    another item than the interactions' ``i0``, a cold item of its own.
    """
    check_ids(path, number, line, {ITEM_ID: item}, ITEM_ID)
    if item in first_line:
        raise malformed_line(
            path,
            number,
            line,
            f"{ITEM_ID} {item!r} is listed twice, first at "
            f"{path}:{first_line[item]}",
        )


def _value(
    kind: str, field: str, path: str, number: int, line: str, name: str
) -> Any:
    """The value of ``field`` in a column of ``kind``; None when empty.

    A sequence kind's value is a tuple, another kind's its one value; a
    number kind's values are floats.
    """
    spec = feature_kind(kind)
    values: tuple = spec.split(field)
    if not spec.tokens:
        values = tuple(
            _number(value, path, number, line, name) for value in values
        )
    if not values:
        return None
    return values if spec.sequence else values[0]


def _number(value: str, path: str, number: int, line: str, name: str) -> float:
    """``value`` as a finite float that fits in float32."""
    try:
        result = float(value)
    except ValueError:
        why = f"column {name!r}: {value!r} is not a number"
        if quoted(value):
            why += f" ({QUOTED_RULE})"
        raise malformed_line(path, number, line, why) from None
    if not math.isfinite(result):
        raise malformed_line(
            path,
            number,
            line,
            f"column {name!r}: {value!r} is not a finite number (NaN and "
            "infinities are refused; leave the field empty for no value)",
        )
    if abs(result) > _FLOAT32_MAX:
        raise malformed_line(
            path,
            number,
            line,
            f"column {name!r}: {value!r} does not fit in float32 "
            f"(|x| <= {_FLOAT32_MAX:.7g})",
        )
    return result


def _text_lines(path: str) -> Iterator[tuple[int, str]]:
    """Yields ``(line_number, line)`` of a UTF-8 text file, 1-based.

    Raises:
        DataError: a missing file or a folder, or a line that is not valid
            UTF-8 (named with the byte offset in the line, and how to
            convert the file).
    """
    if os.path.isdir(path):
        raise DataError(f"{path!r} is a directory, not an .item file")
    readable = readable_file(path)
    if not os.path.isfile(readable):
        # Named as the item-attribute file, not the interaction file
        # (no flag named: train --item-features and other readers use it).
        raise DataError(
            f"Item features file (.item) not found. Received: path={path!r}"
        )
    with open(readable, "rb") as handle:
        compressed = handle.read(2) == _GZIP_MAGIC
    opener = gzip.open if compressed else open
    with opener(readable, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                raw = raw.removeprefix(codecs.BOM_UTF8)
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise _not_utf8(path, number, raw, error, compressed) from None


def _not_utf8(
    path: str,
    number: int,
    raw: bytes,
    error: UnicodeDecodeError,
    compressed: bool,
) -> DataError:
    """A DataError naming the line and byte that are not UTF-8."""
    bad = raw[error.start]
    if compressed:
        command = f"gunzip -c {shlex.quote(path)} | iconv -f latin1 -t utf-8"
    else:
        command = f"iconv -f latin1 -t utf-8 {shlex.quote(path)}"
    return DataError(
        f"{path}:{number}: not valid UTF-8 at byte offset {error.start} of "
        f"the line (0x{bad:02x}); .item files are read as UTF-8: the file "
        f"is likely in another encoding (ISO-8859-1?): convert it, e.g. "
        f"{command} > "
        f"{shlex.quote(path.removesuffix('.gz') + '.utf8')}"
    )
