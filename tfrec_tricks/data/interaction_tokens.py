"""Categorical per-interaction features: the ``token`` columns of a file.

A RecBole ``.inter`` file may hold categorical columns besides the user
and the item (``device:token``, ``channel:token``): each interaction has
a value. ``interaction_token_features`` encodes them as item features'
tokens are (``item_features.encoding``): int32 ids, 0 for no value (an
empty field) and for padding, 1 out-of-vocabulary, the vocabulary's tokens
2, 3, ... The vocabulary holds the values that at least ``min_count``
training interactions hold, most held first, ties in value order
(``item_features.encoding.kept_vocabulary``). The training interactions are the
positions of the training targets and of their histories: positions
``0 .. train_end`` of each user with a training example, counted once
each. Values seen only in validation or test positions are
out-of-vocabulary, so nothing of the held-out interactions leaks into the
vocabularies.

A prepared dataset (``tfrec-tricks prepare``) carries them too: its
shards hold each user's ids and its ``interaction_tokens.json`` the specs
(``specs_json``). Both engines build a spec with ``token_spec`` from the
same counts (the Beam engine counts them per user and sums them), so the
local and the Beam file are byte-equal.
"""

import collections
import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from tfrec_tricks.data.item_features.encoding import (
    FIRST_TOKEN_ID,
    OOV_ID,
    PAD_ID,
    check_min_count,
    kept_vocabulary,
)
from tfrec_tricks.data.user_sequences import UserSequences

TOKEN_KIND = "token"


@dataclasses.dataclass(frozen=True)
class InteractionTokenSpec:
    """One categorical per-interaction feature: its name and vocabulary.

    Attributes:
        name: str. The column's name in the file.
        vocabulary: tuple of str. The kept values, the first with id 2 (0
            is no value or padding, 1 out-of-vocabulary).
        coverage: float. The share of interactions with a value.

    Example:

    >>> spec = InteractionTokenSpec("device", ("mobile", "web"), 0.5)
    >>> spec.vocabulary_size, spec.model_dict()["vocabulary_size"]
    (4, 4)
    >>> InteractionTokenSpec.from_dict(spec.to_dict()) == spec
    True
    """

    name: str
    vocabulary: tuple[str, ...] = ()
    coverage: float = 0.0

    @property
    def vocabulary_size(self) -> int:
        """Ids, padding and OOV included."""
        return len(self.vocabulary) + FIRST_TOKEN_ID

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: name, kind, vocabulary, vocabulary_size, coverage."""
        return {
            "name": self.name,
            "kind": TOKEN_KIND,
            "vocabulary": list(self.vocabulary),
            "vocabulary_size": self.vocabulary_size,
            "coverage": self.coverage,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InteractionTokenSpec":
        return cls(
            str(d["name"]),
            tuple(str(t) for t in d.get("vocabulary", ())),
            float(d.get("coverage", 0.0)),
        )

    def model_dict(self) -> dict[str, Any]:
        """What ``ModelConfig.token_features`` holds of it: the name, the
        vocabulary size and the vocabulary (the served model looks raw
        values up in it)."""
        return {
            "name": self.name,
            "vocabulary_size": self.vocabulary_size,
            "vocabulary": list(self.vocabulary),
        }

    def summary_row(self) -> dict[str, Any]:
        """The run's summary and ``metrics.json`` row of the feature."""
        return {
            "name": self.name,
            "kind": TOKEN_KIND,
            "vocabulary_size": self.vocabulary_size,
            "coverage": self.coverage,
        }


def training_rows(sequences: UserSequences) -> np.ndarray:
    """bool [n]: the interactions of the training examples, as a target or
    in a history (positions ``0 .. train_end`` of users with a training
    example).

    >>> from tfrec_tricks.data.user_sequences import user_sequences
    >>> sequences = user_sequences(np.array(["u"] * 5), np.array(list("abcde")))
    >>> training_rows(sequences).tolist()  # a -> b, a b -> c; d, e held out
    [True, True, True, False, False]
    """
    ends = sequences.train_ends
    user = np.repeat(np.arange(sequences.num_users), sequences.lengths)
    position = np.arange(len(sequences.items)) - sequences.starts[user]
    return (ends[user] >= 1) & (position <= ends[user])


def token_ids(vocabulary: tuple) -> dict[str, int]:
    """The id of each value ``encode_tokens`` knows: ``""`` -> 0 and
    ``vocabulary[k]`` -> ``k + 2`` (any other value is 1, OOV).

    >>> token_ids(("app", "web"))
    {'app': 2, 'web': 3, '': 0}
    """
    ids = {token: FIRST_TOKEN_ID + k for k, token in enumerate(vocabulary)}
    ids[""] = PAD_ID
    return ids


