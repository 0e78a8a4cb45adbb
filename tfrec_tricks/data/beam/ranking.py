"""The users' sequences of a Beam preparation: users and items ranked,
each user's rows sorted and encoded.

Users are ranked by their first kept ``(file index, line)``; a user's rows
are sorted by ``(time, file index, line)`` (by ``(file index, line)``
without timestamps); items are ranked by their first ``(user index,
position)`` and numbered from 1. Each ranking collects ``(id, first
place)`` pairs on one worker, as tf.Transform computes its vocabularies;
every worker then holds the item vocabulary (a dict of raw id to
contiguous id) as a side input, and the token columns' ids
(``beam.tokens``) likewise.

Example:

>>> ranked([("b", (0, 7)), ("a", (1, 2)), ("c", (0, 3))])
['c', 'b', 'a']
"""

from collections.abc import Iterator

import apache_beam as beam
import numpy as np

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.rows import (
    FILE,
    ITEM,
    LINE,
    NUMERIC,
    TIME,
    TOKENS,
    USER,
)
from tfrec_tricks.data.beam.tokens import encode_user_tokens, token_lookups
from tfrec_tricks.data.prepared import format as fmt
from tfrec_tricks.data.user_sequences import TIME_GAP, split_positions


def ranked_users(
    kept: beam.PCollection, schema: beam.pvalue.AsSingleton, config: BeamConfig
) -> tuple:
    """Ranks the users by their first kept row in file order; sorts each
    user's rows.

    Args:
        kept: PCollection of rows (``beam.rows``) that passed the filter.
        schema: singleton side input of ``beam.rows.file_schema``.
        config: ``BeamConfig``. Its ``numeric_features``.

    Returns:
        A singleton PCollection of the ranked user names, and one
        ``(user index, raw items, features, tokens)`` per user
        (``tokens``: each token column's raw values, in time order).
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


def encoded_users(
    sequences: beam.PCollection, config: BeamConfig, token_specs=None
) -> tuple:
    """Ranks the items by their first ``(user index, position)``, numbers
    them from 1 and encodes each user with those numbers.

    Args:
        sequences: PCollection of ``ranked_users``' users.
        config: ``BeamConfig``. Its ``split``.
        token_specs: singleton PCollection of the token columns' specs
            (``beam.tokens.token_features``): each user's values are
            encoded with them. None: the users' token columns are left
            out.

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
    lookups = {}
    if token_specs is not None:
        lookups = beam.pvalue.AsSingleton(
            token_specs | "TokenIds" >> beam.Map(token_lookups)
        )
    encoded = sequences | "Encode" >> beam.Map(
        _encode_user, item_ids, config.split, lookups
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
) -> tuple[int, list[str], dict[str, np.ndarray], dict[str, list[str]]]:
    """One user's rows in time order: index, raw items, features and
    token columns' raw values (kept whatever ``numeric_features``, as
    ``user_sequences`` keeps them)."""
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
    token_slots = schema["token_slots"]
    tokens = {
        name: [r[TOKENS][token_slots[r[FILE]][k]] for r in rows]
        for k, name in enumerate(schema["tokens"])
    }
    return index, [r[ITEM] for r in rows], features, tokens


def _first_places(user: tuple) -> Iterator[tuple[str, tuple[int, int]]]:
    """``(item, (user index, position))`` of each item's first in ``user``."""
    index, items = user[0], user[1]
    seen = set()
    for position, item in enumerate(items):
        if item not in seen:
            seen.add(item)
            yield item, (index, position)


def _encode_user(
    user: tuple,
    item_ids: dict[str, int],
    split: str,
    token_ids: dict[str, dict[str, int]],
) -> tuple:
    """A user's serialized example, and what the summary needs of it."""
    index, names, features, tokens = user
    items = np.fromiter((item_ids[n] for n in names), np.int32, len(names))
    validation, test = (int(p) for p in split_positions(len(items), split))
    # Without specs (``encoded_users``), no token column is written.
    tokens = {name: tokens[name] for name in token_ids}
    example = fmt.user_example(
        index,
        items,
        validation,
        test,
        features,
        encode_user_tokens(tokens, token_ids),
    )
    return example, (items, features, validation, test)
