"""The summary merges users batch by batch, and the driver checks it."""

import pytest

from tfrec_tricks.data.beam.config import BeamConfig
from tfrec_tricks.data.beam.summary import SummaryFn, check_summary
from tfrec_tricks.data.prepared.writer import split_counts
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.training_statistics import training_statistics
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError


def test_summary_merges_batches_and_accumulators():
    table = synthetic.generate(num_users=40, num_items=60, seed=2).interactions
    sequences = user_sequences(
        table.users, table.items, table.timestamps, split="every-user"
    )
    users = []
    for user in range(sequences.num_users):
        rows = slice(
            sequences.starts[user],
            sequences.starts[user] + sequences.lengths[user],
        )
        users.append(
            (
                sequences.items[rows],
                {n: v[rows] for n, v in sequences.features.items()},
                sequences.validation_positions[user],
                sequences.test_positions[user],
            )
        )
    combine = SummaryFn(max_len=5, batch_size=7)
    parts = []
    for first in range(0, len(users), 15):
        accumulator = combine.create_accumulator()
        for user in users[first : first + 15]:
            accumulator = combine.add_input(accumulator, user)
        parts.append(accumulator)
    summary = combine.extract_output(combine.merge_accumulators(parts))
    expected = training_statistics(sequences, 5).to_dict()
    got = summary["statistics"]
    counts = got["item_counts"]
    counts += [0] * (len(expected["item_counts"]) - len(counts))
    assert counts == expected["item_counts"]
    for name, moments in expected["moments"].items():
        assert got["moments"][name] == pytest.approx(moments, rel=1e-9)
    assert summary["split_counts"] == split_counts(
        sequences.train_ends,
        sequences.validation_positions,
        sequences.test_positions,
    )
    assert summary["users"] == sequences.num_users
    assert summary["interactions"] == len(sequences.items)
    assert summary["longest"] == sequences.lengths.max()
    assert summary["feature_names"] == ["time_gap"]


SETTLED = {
    "rows": 10,
    "unsettled_items": 0,
    "users": 2,
    "longest": 5,
    "validation_users": 2,
    "test_users": 2,
}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"rows": 0}, "the files are empty"),
        ({"unsettled_items": 3}, "filter_rounds=8 rounds: 3 items"),
        ({"users": 0}, "No interactions left in s.tsv after filtering"),
        ({"validation_users": 0}, "No validation examples in s.tsv"),
        ({"test_users": 0}, "No test examples in s.tsv"),
    ],
)
def test_check_summary_raises_what_user_sequences_raises(changes, message):
    config = BeamConfig.from_options({"max_len": 3}, 1, 8)
    with pytest.raises(DataError, match=message):
        check_summary({**SETTLED, **changes}, config, "s.tsv", 8)


def test_check_summary_passes_a_settled_summary():
    config = BeamConfig.from_options({"max_len": 3}, 1, 8)
    check_summary(SETTLED, config, "s.tsv", 8)
