"""From an interaction table to leave-one-out next-item examples.

RecBole's protocol: ids become contiguous (items 1..N-1, 0 is padding); each
user's interactions are sorted by time; every position from the second item
on is a target whose history is everything before it, truncated to the last
``max_len`` items and right-padded with 0. Of a user's n - 1 examples the
last is the test example (when n >= 3) and the one before it the validation
example (when n >= 4); the rest, a two-item user's only example included,
are training examples. ``split="every-user"`` instead keeps users with at
least 3 interactions only and takes a validation and a test example from
each.

Right padding (real items first) lets causal encoders run without masks:
the state at the last real position depends on real items only, and a batch
can be cut to its longest history.
"""

import dataclasses
import json
from typing import Any

import numpy as np

from tfrec_tricks.data.interaction_tokens import (
    InteractionTokenSpec,
    interaction_token_features,
)
from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.data.training_statistics import (
    TrainingStatistics,
    training_statistics,
)
from tfrec_tricks.data.user_sequences import (
    PADDING,
    SPLITS,
    TIME_GAP,
    UserSequences,
    check_split,
    filter_rows,
    user_sequences,
)

__all__ = [
    "PADDING",
    "SPLITS",
    "TIME_GAP",
    "InMemoryDataset",
    "SequenceExamples",
    "Vocabulary",
    "check_split",
    "filter_interactions",
    "prepare",
    "sequence_examples",
]


@dataclasses.dataclass
class Vocabulary:
    """Raw ids <-> contiguous ids. ``items[0]`` is the padding token."""

    items: list[str]
    users: list[str]

    @property
    def num_items(self) -> int:
        """N: the number of item ids, padding included."""
        return len(self.items)

    def to_json(self) -> str:
        """``{"items": [...], "users": [...]}``, what ``load`` reads."""
        return json.dumps({"items": self.items, "users": self.users})

    def save(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(self.to_json())

    @classmethod
    def load(cls, path: str) -> "Vocabulary":
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return cls(items=data["items"], users=data["users"])


@dataclasses.dataclass
class SequenceExamples:
    """Next-item examples: right-padded histories and their targets.

    Attributes:
        history: int32 [n, max_len], item ids in time order, then 0s
            (right padding).
        target: int32 [n], the next item.
        user: int32 [n], contiguous user index (0-based).
        features: dict of float32 [n, max_len] per-position features,
            aligned with ``history`` (NaN where unknown, e.g. the gap before
            a user's first interaction; 0 at padding).
        tokens: dict of int32 [n, max_len] categorical per-position
            features (``interaction_tokens``: 0 no value or padding, 1
            out-of-vocabulary), aligned with ``history``.
    """

    history: np.ndarray
    target: np.ndarray
    user: np.ndarray
    features: dict[str, np.ndarray]
    tokens: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.target)

    def take(self, count: int) -> "SequenceExamples":
        """The first ``count`` examples (e.g. a quick look or a smoke run)."""
        return SequenceExamples(
            history=self.history[:count],
            target=self.target[:count],
            user=self.user[:count],
            features={k: v[:count] for k, v in self.features.items()},
            tokens={k: v[:count] for k, v in self.tokens.items()},
        )

    def as_dict(self) -> dict[str, np.ndarray]:
        return {
            "history": self.history,
            "target": self.target,
            "user": self.user,
            **self.features,
            **self.tokens,
        }


