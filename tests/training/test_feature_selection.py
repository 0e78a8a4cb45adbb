"""training.feature_selection: --features against what the data has."""

import pytest

from tfrec_tricks.training.feature_selection import (
    ALL_FEATURES,
    FeatureSelection,
    select_features,
)

POSITION = ["time_gap", "rating"]
ITEM = ["genres", "year"]


def test_nothing_requested_reads_no_feature():
    assert select_features([], POSITION, ITEM) == FeatureSelection()


def test_an_item_file_takes_every_item_feature_by_default():
    selection = select_features([], POSITION, ITEM, items_by_default=True)
    assert selection == FeatureSelection((), ("genres", "year"))


def test_all_takes_both_kinds_in_the_data_order():
    selection = select_features([ALL_FEATURES], POSITION, ITEM)
    assert selection == FeatureSelection(tuple(POSITION), tuple(ITEM))


def test_names_split_by_kind():
    selection = select_features(["year", "rating"], POSITION, ITEM)
    assert selection == FeatureSelection(("rating",), ("year",))


def test_an_unknown_name_is_refused_with_what_the_data_has():
    with pytest.raises(ValueError) as error:
        select_features(["genre", "rating"], POSITION, ITEM)
    message = str(error.value)
    assert "'genre'" in message
    assert "per interaction: time_gap, rating" in message
    assert "per item: genres, year" in message
    assert "--features genre rating" in message


def test_without_item_features_the_message_says_how_to_give_them():
    with pytest.raises(ValueError, match="none \\(give the item attributes"):
        select_features(["genres"], [], [])


def test_all_beside_names_is_refused_not_ignored():
    # 'all' took every feature and silently dropped an unknown name beside
    # it ('colour' below): both are refused, as ItemFeatureTable.select does.
    for requested in (["all", "colour"], ["genres", "all"]):
        with pytest.raises(ValueError) as error:
            select_features(requested, POSITION, ITEM)
        message = str(error.value)
        assert "or 'all' alone" in message
        assert f"Received: --features {' '.join(requested)}" in message
    selection = select_features(["all", "all"], POSITION, ITEM)
    assert selection == FeatureSelection(tuple(POSITION), tuple(ITEM))


def test_token_features_are_selected_by_name_or_all():
    selection = select_features(
        ["device"], ["time_gap"], [], token_available=["device", "page"]
    )
    assert selection == FeatureSelection((), (), ("device",))
    every = select_features(
        ["all"], ["time_gap"], ["genres"], token_available=["device"]
    )
    assert every.token == ("device",) and every.position == ("time_gap",)
    assert (
        select_features([], ["time_gap"], [], token_available=["device"]).token
        == ()
    )


def test_an_unknown_name_lists_the_token_features():
    with pytest.raises(
        ValueError, match=r"time_gap, device \(token\); per item"
    ):
        select_features(
            ["devize"], ["time_gap"], [], token_available=["device"]
        )


@pytest.mark.parametrize(
    "requested",
    [["all"], ["rating"], ["rating", "genres"]],
    ids=["all", "the-name", "the-name-among-others"],
)
def test_a_name_of_both_kinds_is_refused_naming_the_file(requested):
    # shop.item has a column named as the data's per-interaction rating.
    with pytest.raises(ValueError) as raised:
        select_features(
            requested, POSITION, ["genres", "rating"], item_source="shop.item"
        )
    assert str(raised.value) == (
        f"--features {' '.join(requested)} selects 'rating' twice: a column "
        "of shop.item (an item feature) and a per-interaction feature of the "
        "data. A name names one feature: rename that column of the .item "
        f"file (e.g. item_rating). Received: --features {' '.join(requested)}"
    )


def test_a_token_feature_clashes_too_and_every_name_is_named():
    with pytest.raises(ValueError, match="selects 'device', 'rating' twice"):
        select_features(
            ["all"],
            POSITION,
            ["device", "rating"],
            token_available=["device"],
            item_source="shop.item",
        )


def test_a_column_named_like_an_unread_feature_is_no_clash():
    # Without --features no per-interaction feature is read.
    selection = select_features([], POSITION, ["rating"], items_by_default=True)
    assert selection == FeatureSelection((), ("rating",))
    assert select_features(["genres"], POSITION, ["genres", "rating"]).item == (
        "genres",
    )
