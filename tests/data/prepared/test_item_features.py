"""data.prepared.item_features: a prepared dataset's item features equal
what ``with_item_features`` joins in memory, and are read back as written."""

import os

import numpy as np
import pytest

from tfrec_tricks.data import Interactions, prepare
from tfrec_tricks.data.in_memory_dataset import Vocabulary
from tfrec_tricks.data.in_memory_item_features import (
    trained_items,
    with_item_features,
)
from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.data.prepared.item_features import (
    ITEM_FEATURE_FILES,
    TRAINED_ITEMS_FILE,
    ItemFeatureRequest,
    item_mask,
    join_item_features,
    load_item_features,
    trained_item_ids,
    write_item_features,
)
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.training_statistics import training_statistics
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError


def _table(item_names):
    """Colours and prices of every other catalogue item, and two items
    that no user clicked (cold items)."""
    rows = {
        name: {"color": f"c{k % 3}", "price": float(k)}
        for k, name in enumerate(item_names[1::2])
    }
    rows["cold-b"] = {"color": "c9", "price": 99.0}
    rows["cold-a"] = {"color": "c1"}
    return ItemFeatureTable({"color": "token", "price": "float"}, rows, "x")


def _request(table, names=None, min_count=1):
    return ItemFeatureRequest(
        table,
        lambda *_: table.names() if names is None else names,
        min_count,
    )


@pytest.fixture(scope="module")
def both():
    """(in-memory dataset, user sequences) of the same synthetic table."""
    table = synthetic.generate(num_users=40, num_items=60, seed=2).interactions
    data = prepare(table, max_len=4)
    sequences = user_sequences(
        table.users, table.items, table.timestamps, table.numeric
    )
    return data, sequences


def _joined(sequences, request, max_len=4):
    vocabulary = Vocabulary(sequences.item_names, sequences.user_names)
    return join_item_features(
        request,
        sorted(sequences.features),
        vocabulary,
        training_statistics(sequences, max_len),
        item_mask(trained_item_ids(sequences), vocabulary.num_items),
    )


@pytest.mark.parametrize("max_len", [1, 3, 50])
def test_trained_items_are_those_of_the_prefix_examples(max_len):
    # Whatever max_len truncates, every position up to the last training
    # target is in some training example.
    table = synthetic.generate(num_users=30, num_items=50, seed=1).interactions
    data = prepare(table, max_len=max_len)
    sequences = user_sequences(table.users, table.items, table.timestamps)
    np.testing.assert_array_equal(
        trained_item_ids(sequences), np.flatnonzero(trained_items(data))
    )


def test_a_user_without_a_training_target_trains_no_item():
    # u's one item: no example; v: a -> b trains, c and d are held out.
    sequences = user_sequences(
        np.array(["u", "v", "v", "v", "v"]), np.array(["x", "a", "b", "c", "d"])
    )
    names = sequences.item_names
    ids = trained_item_ids(sequences)
    assert [names[i] for i in ids] == ["a", "b"]


def test_the_join_equals_the_in_memory_join(both):
    data, sequences = both
    table = _table(data.vocabulary.items)
    memory = with_item_features(data, table, min_count=2)
    joined = _joined(sequences, _request(table, min_count=2))
    assert joined.vocabulary == memory.vocabulary
    assert joined.vocabulary.items[-2:] == ["cold-b", "cold-a"]
    np.testing.assert_array_equal(
        joined.statistics.item_counts, memory.statistics.item_counts
    )
    np.testing.assert_array_equal(joined.trained, memory.trained_items)
    assert joined.features.specs == memory.item_features.specs
    for name, values in memory.item_features.values.items():
        np.testing.assert_array_equal(joined.features.values[name], values)
    np.testing.assert_array_equal(
        joined.features.has_row, memory.item_features.has_row
    )
    assert joined.names == ["color", "price"]


