"""The item metadata of the built-in MovieLens datasets, as item features.

``movielens_item_features`` reads the GroupLens metadata that sits beside a
real dataset's interactions (``tfrec_tricks.data.sources.named_sources``)
into the ``ItemFeatureTable`` an ``.item`` file gives, keyed by the raw
item ids that dataset's loader produces, with two features:

- ``genres`` (``token_seq``): the movie's genres, in the file's order
  (a space inside a genre becomes ``_``: tokens hold no spaces);
- ``year`` (``float``): the year of the movie, missing where the file has
  none.

Per dataset (``MOVIELENS_METADATA``):

- ``ml-1m`` (items are the contiguous ``item_idx`` of the SASRec-format
  file): ``ml-1m/item_map.tsv`` (UTF-8, ``item_idx<TAB>MovieID<TAB>title
  <TAB>genres`` under a header row); the year is the ``(YYYY)`` that ends
  the title.
- ``ml-1m-timed`` (items are MovieIDs): ``ml-1m/movies.dat``
  (``MovieID::Title::Genres``, ISO-8859-1); the year as for ``ml-1m``.
  It lists every movie of MovieLens-1M, more than the ratings of users
  1..2999 hold.
- ``ml-100k`` (items are ``u.data``'s item ids): ``ml-100k/u.item``
  (``id|title|release date|video release|url|`` and one 0/1 flag per
  genre of ``ml-100k/u.genre``, ISO-8859-1); the year is that of the
  release date (``dd-Mon-yyyy``).
"""

import os
import re
from collections.abc import Iterator
from typing import Any

from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.data.sources.named_sources import DATA_ENV, default_data_path
from tfrec_tricks.errors import DataError, malformed_line

# Dataset name -> its metadata file, relative to the data folder.
MOVIELENS_METADATA = {
    "ml-1m": "ml-1m/item_map.tsv",
    "ml-1m-timed": "ml-1m/movies.dat",
    "ml-100k": "ml-100k/u.item",
}
GENRES_100K = "ml-100k/u.genre"
KINDS = {"genres": "token_seq", "year": "float"}

_TITLE_YEAR = re.compile(r"\((\d{4})\)\s*$")
_RELEASE_DATE = re.compile(r"\d{1,2}-[A-Za-z]{3}-(\d{4})")
_ITEM_MAP_HEADER = ["item_idx", "MovieID", "title", "genres"]
_LATIN1 = "iso-8859-1"


def movielens_item_features(
    name: str, data_dir: str | None = None
) -> ItemFeatureTable:
    """The genres and year of each movie of a built-in MovieLens dataset.

    Args:
        name: str. A dataset of ``MOVIELENS_METADATA``: "ml-1m",
            "ml-1m-timed" or "ml-100k".
        data_dir: str. The folder that holds the dataset folders (as
            ``--data-path`` does for the datasets); defaults to
            $TFREC_TRICKS_DATA, else ../shared/data.

    Returns:
        ItemFeatureTable. ``genres`` (token_seq) and ``year`` (float) per
        raw item id of the dataset's interactions.

    Raises:
        DataError: if ``name`` has no metadata, a file is missing, or a
            line cannot be read (named ``file:line``, with the column and
            value).

    Example:

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(folder, "ml-1m"))
    >>> with open(os.path.join(folder, "ml-1m", "movies.dat"), "w") as f:
    ...     _ = f.write("1::Toy Story (1995)::Animation|Children's|Comedy\\n")
    >>> table = movielens_item_features("ml-1m-timed", folder)
    >>> table.kinds
    {'genres': 'token_seq', 'year': 'float'}
    >>> table.rows["1"]
    {'genres': ('Animation', "Children's", 'Comedy'), 'year': 1995.0}
    """
    if name not in MOVIELENS_METADATA:
        raise DataError(
            f"No item metadata for data source {name!r}: the datasets with "
            f"metadata are {', '.join(MOVIELENS_METADATA)}; give the item "
            f"features of another source as a RecBole .item file"
        )
    path, *others = metadata_files(name, data_dir)
    if name == "ml-1m":
        rows = _item_map_rows(path, name)
    elif name == "ml-1m-timed":
        rows = _movies_dat_rows(path, name)
    else:
        rows = _u_item_rows(path, name, _genre_names(others[0], name))
    return ItemFeatureTable(kinds=dict(KINDS), rows=rows, source=path)


def metadata_files(name: str, data_dir: str | None = None) -> list[str]:
    """The files ``movielens_item_features`` reads for dataset ``name``:
    its metadata file first (ml-100k: then ``u.genre``).

    >>> metadata_files("ml-100k", "d")
    ['d/ml-100k/u.item', 'd/ml-100k/u.genre']
    """
    folder = data_dir or default_data_path()
    files = [os.path.join(folder, MOVIELENS_METADATA[name])]
    if name == "ml-100k":
        files.append(os.path.join(folder, GENRES_100K))
    return files


