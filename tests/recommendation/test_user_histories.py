"""Users' whole histories a batch at a time
(``tfrec_tricks.recommendation.user_histories``): in memory and streamed
from a prepared dataset, the same users, items and features."""

import numpy as np
import pytest

from tfrec_tricks.data.prepared.writer import write_prepared
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError
from tfrec_tricks.recommendation.user_histories import (
    HistoryBatch,
    PreparedHistories,
    SequenceHistories,
    item_remap,
)


@pytest.fixture(scope="module")
def sequences():
    table = synthetic.generate(num_users=30, num_items=50, seed=3).interactions
    return user_sequences(table.users, table.items, table.timestamps)


def _flatten(histories, **options):
    """``{user: (raw items, time gaps)}`` over every batch, and the batch
    sizes."""
    users, sizes = {}, []
    for batch in histories.batches(features=("time_gap",), **options):
        sizes.append(len(batch))
        for user, ids, gaps in zip(
            batch.users, batch.item_ids, batch.features["time_gap"]
        ):
            users[user] = (ids.tolist(), gaps.tolist())
    return users, sizes


def test_item_remap_maps_raw_ids_to_the_runs_ids():
    remap = item_remap(["[PAD]", "x", "b", "a"], ["[PAD]", "a", "b"])
    assert remap.tolist() == [0, 0, 2, 1]
    assert remap.dtype == np.int32


def test_sequence_histories_give_every_whole_history(sequences):
    items = list(reversed(sequences.item_names[1:]))
    histories = SequenceHistories(sequences, ["[PAD]", *items])
    got, sizes = _flatten(histories, batch_size=7)
    assert sizes == [7, 7, 7, 7, 2]
    assert list(got) == sequences.user_names
    for index, user in enumerate(sequences.user_names):
        start, length = sequences.starts[index], sequences.lengths[index]
        rows = slice(start, start + length)
        raw = np.asarray(sequences.item_names)[sequences.items[rows]]
        ids, gaps = got[user]
        assert [items[i - 1] for i in ids] == raw.tolist()
        np.testing.assert_array_equal(
            gaps, sequences.features["time_gap"][rows]
        )


def test_selected_users_come_in_the_datas_order(sequences):
    histories = SequenceHistories(sequences, sequences.item_names)
    wanted = [sequences.user_names[9], sequences.user_names[2]]
    got, sizes = _flatten(histories, batch_size=256, users=wanted)
    assert list(got) == [wanted[1], wanted[0]]
    assert sizes == [2]


def test_items_outside_the_catalogue_are_id_0(sequences):
    catalogue = ["[PAD]", *sequences.item_names[1:10]]
    histories = SequenceHistories(sequences, catalogue)
    batch = next(histories.batches(256))
    ids = np.concatenate(batch.item_ids)
    assert set(ids.tolist()) == set(range(10))
    assert batch.features == {}


def test_check_features_names_what_is_missing(sequences):
    histories = SequenceHistories(sequences, sequences.item_names, "new.tsv")
    histories.check_features(["time_gap"])
    with pytest.raises(DataError) as error:
        histories.check_features(["time_gap", "rating"], " (a hint)")
    assert str(error.value) == (
        "The model reads the per-interaction features ['time_gap', "
        "'rating']; new.tsv has no ['rating'] (a hint). Received: features "
        "['time_gap']"
    )


def test_prepared_histories_are_those_in_memory(sequences, tmp_path):
    path = write_prepared(
        sequences, str(tmp_path / "prepared"), {"max_len": 5}, num_shards=3
    )
    catalogue = sequences.item_names
    streamed = PreparedHistories(path, catalogue)
    assert sorted(streamed.user_names) == sorted(sequences.user_names)
    assert streamed.feature_names == ["time_gap"]
    got, sizes = _flatten(streamed, batch_size=8)
    expected, _ = _flatten(
        SequenceHistories(sequences, catalogue), batch_size=8
    )
    assert sizes == [8, 8, 8, 6]
    assert got.keys() == expected.keys()
    for user, (ids, gaps) in expected.items():
        assert got[user][0] == ids
        np.testing.assert_array_equal(got[user][1], gaps)
    wanted = sequences.user_names[:3]
    got, _ = _flatten(streamed, batch_size=8, users=wanted)
    assert sorted(got) == sorted(wanted)


def test_history_batch_appends_users():
    batch = HistoryBatch()
    batch.append("u", np.array([1, 2]), {"time_gap": np.array([np.nan, 1])})
    assert len(batch) == 1 and batch.users == ["u"]
    assert batch.features["time_gap"][0].tolist()[1] == 1.0
