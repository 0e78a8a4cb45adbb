"""Item features in a prepared dataset: encoded once, at preparation.

``tfrec-tricks prepare --item-features X.item`` (or a built-in dataset's
metadata with ``--features``) joins the items' attributes to the prepared
catalogue as ``with_item_features`` does in memory: the items of the table
with no interaction join the vocabulary after the others (cold items, with
zero training counts), and the vocabularies and statistics come from the
items of the training examples (``trained_item_ids``). The folder then
holds three more files, listed in ``metadata.json`` with their SHA-256s:

- ``item_features.json`` and ``item_features.npz``: ``ItemFeatures.save``;
- ``trained_items.npy``: the bool [N] mask of the trained items.

Both engines end in ``join_item_features`` with the same table, catalogue
and mask, so these files are byte-equal whichever engine wrote them.

Example:

>>> import numpy as np
>>> from tfrec_tricks.data.user_sequences import user_sequences
>>> sequences = user_sequences(np.array(["u"] * 4), np.array(list("abcd")))
>>> trained_item_ids(sequences).tolist()  # a -> b trains; c, d held out
[1, 2]
"""

import dataclasses
import os
from collections.abc import Callable, Sequence

import numpy as np

from tfrec_tricks.data.in_memory_dataset import Vocabulary
from tfrec_tricks.data.item_features.encoding import (
    FEATURES_JSON,
    FEATURES_NPZ,
    ItemFeatures,
    cold_item_names,
    encode_item_features,
)
from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.data.training_statistics import TrainingStatistics
from tfrec_tricks.data.user_sequences import UserSequences
from tfrec_tricks.errors import DataError

TRAINED_ITEMS_FILE = "trained_items.npy"
#: The files a prepared dataset with item features holds besides the others.
ITEM_FEATURE_FILES = (FEATURES_JSON, FEATURES_NPZ, TRAINED_ITEMS_FILE)


@dataclasses.dataclass(frozen=True)
class ItemFeatureRequest:
    """The item attributes a preparation joins, and how it picks them.

    Attributes:
        table: ItemFeatureTable or None. Every attribute read (a ``.item``
            file, a built-in dataset's metadata); None: there are none.
        select: callable. Given the data's per-interaction feature names
            (float, then token), the names of the item features to join
            (``--features`` against what the data has); raises ValueError
            for a name the data does not have. Called by the driver once
            the data is read, before the catalogue is written.
        min_count: int. A token held by fewer training items is
            out-of-vocabulary (``encode_item_features``). Defaults to 1.
    """

    table: ItemFeatureTable | None
    select: Callable[[list[str], list[str]], Sequence[str]]
    min_count: int = 1


@dataclasses.dataclass
class JoinedItemFeatures:
    """A prepared catalogue with its item features (if any).

    Attributes:
        vocabulary: the ``Vocabulary``, cold items appended.
        statistics: the ``TrainingStatistics``, their counts 0.
        features: ``ItemFeatures`` of the whole catalogue, or None.
        trained: bool [N], the items of the training examples, or None
            (without item features).
    """

    vocabulary: Vocabulary
    statistics: TrainingStatistics
    features: ItemFeatures | None = None
    trained: np.ndarray | None = None

    @property
    def names(self) -> list[str]:
        """The item features' names (empty without)."""
        return self.features.names() if self.features is not None else []


def trained_item_ids(sequences: UserSequences) -> np.ndarray:
    """The items of the training examples, in a history or as a target.

    A user's training targets are its positions ``1 .. train_end``; their
    histories hold positions ``0 .. train_end - 1`` (each one is the last
    item of the next target's history, however short ``max_len``), so the
    items are those of positions ``0 .. train_end`` of every user with a
    training target: ``trained_items`` of the prefix examples in memory.

    Returns:
        int64 [K]: the contiguous ids, sorted, each once.
    """
    lengths = np.asarray(sequences.lengths, np.int64)
    position = np.arange(len(sequences.items)) - np.repeat(
        sequences.starts, lengths
    )
    end = np.repeat(sequences.train_ends, lengths)
    trained = (end >= 1) & (position <= end)
    return np.unique(np.asarray(sequences.items, np.int64)[trained])


def item_mask(ids: Sequence[int] | np.ndarray, num_items: int) -> np.ndarray:
    """bool [num_items]: True at ``ids``.

    >>> item_mask([1, 3], 5).tolist()
    [False, True, False, True, False]
    """
    mask = np.zeros(num_items, bool)
    mask[np.asarray(ids, np.int64)] = True
    return mask


