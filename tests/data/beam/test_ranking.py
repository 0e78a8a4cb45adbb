"""Users and items are ranked by their first place; users are encoded."""

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.ranking import (
    _sort_user,
    encoded_users,
    ranked,
    ranked_users,
)
from tfrec_tricks.data.user_sequences import TIME_GAP


@pytest.mark.slow
def test_user_and_item_phases_rank_by_first_place():
    rows = [
        (0, 1, "u2", "x", None, [], None, ()),
        (0, 2, "u1", "y", None, [], None, ()),
        (0, 3, "u2", "y", None, [], None, ()),
        (0, 4, "u1", "z", None, [], None, ()),
    ]
    schema = {
        "has_time": False,
        "numeric": [],
        "slots": {0: []},
        "tokens": [],
        "token_slots": {0: []},
    }
    options = {"max_len": 5, "numeric_features": False}
    config = BeamConfig.from_options(options, num_shards=1, filter_rounds=1)
    with beam.Pipeline() as pipeline:
        kept = pipeline | "Rows" >> beam.Create(rows[::-1])
        side = beam.pvalue.AsSingleton(pipeline | "S" >> beam.Create([schema]))
        users, sequences = ranked_users(kept, side, config)
        items, encoded = encoded_users(sequences, config)
        assert_that(users, equal_to([["u2", "u1"]]), label="Users")
        assert_that(items, equal_to([["x", "y", "z"]]), label="Items")
        # Items are numbered from 1 in order of their first place.
        assert_that(
            encoded | beam.Map(lambda user: tuple(user[1][0].tolist())),
            equal_to([(1, 2), (2, 3)]),
            label="Encoded",
        )


def test_ranked_orders_names_by_first_place():
    assert ranked([("b", (0, 7)), ("a", (1, 2)), ("c", (0, 3))]) == [
        "c",
        "b",
        "a",
    ]


def test_a_user_is_sorted_by_time_then_file_order():
    # (file, line, user, item, time, numeric, other, tokens); file 1 has
    # the rating in its second numeric column, the device in its second
    # token column.
    rows = [
        (1, 5, "u", "c", 20.0, [0.0, 3.0], None, ("x", "tv")),
        (0, 9, "u", "b", 10.0, [2.0], None, ("",)),
        (0, 2, "u", "a", 10.0, [1.0], None, ("web",)),
    ]
    schema = {
        "has_time": True,
        "numeric": ["rating"],
        "slots": {0: [0], 1: [1]},
        "tokens": ["device"],
        "token_slots": {0: [0], 1: [1]},
    }
    index, items, features, tokens = _sort_user(
        ("u", {"index": [4], "rows": rows}), schema, numeric_features=True
    )
    assert (index, items) == (4, ["a", "b", "c"])
    np.testing.assert_array_equal(features["rating"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(features[TIME_GAP], [np.nan, 0.0, 10.0])
    assert tokens == {"device": ["web", "", "tv"]}
    # Kept without numeric features, as user_sequences keeps them.
    *_, tokens = _sort_user(
        ("u", {"index": [4], "rows": rows}), schema, numeric_features=False
    )
    assert tokens == {"device": ["web", "", "tv"]}
