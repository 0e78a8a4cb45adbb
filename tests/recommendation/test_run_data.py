"""A finished run's own data read back (``run_data``): the whole histories
after the run's filters, from any folder, in memory or from a prepared
dataset, and refused once the data changed."""

import json
import os

import numpy as np
import pytest

from tests.recommendation.recommend_helpers import vocabulary
from tfrec_tricks.errors import DataError
from tfrec_tricks.recommendation.run_data import (
    check_same_data,
    run_histories,
    run_train_config,
)
from tfrec_tricks.recommendation.user_histories import (
    PreparedHistories,
    SequenceHistories,
)
from tfrec_tricks.training.prepare_dataset import prepare_dataset
from tfrec_tricks.training.run_directory import check_finished_run
from tfrec_tricks.training.run_training import train
from tfrec_tricks.training.train_config import TrainConfig

pytestmark = pytest.mark.slow

# 24 users, 8 clicks each over 12 items, and one rare item "r" (one row):
# min_item_interactions=2 drops it, so no history holds it.
ROWS = [
    (f"u{u}", f"i{(u * 5 + k * 7) % 12}", 1000 * u + 10 * k)
    for u in range(24)
    for k in range(8)
] + [("u3", "r", 3005)]


def _config(root, **options):
    values = dict(
        data="file",
        data_path="u.data",
        max_len=5,
        epochs=1,
        min_item_interactions=2,
        output_dir=str(root / "runs"),
        model={"embedding_dim": 8, "features": ("time_gap",)},
    )
    values.update(options)
    return TrainConfig(**values)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(workspace, in-memory run, prepared run), trained from the
    workspace with a relative data path."""
    root = tmp_path_factory.mktemp("workspace")
    (root / "u.data").write_text(
        "".join(f"{u}\t{i}\t1\t{t}\n" for u, i, t in ROWS)
    )
    before = os.getcwd()
    os.chdir(root)
    try:
        memory = train(_config(root, name="memory"), verbose=0).run_dir
        prepared = prepare_dataset(
            _config(root), str(root / "prepared"), verbose=False
        )
        disk = train(
            _config(root, name="disk", prepared=prepared), verbose=0
        ).run_dir
    finally:
        os.chdir(before)
    return root, memory, disk


def _all(histories):
    users = {}
    for batch in histories.batches(5, features=("time_gap",)):
        for user, ids, gaps in zip(
            batch.users, batch.item_ids, batch.features["time_gap"]
        ):
            users[user] = (ids.tolist(), gaps.tolist())
    return users


def _expected(items):
    """Each user's raw items by time, the rare one left out."""
    expected = {}
    for user, item, time in sorted(ROWS, key=lambda row: row[2]):
        if item != "r":
            expected.setdefault(user, []).append(item)
    return expected


def test_whole_histories_after_the_runs_filters_from_any_folder(
    runs, tmp_path, monkeypatch
):
    root, memory, _ = runs
    monkeypatch.chdir(tmp_path)  # the data path was relative to root
    run = check_finished_run(memory)
    with open(os.path.join(memory, "config.json")) as handle:
        assert json.load(handle)["train"]["data_path"] == "u.data"
    config = run_train_config(memory, run)
    assert config.data_path == str(root / "u.data")
    items = vocabulary(memory)
    histories = run_histories(memory, run, items)
    assert isinstance(histories, SequenceHistories)
    got = _all(histories)
    expected = _expected(items)
    assert list(got) == list(expected)
    for user, raw in expected.items():
        ids, gaps = got[user]
        assert [items[i] for i in ids] == raw
        assert np.isnan(gaps[0]) and gaps[1:] == [10.0] * (len(raw) - 1)


def test_a_prepared_runs_histories_stream_from_its_dataset(runs):
    _, memory, disk = runs
    run = check_finished_run(disk)
    items = vocabulary(disk)
    histories = run_histories(disk, run, items)
    assert isinstance(histories, PreparedHistories)
    in_memory = run_histories(memory, check_finished_run(memory), items)
    got, expected = _all(histories), _all(in_memory)
    assert sorted(got) == sorted(expected)
    for user in expected:
        assert got[user][0] == expected[user][0]
        np.testing.assert_array_equal(got[user][1], expected[user][1])


def test_changed_or_missing_data_is_refused(runs, tmp_path):
    root, memory, _ = runs
    run = check_finished_run(memory)
    config = run_train_config(memory, run)
    check_same_data(memory, config, run)
    copy = tmp_path / "u.data"
    copy.write_text((root / "u.data").read_text() + "u0\ti1\t1\t99999\n")
    changed = TrainConfig(**{**config.to_dict(), "data_path": str(copy)})
    with pytest.raises(DataError) as error:
        check_same_data(memory, changed, run)
    assert f"{copy} changed since the run in {memory} trained on it" in str(
        error.value
    )
    assert "--histories FILE" in str(error.value)
    gone = TrainConfig(**{**config.to_dict(), "data_path": str(copy) + "x"})
    with pytest.raises(DataError, match="is missing since the run"):
        check_same_data(memory, gone, run)