def encode_tokens(values: np.ndarray, vocabulary: tuple) -> np.ndarray:
    """int32 ids of raw ``values``: ``""`` -> 0, a value not in
    ``vocabulary`` -> 1, ``vocabulary[k]`` -> ``k + 2``.

    >>> encode_tokens(np.array(["web", "", "tv", "app"]), ("app", "web"))
    array([3, 0, 1, 2], dtype=int32)
    """
    ids = token_ids(vocabulary)
    distinct, inverse = np.unique(
        np.asarray(values, dtype=str), return_inverse=True
    )
    coded = np.array([ids.get(str(v), OOV_ID) for v in distinct], np.int32)
    return (
        coded[inverse.reshape(-1)] if len(distinct) else np.zeros(0, np.int32)
    )


def token_spec(
    name: str,
    training_counts: Mapping[str, int],
    with_value: int,
    interactions: int,
    min_count: int = 1,
) -> InteractionTokenSpec:
    """The spec of one token column, from its counts.

    Args:
        name: str. The column's name.
        training_counts: value -> how many training interactions hold it
            (``training_rows``; ``""`` left out).
        with_value: int. Interactions, of all, with a value (not ``""``).
        interactions: int. All interactions.
        min_count: int. A value held by fewer training interactions is
            out-of-vocabulary.

    Returns:
        An ``InteractionTokenSpec``: the vocabulary of
        ``item_features.kept_vocabulary``, the coverage
        ``with_value / interactions``.

    >>> token_spec("device", {"web": 3, "app": 1, "tv": 3}, 6, 8, 2)
    InteractionTokenSpec(name='device', vocabulary=('tv', 'web'), coverage=0.75)
    """  # noqa: E501
    vocabulary = kept_vocabulary(training_counts, min_count)
    coverage = with_value / interactions if interactions else 0.0
    return InteractionTokenSpec(name, vocabulary, float(coverage))


def specs_json(specs: Iterable[InteractionTokenSpec]) -> str:
    """The text of a prepared dataset's ``interaction_tokens.json``: the
    ``to_dict()`` of each spec, sorted by name.

    >>> specs_from_json(specs_json([InteractionTokenSpec("device", ("web",))]))
    (InteractionTokenSpec(name='device', vocabulary=('web',), coverage=0.0),)
    """
    ordered = sorted(specs, key=lambda spec: spec.name)
    return json.dumps([spec.to_dict() for spec in ordered], indent=1)


def specs_from_json(text: str) -> tuple[InteractionTokenSpec, ...]:
    """The specs ``specs_json`` wrote, in its order.

    Raises:
        ValueError: ``text`` is not such a list.
    """
    rows = json.loads(text)
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and isinstance(row.get("name"), str)
        for row in rows
    ):
        raise ValueError("not a list of token feature specs")
    return tuple(InteractionTokenSpec.from_dict(row) for row in rows)


def interaction_token_features(
    sequences: UserSequences, min_count: int = 1
) -> tuple[tuple[InteractionTokenSpec, ...], dict[str, np.ndarray]]:
    """The specs and int32 [n] ids of ``sequences``' token columns.

    Args:
        sequences: a ``UserSequences`` with ``tokens``.
        min_count: int. A value held by fewer training interactions is
            out-of-vocabulary.

    Returns:
        ``(specs, ids)``: one ``InteractionTokenSpec`` per column (by
        name) and ``{name: int32 [n]}`` aligned with ``sequences.items``.

    Example:

    >>> from tfrec_tricks.data.user_sequences import user_sequences
    >>> sequences = user_sequences(
    ...     np.array(["u"] * 5), np.array(list("abcde")),
    ...     tokens={"device": np.array(["web", "app", "web", "", "tv"])})
    >>> specs, ids = interaction_token_features(sequences)
    >>> specs[0].vocabulary, ids["device"].tolist()  # tv: test only
    (('web', 'app'), [2, 3, 2, 0, 1])
    """
    check_min_count(min_count, "training interactions a value needs")
    if not sequences.tokens:
        return (), {}
    training = training_rows(sequences)
    specs, ids = [], {}
    for name in sorted(sequences.tokens):
        column = np.asarray(sequences.tokens[name], dtype=str)
        values, counts = np.unique(column[training], return_counts=True)
        counter = collections.Counter(
            {str(v): int(c) for v, c in zip(values, counts) if v != ""}
        )
        with_value = int((column != "").sum())
        spec = token_spec(name, counter, with_value, len(column), min_count)
        ids[name] = encode_tokens(column, spec.vocabulary)
        specs.append(spec)
    return tuple(specs), ids
