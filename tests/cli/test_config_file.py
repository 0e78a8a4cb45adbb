"""The phases of ``load_config_file``, one by one, and a bad file through
``tfrec-tricks train --config``."""

import json

import pytest

from tests.run_helpers import assert_clean_error, run_cli_here
from tfrec_tricks.cli.config_file import (
    _check_options,
    _check_ranges,
    _check_value,
    _option_fields,
    _parse_json,
    _read_bytes,
    _split_options,
    load_config_file,
)
from tfrec_tricks.errors import DataError


def test_read_bytes_names_a_missing_or_unreadable_file(tmp_path):
    path = tmp_path / "config.json"
    with pytest.raises(DataError, match="Config file not found"):
        _read_bytes(str(path))
    with pytest.raises(DataError, match=r"Cannot read the config file \("):
        _read_bytes(str(tmp_path))
    path.write_bytes(b"{}")
    assert _read_bytes(str(path)) == b"{}"


def test_parse_json_names_the_bad_byte_and_the_bad_line():
    with pytest.raises(DataError, match="byte 2 is 0xff, not UTF-8"):
        _parse_json("f.json", b'{"\xff": 1}')
    with pytest.raises(DataError, match=r"^f\.json:2: not valid JSON"):
        _parse_json("f.json", b'{"train": {},\n oops}')
    assert _parse_json("f.json", b'{"model": {"dropout": 0.1}}') == {
        "model": {"dropout": 0.1}
    }


def test_split_options_merges_the_model_parts_without_derived_fields():
    document = {
        "train": {
            "epochs": 2,
            "model": {"embedding_dim": 8, "head": "cpr", "max_len": 9},
        },
        "model": {"embedding_dim": 16, "num_items": 5, "learning_rate": 1.0},
    }
    values, model = _split_options("f.json", document)
    assert values == {"epochs": 2}
    assert model == {"embedding_dim": 16, "head": "cpr"}
    # The document is read, not changed.
    assert "model" in document["train"]


def test_a_run_s_item_features_are_asked_for_again():
    # What `train --features time_gap genres --item-features F` records.
    document = {
        "train": {"item_features": "F", "model": {}},
        "model": {
            "features": ["time_gap"],
            "item_features": [
                {"name": "genres", "kind": "token_seq", "width": 3},
                {"name": "year", "kind": "float", "width": 1},
            ],
        },
    }
    values, model = _split_options("config.json", document)
    assert values == {"item_features": "F"}
    assert model == {"features": ["time_gap", "genres", "year"]}


def test_a_run_s_token_features_are_asked_for_again():
    # What `train --features time_gap device` records: time_gap in
    # `features`, device (a token column) in `token_features`.
    document = {
        "train": {"model": {"features": ["time_gap", "device"]}},
        "model": {
            "features": ["time_gap"],
            "token_features": [
                {"name": "device", "vocabulary_size": 5, "vocabulary": []}
            ],
        },
    }
    values, model = _split_options("config.json", document)
    assert values == {}
    assert model == {"features": ["time_gap", "device"]}


# What a run given GENRE_YEAR's attributes records in its resolved model.
ITEM_SPECS = [
    {"name": "genre", "kind": "token_seq", "width": 2},
    {"name": "year", "kind": "float", "width": 1},
]


@pytest.mark.parametrize(
    "given, resolved, expected",
    [
        # Nothing given: every attribute of --item-features, as recorded.
        ({}, {"features": [], "item_features": ITEM_SPECS}, None),
        # 'all': whatever the data had.
        (
            {"features": ["all"]},
            {"features": ["rating"], "item_features": ITEM_SPECS},
            ["all"],
        ),
        # Names, in the order given (item attributes in the data's).
        (
            {"features": ["year", "time_gap", "genre"]},
            {"features": ["time_gap"], "item_features": ITEM_SPECS},
            ["year", "time_gap", "genre"],
        ),
    ],
    ids=["nothing", "all", "names"],
)
def test_a_run_s_features_are_asked_for_as_it_was_given(
    given, resolved, expected
):
    document = {
        "train": {"item_features": "x.item", "model": given},
        "model": resolved,
    }
    _, model = _split_options("config.json", document)
    assert model.get("features") == expected
    assert ("features" in model) == (expected is not None)


