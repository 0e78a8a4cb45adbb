"""The token features of a Beam preparation: vocabularies and ids.

The local engine encodes the ``token`` columns with
``interaction_token_features``; the pipeline builds the same specs from
the same counts (``interaction_tokens.token_spec``):

1. each user, its rows sorted and its split positions known
   (``split_positions``, as ``beam.ranking`` encodes it), gives the
   counts of the values of its training positions (``training_rows``:
   positions ``0 .. train_end``, ``""`` left out) and, per column, how
   many of its interactions have a value, and how many it has;
2. the counts are summed per ``(column, value)`` and per column across
   workers, then gathered on one worker, which builds the specs
   (``token_specs``): the vocabularies of ``kept_vocabulary``, the
   coverage ``with_value / interactions``;
3. every worker holds the specs' ids (``token_lookups``) as a side
   input, as it holds the item vocabulary, to encode each user's values
   (``encode_user_tokens``) when it writes the user's record.

The counts are integers and their sums exact in any order, so the specs,
and the ``interaction_tokens.json`` the driver writes of them, are
byte-equal to the local engine's.

Example:

>>> user = (0, ["a", "b", "c", "d"], {}, {"device": ["web", "", "web", "tv"]})
>>> sorted(user_token_counts(user, "recbole"))  # a, b train; c, d held out
[(('device', 'web'), 1)]
>>> list(user_token_coverage(user))
[('device', (3, 4))]
>>> specs = token_specs([(("device", "web"), 1)], [("device", (3, 4))], 1)
>>> specs
[{'name': 'device', 'kind': 'token', 'vocabulary': ['web'], 'vocabulary_size': 3, 'coverage': 0.75}]
>>> encode_user_tokens(user[3], token_lookups(specs))["device"].tolist()
[2, 0, 2, 1]
"""  # noqa: E501

import collections
from collections.abc import Iterable, Iterator

import apache_beam as beam
import numpy as np

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.interaction_tokens import (
    InteractionTokenSpec,
    token_ids,
    token_spec,
    training_rows,
)
from tfrec_tricks.data.item_features.encoding import OOV_ID
from tfrec_tricks.data.user_sequences import UserSequences, split_positions


def token_features(sequences: beam.PCollection, config: BeamConfig):
    """A singleton PCollection: the token columns' specs.

    Args:
        sequences: PCollection of ``beam.ranking.ranked_users``' users,
            ``(user index, raw items, features, tokens)``.
        config: ``BeamConfig``. Its ``split`` and ``min_feature_count``.

    Returns:
        The list of ``InteractionTokenSpec.to_dict()``, sorted by name
        (empty without token columns).
    """
    counts = (
        sequences
        | "TokenTrainingCounts" >> beam.FlatMap(user_token_counts, config.split)
        | "SumTokenCounts" >> beam.CombinePerKey(sum)
        | "AllTokenCounts" >> beam.combiners.ToList()
    )
    coverage = beam.pvalue.AsSingleton(
        sequences
        | "TokenCoverage" >> beam.FlatMap(user_token_coverage)
        | "SumTokenCoverage" >> beam.CombinePerKey(add_pairs)
        | "AllTokenCoverage" >> beam.combiners.ToList()
    )
    return counts | "TokenSpecs" >> beam.Map(
        token_specs, coverage, config.min_feature_count
    )


def user_token_counts(
    user: tuple, split: str
) -> Iterator[tuple[tuple[str, str], int]]:
    """``((column, value), count)`` of one user's training positions.

    Args:
        user: ``(user index, raw items, features, tokens)``; ``tokens``
            maps a column to its raw values, in time order.
        split: str. A key of ``SPLITS``: where the held-out targets are.
    """
    _, items, _, tokens = user
    if not tokens:
        return
    validation, test = split_positions(len(items), split)
    sequence = UserSequences(
        item_names=[],
        user_names=[],
        items=np.zeros(len(items), np.int32),
        starts=np.zeros(1, np.int64),
        lengths=np.array([len(items)], np.int64),
        features={},
        validation_positions=np.array([validation], np.int64),
        test_positions=np.array([test], np.int64),
    )
    training = training_rows(sequence)
    for name, values in tokens.items():
        counts = collections.Counter(
            value for value, kept in zip(values, training) if kept and value
        )
        for value, count in counts.items():
            yield (name, value), count


def user_token_coverage(user: tuple) -> Iterator[tuple[str, tuple[int, int]]]:
    """``(column, (interactions with a value, interactions))`` of a user."""
    _, items, _, tokens = user
    for name, values in tokens.items():
        yield name, (sum(1 for value in values if value), len(items))


def add_pairs(pairs: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """The element-wise sum of ``(a, b)`` pairs.

    >>> add_pairs([(1, 2), (3, 4)])
    (4, 6)
    """
    first = second = 0
    for a, b in pairs:
        first += a
        second += b
    return first, second


def token_specs(
    counts: list[tuple[tuple[str, str], int]],
    coverage: list[tuple[str, tuple[int, int]]],
    min_count: int,
) -> list[dict]:
    """The specs of every token column, from the summed counts.

    Args:
        counts: ``((column, value), training interactions)``.
        coverage: ``(column, (interactions with a value, interactions))``,
            one per column.
        min_count: int. A value held by fewer training interactions is
            out-of-vocabulary.

    Returns:
        The ``InteractionTokenSpec.to_dict()`` of each column
        (``interaction_tokens.token_spec``), sorted by name.
    """
    by_column = collections.defaultdict(dict)
    for (name, value), count in counts:
        by_column[name][value] = count
    return [
        token_spec(
            name, by_column[name], with_value, total, min_count
        ).to_dict()
        for name, (with_value, total) in sorted(coverage)
    ]


def token_lookups(specs: list[dict]) -> dict[str, dict[str, int]]:
    """Each column's ``interaction_tokens.token_ids``, from its spec."""
    return {
        spec.name: token_ids(spec.vocabulary)
        for spec in map(InteractionTokenSpec.from_dict, specs)
    }


def encode_user_tokens(
    tokens: dict[str, list[str]], lookups: dict[str, dict[str, int]]
) -> dict[str, np.ndarray]:
    """A user's int64 ids per column (``interaction_tokens.encode_tokens``:
    ``""`` 0, an unknown value 1)."""
    return {
        name: np.fromiter(
            (lookups[name].get(value, OOV_ID) for value in values),
            np.int64,
            len(values),
        )
        for name, values in tokens.items()
    }
