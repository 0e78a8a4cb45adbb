"""MovieLens through TFDS, without network: mocked data and the offline error.

``tfds.testing.mock_data`` patches ``download_and_prepare`` (a no-op) and
``as_dataset`` (random examples), and replaces every builder's ``data_dir``
by its own (its ``data_dir`` argument, else TFDS' testing metadata folder,
which the wheel does not ship). It does not patch ``is_prepared()``, so
``load_tfds_movielens`` sees an unprepared dataset unless either the
dataset's metadata files are in that ``data_dir`` (``prepared_data_dir``
writes them) or ``manual_dir`` holds the zip (then the mocked
``download_and_prepare`` runs).
"""

import os
import socket
import time

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tfrec_tricks.data.sources import named_sources
from tfrec_tricks.data.sources.tfds_movielens import (
    TFDS_DATASETS,
    interactions_from_tfds,
    load_tfds_movielens,
)
from tfrec_tricks.errors import DataError

NAME = "movielens/100k-ratings"


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def prepared_data_dir(tmp_path):
    """A TFDS data_dir holding the dataset's metadata (no records)."""
    data_dir = str(tmp_path / "tfds")
    builder = tfds.builder(NAME, data_dir=data_dir)
    os.makedirs(builder.data_dir)
    builder.info.write_to_directory(builder.data_dir)
    assert builder.is_prepared()
    return data_dir


ROWS = {
    "user_id": [b"7", b"3", b"7"],
    "movie_id": [b"50", b"1", "Amélie".encode()],
    "timestamp": np.array([881250949, 5, 881250950], np.int64),
    "user_rating": np.array([4.0, 1.0, 3.5], np.float32),
    "movie_title": [b"Star Wars", b"Toy Story", b"Amelie"],
}


def known_rows(self, split, decoders=None, read_config=None, **kwargs):
    """A mock ``_as_dataset`` returning ROWS (fixed-shape features only)."""
    del self, split, decoders, read_config, kwargs
    return tf.data.Dataset.from_tensor_slices(ROWS)


def assert_known_rows(table, source):
    np.testing.assert_array_equal(table.users, ["7", "3", "7"])
    np.testing.assert_array_equal(table.items, ["50", "1", "Amélie"])
    assert table.timestamps.dtype == np.float64
    np.testing.assert_array_equal(table.timestamps, [881250949, 5, 881250950])
    assert table.ratings.dtype == np.float32
    np.testing.assert_array_equal(table.ratings, [4.0, 1.0, 3.5])
    assert sorted(table.numeric) == ["rating"]
    assert table.source == source


# --- offline errors -------------------------------------------------------


def test_unprepared_data_dir_raises_quickly_without_network(
    tmp_path, no_network
):
    data_dir = str(tmp_path / "empty_tfds")
    start = time.monotonic()
    with pytest.raises(DataError) as info:
        load_tfds_movielens(NAME, data_dir=data_dir)
    assert time.monotonic() - start < 5.0
    message = str(info.value)
    assert "not prepared" in message
    assert "--tfds-data-dir" in message
    assert "--tfds-manual-dir" in message
    assert "ml-100k.zip" in message
    assert f"data_dir={data_dir!r}" in message
    assert "manual_dir=None" in message
    assert not os.path.exists(os.path.join(data_dir, "downloads"))


def test_manual_dir_without_the_zip_raises(tmp_path, no_network):
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "ml-1m.zip").write_bytes(b"")  # the other dataset's zip
    with pytest.raises(DataError, match="ml-100k.zip") as info:
        load_tfds_movielens(
            NAME, data_dir=str(tmp_path / "d"), manual_dir=str(manual)
        )
    assert f"manual_dir={str(manual)!r}" in str(info.value)


def test_1m_is_the_default_and_names_its_zip(tmp_path, no_network):
    with pytest.raises(DataError, match="ml-1m.zip"):
        load_tfds_movielens(data_dir=str(tmp_path))


def test_unknown_dataset_name():
    with pytest.raises(DataError, match="Unknown TFDS dataset") as info:
        load_tfds_movielens("movielens/25m-ratings")
    assert "movielens/100k-ratings" in str(info.value)


