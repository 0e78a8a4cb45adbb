"""The files a run's data is read from
(``tfrec_tricks.training.run_inputs``), named without reading them."""

import dataclasses
import os

from tests.run_helpers import tiny_config
from tfrec_tricks.training.run_inputs import (
    data_files,
    input_paths,
    item_feature_files,
)


def test_a_prepared_datasets_files_identify_its_data(tmp_path):
    config = tiny_config(tmp_path, prepared="prep", tfds_data_dir="tfds")
    assert data_files(config) == [
        os.path.join("prep", name)
        for name in ("metadata.json", "vocabulary.json", "statistics.json")
    ]
    # Nothing a run writes may be, contain or lie inside what it reads.
    assert input_paths(config) == [*data_files(config), "prep", "tfds"]
    assert input_paths(tiny_config(tmp_path)) == []  # synthetic: no file


def test_the_built_in_metadata_files_are_recorded(tmp_path):
    config = tiny_config(tmp_path, data="ml-100k", data_path="d")
    assert item_feature_files(config) == []
    config = dataclasses.replace(config, model={"features": ["genres"]})
    assert item_feature_files(config) == [
        os.path.join("d", "ml-100k", "u.item"),
        os.path.join("d", "ml-100k", "u.genre"),
    ]
    config = dataclasses.replace(config, data="ml-1m-timed")
    assert item_feature_files(config) == [
        os.path.join("d", "ml-1m", "movies.dat")
    ]
