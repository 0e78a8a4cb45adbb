"""A kind of item feature defined here alone is read, trained and
recommended with, with no edit outside this file (issue 73: every kind's
name switch asks its ``FeatureKind`` spec)."""

import json

import pytest

from tests.test_bad_input_item_features import INTERACTIONS, ITEMS, TRAIN
from tfrec_tricks import cli
from tfrec_tricks.data.item_features.feature_kind_registry import (
    FeatureKind,
    feature_kind,
    register_feature_kind,
    unregister_feature_kind,
)
from tfrec_tricks.data.item_features.item_file import read_item_features


class CommaTokens(FeatureKind):
    """Comma-separated tokens, as a shop's export writes its tags."""

    name = "token_csv"
    summary = "comma-separated tokens"
    tokens = True
    sequence = True

    def split(self, field):
        return tuple(token for token in field.split(",") if token.strip())


@pytest.fixture
def comma_tokens():
    register_feature_kind(CommaTokens)
    yield feature_kind("token_csv")
    unregister_feature_kind("token_csv")


def _tags_file(folder):
    lines = ["item_id:token\ttags:token_csv"]
    lines += [f"{item}\tt{int(item[1:]) % 3},shared" for item in ITEMS]
    (folder / "x.item").write_text("\n".join(lines) + "\n")
    (folder / "u.data").write_text(INTERACTIONS)


def test_its_fields_are_split_by_its_spec(comma_tokens, tmp_path):
    _tags_file(tmp_path)
    table = read_item_features(str(tmp_path / "x.item"))
    assert table.kinds == {"tags": "token_csv"}
    assert table.rows["i4"] == {"tags": ("t1", "shared")}


def test_without_its_registration_the_header_is_refused(tmp_path):
    _tags_file(tmp_path)
    with pytest.raises(Exception, match="unknown type 'token_csv'"):
        read_item_features(str(tmp_path / "x.item"))


@pytest.mark.slow
def test_it_trains_and_recommends(comma_tokens, tmp_path, monkeypatch, capsys):
    _tags_file(tmp_path)
    monkeypatch.chdir(tmp_path)

    status = cli.main([*TRAIN, "--item-features", "x.item"])
    out = capsys.readouterr().out
    assert status == 0
    assert "Item feature tags: token_csv" in out
    run = tmp_path / "runs" / "run"
    config = json.loads((run / "config.json").read_text())
    features = config["model"]["item_features"]
    assert [(f["name"], f["kind"], f["width"]) for f in features] == [
        ("tags", "token_csv", 2)
    ]

    status = cli.main(
        ["recommend", str(run), "--output", "lists.csv", "--k", "3"]
    )
    assert status == 0, capsys.readouterr().err[-2000:]
    lines = (tmp_path / "lists.csv").read_text().splitlines()
    assert len(lines) > 1
