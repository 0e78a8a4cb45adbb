"""Merging prefix examples into rows with a target per position."""

import numpy as np
import pytest

from tfrec_tricks.data import SequenceExamples
from tfrec_tricks.data.in_memory_dataset import TIME_GAP, prepare
from tfrec_tricks.data.prefix_merging import POSITION_TARGETS, merge_prefixes
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.tf_data_pipeline import make_dataset

MAX_LEN = 6


@pytest.fixture(scope="module")
def examples():
    # Mean length 8 with max_len 6: many histories are cut to the window.
    data = synthetic.generate(
        num_users=25, num_items=40, num_clusters=4, mean_length=8, seed=0
    )
    return prepare(data.interactions, max_len=MAX_LEN).train


def expand(rows):
    """The (history, target, user, features) examples the rows hold."""
    found = []
    for r, p in np.argwhere(rows[POSITION_TARGETS] > 0):
        cut = np.arange(rows["history"].shape[1]) <= p
        features = tuple(
            tuple(np.where(cut, rows[name][r], 0.0).round(4))
            for name in sorted(rows)
            if name not in ("history", "target", "user", POSITION_TARGETS)
        )
        found.append(
            (
                tuple(np.where(cut, rows["history"][r], 0)),
                int(rows[POSITION_TARGETS][r, p]),
                int(rows["user"][r]),
                features,
            )
        )
    return found


def as_tuples(examples):
    arrays = examples.as_dict()
    return [
        (
            tuple(arrays["history"][i]),
            int(arrays["target"][i]),
            int(arrays["user"][i]),
            tuple(
                tuple(np.asarray(arrays[name][i]).round(4))
                for name in sorted(examples.features)
            ),
        )
        for i in range(len(examples))
    ]


def same_examples(a, b):
    # NaN != NaN: compare a text form (NaN prints the same each time).
    return sorted(map(repr, a)) == sorted(map(repr, b))


def test_rows_hold_exactly_the_prefix_examples(examples):
    rows = merge_prefixes(examples)
    assert TIME_GAP in rows  # features are merged too
    assert same_examples(expand(rows), as_tuples(examples))
    # Each example is one target position: none lost, none twice.
    assert (rows[POSITION_TARGETS] > 0).sum() == len(examples)
    assert len(rows["history"]) < len(examples) / 2


def test_untruncated_sessions_become_one_row_each():
    data = synthetic.generate(
        num_users=15, num_items=30, num_clusters=4, seed=1
    )
    train = prepare(data.interactions, max_len=200).train
    rows = merge_prefixes(train)
    assert sorted(rows["user"]) == sorted(set(train.user))
    # Targets at every real position, the row's last one equal to target.
    real = rows["history"] > 0
    np.testing.assert_array_equal(rows[POSITION_TARGETS] > 0, real)
    last = real.sum(1) - 1
    np.testing.assert_array_equal(
        rows[POSITION_TARGETS][np.arange(len(last)), last], rows["target"]
    )


def test_cut_histories_keep_one_target_each(examples):
    rows = merge_prefixes(examples)
    full = (rows["history"] > 0).sum(1) == MAX_LEN
    targets = (rows[POSITION_TARGETS] > 0).sum(1)
    # The first full-window example of a user extends its prefixes; the
    # later ones (items moved left) are rows with one target.
    assert (targets[full] == 1).sum() > 0
    assert (targets[~full] >= 1).all()


def test_shuffled_examples_are_still_exact(examples):
    order = np.random.default_rng(0).permutation(len(examples))
    shuffled = SequenceExamples(
        examples.history[order],
        examples.target[order],
        examples.user[order],
        {k: v[order] for k, v in examples.features.items()},
    )
    rows = merge_prefixes(shuffled)
    assert same_examples(expand(rows), as_tuples(examples))


def merged_rows(history, target, user, features=None):
    return merge_prefixes(
        SequenceExamples(
            np.array(history), np.array(target), np.array(user), features or {}
        )
    )


def test_a_different_feature_value_keeps_examples_apart():
    history = [[5, 0, 0], [5, 6, 0]]
    gaps = np.array([[np.nan, 0, 0], [np.nan, 3.0, 0]])
    rows = merged_rows(history, [6, 7], [0, 0], {"time_gap": gaps})
    assert rows[POSITION_TARGETS].tolist() == [[6, 7, 0]]  # NaN == NaN
    changed = gaps.copy()
    changed[1, 0] = 1.0
    rows = merged_rows(history, [6, 7], [0, 0], {"time_gap": changed})
    assert rows[POSITION_TARGETS].tolist() == [[6, 0, 0], [0, 7, 0]]


@pytest.mark.parametrize(
    "history, target, user",
    [
        ([[5, 0], [5, 6]], [9, 7], [0, 0]),  # target is not the next item
        ([[5, 0], [5, 6]], [6, 7], [0, 1]),  # another user
        ([[5, 0], [4, 6]], [6, 7], [0, 0]),  # another item before
        ([[0, 0], [5, 0]], [5, 6], [0, 0]),  # an empty history
    ],
    ids=["target", "user", "item", "empty"],
)
def test_examples_that_do_not_extend_stay_apart(history, target, user):
    rows = merged_rows(history, target, user)
    assert len(rows["history"]) == 2
    assert (rows[POSITION_TARGETS] > 0).sum() == 2


def test_empty_split():
    rows = merged_rows(np.zeros([0, 4], int), np.zeros([0], int), [])
    assert rows[POSITION_TARGETS].shape == (0, 4)


@pytest.mark.parametrize("bucket", [False, True])
def test_dataset_batches_count_target_positions(examples, bucket):
    dataset = make_dataset(
        examples,
        batch_size=16,
        shuffle=True,
        seed=0,
        bucket_by_length=bucket,
        every_position=True,
    )
    batches = list(dataset)
    per_batch = [int((b[POSITION_TARGETS] > 0).numpy().sum()) for b in batches]
    assert sum(per_batch) == len(examples)
    # About as many steps of about as many examples as without merging.
    unmerged = len(
        list(make_dataset(examples, batch_size=16, bucket_by_length=bucket))
    )
    assert abs(len(batches) - unmerged) <= 0.25 * unmerged
    assert 10 <= np.median(per_batch) <= 24
    rows = {
        name: np.concatenate([b[name].numpy() for b in batches])
        for name in batches[0]
    }
    assert same_examples(expand(rows), as_tuples(examples))


def test_arrays_without_users_merge_the_same(examples):
    arrays = examples.as_dict()
    del arrays["user"]
    from_arrays = merge_prefixes(arrays)
    from_examples = merge_prefixes(examples)
    for name in ("history", "target", POSITION_TARGETS):
        np.testing.assert_array_equal(from_arrays[name], from_examples[name])
    np.testing.assert_array_equal(
        from_arrays[TIME_GAP], from_examples[TIME_GAP]
    )
