"""Every user's whole history, a batch of users at a time.

A recommendation job ranks each user's next item after everything known
of them: the run's data (train, validation and test interactions: the
user's whole sequence), or new users' histories. A ``UserHistories``
gives them in the run's contiguous item ids (0: an item the run's
catalogue does not hold), with their per-interaction features:

- ``SequenceHistories``: user sequences in memory (``UserSequences``: the
  run's data loaded and filtered as ``train`` does, or a table of new
  histories, ``history_frames.frame_sequences``);
- ``PreparedHistories``: a prepared dataset on disk (``train
  --prepared``), streamed shard by shard, a batch of users at a time.
"""

import abc
import dataclasses
from collections.abc import Iterator, Sequence

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.prepared import format as fmt
from tfrec_tricks.data.prepared.on_disk_dataset import (
    USERS_PER_PARSE,
    OnDiskDataset,
)
from tfrec_tricks.data.user_sequences import UserSequences
from tfrec_tricks.errors import DataError


@dataclasses.dataclass
class HistoryBatch:
    """Whole histories of a batch of users.

    Attributes:
        users: list of str. Raw user ids.
        item_ids: list of int32 arrays. Each user's items in time order,
            as the run's contiguous ids (0: not in the run's catalogue).
        features: dict of lists of arrays, one per user, aligned with
            ``item_ids``: float32 (``time_gap``: NaN at a user's first),
            or str raw values of a token feature (``""``: no value).
    """

    users: list[str] = dataclasses.field(default_factory=list)
    item_ids: list[np.ndarray] = dataclasses.field(default_factory=list)
    features: dict[str, list[np.ndarray]] = dataclasses.field(
        default_factory=dict
    )

    def __len__(self) -> int:
        return len(self.users)

    def append(self, user: str, item_ids: np.ndarray, features: dict) -> None:
        """Adds one user's history."""
        self.users.append(user)
        self.item_ids.append(item_ids)
        for name, values in features.items():
            self.features.setdefault(name, []).append(values)


def item_remap(names: Sequence[str], items: Sequence[str]) -> np.ndarray:
    """int32 ``[len(names)]``: the run's id of each raw id in ``names``.

    Args:
        names: raw item ids of a source's contiguous ids (its index 0, the
            padding token, maps to 0).
        items: the run's vocabulary (index = contiguous id, 0 padding).

    >>> item_remap(["[PAD]", "b", "z", "a"], ["[PAD]", "a", "b"]).tolist()
    [0, 2, 0, 1]
    """
    index = {raw: i for i, raw in enumerate(items) if i}
    remap = np.fromiter(
        (index.get(str(raw), 0) for raw in names), np.int32, len(names)
    )
    remap[:1] = 0
    return remap


# The raw value a history sends for an out-of-vocabulary token id: no
# value of a file can hold a line break, so no vocabulary does, and the
# served model looks it up as out-of-vocabulary, as the id was.
OUT_OF_VOCABULARY = "\n"


def token_values(vocabulary: Sequence[str]) -> np.ndarray:
    """str ``[len(vocabulary) + 2]``: the raw value a request sends for
    each id of a token feature (``interaction_tokens``): 0 (no value)
    ``""``, 1 (out-of-vocabulary) ``OUT_OF_VOCABULARY``, then the
    vocabulary.

    >>> token_values(["web", "app"]).tolist()
    ['', '\\n', 'web', 'app']
    """
    return np.asarray(["", OUT_OF_VOCABULARY, *vocabulary], dtype=str)


class UserHistories(abc.ABC):
    """Users' whole histories in the run's item ids, a batch at a time.

    Subclasses give the users (``user_names``), the per-interaction
    features they hold (``feature_names``) and one user after another
    (``_users``); this class checks the features and forms the batches.

    Attributes:
        user_names: list of str. Every user, in the source's order.
        feature_names: list of str. The per-interaction features held.
        source: str. What the histories are, for messages.
    """

    user_names: list[str]
    feature_names: list[str]
    source: str

    def check_features(self, needed: Sequence[str], hint: str = "") -> None:
        """Refuses histories without a feature the model reads.

        Raises:
            DataError: naming the missing features and those held.
        """
        missing = [name for name in needed if name not in self.feature_names]
        if missing:
            raise DataError(
                f"The model reads the per-interaction features "
                f"{list(needed)}; {self.source} has no {missing}{hint}. "
                f"Received: features {sorted(self.feature_names)}"
            )

    def batches(
        self,
        batch_size: int,
        users: Sequence[str] | None = None,
        features: Sequence[str] = (),
    ) -> Iterator[HistoryBatch]:
        """``HistoryBatch`` es of at most ``batch_size`` users.

        Args:
            batch_size: int. Users per batch.
            users: raw user ids to give, or None for every user. Either
                way users come in the source's order.
            features: the per-interaction features to give.
        """
        wanted = None if users is None else set(users)
        batch = HistoryBatch()
        for user, item_ids, values in self._users(wanted, list(features)):
            batch.append(user, item_ids, values)
            if len(batch) == batch_size:
                yield batch
                batch = HistoryBatch()
        if len(batch):
            yield batch

    @abc.abstractmethod
    def _users(
        self, wanted: set | None, features: list[str]
    ) -> Iterator[tuple[str, np.ndarray, dict]]:
        """``(user, item_ids, features)`` of each user (of ``wanted``)."""