def test_the_selection_keeps_the_files_order(both):
    data, sequences = both
    table = _table(data.vocabulary.items)
    joined = _joined(sequences, _request(table, ["price"]))
    assert joined.names == ["price"]
    # Every row of the table is kept: the cold items still join.
    assert joined.vocabulary.items[-2:] == ["cold-b", "cold-a"]


@pytest.mark.parametrize("names", [None, ()], ids=["no-request", "none"])
def test_nothing_selected_leaves_the_catalogue_as_it_is(both, names):
    data, sequences = both
    request = None
    if names is not None:
        request = _request(_table(data.vocabulary.items), names)
    joined = _joined(sequences, request)
    assert joined.vocabulary == data.vocabulary
    assert joined.features is None and joined.trained is None
    assert joined.names == []


def test_a_refused_selection_is_raised():
    def refuse(names, token_names):
        raise ValueError(f"--features names 'x'; per interaction: {names}")

    request = ItemFeatureRequest(None, refuse)
    with pytest.raises(ValueError, match=r"per interaction: \['time_gap'\]"):
        join_item_features(
            request, ["time_gap"], Vocabulary(["[PAD]"], []), None, None
        )


def test_written_features_are_read_back(both, tmp_path):
    data, sequences = both
    joined = _joined(sequences, _request(_table(data.vocabulary.items)))
    names = write_item_features(str(tmp_path), joined)
    assert names == list(ITEM_FEATURE_FILES)
    assert sorted(os.listdir(tmp_path)) == sorted(ITEM_FEATURE_FILES)
    features, trained = load_item_features(
        str(tmp_path), joined.vocabulary.num_items, ["color", "price"]
    )
    np.testing.assert_array_equal(trained, joined.trained)
    assert features.specs == joined.features.specs
    np.testing.assert_array_equal(
        features.values["color"], joined.features.values["color"]
    )
    # Nothing to write without features.
    none = _joined(sequences, None)
    assert write_item_features(str(tmp_path / "none"), none) == []
    assert not (tmp_path / "none").exists()


def test_the_files_are_the_same_bytes_each_time(both, tmp_path):
    # No time stamp in the .npz (zip) or .npy: two engines, or two runs,
    # write the same bytes.
    data, sequences = both
    joined = _joined(sequences, _request(_table(data.vocabulary.items)))
    for folder in ("a", "b"):
        write_item_features(str(tmp_path / folder), joined)
    for name in ITEM_FEATURE_FILES:
        first = (tmp_path / "a" / name).read_bytes()
        assert first == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.parametrize(
    "num_items, names, message",
    [
        (7, ["color", "price"], "of 8 items; metadata.json says"),
        (8, ["color"], r"\['color', 'price'\] of 8 items"),
    ],
)
def test_features_of_another_catalogue_are_refused(
    tmp_path, num_items, names, message
):
    data = prepare(
        Interactions(users=np.array(["u"] * 5), items=np.array(list("abcde"))),
        max_len=3,
    )
    sequences = user_sequences(np.array(["u"] * 5), np.array(list("abcde")))
    joined = _joined(sequences, _request(_table(data.vocabulary.items)), 3)
    write_item_features(str(tmp_path), joined)
    assert joined.vocabulary.num_items == 8
    with pytest.raises(DataError, match=message):
        load_item_features(str(tmp_path), num_items, names)


def test_a_bad_trained_mask_is_refused(tmp_path):
    sequences = user_sequences(np.array(["u"] * 5), np.array(list("abcde")))
    table = _table(["[PAD]", *"abcde"])
    joined = _joined(sequences, _request(table), 3)
    write_item_features(str(tmp_path), joined)
    np.save(tmp_path / TRAINED_ITEMS_FILE, np.zeros(8, np.int64))
    with pytest.raises(DataError, match=r"should be bool \(8,\)"):
        load_item_features(str(tmp_path), 8, ["color", "price"])
    os.remove(tmp_path / TRAINED_ITEMS_FILE)
    with pytest.raises(DataError, match="trained_items.npy is missing"):
        load_item_features(str(tmp_path), 8, ["color", "price"])
