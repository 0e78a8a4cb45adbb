"""Categorical per-interaction features: the ``token`` columns of a file.

A RecBole ``.inter`` file may hold categorical columns besides the user
and the item (``device:token``, ``channel:token``): each interaction has
a value. ``interaction_token_features`` encodes them as item features'
tokens are (``item_features``): int32 ids, 0 for no value (an empty
field) and for padding, 1 out-of-vocabulary, the vocabulary's tokens 2,
3, ... The vocabulary holds the values that at least ``min_count``
training interactions hold, most held first, ties in value order
(``item_features.kept_vocabulary``). The training interactions are the
positions of the training targets and of their histories: positions
``0 .. train_end`` of each user with a training example, counted once
each. Values seen only in validation or test positions are
out-of-vocabulary, so nothing of the held-out interactions leaks into the
vocabularies.
"""

import collections
import dataclasses
from typing import Any

import numpy as np

from tfrec_tricks.data.item_features import (
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


def encode_tokens(values: np.ndarray, vocabulary: tuple) -> np.ndarray:
    """int32 ids of raw ``values``: ``""`` -> 0, a value not in
    ``vocabulary`` -> 1, ``vocabulary[k]`` -> ``k + 2``.

    >>> encode_tokens(np.array(["web", "", "tv", "app"]), ("app", "web"))
    array([3, 0, 1, 2], dtype=int32)
    """
    ids = {token: FIRST_TOKEN_ID + k for k, token in enumerate(vocabulary)}
    ids[""] = PAD_ID
    distinct, inverse = np.unique(
        np.asarray(values, dtype=str), return_inverse=True
    )
    coded = np.array([ids.get(str(v), OOV_ID) for v in distinct], np.int32)
    return (
        coded[inverse.reshape(-1)] if len(distinct) else np.zeros(0, np.int32)
    )


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
        vocabulary = kept_vocabulary(counter, min_count)
        ids[name] = encode_tokens(column, vocabulary)
        coverage = float((ids[name] != PAD_ID).mean()) if len(column) else 0.0
        specs.append(InteractionTokenSpec(name, vocabulary, coverage))
    return tuple(specs), ids
