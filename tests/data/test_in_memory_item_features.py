"""data.in_memory_item_features: attributes joined to an in-memory dataset."""

import numpy as np

from tfrec_tricks.data import Interactions, prepare
from tfrec_tricks.data.in_memory_item_features import (
    trained_items,
    with_item_features,
)
from tfrec_tricks.data.item_features.item_file import ItemFeatureTable


def _data():
    # u: a b c d (c, d held out); v: b a e (a -> b trains; e held out).
    users = np.array(["u"] * 4 + ["v"] * 3)
    items = np.array(list("abcd") + list("bae"))
    return prepare(Interactions(users=users, items=items), max_len=3)


def test_trained_items_are_those_of_the_training_examples():
    data = _data()
    names = data.vocabulary.items
    trained = {names[i] for i in np.flatnonzero(trained_items(data))}
    # u trains a -> b; v trains b -> a: c, d and e are only held out.
    assert trained == {"a", "b"}


def test_items_with_attributes_and_no_interaction_join_as_cold_items():
    data = _data()
    table = ItemFeatureTable(
        {"color": "token", "price": "float"},
        {
            "a": {"color": "red", "price": 1.0},
            "b": {"color": "blue", "price": 3.0},
            "z": {"color": "red", "price": 10.0},
        },
        "items.item",
    )
    joined = with_item_features(data, table)
    assert joined.vocabulary.items == [*data.vocabulary.items, "z"]
    assert joined.num_items == data.num_items + 1
    assert joined.statistics.item_counts[-1] == 0
    assert len(joined.statistics.item_counts) == joined.num_items
    assert not joined.trained_items[-1]
    assert joined.trained_items.sum() == 2
    names = joined.vocabulary.items
    colors = joined.item_features.dense("color")[:, 0]
    # The vocabulary is the trained items' (blue, red: one item each,
    # then by name), and z's red is that same id.
    assert colors[names.index("z")] == colors[names.index("a")]
    assert colors[names.index("c")] == 0  # no row: padding
    # The price statistics are the trained items' (a and b): mean 2.
    spec = joined.item_features.specs[1]
    assert spec.mean == 2.0
    # The examples themselves are unchanged.
    np.testing.assert_array_equal(joined.train.history, data.train.history)


def test_min_count_sends_rare_tokens_out_of_vocabulary():
    data = _data()
    table = ItemFeatureTable(
        {"color": "token"},
        {"a": {"color": "red"}, "b": {"color": "blue"}},
        "items.item",
    )
    joined = with_item_features(data, table, min_count=2)
    assert set(joined.item_features.dense("color")[1:3, 0]) == {1}
