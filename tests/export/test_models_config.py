"""models.config: model names, and adding or updating an entry."""

import re

import pytest
from google.protobuf import text_format
from tensorflow_serving.config import model_server_config_pb2

from tfrec_tricks.export import check_model_name
from tfrec_tricks.export.models_config import (
    MAX_VERSION,
    check_version,
    read_models_config,
    update_models_config,
)


@pytest.mark.parametrize(
    "name",
    ["demo", "m", "9lives", "gru4rec-cpr_v2.1", "A" * 255, "a..b"],
)
def test_check_model_name_accepts(name):
    assert check_model_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".",
        "..",
        ".hidden",
        "-dash",
        "_under",
        "a/b",
        "/abs",
        "a\\b",
        "..\\evil",
        "a b",
        "naïve",
        "A" * 256,
        None,
    ],
)
def test_check_model_name_rejects_naming_value_and_rule(name):
    with pytest.raises(ValueError) as error:
        check_model_name(name)
    message = str(error.value)
    assert f"Received: name={name!r}" in message
    assert "^[A-Za-z0-9][A-Za-z0-9_.-]*$" in message
    assert "255" in message


@pytest.mark.parametrize(
    "version, rule",
    [
        (0, "a positive int. Received: version=0"),
        (-3, "a positive int. Received: version=-3"),
        (True, "a positive int. Received: version=True"),
        (2.0, "a positive int. Received: version=2.0"),
        ("3", "a positive int. Received: version='3'"),
        (2**63, "at most 9223372036854775807 (TF Serving reads versions"),
    ],
)
def test_check_version_names_the_value_and_the_rule(version, rule):
    with pytest.raises(ValueError, match=re.escape(rule)):
        check_version(version)


def test_check_version_accepts_int64_versions():
    assert check_version(1) == 1
    assert check_version(MAX_VERSION) == 2**63 - 1


def test_update_models_config_checks_the_name(tmp_path):
    path = tmp_path / "models.config"
    with pytest.raises(ValueError, match=re.escape("name='../evil'")):
        update_models_config(str(path), "../evil", "/models/evil")
    assert not path.exists()


def _entries(path):
    config = read_models_config(str(path))
    return [
        (e.name, e.base_path, e.model_platform)
        for e in config.model_config_list.config
    ]


def test_entries_are_added_then_updated_in_place(tmp_path):
    path = tmp_path / "served" / "models.config"
    assert _entries(path) == []  # a missing file is an empty config
    update_models_config(str(path), "a", "/models/a")
    update_models_config(str(path), "b", "/models/b")
    update_models_config(str(path), "a", "/elsewhere/a")
    assert _entries(path) == [
        ("a", "/elsewhere/a", "tensorflow"),
        ("b", "/models/b", "tensorflow"),
    ]
    parsed = model_server_config_pb2.ModelServerConfig()
    text_format.Parse(path.read_text(), parsed)  # what the server reads
    assert len(parsed.model_config_list.config) == 2


def test_unreadable_file_is_named(tmp_path):
    path = tmp_path / "models.config"
    path.write_text("this is not a proto")
    with pytest.raises(ValueError, match=re.escape(str(path))):
        read_models_config(str(path))
