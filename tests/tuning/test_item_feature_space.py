"""The item attributes a search chooses among: choices, ``--features``
split by kind, each choice's data, the options that train a choice, and
where a search finds them."""

import doctest

import pytest
from tuning_helpers import item_table, write_item_file

from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.errors import DataError
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.tuning import item_feature_space as module
from tfrec_tricks.tuning.item_feature_space import (
    ItemFeatureSpace,
    search_item_features,
)

POSITION = ["time_gap"]
_table = item_table


def test_choices_are_none_each_feature_and_all():
    assert ItemFeatureSpace(_table()).choices() == [
        "none",
        "genre",
        "year",
        "genre,year",
    ]
    one = ItemFeatureTable({"genre": "token_seq"}, {}, "g.item")
    assert ItemFeatureSpace(one).choices() == ["none", "genre"]


def test_the_first_choice_is_what_train_fuses():
    # --item-features: every attribute; a built-in dataset's metadata:
    # none (train reads it only when --features names it).
    assert ItemFeatureSpace(_table(), by_default=True).default_choice() == (
        "genre,year"
    )
    assert ItemFeatureSpace(_table()).default_choice() == "none"


@pytest.mark.parametrize(
    "requested, by_default, expected",
    [
        ((), False, ((), ())),
        ((), True, ((), ("genre", "year"))),
        (("time_gap",), True, (("time_gap",), ())),
        (("year", "time_gap", "genre"), False,
         (("time_gap",), ("genre", "year"))),
        (("all",), False, (("time_gap",), ("genre", "year"))),
    ],
)  # fmt: skip
def test_split_reads_features_as_train_does(requested, by_default, expected):
    space = ItemFeatureSpace(_table())
    assert space.split(requested, POSITION, by_default) == expected


def test_split_refuses_a_name_the_data_does_not_have():
    with pytest.raises(ValueError, match="'colour'.*per item: genre, year"):
        ItemFeatureSpace(_table()).split(["colour"], POSITION)


def test_join_adds_the_cold_items_only_with_some_attribute(data):
    space = ItemFeatureSpace(_table())
    assert space.join(data, ()) is data
    joined = space.join(data, ("year",))
    assert joined.item_features.names() == ["year"]
    assert joined.num_items == data.num_items + 5
    # The examples are the id-only data's: the same validation for all.
    assert (joined.validation.target == data.validation.target).all()
    with pytest.raises(ValueError, match="'colour'"):
        space.join(data, ("colour",))


def test_train_options_keep_the_searchs_own_features_when_they_select_it():
    space = ItemFeatureSpace(_table(), by_default=True)
    search = TrainConfig(item_features="items.item")
    every = space.train_options(search, POSITION, (), ("genre", "year"))
    assert every == ((), "items.item")
    one = space.train_options(search, POSITION, ("time_gap",), ("genre",))
    assert one == (("time_gap", "genre"), "items.item")
    # Id-only: without the file, with which train would fuse every one.
    assert space.train_options(search, POSITION, (), ()) == ((), None)
    position = space.train_options(search, POSITION, ("time_gap",), ())
    assert position == (("time_gap",), "items.item")


def test_train_options_of_a_built_in_datasets_metadata():
    space = ItemFeatureSpace(_table())
    search = TrainConfig(data="ml-1m-timed")
    assert space.train_options(search, [], (), ()) == ((), None)
    assert space.train_options(search, [], (), ("year",)) == (("year",), None)


def test_a_search_reads_its_item_file(tmp_path):
    path = write_item_file(tmp_path / "items.item")
    config = TrainConfig(item_features=path, min_feature_count=2)
    space = search_item_features(config)
    assert (space.names(), space.by_default, space.min_count) == (
        ["genre", "year"],
        True,
        2,
    )
    assert space.table.rows == item_table().rows
    # The file is among the data files already: the fingerprint lists no
    # other.
    assert space.fingerprint() == {"names": ["genre", "year"], "files": []}
    (tmp_path / "items.item").write_text("item_id:token\nx\n")
    assert search_item_features(config) is None  # no feature to choose


def test_a_search_reads_a_built_in_datasets_metadata(tmp_path):
    config = TrainConfig(data="ml-1m-timed", data_path=str(tmp_path))
    assert search_item_features(config) is None  # not there: none
    (tmp_path / "ml-1m").mkdir()
    movies = tmp_path / "ml-1m" / "movies.dat"
    movies.write_text("1::Toy Story (1995)::Animation|Comedy\n")
    space = search_item_features(config)
    assert (space.names(), space.by_default) == (["genres", "year"], False)
    (entry,) = space.fingerprint()["files"]
    assert (entry["file"], entry["bytes"]) == ("movies.dat", 38)
    movies.write_text("1::Toy Story (1995)\n")
    with pytest.raises(DataError, match="movies.dat:1"):
        search_item_features(config)


def test_other_sources_have_no_item_features():
    assert search_item_features(TrainConfig()) is None


def test_docstring_examples():
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


@pytest.mark.parametrize(
    "requested, expected",
    [
        (("device", "year", "time_gap"), (("device", "time_gap"), ("year",))),
        (("all",), (("time_gap", "device"), ("genre", "year"))),
    ],
)
def test_split_reads_token_features_as_per_interaction(requested, expected):
    space = ItemFeatureSpace(_table())
    assert space.split(requested, POSITION, token_names=["device"]) == expected


def test_split_refuses_naming_the_token_features():
    with pytest.raises(ValueError, match=r"time_gap, device \(token\)"):
        ItemFeatureSpace(_table()).split(
            ["devize"], POSITION, token_names=["device"]
        )


def test_train_options_name_the_trials_token_features():
    space = ItemFeatureSpace(_table(), by_default=True)
    search = TrainConfig(item_features="items.item")
    options = space.train_options(
        search, POSITION, ("device",), ("year",), ["device"]
    )
    assert options == (("device", "year"), "items.item")
    # The search's own --features when they select the same.
    search = TrainConfig(
        item_features="items.item", model={"features": ("device",)}
    )
    options = space.train_options(search, POSITION, ("device",), (), ["device"])
    assert options == (("device",), "items.item")
