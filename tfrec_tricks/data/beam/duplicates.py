"""Exact duplicate rows in a Beam preparation: counted and, if asked,
dropped, as ``read_encoded`` does.

With timestamps, rows that repeat an earlier row exactly (same user, item,
time, numeric and other columns) are duplicates: the first in file order
is kept. Without timestamps no two rows are (identical lines are repeats
in time order).

Example:

>>> merge_duplicates([(0, None, None), (2, (1, 4), (0, 3)),
...                   (1, (0, 9), (0, 2))])
(3, (0, 9), (0, 2))
"""

import json
from collections.abc import Iterable, Iterator

import apache_beam as beam

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.rows import (
    FILE,
    ITEM,
    LINE,
    NUMERIC,
    OTHER,
    TIME,
    USER,
)
from tfrec_tricks.data.sources.encoded_interactions import DuplicateRows


def drop_duplicate_rows(
    rows: beam.PCollection, schema: beam.pvalue.AsSingleton, config: BeamConfig
) -> tuple:
    """Counts exact duplicates (with timestamps) and, if asked, drops them.

    Args:
        rows: PCollection of rows (``beam.rows``).
        schema: singleton side input of ``beam.rows.file_schema``.
        config: ``BeamConfig``. Its ``drop_duplicates``.

    Returns:
        The rows (with ``config.drop_duplicates``, only the first of each
        group of exact duplicates), and a singleton PCollection: the
        ``merge_duplicates`` result.
    """
    same_rows = (
        rows
        | "DuplicateKeys" >> beam.Map(_duplicate_key, schema)
        | "GroupDuplicates" >> beam.GroupByKey()
    )
    unique = same_rows | "DropDuplicates" >> beam.FlatMap(
        _unique_rows, config.drop_duplicates
    )
    duplicates = (
        same_rows
        | "DuplicatePlaces" >> beam.FlatMap(_duplicate_places)
        | "FirstDuplicate" >> beam.CombineGlobally(merge_duplicates)
    )
    return unique, duplicates


def _duplicate_key(row: tuple, schema: dict) -> tuple[str, tuple]:
    """``(key, row)``: rows with equal keys are exact duplicates."""
    if schema["has_time"]:
        # + 0.0: -0.0 and 0.0 are one value, as NumPy compares them.
        numeric = [value + 0.0 for value in row[NUMERIC]]
        time = row[TIME] + 0.0
        fields = row[USER], row[ITEM], time, numeric, row[OTHER]
    else:
        fields = row[FILE], row[LINE]
    return json.dumps(fields), row


def _unique_rows(group: tuple, drop: bool) -> Iterable[tuple]:
    """The rows of a group of exact duplicates: all, or with ``drop`` the
    first in file order."""
    _, rows = group
    if not drop:
        return rows
    return [min(rows, key=lambda r: (r[FILE], r[LINE]))]


def _duplicate_places(group: tuple) -> Iterator[tuple]:
    """``(count, first duplicate's place, its original's place)`` of a
    group of exact duplicates, when it has more than one row."""
    _, rows = group
    places = sorted((r[FILE], r[LINE]) for r in rows)
    if len(places) > 1:
        yield len(places) - 1, places[1], places[0]


def merge_duplicates(counts: Iterable[tuple]) -> tuple:
    """Sums the counts; keeps the places of the first duplicate.

    Args:
        counts: ``(count, first duplicate's place, its original's place)``
            tuples, a place being ``(file index, line)``.

    Returns:
        ``(total count, first place, its original's place)``, or
        ``(0, None, None)``.
    """
    counts = [c for c in counts if c[0]]
    if not counts:
        return 0, None, None
    first = min(counts, key=lambda c: tuple(c[1]))
    return sum(c[0] for c in counts), first[1], first[2]


def duplicate_rows(
    found: list, paths: list[str], config: BeamConfig
) -> DuplicateRows | None:
    """The pipeline's ``merge_duplicates`` result, for the user.

    Args:
        found: the ``merge_duplicates`` result, read back from JSON.
        paths: list of str. The input files, by file index.
        config: ``BeamConfig``. Its ``drop_duplicates``.

    Returns:
        A ``DuplicateRows`` naming the first duplicate and its original
        as ``path:line``, or None when there are none.
    """
    count, first, original = found
    if not count:
        return None
    return DuplicateRows(
        count,
        f"{paths[first[0]]}:{first[1]}",
        f"{paths[original[0]]}:{original[1]}",
        config.drop_duplicates,
    )