class SequenceHistories(UserHistories):
    """Histories held in memory as ``UserSequences``.

    Args:
        sequences: a ``UserSequences`` (its split positions are unused).
        items: the run's vocabulary, raw item ids by contiguous id.
        source: str. What the sequences are, for messages.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data.user_sequences import user_sequences
    >>> sequences = user_sequences(
    ...     np.array(["ann"] * 4 + ["bob"] * 3),
    ...     np.array(["a", "b", "c", "a", "c", "a", "b"]))
    >>> histories = SequenceHistories(sequences, ["[PAD]", "c", "b", "a"])
    >>> batch = next(histories.batches(8, users=["bob"]))
    >>> batch.users, batch.item_ids[0].tolist()
    (['bob'], [1, 3, 2])
    """

    def __init__(
        self,
        sequences: UserSequences,
        items: Sequence[str],
        source: str = "the run's data",
    ) -> None:
        self.sequences = sequences
        self.user_names = list(sequences.user_names)
        self.feature_names = [
            *sorted(sequences.features),
            *sorted(sequences.tokens),
        ]
        self.source = source
        self._remap = item_remap(sequences.item_names, items)

    def _users(
        self, wanted: set | None, features: list[str]
    ) -> Iterator[tuple[str, np.ndarray, dict]]:
        sequences = self.sequences
        users = range(sequences.num_users)
        if wanted is not None:
            users = [u for u in users if self.user_names[u] in wanted]
        for user in users:
            start = int(sequences.starts[user])
            rows = slice(start, start + int(sequences.lengths[user]))
            yield (
                self.user_names[user],
                self._remap[sequences.items[rows]],
                {
                    name: (
                        sequences.tokens[name]
                        if name in sequences.tokens
                        else sequences.features[name]
                    )[rows]
                    for name in features
                },
            )


class PreparedHistories(UserHistories):
    """Histories of a prepared dataset on disk, streamed.

    The shards hold each user's sequence once (``data.prepared.format``); they
    are read in order, ``USERS_PER_PARSE`` users at a time, so memory
    holds a batch of users, never the dataset.

    Args:
        path: str. The prepared dataset's folder (checked as
            ``OnDiskDataset`` checks it: every file as listed).
        items: the run's vocabulary, raw item ids by contiguous id.
    """

    def __init__(self, path: str, items: Sequence[str]) -> None:
        self.dataset = OnDiskDataset(path)
        vocabulary = self.dataset.vocabulary
        self.user_names = [str(user) for user in vocabulary.users]
        self.token_values = {
            spec.name: token_values(spec.vocabulary)
            for spec in self.dataset.token_features
        }
        self.feature_names = [
            *self.dataset.feature_names,
            *self.token_values,
        ]
        self.source = f"the prepared dataset {path}"
        self._remap = item_remap(vocabulary.items, items)

    def _users(
        self, wanted: set | None, features: list[str]
    ) -> Iterator[tuple[str, np.ndarray, dict]]:
        records = tf.data.Dataset.from_tensor_slices(self.dataset.files)
        records = records.flat_map(tf.data.TFRecordDataset)
        tokens = [name for name in features if name in self.token_values]
        floats = [name for name in features if name not in tokens]
        parsed = records.batch(USERS_PER_PARSE).map(
            lambda serialized: fmt.parse_users(serialized, floats, tokens)
        )
        for users in parsed:
            splits = users["items"].row_splits.numpy()
            items = self._remap[users["items"].values.numpy()]
            values = {name: users[name].values.numpy() for name in floats}
            for name in tokens:
                ids = users[name].values.numpy()
                values[name] = self.token_values[name][ids]
            for row, index in enumerate(users["user"].numpy()):
                name = self.user_names[int(index)]
                if wanted is not None and name not in wanted:
                    continue
                rows = slice(splits[row], splits[row + 1])
                yield (
                    name,
                    items[rows],
                    {key: column[rows] for key, column in values.items()},
                )