@dataclasses.dataclass
class InMemoryDataset:
    """Everything a run needs: vocabulary, the three splits, statistics.

    ``statistics`` are the training targets' item counts and the feature
    moments ``SequentialRetrievalModel.from_data`` reads. With item
    attributes (``with_item_features``), ``item_features`` holds the
    encoded ``ItemFeatures`` and ``trained_items`` the bool [N] mask of
    the items the training examples hold (the others are cold items).
    ``token_features`` holds the ``InteractionTokenSpec`` of each
    categorical per-interaction feature the examples' ``tokens`` hold.
    """

    vocabulary: Vocabulary
    train: SequenceExamples
    validation: SequenceExamples
    test: SequenceExamples
    max_len: int
    feature_names: list[str]
    statistics: TrainingStatistics
    item_features: Any = None
    trained_items: np.ndarray | None = None
    token_features: tuple[InteractionTokenSpec, ...] = ()

    @property
    def num_items(self) -> int:
        return self.vocabulary.num_items

    def summary(self) -> str:
        return (
            f"{len(self.vocabulary.users):,} users, "
            f"{self.num_items - 1:,} items; examples: "
            f"train {len(self.train):,}, validation {len(self.validation):,},"
            f" test {len(self.test):,}; max_len {self.max_len}; features: "
            f"{self.feature_names or 'none'}"
            + (
                f"; token features: {self.token_feature_names}"
                if self.token_features
                else ""
            )
            + (
                f"; item features: {self.item_features.names()}"
                if self.item_features is not None
                else ""
            )
        )

    @property
    def token_feature_names(self) -> list[str]:
        """The names of ``token_features``, in order."""
        return [spec.name for spec in self.token_features]

    def select_token_features(self, names: Any) -> "InMemoryDataset":
        """This dataset with only the token features of ``names``."""
        names = set(names)

        def kept(examples: SequenceExamples) -> SequenceExamples:
            tokens = {k: v for k, v in examples.tokens.items() if k in names}
            return dataclasses.replace(examples, tokens=tokens)

        return dataclasses.replace(
            self,
            train=kept(self.train),
            validation=kept(self.validation),
            test=kept(self.test),
            token_features=tuple(
                s for s in self.token_features if s.name in names
            ),
        )


def filter_interactions(
    interactions: Interactions,
    min_user_interactions: int = 0,
    min_item_interactions: int = 0,
) -> np.ndarray:
    """Row mask keeping users and items with enough interactions.

    Filters repeat until stable (dropping items can shrink users below the
    bound and back), as RecBole's k-core filtering does.
    """
    return filter_rows(
        interactions.users,
        interactions.items,
        min_user_interactions,
        min_item_interactions,
    )


def prepare(
    interactions: Interactions,
    max_len: int = 50,
    min_user_interactions: int = 1,
    min_item_interactions: int = 0,
    numeric_features: bool = True,
    split: str = "recbole",
    min_feature_count: int = 1,
) -> InMemoryDataset:
    """Builds the vocabulary and the leave-one-out splits.

    Args:
        interactions: the table from a loader or the synthetic generator.
        max_len: int. History length kept (the last ``max_len`` items).
            Defaults to 50.
        min_user_interactions: int. Users (sessions) with fewer
            interactions are dropped. Defaults to 1 (keep all, as RecBole).
        min_item_interactions: int. Items with fewer interactions are
            dropped first. Defaults to 0 (keep all).
        numeric_features: bool. Add per-position features: ``time_gap``
            (seconds since the user's previous interaction) when there are
            timestamps, and every numeric column (e.g. ``rating``).
        split: str. ``"recbole"``: RecBole 1.2.1's leave-one-out over each
            user's examples. A user's last example is the test example if
            the user has two or more, the one before it the validation
            example if three or more; the rest are training examples, so
            two- and three-item sessions train too. ``"every-user"``: users
            with fewer than 3 interactions are dropped and each kept user
            gives one validation and one test example (a three-item user no
            training example). Defaults to ``"recbole"``
            (docs/decisions.md#split).
        min_feature_count: int. A value of a token column held by fewer
            training interactions is out-of-vocabulary
            (``interaction_tokens``). Defaults to 1.

    Returns:
        A ``InMemoryDataset``.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data import Interactions, prepare
    >>> table = Interactions(
    ...     users=np.array(["ann"] * 4), items=np.array(["a", "b", "c", "d"]),
    ...     timestamps=np.array([10.0, 20.0, 40.0, 80.0]))
    >>> data = prepare(table, max_len=3)
    >>> data.vocabulary.items
    ['[PAD]', 'a', 'b', 'c', 'd']
    >>> data.train.history, data.train.target  # "a" -> "b"
    (array([[1, 0, 0]], dtype=int32), array([2], dtype=int32))
    >>> data.test.history, data.test.target  # "a b c" -> "d"
    (array([[1, 2, 3]], dtype=int32), array([4], dtype=int32))
    >>> data.test.features["time_gap"]
    array([[nan, 10., 20.]], dtype=float32)
    """
    if max_len <= 0:
        raise ValueError(
            f"max_len must be positive. Received: max_len={max_len}"
        )
    sequences = user_sequences(
        interactions.users,
        interactions.items,
        interactions.timestamps,
        interactions.numeric,
        min_user_interactions=min_user_interactions,
        min_item_interactions=min_item_interactions,
        numeric_features=numeric_features,
        split=split,
        source=interactions.source,
        tokens=interactions.tokens,
    )
    specs, token_ids = interaction_token_features(sequences, min_feature_count)
    return InMemoryDataset(
        vocabulary=Vocabulary(
            items=sequences.item_names, users=sequences.user_names
        ),
        train=sequence_examples(sequences, "train", max_len, token_ids),
        validation=sequence_examples(
            sequences, "validation", max_len, token_ids
        ),
        test=sequence_examples(sequences, "test", max_len, token_ids),
        max_len=max_len,
        feature_names=sorted(sequences.features),
        statistics=training_statistics(sequences, max_len),
        token_features=specs,
    )