def test_load_source_passes_tfds_options(tmp_path, no_network):
    with pytest.raises(DataError, match="not prepared") as info:
        named_sources.load_source(
            f"tfds:{NAME}",
            tfds_data_dir=str(tmp_path),
            tfds_manual_dir=str(tmp_path),
        )
    assert f"manual_dir={str(tmp_path)!r}" in str(info.value)


def test_mock_data_alone_is_not_prepared(tmp_path, no_network):
    """mock_data does not patch is_prepared(): the offline error shows."""
    with tfds.testing.mock_data(num_examples=5):
        with pytest.raises(DataError, match="not prepared"):
            load_tfds_movielens(NAME, data_dir=str(tmp_path))


# --- end to end with mocked examples --------------------------------------


def test_mock_known_rows_from_prepared_data_dir(prepared_data_dir, no_network):
    with tfds.testing.mock_data(
        data_dir=prepared_data_dir, as_dataset_fn=known_rows
    ):
        table = load_tfds_movielens(NAME, data_dir=prepared_data_dir)
    assert_known_rows(table, f"tfds:{NAME}")


def test_mock_known_rows_through_manual_dir(tmp_path, no_network):
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / TFDS_DATASETS[NAME]).write_bytes(b"")
    with tfds.testing.mock_data(as_dataset_fn=known_rows):
        table = load_tfds_movielens(
            NAME, data_dir=str(tmp_path / "d"), manual_dir=str(manual)
        )
    assert_known_rows(table, f"tfds:{NAME}")


def test_mock_data_end_to_end(prepared_data_dir, no_network):
    with tfds.testing.mock_data(num_examples=9, data_dir=prepared_data_dir):
        table = load_tfds_movielens(NAME, data_dir=prepared_data_dir)
    assert len(table) == 9
    assert table.timestamps.dtype == np.float64
    assert table.ratings.shape == (9,)
    assert table.users.dtype.kind == "U" and table.items.dtype.kind == "U"


# --- the conversion -------------------------------------------------------


def test_interactions_from_tfds_columns():
    table = interactions_from_tfds(
        tf.data.Dataset.from_tensor_slices(ROWS), source="here"
    )
    assert_known_rows(table, "here")


@pytest.mark.slow
def test_interactions_from_tfds_many_batches():
    n = 65536 + 3
    rows = {
        "user_id": tf.strings.as_string(tf.range(n) % 11),
        "movie_id": tf.strings.as_string(tf.range(n)),
        "timestamp": tf.range(n, dtype=tf.int64),
        "user_rating": tf.ones([n], tf.float32),
    }
    table = interactions_from_tfds(
        tf.data.Dataset.from_tensor_slices(rows), source="big"
    )
    assert len(table) == n
    assert table.items[-1] == str(n - 1)
    np.testing.assert_array_equal(table.timestamps[-3:], [n - 3, n - 2, n - 1])


def test_interactions_from_tfds_empty():
    rows = {k: v[:0] for k, v in ROWS.items()}
    with pytest.raises(DataError, match="empty-source has no rows"):
        interactions_from_tfds(
            tf.data.Dataset.from_tensor_slices(rows), source="empty-source"
        )


def test_interactions_from_tfds_ignores_variable_length_features():
    # As TFDS decodes MovieLens' Sequence(ClassLabel): dense [None] tensors.
    genres = [[1, 2], [3], [4, 5, 6]]

    def rows():
        for i, row_genres in enumerate(genres):
            row = {name: values[i] for name, values in ROWS.items()}
            yield dict(row, movie_genres=np.array(row_genres, np.int64))

    spec = {
        name: tf.TensorSpec([], tf.constant(values).dtype)
        for name, values in ROWS.items()
    }
    spec["movie_genres"] = tf.TensorSpec([None], tf.int64)
    dataset = tf.data.Dataset.from_generator(rows, output_signature=spec)
    table = interactions_from_tfds(dataset, source="genres")
    assert_known_rows(table, "genres")
