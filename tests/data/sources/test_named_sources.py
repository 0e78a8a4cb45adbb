"""named_sources: the named sources (load_source) and the input file paths."""

import os

import numpy as np
import pytest
from input_file_helpers import load_table, shard_files, write_file

from tfrec_tricks.data.sources import named_sources
from tfrec_tricks.errors import DataError


def test_load_source_file(tmp_path):
    path = write_file(tmp_path / "u.data", "1\t2\t5\t100\n")
    source = named_sources.load_source("file", data_path=path)
    assert source.item_graph is None
    np.testing.assert_array_equal(source.interactions.items, ["2"])
    with pytest.raises(DataError, match="--data-path"):
        named_sources.load_source("file")


def test_load_source_unknown_name():
    with pytest.raises(DataError, match="Unknown data source") as info:
        named_sources.load_source("ml-20m")
    assert "yoochoose-100k" in str(info.value)


def test_missing_dataset_folder(tmp_path):
    with pytest.raises(DataError, match="Dataset 'ml-100k' not found") as info:
        named_sources.load_source("ml-100k", data_path=str(tmp_path))
    message = str(info.value)
    assert os.path.join(str(tmp_path), "ml-100k", "u.data") in message
    assert "--data-path" in message and named_sources.DATA_ENV in message


# --- input file paths -------------------------------------------------------


def test_glob_shards_are_read_in_natural_order(tmp_path):
    pattern = shard_files(tmp_path)
    paths = named_sources.file_paths(pattern)
    assert [os.path.basename(p) for p in paths] == [
        f"part-{k}.tsv" for k in range(1, 12)
    ]
    users = list(dict.fromkeys(load_table(pattern).interactions.users))
    assert users == [f"s{k}" for k in range(1, 12)]


def test_check_source_headers_refuses_what_load_source_refuses(tmp_path):
    good = write_file(tmp_path / "good.inter", "user_id:token\titem_id:token\n")
    bad = write_file(tmp_path / "bad.inter", "user\titem\nu1\ti1\n")
    named_sources.check_source_headers("synthetic")
    named_sources.check_source_headers("file", str(good))
    for path in (bad, tmp_path / "missing.inter", tmp_path):
        with pytest.raises(DataError) as checked:
            named_sources.check_source_headers("file", str(path))
        with pytest.raises(DataError) as loaded:
            named_sources.load_source("file", str(path))
        assert str(checked.value) == str(loaded.value)
