"""The pipeline's trained items equal the local engine's."""

import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tfrec_tricks.data.beam.trained_items import (
    trained_items,
    user_trained_items,
)
from tfrec_tricks.data.prepared.item_features import trained_item_ids
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.user_sequences import user_sequences


@pytest.mark.parametrize(
    "items, validation, test, trained",
    [
        ([3, 1, 2, 5], 2, 3, [1, 3]),  # 3 -> 1 trains
        ([3, 1, 2], -1, 2, [1, 3]),  # no validation: up to the test
        ([4, 4], -1, -1, [4]),  # a two-item user trains
        ([7], -1, -1, []),  # no example
        ([2, 5, 6], -1, 1, []),  # the test target first: nothing trains
    ],
)
def test_a_users_trained_items(items, validation, test, trained):
    user = (np.array(items, np.int32), {}, validation, test)
    assert sorted(user_trained_items(user)) == trained


@pytest.mark.slow
def test_the_pipelines_trained_items_are_the_local_engines():
    table = synthetic.generate(num_users=40, num_items=60, seed=2).interactions
    sequences = user_sequences(table.users, table.items, table.timestamps)
    users = []
    for user in range(sequences.num_users):
        start = sequences.starts[user]
        rows = slice(start, start + sequences.lengths[user])
        users.append(
            (
                b"",
                (
                    sequences.items[rows],
                    {},
                    int(sequences.validation_positions[user]),
                    int(sequences.test_positions[user]),
                ),
            )
        )
    expected = trained_item_ids(sequences).tolist()
    with beam.Pipeline() as pipeline:
        encoded = pipeline | "Users" >> beam.Create(users)
        assert_that(trained_items(encoded), equal_to([expected]))
