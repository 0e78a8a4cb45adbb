"""Item attributes joined to an in-memory dataset, cold-start items included.

``with_item_features`` encodes an ``ItemFeatureTable`` against an
``InMemoryDataset``'s catalogue: the items with an attribute row but no
interaction join the catalogue after the others (cold-start items: never
a training target nor in a training history, they rank by their
attributes), the vocabularies and statistics come from the items of the
training examples (``trained_items``), and the dataset carries the
result.
"""

import dataclasses

import numpy as np

from tfrec_tricks.data.in_memory_dataset import InMemoryDataset, Vocabulary
from tfrec_tricks.data.item_features.encoding import (
    cold_item_names,
    encode_item_features,
)
from tfrec_tricks.data.item_features.item_file import ItemFeatureTable


def trained_items(dataset: InMemoryDataset) -> np.ndarray:
    """bool [N]: the items of the training examples, in a history or as a
    target (their id embeddings train); padding is not one.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data import Interactions, prepare
    >>> data = prepare(Interactions(users=np.array(["u"] * 4),
    ...                             items=np.array(list("abcd"))), max_len=3)
    >>> trained_items(data).tolist()  # a -> b trains; c, d are held out
    [False, True, True, False, False]
    """
    mask = np.zeros(dataset.num_items, bool)
    mask[dataset.train.history.ravel()] = True
    mask[dataset.train.target] = True
    mask[0] = False
    return mask


def with_item_features(
    dataset: InMemoryDataset, table: ItemFeatureTable, min_count: int = 1
) -> InMemoryDataset:
    """``dataset`` with the items' attributes of ``table``.

    Args:
        dataset: an ``InMemoryDataset`` (``prepare``).
        table: the attributes (``read_item_features``, already ``select``-ed).
        min_count: int. A token held by fewer training items is
            out-of-vocabulary.

    Returns:
        A new ``InMemoryDataset``: the catalogue extended by the table's
        items that have no interaction (cold items: zero training counts),
        ``item_features`` the ``ItemFeatures`` of the whole catalogue and
        ``trained_items`` the mask of the items of the training examples.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.data import Interactions, prepare
    >>> from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
    >>> data = prepare(Interactions(users=np.array(["u"] * 4),
    ...                             items=np.array(list("abcd"))), max_len=3)
    >>> table = ItemFeatureTable({"color": "token"}, {
    ...     "a": {"color": "red"}, "e": {"color": "red"}}, "items.item")
    >>> joined = with_item_features(data, table)
    >>> joined.vocabulary.items[-1], joined.num_items
    ('e', 6)
    >>> joined.item_features.dense("color")[:, 0].tolist()
    [0, 2, 0, 0, 0, 2]
    """
    cold = cold_item_names(table, dataset.vocabulary.items)
    vocabulary = Vocabulary(
        items=[*dataset.vocabulary.items, *cold],
        users=dataset.vocabulary.users,
    )
    counts = dataset.statistics.item_counts
    statistics = dataclasses.replace(
        dataset.statistics,
        item_counts=np.r_[counts, np.zeros(len(cold), counts.dtype)],
    )
    trained = np.r_[trained_items(dataset), np.zeros(len(cold), bool)]
    features = encode_item_features(table, vocabulary.items, trained, min_count)
    return dataclasses.replace(
        dataset,
        vocabulary=vocabulary,
        statistics=statistics,
        item_features=features,
        trained_items=trained,
    )
