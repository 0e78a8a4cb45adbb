"""Training windows: every training target once, histories cut to windows."""

import collections

import numpy as np
import pytest

from tfrec_tricks.data.in_memory_dataset import SequenceExamples, prepare
from tfrec_tricks.data.prefix_merging import POSITION_TARGETS, merge_prefixes
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.data.train_windows import train_windows, window_ends


@pytest.fixture(scope="module")
def data():
    table = synthetic.generate(num_users=30, num_items=40, seed=5)
    return prepare(table.interactions, max_len=6)


def expanded_pairs(rows):
    """(user, history, target) of every trained position of merged rows."""
    pairs = []
    for history, targets, user in zip(
        rows["history"], rows[POSITION_TARGETS], rows["user"]
    ):
        for position in np.flatnonzero(targets):
            pairs.append(
                (
                    int(user),
                    tuple(history[: position + 1].tolist()),
                    int(targets[position]),
                )
            )
    return pairs


@pytest.mark.parametrize(
    "max_len, stride",
    [(m, s) for m in (1, 4, 10) for s in (1, 2, 3, 4) if s <= m],
)
def test_window_ends_train_every_target_once(max_len, stride):
    train_ends = np.array([0, 1, 3, 4, 5, 9, 17, 40])
    users, ends, runs = window_ends(train_ends, max_len, stride)
    trained = collections.Counter()
    for user, end, run in zip(users, ends, runs):
        assert 1 <= run <= min(end, max_len)
        for target in range(end - run + 1, end + 1):
            trained[(int(user), int(target))] += 1
    expected = {
        (u, t) for u, e in enumerate(train_ends) for t in range(1, e + 1)
    }
    assert set(trained) == expected
    assert set(trained.values()) == {1}
    # Time order within a user.
    for user in set(users.tolist()):
        assert np.all(np.diff(ends[users == user]) > 0)


def test_window_ends_with_stride_max_len_do_not_overlap():
    users, ends, runs = window_ends(np.array([23]), 5, 5)
    assert ends.tolist() == [3, 8, 13, 18, 23]
    assert runs.tolist() == [3, 5, 5, 5, 5]


@pytest.mark.parametrize("stride", [0, 7])
def test_a_stride_outside_1_to_max_len_is_refused(stride):
    with pytest.raises(ValueError, match=f"Received: stride={stride}"):
        window_ends(np.array([3]), 6, stride)


def test_stride_1_gives_the_merged_prefixes(data):
    windows = train_windows(data.train, 1)
    merged = merge_prefixes(data.train)
    assert sorted(windows) == sorted(merged)
    for name in merged:
        np.testing.assert_array_equal(windows[name], merged[name])


@pytest.mark.parametrize("stride", [1, 3, 6])
def test_windows_train_each_prefix_target_once_with_a_suffix_history(
    data, stride
):
    rows = train_windows(data.train, stride)
    pairs = expanded_pairs(rows)
    prefix = data.train
    assert len(pairs) == len(prefix)
    # Same (user, target) multiset as the prefix protocol ...
    assert collections.Counter((u, t) for u, _, t in pairs) == (
        collections.Counter(zip(prefix.user.tolist(), prefix.target.tolist()))
    )
    # ... and each history a non-empty suffix of a prefix example's.
    suffixes = collections.defaultdict(set)
    for history, target, user in zip(
        prefix.history, prefix.target, prefix.user
    ):
        items = tuple(history[history > 0].tolist())
        for cut in range(len(items)):
            suffixes[(int(user), int(target))].add(items[cut:])
    for user, history, target in pairs:
        assert history in suffixes[(user, target)]
    # Non-overlapping windows are each one encoder row per max_len targets.
    if stride == 6:
        assert (
            len(rows["target"])
            <= len(set(prefix.user.tolist())) + len(prefix) / 6
        )


def test_make_dataset_batch_size_counts_windows(data):
    batches = list(make_dataset(data.train, 4, window_stride=6))
    assert [len(b["target"]) for b in batches[:-1]] == [4] * (len(batches) - 1)
    assert sum(len(b["target"]) for b in batches) == len(
        train_windows(data.train, 6)["target"]
    )


def test_windows_and_every_position_together_are_refused(data):
    with pytest.raises(ValueError, match="choose one"):
        make_dataset(data.train, 4, every_position=True, window_stride=2)


def test_examples_not_laid_out_as_prepare_writes_them_are_refused():
    history = np.array([[5, 6], [5, 0]])
    examples = SequenceExamples(history, np.array([7, 6]), np.array([0, 0]), {})
    with pytest.raises(ValueError, match="example 0 .* has 2 history items"):
        train_windows(examples, 2)