def _lines(path: str, name: str, encoding: str) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` of ``path``, line ends removed, blank lines
    skipped.

    Raises:
        DataError: the file is missing, or a line does not decode.
    """
    if not os.path.isfile(path):
        raise DataError(
            f"Item metadata of {name!r} not found: missing {path!r}. Point "
            f"--data-path (or ${DATA_ENV}) at the folder that holds "
            f"{MOVIELENS_METADATA[name].split('/')[0]}/."
        )
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode(encoding).rstrip("\r\n")
            except UnicodeDecodeError as error:
                raise DataError(
                    f"{path}:{number}: not valid {encoding} at byte offset "
                    f"{error.start} of the line (0x{raw[error.start]:02x}); "
                    "is it the original GroupLens file?"
                ) from None
            if line.strip():
                yield number, line


def _item(
    rows: dict[str, Any],
    lines: dict[str, int],
    item: str,
    path: str,
    number: int,
    line: str,
    what: str,
) -> str:
    """``item``, refused when empty or listed before."""
    if not item.strip():
        raise malformed_line(path, number, line, f"the {what} is empty")
    if item in rows:
        raise malformed_line(
            path,
            number,
            line,
            f"{what} {item!r} is listed twice, first at {path}:{lines[item]}",
        )
    lines[item] = number
    return item


def _row(genres: list[str], year: float | None) -> dict[str, Any]:
    """An item's values: genres as tokens without spaces, year if any."""
    row: dict[str, Any] = {}
    tokens = tuple(g.strip().replace(" ", "_") for g in genres if g.strip())
    if tokens:
        row["genres"] = tokens
    if year is not None:
        row["year"] = year
    return row


def _title_year(title: str) -> float | None:
    """The year ending a MovieLens title, or None.

    >>> _title_year("Toy Story (1995)"), _title_year("Untitled")
    (1995.0, None)
    """
    match = _TITLE_YEAR.search(title)
    return float(match.group(1)) if match else None


def _item_map_rows(path: str, name: str) -> dict[str, dict[str, Any]]:
    """The rows of ``item_map.tsv``, keyed by ``item_idx``."""
    rows: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    header = True
    for number, line in _lines(path, name, "utf-8"):
        fields = line.split("\t")
        if header:
            header = False
            if fields != _ITEM_MAP_HEADER:
                raise malformed_line(
                    path,
                    number,
                    line,
                    f"expected the header {'<TAB>'.join(_ITEM_MAP_HEADER)}",
                )
            continue
        if len(fields) != len(_ITEM_MAP_HEADER):
            raise malformed_line(
                path,
                number,
                line,
                f"expected {len(_ITEM_MAP_HEADER)} tab-separated fields "
                f"({', '.join(_ITEM_MAP_HEADER)}), received {len(fields)}",
            )
        item = _item(rows, seen, fields[0], path, number, line, "item_idx")
        rows[item] = _row(fields[3].split("|"), _title_year(fields[2]))
    return rows


def _movies_dat_rows(path: str, name: str) -> dict[str, dict[str, Any]]:
    """The rows of ``movies.dat``, keyed by MovieID."""
    rows: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    for number, line in _lines(path, name, _LATIN1):
        fields = line.split("::")
        if len(fields) != 3:
            raise malformed_line(
                path,
                number,
                line,
                "expected 3 fields MovieID::Title::Genres, received "
                f"{len(fields)}",
            )
        item = _item(rows, seen, fields[0], path, number, line, "MovieID")
        rows[item] = _row(fields[2].split("|"), _title_year(fields[1]))
    return rows


def _genre_names(path: str, name: str) -> list[str]:
    """The genres of ``u.genre`` (``name|index`` lines), by index."""
    by_index: dict[int, str] = {}
    for number, line in _lines(path, name, _LATIN1):
        genre, separator, index = line.rpartition("|")
        if not separator or not index.isdigit() or not genre.strip():
            raise malformed_line(
                path, number, line, "expected genre|index, e.g. Action|1"
            )
        if int(index) in by_index:
            raise malformed_line(
                path,
                number,
                line,
                f"index {index!r} given twice ({by_index[int(index)]!r} "
                f"and {genre!r})",
            )
        by_index[int(index)] = genre
    if sorted(by_index) != list(range(len(by_index))):
        raise DataError(
            f"{path}: the genre indices should be 0..{len(by_index) - 1}. "
            f"Received: {sorted(by_index)}"
        )
    return [by_index[k] for k in range(len(by_index))]


def _u_item_rows(
    path: str, name: str, genres: list[str]
) -> dict[str, dict[str, Any]]:
    """The rows of ``u.item``, keyed by movie id."""
    rows: dict[str, dict[str, Any]] = {}
    seen: dict[str, int] = {}
    expected = 5 + len(genres)
    for number, line in _lines(path, name, _LATIN1):
        fields = line.split("|")
        if len(fields) != expected:
            raise malformed_line(
                path,
                number,
                line,
                f"expected {expected} |-separated fields (id, title, "
                f"release date, video release date, URL and "
                f"{len(genres)} genre flags), received {len(fields)}",
            )
        item = _item(rows, seen, fields[0], path, number, line, "movie id")
        flags = fields[5:]
        for genre, flag in zip(genres, flags):
            if flag not in ("0", "1"):
                raise malformed_line(
                    path,
                    number,
                    line,
                    f"genre flag {genre!r}: {flag!r} is not 0 or 1",
                )
        held = [genre for genre, flag in zip(genres, flags) if flag == "1"]
        rows[item] = _row(held, _release_year(fields[2], path, number, line))
    return rows


def _release_year(date: str, path: str, number: int, line: str) -> float | None:
    """The year of a ``dd-Mon-yyyy`` release date; None when empty."""
    if not date.strip():
        return None
    match = _RELEASE_DATE.fullmatch(date.strip())
    if match is None:
        raise malformed_line(
            path,
            number,
            line,
            f"column 'release date': {date!r} is not dd-Mon-yyyy",
        )
    return float(match.group(1))
