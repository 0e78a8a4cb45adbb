"""New users' histories (``tfrec_tricks.recommendation.history_frames``):
a table grouped into user sequences by the data's rules, and interaction
files read into such a table."""

import numpy as np
import pandas as pd
import pytest

from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError
from tfrec_tricks.recommendation.history_frames import (
    frame_sequences,
    read_histories,
)


def _history(sequences, user):
    index = sequences.user_names.index(user)
    start = sequences.starts[index]
    rows = slice(start, start + sequences.lengths[index])
    names = np.asarray(sequences.item_names)
    features = {n: v[rows].tolist() for n, v in sequences.features.items()}
    return names[sequences.items[rows]].tolist(), features


def test_users_by_first_appearance_rows_by_time_ties_in_table_order():
    frame = pd.DataFrame(
        {
            "user_id": ["v", "u", "v", "u", "u"],
            "item_id": ["x", "c", "y", "a", "b"],
            "timestamp": [5.0, 30.0, 1.0, 10.0, 10.0],
            "rating": [1, 2, 3, 4, 5],
        }
    )
    sequences = frame_sequences(frame)
    assert sequences.user_names == ["v", "u"]
    items, features = _history(sequences, "u")
    assert items == ["a", "b", "c"]
    assert features["rating"] == [4.0, 5.0, 2.0]
    assert features["time_gap"][1:] == [0.0, 20.0]
    assert np.isnan(features["time_gap"][0])
    assert _history(sequences, "v")[0] == ["y", "x"]
    assert (sequences.test_positions == -1).all()


def test_the_same_sequences_as_the_data_path():
    rng = np.random.default_rng(0)
    users = rng.choice([f"u{i}" for i in range(7)], 200)
    items = rng.choice([f"i{i}" for i in range(30)], 200)
    times = rng.integers(0, 50, 200).astype(np.float64)
    expected = user_sequences(users, items, times)
    got = frame_sequences(
        pd.DataFrame({"user_id": users, "item_id": items, "timestamp": times})
    )
    assert got.user_names == expected.user_names
    assert got.item_names == expected.item_names
    np.testing.assert_array_equal(got.items, expected.items)
    np.testing.assert_array_equal(got.lengths, expected.lengths)
    np.testing.assert_array_equal(
        got.features["time_gap"], expected.features["time_gap"]
    )


def test_without_timestamps_table_order_is_time_order():
    frame = pd.DataFrame({"user_id": [1, 2, 1], "item_id": [30, 10, 20]})
    sequences = frame_sequences(frame)
    assert sequences.user_names == ["1", "2"]
    assert _history(sequences, "1") == (["30", "20"], {})


def test_a_time_gap_column_is_taken_as_given():
    frame = pd.DataFrame(
        {
            "user_id": ["u", "u"],
            "item_id": ["a", "b"],
            "timestamp": [1.0, 2.0],
            "time_gap": [np.nan, 99.0],
        }
    )
    assert _history(frame_sequences(frame), "u")[1]["time_gap"][1] == 99.0


@pytest.mark.parametrize(
    "frame, fragment",
    [
        (pd.DataFrame({"user": ["u"], "item_id": ["a"]}), "columns ['user'"),
        (pd.DataFrame({"user_id": [], "item_id": []}), "0 rows"),
        (
            pd.DataFrame({"user_id": ["u", None], "item_id": ["a", "b"]}),
            "row 1 has no user_id",
        ),
        (
            pd.DataFrame({"user_id": ["u", "u"], "item_id": ["a", " "]}),
            "row 1 has no item_id",
        ),
        (
            pd.DataFrame(
                {"user_id": ["u"], "item_id": ["a"], "timestamp": [np.inf]}
            ),
            "row 0: timestamp must be a finite number",
        ),
        (
            pd.DataFrame({"user_id": ["u"], "item_id": ["a"], "shop": ["x"]}),
            "column 'shop' must hold numbers",
        ),
        ([("u", "a")], "must be a pandas.DataFrame"),
    ],
)
def test_unusable_tables_are_refused(frame, fragment):
    with pytest.raises(DataError) as error:
        frame_sequences(frame)
    assert fragment in str(error.value)


def test_only_the_columns_the_model_reads_are_read():
    # The run's own .inter file: a token column the model does not read
    # (text), a float one it does not read either.
    frame = pd.DataFrame(
        {
            "user_id": ["u", "u"],
            "item_id": ["a", "b"],
            "timestamp": [1.0, 5.0],
            "device": ["web", "app"],
            "rating": [4.0, 5.0],
        }
    )
    sequences = frame_sequences(frame, feature_names=["time_gap"])
    assert sorted(sequences.features) == ["time_gap"]
    assert sequences.tokens == {}
    read = frame_sequences(frame, feature_names=["rating", "time_gap"])
    assert read.features["rating"].tolist() == [4.0, 5.0]
    # A column the model reads must hold what it reads.
    with pytest.raises(DataError, match="column 'device' must hold numbers"):
        frame_sequences(frame, feature_names=["device"])


def test_read_histories_reads_the_formats_train_reads(tmp_path):
    path = tmp_path / "new.dat"
    path.write_text("7::31::4::100\n7::12::5::160\n8::31::3::50\n")
    frame = read_histories(str(path))
    assert frame.columns.tolist() == [
        "user_id",
        "item_id",
        "timestamp",
        "rating",
    ]
    assert frame["user_id"].tolist() == ["7", "7", "8"]
    assert frame["timestamp"].tolist() == [100.0, 160.0, 50.0]
    sasrec = tmp_path / "new.txt"
    sasrec.write_text("7 31\n7 12\n")
    frame = read_histories(str(sasrec), "sasrec")
    assert frame.columns.tolist() == ["user_id", "item_id"]


def test_read_histories_names_a_bad_line(tmp_path):
    path = tmp_path / "new.tsv"
    path.write_text("7\t31\t4\t100\n7\t12\n")
    with pytest.raises(DataError, match="new.tsv:2"):
        read_histories(str(path), "udata")