def sequence_examples(
    sequences: UserSequences,
    split: str,
    max_len: int,
    tokens: dict[str, np.ndarray] | None = None,
) -> SequenceExamples:
    """The prefix examples of one split of ``sequences``.

    Args:
        sequences: a ``UserSequences``.
        split: str. "train" (every position from the second up to the
            first held-out one), "validation" or "test".
        max_len: int. History length kept.
        tokens: dict of int32 [n] token ids aligned with the sequences'
            items (``interaction_token_features``), or None.
    """
    user_of_row = np.repeat(np.arange(sequences.num_users), sequences.lengths)
    if split == "train":
        position = np.arange(len(sequences.items)) - np.repeat(
            sequences.starts, sequences.lengths
        )
        train = (position >= 1) & (
            position <= sequences.train_ends[user_of_row]
        )
        rows = np.flatnonzero(train)
    else:
        held_out = {
            "validation": sequences.validation_positions,
            "test": sequences.test_positions,
        }[split]
        users = np.flatnonzero(held_out >= 0)
        rows = sequences.starts[users] + held_out[users]
    return _windows(
        sequences.items,
        user_of_row,
        np.repeat(sequences.starts, sequences.lengths),
        sequences.features,
        rows,
        max_len,
        tokens or {},
    )


def _windows(
    item_ids, user_codes, user_start, per_position, positions, max_len, tokens
) -> SequenceExamples:
    positions = positions.astype(np.int64)
    lengths = np.minimum(positions - user_start[positions], max_len)
    steps = np.arange(max_len)[None, :]
    valid = steps < lengths[:, None]
    # Right padding: the k real items first, in time order, then zeros.
    index = np.where(valid, (positions - lengths)[:, None] + steps, 0)
    history = np.where(valid, item_ids[index], 0).astype(np.int32)
    features = {
        name: np.where(valid, column[index], 0.0).astype(np.float32)
        for name, column in per_position.items()
    }
    return SequenceExamples(
        history=history,
        target=item_ids[positions],
        user=user_codes[positions].astype(np.int32),
        features=features,
        tokens={
            name: np.where(valid, column[index], 0).astype(np.int32)
            for name, column in tokens.items()
        },
    )
