"""Kinds of item features by spec: the registry and its live views."""

import pytest

from tests.data.item_features.test_a_feature_kind_of_ones_own import (
    CommaTokens,
)
from tfrec_tricks.data.item_features.feature_kind_registry import (
    FEATURE_KINDS,
    FLOAT_KINDS,
    SCALAR_KINDS,
    SEQUENCE_KINDS,
    TOKEN_KINDS,
    FeatureKind,
    feature_kind,
    register_feature_kind,
    unregister_feature_kind,
)
from tfrec_tricks.features.item_feature_checks import check_features


@pytest.fixture
def comma_tokens():
    register_feature_kind(CommaTokens)
    yield feature_kind("token_csv")
    unregister_feature_kind("token_csv")


def test_the_built_in_kinds_and_their_views():
    assert tuple(FEATURE_KINDS) == ("token", "token_seq", "float", "float_seq")
    assert tuple(TOKEN_KINDS) == ("token", "token_seq")
    assert tuple(FLOAT_KINDS) == ("float", "float_seq")
    assert tuple(SEQUENCE_KINDS) == ("token_seq", "float_seq")
    assert tuple(SCALAR_KINDS) == ("token", "float")
    # Printed in error messages as the tuples they replaced.
    assert repr(TOKEN_KINDS) == "('token', 'token_seq')"
    assert len(FLOAT_KINDS) == 2 and "float" not in TOKEN_KINDS


def test_a_registered_kind_joins_the_live_views(comma_tokens):
    assert "token_csv" in FEATURE_KINDS
    assert "token_csv" in TOKEN_KINDS and "token_csv" in SEQUENCE_KINDS
    check_features([
        {"name": "tags", "kind": "token_csv", "width": 2,
         "vocabulary_size": 5},
    ])  # fmt: skip


def test_the_views_forget_an_unregistered_kind(comma_tokens):
    unregister_feature_kind("token_csv")
    assert "token_csv" not in FEATURE_KINDS
    assert tuple(TOKEN_KINDS) == ("token", "token_seq")


def test_an_unknown_kind_is_refused_naming_the_kinds():
    with pytest.raises(ValueError) as error:
        feature_kind("tokens")
    assert str(error.value) == (
        "item feature kind must be one of ('token', 'token_seq', 'float', "
        "'float_seq'). Received: item feature kind='tokens'"
    )


def test_a_taken_name_or_no_name_is_refused():
    class Other(FeatureKind):
        name = "token"

    class Nameless(FeatureKind):
        pass

    with pytest.raises(ValueError, match="taken by TokenKind"):
        register_feature_kind(Other)
    with pytest.raises(ValueError, match="needs a name"):
        register_feature_kind(Nameless)


def test_a_scalar_kind_of_ones_own_is_not_told_of_a_seq_twin(comma_tokens):
    class Colour(FeatureKind):
        name = "colour"
        tokens, sequence = True, False

        def split(self, field):
            return (field,) if field else ()

    register_feature_kind(Colour)
    try:
        with pytest.raises(ValueError) as error:
            check_features([
                {"name": "c", "kind": "colour", "width": 2,
                 "vocabulary_size": 3},
            ])  # fmt: skip
        assert "kind 'colour' has one value per item, so width 1." in str(
            error.value
        )
    finally:
        unregister_feature_kind("colour")
