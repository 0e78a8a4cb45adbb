"""tf.data pipelines over prepared examples."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.data.in_memory_dataset import TIME_GAP, prepare
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.tf_data_pipeline import length_boundaries, make_dataset

MAX_LEN = 7


@pytest.fixture(scope="module")
def examples():
    data = synthetic.generate(
        num_users=20, num_items=40, num_clusters=4, mean_length=8, seed=0
    )
    return prepare(data.interactions, max_len=MAX_LEN).train


def targets_in_order(dataset):
    return np.concatenate([b["target"].numpy() for b in dataset])


def test_batches_shapes_and_dtypes(examples):
    n = len(examples)
    assert n > 40  # several full batches plus a remainder
    dataset = make_dataset(examples, batch_size=16)
    spec = dataset.element_spec
    assert sorted(spec) == ["history", "target", TIME_GAP, "user"]
    assert spec["history"].dtype == tf.int32
    assert spec["target"].dtype == tf.int32
    assert spec["user"].dtype == tf.int32
    assert spec[TIME_GAP].dtype == tf.float32
    batches = list(dataset)
    assert len(batches) == -(-n // 16)
    sizes = [int(b["target"].shape[0]) for b in batches]
    assert sizes[:-1] == [16] * (len(sizes) - 1)
    assert sizes[-1] == n - 16 * (len(sizes) - 1)
    for batch in batches:
        b = batch["target"].shape[0]
        assert batch["history"].shape == (b, MAX_LEN)
        assert batch[TIME_GAP].shape == (b, MAX_LEN)
        assert batch["user"].shape == (b,)


def test_unshuffled_keeps_order_and_values(examples):
    batches = list(make_dataset(examples, batch_size=10))
    history = np.concatenate([b["history"].numpy() for b in batches])
    gaps = np.concatenate([b[TIME_GAP].numpy() for b in batches])
    np.testing.assert_array_equal(history, examples.history)
    np.testing.assert_array_equal(gaps, examples.features[TIME_GAP])
    np.testing.assert_array_equal(targets_in_order(batches), examples.target)


def test_shuffle_with_seed_is_deterministic(examples):
    first = make_dataset(examples, batch_size=8, shuffle=True, seed=3)
    second = make_dataset(examples, batch_size=8, shuffle=True, seed=3)
    order = targets_in_order(first)
    np.testing.assert_array_equal(targets_in_order(second), order)
    # A permutation of the examples, not their original order.
    np.testing.assert_array_equal(np.sort(order), np.sort(examples.target))
    assert not np.array_equal(order, examples.target)
    # Rows stay aligned: each history goes with its own target.
    batch = next(iter(first))
    rows = [
        np.flatnonzero((examples.history == h).all(axis=1))
        for h in batch["history"].numpy()
    ]
    for row_ids, target in zip(rows, batch["target"].numpy()):
        assert target in examples.target[row_ids]


def test_shuffle_seeds_and_epochs_differ(examples):
    seeded = make_dataset(examples, batch_size=8, shuffle=True, seed=3)
    other = make_dataset(examples, batch_size=8, shuffle=True, seed=4)
    epoch_one = targets_in_order(seeded)
    epoch_two = targets_in_order(seeded)
    assert not np.array_equal(epoch_one, targets_in_order(other))
    assert not np.array_equal(epoch_one, epoch_two)  # reshuffled per epoch


def test_empty_features_are_absent():
    data = synthetic.generate(num_users=5, num_items=10, num_clusters=2, seed=0)
    examples = prepare(
        data.interactions, max_len=4, numeric_features=False
    ).test
    dataset = make_dataset(examples, batch_size=2)
    assert sorted(dataset.element_spec) == ["history", "target", "user"]


@pytest.mark.parametrize("batch_size", [0, -1])
def test_bad_batch_size(examples, batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        make_dataset(examples, batch_size=batch_size)


def lengths_of(batch):
    return (batch["history"].numpy() > 0).sum(axis=1)


def test_bucketed_batches_hold_every_example_once_with_similar_lengths(
    examples,
):
    dataset = make_dataset(
        examples, batch_size=8, shuffle=True, seed=1, bucket_by_length=True
    )
    batches = list(dataset)

    # Every example exactly once, rows kept aligned with their features.
    def rows(history, gaps, target):
        table = np.concatenate(
            [history, np.nan_to_num(gaps, nan=-1.0), target[:, None]], axis=1
        )
        return table[np.lexsort(table.T[::-1])]

    np.testing.assert_array_equal(
        rows(
            np.concatenate([b["history"].numpy() for b in batches]),
            np.concatenate([b[TIME_GAP].numpy() for b in batches]),
            targets_in_order(batches),
        ),
        rows(examples.history, examples.features[TIME_GAP], examples.target),
    )
    assert dataset.cardinality() == len(batches)
    # Each batch lies inside one band of length_boundaries.
    edges = [0, *length_boundaries(MAX_LEN), MAX_LEN + 1]
    for batch in batches:
        lengths = lengths_of(batch)
        band = np.searchsorted(edges, lengths.max(), side="right")
        assert lengths.min() >= edges[band - 1]


def test_bucketing_cuts_the_columns_the_model_runs_over(examples):
    def mean_width(dataset):
        return np.mean([lengths_of(b).max() for b in dataset])

    random_batches = make_dataset(examples, 8, shuffle=True, seed=1)
    bucketed = make_dataset(
        examples, 8, shuffle=True, seed=1, bucket_by_length=True
    )
    assert mean_width(bucketed) < 0.8 * mean_width(random_batches)


def test_bucketed_epochs_are_reshuffled(examples):
    dataset = make_dataset(
        examples, batch_size=8, shuffle=True, seed=1, bucket_by_length=True
    )
    assert not np.array_equal(
        targets_in_order(dataset), targets_in_order(dataset)
    )


def test_length_boundaries_cover_the_window():
    assert length_boundaries(1) == []
    assert length_boundaries(4) == [2, 3, 4]
    bounds = length_boundaries(200)
    assert bounds == sorted(set(bounds)) and bounds[-1] <= 200
    assert bounds[:8] == list(range(2, 10))  # exact short lengths
    assert max(b / a for a, b in zip(bounds[7:], bounds[8:])) <= 1.34
    with pytest.raises(ValueError, match="max_len must be positive"):
        length_boundaries(0)
