"""The users' sequences of a Beam preparation: users and items ranked,
each user's rows sorted and encoded.

Users are ranked by their first kept ``(file index, line)``; a user's rows
are sorted by ``(time, file index, line)`` (by ``(file index, line)``
without timestamps); items are ranked by their first ``(user index,
position)`` and numbered from 1. Each ranking collects ``(id, first
place)`` pairs on one worker, as tf.Transform computes its vocabularies;
every worker then holds the item vocabulary (a dict of raw id to
contiguous id) as a side input.

Example:

>>> ranked([("b", (0, 7)), ("a", (1, 2)), ("c", (0, 3))])
['c', 'b', 'a']
"""

from collections.abc import Iterator

import apache_beam as beam
import numpy as np

from tfrec_tricks.data import prepared_format as fmt
from tfrec_tricks.data.beam_config import BeamConfig
from tfrec_tricks.data.beam_rows import FILE, ITEM, LINE, NUMERIC, TIME, USER
from tfrec_tricks.data.user_sequences import TIME_GAP, split_positions


def ranked_users(
    kept: beam.PCollection, schema: beam.pvalue.AsSingleton, config: BeamConfig
) -> tuple:
    """Ranks the users by their first kept row in file order; sorts each
    user's rows.

    Args:
        kept: PCollection of rows (``beam_rows``) that passed the filter.
        schema: singleton side input of ``beam_rows.file_schema``.
        config: ``BeamConfig``. Its ``numeric_features``.

    Returns:
        A singleton PCollection of the ranked user names, and one
        ``(user index, raw items, features)`` per user.
    """
    user_ranking = (
        kept
        | "UserFirstRow" >> beam.Map(lambda r: (r[USER], (r[FILE], r[LINE])))
        | "UserFirst" >> beam.CombinePerKey(min)
        | "AllUserFirsts" >> beam.combiners.ToList()
        | "RankUsers" >> beam.Map(ranked)
    )
    user_index = user_ranking | "UserIndex" >> beam.FlatMap(
        lambda names: ((name, index) for index, name in enumerate(names))
    )
    sequences = (
        {
            "rows": kept | "ByUser" >> beam.Map(lambda r: (r[USER], r)),
            "index": user_index,
        }
        | "GroupUsers" >> beam.CoGroupByKey()
        | "SortUser" >> beam.Map(_sort_user, schema, config.numeric_features)
    )
    return user_ranking, sequences


def encoded_users(sequences: beam.PCollection, config: BeamConfig) -> tuple:
    """Ranks the items by their first ``(user index, position)``, numbers
    them from 1 and encodes each user with those numbers.

    Args:
        sequences: PCollection of ``ranked_users``' users.
        config: ``BeamConfig``. Its ``split``.

    Returns:
        A singleton PCollection of the ranked item names, and one
        ``(serialized example, (items, features, validation position,
        test position))`` per user.
    """
    item_ranking = (
        sequences
        | "ItemFirstPlaces" >> beam.FlatMap(_first_places)
        | "ItemFirst" >> beam.CombinePerKey(min)
        | "AllItemFirsts" >> beam.combiners.ToList()
        | "RankItems" >> beam.Map(ranked)
    )
    item_ids = beam.pvalue.AsSingleton(
        item_ranking
        | "ItemIds"
        >> beam.Map(lambda names: {name: i + 1 for i, name in enumerate(names)})
    )
    encoded = sequences | "Encode" >> beam.Map(
        _encode_user, item_ids, config.split
    )
    return item_ranking, encoded


def ranked(firsts: list[tuple[str, tuple]]) -> list[str]:
    """Names in order of their first place.

    Args:
        firsts: list of ``(name, first place)``.

    Returns:
        list of the names.
    """
    return [name for name, _ in sorted(firsts, key=lambda kv: kv[1])]


def _sort_user(
    grouped: tuple[str, dict], schema: dict, numeric_features: bool
) -> tuple[int, list[str], dict[str, np.ndarray]]:
    """One user's rows in time order: index, raw items and features."""
    _, parts = grouped
    (index,) = parts["index"]
    rows = list(parts["rows"])
    has_time = schema["has_time"]
    if has_time:
        rows.sort(key=lambda r: (r[TIME], r[FILE], r[LINE]))
    else:
        rows.sort(key=lambda r: (r[FILE], r[LINE]))
    features = {}
    if numeric_features:
        if has_time:
            times = np.array([r[TIME] for r in rows], np.float64)
            gap = np.empty(len(rows), np.float32)
            gap[1:] = np.diff(times)
            gap[0] = np.nan
            features[TIME_GAP] = gap
        slots = schema["slots"]
        for k, name in enumerate(schema["numeric"]):
            features[name] = np.array(
                [r[NUMERIC][slots[r[FILE]][k]] for r in rows], np.float32
            )
    return index, [r[ITEM] for r in rows], features


def _first_places(user: tuple) -> Iterator[tuple[str, tuple[int, int]]]:
    """``(item, (user index, position))`` of each item's first in ``user``."""
    index, items, _ = user
    seen = set()
    for position, item in enumerate(items):
        if item not in seen:
            seen.add(item)
            yield item, (index, position)


def _encode_user(user: tuple, item_ids: dict[str, int], split: str) -> tuple:
    """A user's serialized example, and what the summary needs of it."""
    index, names, features = user
    items = np.fromiter((item_ids[n] for n in names), np.int32, len(names))
    validation, test = (int(p) for p in split_positions(len(items), split))
    example = fmt.user_example(index, items, validation, test, features)
    return example, (items, features, validation, test)
