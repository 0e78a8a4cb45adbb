"""The built-in kinds: how each splits a field of an ``.item`` file."""

import pytest

from tfrec_tricks.data.item_features.feature_kind_registry import feature_kind


@pytest.mark.parametrize(
    "kind, field, values",
    [
        ("token", " Sci-Fi ", (" Sci-Fi ",)),  # kept as written
        ("token", "  ", ()),
        ("token_seq", " Animation  Comedy ", ("Animation", "Comedy")),
        ("token_seq", "   ", ()),
        ("float", "9.99", ("9.99",)),
        ("float", "", ()),
        ("float_seq", "38 40  42", ("38", "40", "42")),
    ],
)
def test_each_kind_splits_its_field(kind, field, values):
    assert feature_kind(kind).split(field) == values


def test_what_each_kind_holds():
    described = {
        name: (feature_kind(name).tokens, feature_kind(name).sequence)
        for name in ("token", "token_seq", "float", "float_seq")
    }
    assert described == {
        "token": (True, False),
        "token_seq": (True, True),
        "float": (False, False),
        "float_seq": (False, True),
    }