@pytest.mark.parametrize(
    "given, resolved, expected",
    [
        # The resolved list edited: time_gap removed, rating added.
        (
            {"features": ["time_gap", "genre"]},
            {"features": ["rating"], "item_features": ITEM_SPECS[:1]},
            ["rating", "genre"],
        ),
        # Nothing given, yet a per-interaction feature listed.
        ({}, {"features": ["rating"]}, ["rating"]),
        # The float features' order edited.
        (
            {"features": ["time_gap", "rating"]},
            {"features": ["rating", "time_gap"]},
            ["rating", "time_gap"],
        ),
    ],
    ids=["other-names", "nothing-given", "other-order"],
)
def test_a_run_s_edited_feature_list_wins(given, resolved, expected):
    document = {"train": {"model": given}, "model": resolved}
    _, model = _split_options("config.json", document)
    assert model["features"] == expected


@pytest.mark.parametrize(
    "document, fragment",
    [
        ([1], "expected an object with 'train' and/or 'model'"),
        ({"training": {}}, "expected an object with 'train' and/or 'model'"),
        ({"train": 3}, "'train' must be an object of training options"),
        ({"train": {"model": 3}}, "'train.model' must be an object of model"),
        ({"model": [1]}, "'model' must be an object of model options"),
    ],
)
def test_split_options_rejects_what_is_not_an_object(document, fragment):
    with pytest.raises(DataError, match=f"^f\\.json: {fragment}"):
        _split_options("f.json", document)


def test_option_fields_leave_out_the_derived_model_fields():
    fields = _option_fields()
    assert "epochs" in fields["train"] and "model" in fields["train"]
    assert "embedding_dim" in fields["model"]
    assert not {"num_items", "max_len", "learning_rate"} & set(fields["model"])


def test_check_options_rejects_unknown_names_and_wrong_types():
    fields = _option_fields()
    _check_options("f.json", "train", {"epochs": 3}, fields["train"])
    # ``train.model`` is split off before, so "model" is unknown here.
    with pytest.raises(DataError, match=r"unknown training options \['model'"):
        _check_options("f.json", "train", {"model": {}}, fields["train"])
    with pytest.raises(DataError, match=r"unknown model options \['nope'\]"):
        _check_options("f.json", "model", {"nope": 1}, fields["model"])
    with pytest.raises(DataError, match="train.epochs must be int"):
        _check_options("f.json", "train", {"epochs": "3"}, fields["train"])


def test_check_value_rejects_non_finite_numbers_in_lists_too():
    _check_value("f.json", "model", "cpr_reranker_ks", [5, 20], tuple[int, ...])
    with pytest.raises(DataError, match="model.dropout must be a finite"):
        _check_value("f.json", "model", "dropout", float("inf"), float)
    with pytest.raises(DataError, match="model.ks must be a finite"):
        _check_value(
            "f.json", "model", "ks", [1.0, float("nan")], tuple[float, ...]
        )


def test_check_ranges_names_the_file():
    _check_ranges("f.json", {"epochs": 1}, {"embedding_dim": 8})
    with pytest.raises(DataError, match="^f.json: epochs must be positive"):
        _check_ranges("f.json", {"epochs": -1}, {})
    with pytest.raises(DataError, match="^f.json: Invalid model config"):
        _check_ranges("f.json", {}, {"embedding_dim": 0})


def test_load_config_file_returns_both_parts(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps({"train": {"epochs": 2}, "model": {"num_items": 7}})
    )
    assert load_config_file(str(path)) == {"train": {"epochs": 2}, "model": {}}


@pytest.mark.parametrize(
    "content, fragment",
    [
        ("{not json", ":1: not valid JSON"),
        ('{"training": {}}', "expected an object with 'train'"),
        ('{"train": {"epoch": 3}}', "unknown training options ['epoch']"),
    ],
)
def test_bad_config_file_is_reported(tmp_path, content, fragment):
    path = tmp_path / "config.json"
    path.write_text(content)
    result = run_cli_here("train", "--config", str(path))
    assert_clean_error(result, fragment)
