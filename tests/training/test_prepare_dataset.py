"""Preparing a run's data on disk (``tfrec_tricks.training.prepare_dataset``)
and a run's options taken from a prepared dataset (the prepared format
itself: tests/data/; training on it: test_training_data.py)."""

import dataclasses
import json
import os

import pytest

from tests.run_helpers import tiny_config, write_token_interactions
from tfrec_tricks.config_fields import field_default
from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset
from tfrec_tricks.errors import DataError
from tfrec_tricks.training.prepare_dataset import (
    check_item_features,
    is_prepared_dataset,
    item_feature_request,
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


# --- item features ----------------------------------------------------------

# 12 users over 8 items; the .item file lists 6 of them and a cold item.
RATINGS = "".join(
    f"u{u}\ti{(u + k) % 8}\t{1 + k % 5}\t{100 * u + k}\n"
    for u in range(12)
    for k in range(5)
)
ITEMS = "item_id:token\tgenre:token_seq\tyear:float\n" + "".join(
    f"{item}\tg{k % 3} g{k % 2}\t{1990 + k}\n"
    for k, item in enumerate([*(f"i{i}" for i in range(6)), "cold"])
)


def _file_config(folder, **overrides):
    (folder / "u.data").write_text(RATINGS)
    (folder / "x.item").write_text(ITEMS)
    values = dict(
        data="file",
        data_path=str(folder / "u.data"),
        file_format="udata",
        item_features=str(folder / "x.item"),
        max_len=5,
    )
    return tiny_config(folder, **{**values, **overrides})


@pytest.fixture(scope="module")
def with_items(tmp_path_factory):
    root = tmp_path_factory.mktemp("items")
    config = _file_config(root, model={"features": ["year", "genre"]})
    path = prepare_dataset(config, str(root / "data"), verbose=False)
    return config, path


def test_prepare_encodes_the_item_features(with_items):
    config, path = with_items
    dataset = OnDiskDataset(path)
    # Kept in the file's order, whatever the order of --features.
    assert dataset.item_feature_names == ["genre", "year"]
    assert dataset.vocabulary.items[-1] == "cold"
    assert not dataset.trained_items[-1]
    assert dataset.item_features.dense("year").shape == (10, 1)
    options = dataset.metadata["options"]
    assert options["source"]["item_features"] == config.item_features
    assert options["min_feature_count"] == 1
    (recorded,) = options["item_feature_files"]
    assert recorded["file"] == "x.item"
    assert recorded["bytes"] == len(ITEMS.encode())
    assert len(recorded["sha256"]) == 64


def test_the_request_reads_the_attributes_and_checks_features(tmp_path):
    assert item_feature_request(tiny_config(tmp_path)) is None
    request = item_feature_request(_file_config(tmp_path))
    assert request.table.names() == ["genre", "year"]
    # Every column by default; per-interaction names are checked too.
    assert request.select(["rating", "time_gap"], []) == ("genre", "year")
    config = _file_config(tmp_path, model={"features": ["year", "rating"]})
    assert item_feature_request(config).select(["rating"], []) == ("year",)
    config = _file_config(tmp_path, model={"features": ["colour"]})
    with pytest.raises(ValueError, match="--features names 'colour'"):
        item_feature_request(config).select(["rating"], [])
    # Without attributes: a request to check --features only.
    config = tiny_config(tmp_path, model={"features": ["genre"]})
    request = item_feature_request(config)
    assert request.table is None
    with pytest.raises(ValueError, match="per item: none"):
        request.select(["time_gap"], [])


def test_train_prepared_takes_the_item_features(with_items, tmp_path):
    config, path = with_items
    run = tiny_config(tmp_path, prepared=path, max_len=5)
    resolved = resolved_config(run)
    assert resolved.item_features == config.item_features
    assert resolved.min_feature_count == 1
    # The same file as prepared is no conflict; another one is.
    same = dataclasses.replace(run, item_features=config.item_features)
    assert resolved_config(same) == resolved
    other = dataclasses.replace(run, item_features="y.item")
    with pytest.raises(ValueError, match=r"item_features='y.item' \(prepared"):
        resolved_config(other)
    with pytest.raises(ValueError, match=r"min_feature_count=2 \(prepared "):
        resolved_config(dataclasses.replace(run, min_feature_count=2))


@pytest.mark.parametrize(
    "features",
    [[], ["genre", "year"], ["year", "genre", "rating"], ["rating"], ["all"]],
)
def test_features_naming_all_or_none_of_the_item_features_apply(
    with_items, tmp_path, features
):
    _, path = with_items
    config = tiny_config(
        tmp_path, prepared=path, max_len=5, model={"features": features}
    )
    assert list(resolved_config(config).model.value("features")) == features


def test_features_naming_some_of_the_item_features_are_refused(
    with_items, tmp_path
):
    _, path = with_items
    config = tiny_config(
        tmp_path,
        prepared=path,
        max_len=5,
        model={"features": ["year", "rating"]},
    )
    with pytest.raises(ValueError) as raised:
        resolved_config(config)
    message = str(raised.value)
    assert "prepared with the item features ['genre', 'year']" in message
    assert "--features names ['year'] of them" in message
    assert "Received: --features year rating" in message


def test_a_dataset_without_item_features_refuses_item_features(
    prepared, tmp_path
):
    _, path = prepared
    config = tiny_config(
        tmp_path,
        prepared=path,
        max_len=7,
        synthetic_users=50,
        item_features="x.item",
    )
    with pytest.raises(ValueError, match=r"item_features='x.item' \(prepared"):
        resolved_config(config)


def test_a_dataset_prepared_before_item_features_has_none(prepared, tmp_path):
    _, path = prepared
    with open(f"{path}/metadata.json") as handle:
        metadata = json.load(handle)
    for key in ("min_feature_count", "item_feature_files"):
        del metadata["options"][key]
    del metadata["options"]["source"]["item_features"]
    del metadata["item_feature_names"]
    config = tiny_config(tmp_path, prepared=path, max_len=7, synthetic_users=50)
    resolved = prepared_train_config(config, metadata)
    assert resolved.item_features is None and resolved.min_feature_count == 1
    other = dataclasses.replace(config, item_features="x.item")
    with pytest.raises(ValueError, match="item_features='x.item'"):
        prepared_train_config(other, metadata)


def test_check_item_features_without_any_is_silent(tmp_path):
    config = tiny_config(tmp_path, model={"features": ["genre"]})
    check_item_features(config, [])  # unknown names: select_features'


@pytest.mark.slow
def test_prepare_carries_the_token_columns_with_either_engine(tmp_path):
    # --features naming a token column (or none of them) is no longer
    # refused: every token column is prepared, as every float column is.
    path = write_token_interactions(tmp_path / "shop.inter", empty=True)
    outputs = {}
    for engine, features in (("local", ["device"]), ("beam", ["all"])):
        config = tiny_config(
            tmp_path,
            data="file",
            data_path=path,
            max_len=4,
            min_feature_count=2,
            model={"features": features},
        )
        outputs[engine] = prepare_dataset(
            config, str(tmp_path / engine), engine=engine, verbose=False
        )
    texts = []
    for engine, folder in outputs.items():
        dataset = OnDiskDataset(folder)
        assert dataset.token_feature_names == ["channel", "device"], engine
        assert dataset.metadata["options"]["min_feature_count"] == 2
        with open(os.path.join(folder, "interaction_tokens.json"), "rb") as f:
            texts.append(f.read())
    assert texts[0] == texts[1]
    device = json.loads(texts[0])[1]
    assert device["vocabulary"] == ["web", "app", "tv"]  # kiosk: test only
    # A name the data does not have is still refused, the tokens listed.
    config = dataclasses.replace(config, model={"features": ["devize"]})
    with pytest.raises(
        ValueError, match="time_gap, channel \\(token\\), device \\(token\\);"
    ):
        prepare_dataset(config, str(tmp_path / "x"), verbose=False)
    assert not os.path.exists(tmp_path / "x")
