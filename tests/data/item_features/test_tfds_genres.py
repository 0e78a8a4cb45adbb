"""data.item_features.tfds_genres: TFDS MovieLens genres as item features."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from tfrec_tricks.data.item_features.encoding import encode_item_features
from tfrec_tricks.data.item_features.tfds_genres import (
    item_genres,
    load_tfds_item_features,
)
from tfrec_tricks.errors import DataError

NAME = "movielens/100k-ratings"


def _ratings(rows):
    return tf.data.Dataset.from_generator(
        lambda: iter(rows),
        output_signature=(
            tf.TensorSpec([], tf.string),
            tf.TensorSpec([None], tf.int64),
        ),
    ).map(lambda m, g: {"movie_id": m, "movie_genres": g})


def test_each_movie_gets_its_first_rating_s_genres():
    rows = [(b"50", [0, 1]), (b"1", [2]), (b"50", [0, 1]), (b"7", [])]
    table = item_genres(_ratings(rows), ["Action", "Sci Fi", "Drama"], "t")
    assert table.kinds == {"genres": "token_seq"}
    assert table.rows["50"] == {"genres": ("Action", "Sci_Fi")}
    assert table.rows["1"] == {"genres": ("Drama",)}
    # A movie without genres has no value: counted, not refused.
    assert table.rows["7"] == {}


def test_the_table_encodes_against_a_catalogue():
    rows = [(b"50", [0, 1]), (b"1", [1])]
    table = item_genres(_ratings(rows), ["Action", "Drama"], "t")
    features = encode_item_features(
        table, ["[PAD]", "1", "50"], np.array([False, True, True])
    )
    # Drama: 2 training items, Action: 1 -> ids 2 and 3.
    assert features.dense("genres").tolist() == [[0, 0], [2, 0], [3, 2]]


def test_no_rating_is_refused():
    with pytest.raises(DataError, match="no rows"):
        item_genres(_ratings([]), ["Action"], "tfds:x")


def test_the_prepared_dataset_s_genres_are_its_class_names(tmp_path):
    data_dir = str(tmp_path / "tfds")
    builder = tfds.builder(NAME, data_dir=data_dir)
    os.makedirs(builder.data_dir)
    builder.info.write_to_directory(builder.data_dir)
    names = set(builder.info.features["movie_genres"].feature.names)
    with tfds.testing.mock_data(num_examples=20, data_dir=data_dir):
        table = load_tfds_item_features(NAME, data_dir=data_dir)
    assert table.source == f"tfds:{NAME}"
    tokens = {t for row in table.rows.values() for t in row.get("genres", ())}
    assert tokens <= {n.replace(" ", "_") for n in names}