def join_item_features(
    request: ItemFeatureRequest | None,
    feature_names: Sequence[str],
    vocabulary: Vocabulary,
    statistics: TrainingStatistics,
    trained: np.ndarray | None,
    token_names: Sequence[str] = (),
) -> JoinedItemFeatures:
    """The catalogue with the item features ``request`` selects.

    What ``with_item_features`` does to an ``InMemoryDataset``, for a
    prepared dataset: the selected table's items that are not in the
    catalogue are appended in file order (cold items: zero training
    counts, not trained), and every item is encoded with vocabularies and
    statistics of the trained items.

    Args:
        request: an ``ItemFeatureRequest``, or None (nothing to join).
        feature_names: the data's per-interaction float features (what
            ``request.select`` checks ``--features`` against, with
            ``token_names``).
        vocabulary: the prepared ``Vocabulary``.
        statistics: its ``TrainingStatistics`` (item counts [N]).
        trained: bool [N], the trained items (``item_mask`` of
            ``trained_item_ids``); may be None without a ``request``.
        token_names: the data's per-interaction token features (prepared
            too: ``--features`` may name them). Defaults to ().

    Returns:
        A ``JoinedItemFeatures``: the inputs unchanged, without
        features, when ``request`` is None or selects none.

    Raises:
        ValueError: ``request.select`` refuses ``--features``.
    """
    if request is None:
        return JoinedItemFeatures(vocabulary, statistics)
    names = list(request.select(list(feature_names), list(token_names)))
    if not names:
        return JoinedItemFeatures(vocabulary, statistics)
    table = request.table.select(names)
    cold = cold_item_names(table, vocabulary.items)
    joined = Vocabulary(
        items=[*vocabulary.items, *cold], users=vocabulary.users
    )
    counts = statistics.item_counts
    statistics = dataclasses.replace(
        statistics,
        item_counts=np.r_[counts, np.zeros(len(cold), counts.dtype)],
    )
    trained = np.r_[np.asarray(trained, bool), np.zeros(len(cold), bool)]
    features = encode_item_features(
        table, joined.items, trained, request.min_count
    )
    return JoinedItemFeatures(joined, statistics, features, trained)


def write_item_features(folder: str, joined: JoinedItemFeatures) -> list[str]:
    """Writes ``joined``'s features and trained mask into ``folder``.

    Returns:
        The names of the files written (none without features).
    """
    if joined.features is None:
        return []
    names = joined.features.save(folder)
    with open(os.path.join(folder, TRAINED_ITEMS_FILE), "wb") as handle:
        np.save(handle, np.asarray(joined.trained, bool), allow_pickle=False)
    return [*names, TRAINED_ITEMS_FILE]


def load_item_features(
    folder: str, num_items: int, names: Sequence[str]
) -> tuple[ItemFeatures, np.ndarray]:
    """The item features and trained mask ``write_item_features`` wrote.

    Args:
        folder: str. The prepared dataset.
        num_items: int. N, the catalogue's items (padding included).
        names: the item features ``metadata.json`` names.

    Returns:
        ``(ItemFeatures, trained)``: trained is bool [N].

    Raises:
        DataError: a file is missing, or holds other features or another
            number of items than ``metadata.json`` says.
    """
    features = ItemFeatures.load(folder)
    path = os.path.join(folder, TRAINED_ITEMS_FILE)
    if not os.path.isfile(path):
        raise DataError(
            f"{folder!r}: {TRAINED_ITEMS_FILE} is missing. Prepare the "
            "dataset again."
        )
    try:
        trained = np.load(path, allow_pickle=False)
    except ValueError as error:
        raise DataError(f"{path}: not a NumPy array ({error}).") from None
    if features.names() != list(names) or len(features.has_row) != num_items:
        raise DataError(
            f"{os.path.join(folder, FEATURES_JSON)}: holds the item features "
            f"{features.names()} of {len(features.has_row)} items; "
            f"metadata.json says {list(names)} of {num_items}. Prepare the "
            "dataset again."
        )
    if trained.dtype != np.bool_ or trained.shape != (num_items,):
        raise DataError(
            f"{path}: should be bool ({num_items},). Received: "
            f"{trained.dtype} {trained.shape}"
        )
    return features, trained
