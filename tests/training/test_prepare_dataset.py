"""Preparing a run's data on disk (``tfrec_tricks.training.prepare_dataset``)
and a run's options taken from a prepared dataset (the prepared format
itself: tests/data/; training on it: test_training_data.py)."""

import dataclasses
import json

import pytest

from tests.run_helpers import tiny_config
from tfrec_tricks.config_fields import field_default
from tfrec_tricks.errors import DataError
from tfrec_tricks.training.prepare_dataset import (
    is_prepared_dataset,
    preparation_options,
    prepare_dataset,
    prepared_train_config,
    resolved_config,
)
from tfrec_tricks.training.train_config import TrainConfig


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("prepared")
    config = tiny_config(root, max_len=7, synthetic_users=50)
    path = prepare_dataset(
        config, str(root / "data"), num_shards=2, verbose=False
    )
    return config, path


def test_a_prepared_dataset_is_written_once(prepared, capsys):
    config, path = prepared
    assert is_prepared_dataset(path)
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        prepare_dataset(config, path, verbose=False)
    assert prepare_dataset(config, path, overwrite=True) == path
    assert capsys.readouterr().out.startswith("Prepared: ")
    assert is_prepared_dataset(path)


def test_a_folder_with_only_a_metadata_file_is_not_a_prepared_dataset(
    tmp_path,
):
    (tmp_path / "metadata.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("mine")
    assert not is_prepared_dataset(str(tmp_path))


@pytest.mark.parametrize(
    "kwargs, exception, message",
    [
        ({"engine": "spark"}, ValueError, "engine must be one of"),
        (
            {"pipeline_args": ["--runner=X"]},
            ValueError,
            "apply to --engine beam only",
        ),
        ({"engine": "beam"}, DataError, "reads interaction files"),
    ],
)
def test_what_cannot_be_prepared_is_refused_before_any_write(
    tmp_path, kwargs, exception, message
):
    output = tmp_path / "out"
    with pytest.raises(exception, match=message):
        prepare_dataset(tiny_config(tmp_path), str(output), **kwargs)
    assert not output.exists()


def test_preparation_options_record_the_source_and_the_seed_it_generates(
    tmp_path,
):
    options = preparation_options(tiny_config(tmp_path, seed=3, max_len=7))
    assert options["max_len"] == 7 and options["split"] == "recbole"
    assert options["source"]["data"] == "synthetic"
    assert options["source"]["seed"] == 3 and options["data_files"] == []
    ratings = tmp_path / "u.data"
    ratings.write_text("1\t2\t5\t10\n")
    config = tiny_config(
        tmp_path, data="file", data_path=str(ratings), file_format="udata"
    )
    options = preparation_options(config)
    assert "seed" not in options["source"]
    assert len(options["data_files"]) == 1


def test_train_prepared_takes_the_datasets_data_options(prepared, tmp_path):
    # Flags left at their defaults take the prepared dataset's values.
    _, path = prepared
    defaults = {
        name: field_default(TrainConfig, name)
        for name in ("max_len", "synthetic_users", "synthetic_items")
    }
    config = tiny_config(tmp_path, prepared=path, **defaults)
    resolved = resolved_config(config)
    assert (resolved.max_len, resolved.synthetic_users) == (7, 50)
    assert resolved.prepared == path and resolved.epochs == config.epochs
    # The same value as prepared is no conflict; another one is.
    assert resolved_config(dataclasses.replace(config, max_len=7)) == resolved
    with pytest.raises(ValueError, match=r"max_len=9 \(prepared with 7\)"):
        resolved_config(dataclasses.replace(config, max_len=9))


def test_a_dataset_prepared_before_an_option_existed_gets_its_old_value(
    prepared, tmp_path
):
    _, path = prepared
    with open(f"{path}/metadata.json") as handle:
        metadata = json.load(handle)
    del metadata["options"]["drop_duplicates"]
    config = tiny_config(tmp_path, prepared=path, max_len=7, synthetic_users=50)
    assert prepared_train_config(config, metadata).drop_duplicates is False


def test_a_run_without_a_prepared_dataset_keeps_its_config(tmp_path):
    config = tiny_config(tmp_path)
    assert resolved_config(config) is config
