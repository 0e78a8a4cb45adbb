"""A search folder holds one search: fingerprint, resume, refusal."""

import json
import os

import pytest

from tfrec_tricks import ownership
from tfrec_tricks.errors import RunDirectoryError
from tfrec_tricks.ownership import RECORD_FILE
from tfrec_tricks.training.run_directory import data_identity
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.tuning.search import parse_choices
from tfrec_tricks.tuning.search_directory import (
    SEARCH_FILE,
    fingerprint_hash,
    open_search,
    read_search_file,
    recorded_without_item_features,
    search_fingerprint,
    search_state,
    start_search,
    wait_for_search_file,
    write_best_config,
)

BUDGET = {"tuner": "random", "max_trials": 2, "max_minutes": None, "seeds": 1}


def _fingerprint(config=None, choices=("dropout=0.1,0.2",), budget=None, **kw):
    return search_fingerprint(
        config or TrainConfig(),
        kw.get("fixed"),
        parse_choices(list(choices)),
        {**BUDGET, **(budget or {})},
        kw.get("data", []),
    )


def test_fingerprint_is_json_and_leaves_out_placement():
    a = _fingerprint(TrainConfig(output_dir="a", name="x"))
    b = _fingerprint(TrainConfig(output_dir="b", name="y"))
    assert a == b == json.loads(json.dumps(a))
    assert "output_dir" not in a["train"] and "name" not in a["train"]
    assert a["space"]["dropout"]["values"] == [0.1, 0.2]
    assert fingerprint_hash(a) == fingerprint_hash(json.loads(json.dumps(a)))


def test_new_resume_and_refusal(tmp_path):
    folder = str(tmp_path / "search")
    fingerprint = _fingerprint()
    assert open_search(folder, fingerprint) == "new"
    assert not os.path.exists(folder)  # deciding writes nothing
    start_search(folder, fingerprint, "new")
    assert search_state(folder) == "search"
    document = read_search_file(folder)
    assert document["fingerprint"] == fingerprint
    assert document["fingerprint_sha256"] == fingerprint_hash(fingerprint)
    assert open_search(folder, _fingerprint()) == "resume"
    with pytest.raises(RunDirectoryError) as error:
        open_search(
            folder,
            _fingerprint(
                TrainConfig(seed=3),
                choices=["dropout=0.1,0.3"],
                budget={"max_trials": 5},
                fixed={"batch_size": 64},
            ),
        )
    message = str(error.value)
    for line in (
        "budget.max_trials: 2 -> 5",
        "train.seed: 0 -> 3",
        "space.dropout.values.1: 0.2 -> 0.3",
        'fixed.batch_size: "<unset>" -> 64',
    ):
        assert line in message
    assert "--overwrite" in message


def test_option_added_later_compares_as_before_it_existed(tmp_path):
    folder = str(tmp_path / "search")
    older = TrainConfig(drop_duplicates=False)
    start_search(folder, _fingerprint(older), "new")
    path = os.path.join(folder, SEARCH_FILE)
    document = json.loads(open(path).read())
    # As if recorded before the options existed: a search that kept
    # duplicate rows, trained with Adam.
    del document["fingerprint"]["train"]["optimizer"]
    del document["fingerprint"]["train"]["drop_duplicates"]
    open(path, "w").write(json.dumps(document))
    assert open_search(folder, _fingerprint(older)) == "resume"
    with pytest.raises(RunDirectoryError, match='drop_duplicates: "<unset>"'):
        open_search(folder, _fingerprint())  # today's default drops them
    adagrad = TrainConfig(drop_duplicates=False, optimizer="adagrad")
    with pytest.raises(RunDirectoryError, match='optimizer: "<unset>"'):
        open_search(folder, _fingerprint(adagrad))


def test_item_features_are_recorded_only_when_searched(tmp_path):
    # A search without them keeps the fingerprint it had before they
    # could be searched: it resumes.
    plain = _fingerprint()
    assert "item_features" not in plain
    searched = {"names": ["genres", "year"], "files": []}
    with_items = search_fingerprint(
        TrainConfig(),
        None,
        parse_choices(["dropout=0.1,0.2"]),
        BUDGET,
        [],
        item_features=searched,
    )
    assert with_items == {**plain, "item_features": searched}
    folder = str(tmp_path / "search")
    assert not recorded_without_item_features(folder)  # no search there
    start_search(folder, plain, "new")
    assert recorded_without_item_features(folder)
    with pytest.raises(RunDirectoryError, match='item_features: "<unset>"'):
        open_search(folder, with_items)
    start_search(folder, with_items, "overwrite")
    assert not recorded_without_item_features(folder)
    assert open_search(folder, with_items) == "resume"


def test_other_data_file_is_refused(tmp_path):
    data = tmp_path / "u.data"
    data.write_text("1\t10\t3\t100\n")
    folder = str(tmp_path / "search")
    before = _fingerprint(data=data_identity([str(data)]))
    start_search(folder, before, "new")
    data.write_text("1\t10\t3\t101\n")
    with pytest.raises(RunDirectoryError, match=r"data\.0\.sha256: "):
        open_search(folder, _fingerprint(data=data_identity([str(data)])))


def test_overwrite_replaces_the_whole_folder(tmp_path):
    folder = str(tmp_path / "search")
    start_search(folder, _fingerprint(), "new")
    write_best_config(folder, {"train": {}, "model": {}})
    other = _fingerprint(choices=["dropout=0.3,0.4"])
    assert open_search(folder, other, overwrite=True) == "overwrite"
    start_search(folder, other, "overwrite")
    assert sorted(os.listdir(folder)) == [RECORD_FILE, SEARCH_FILE]
    assert read_search_file(folder)["fingerprint"] == other


def test_best_config_is_recorded(tmp_path):
    folder = str(tmp_path / "search")
    start_search(folder, _fingerprint(), "new")
    path = write_best_config(folder, {"train": {"epochs": 3}, "model": {}})
    document = read_search_file(folder)
    assert document["status"] == "finished"
    from tfrec_tricks.atomic_files import file_sha256

    assert document["best_config_sha256"] == file_sha256(path)
    assert sorted(os.listdir(folder)) == [
        RECORD_FILE,
        "best_config.json",
        SEARCH_FILE,
    ]
    assert ownership.foreign_entries(folder) == []


def test_legacy_damaged_and_foreign_folders(tmp_path):
    legacy = tmp_path / "legacy"
    (legacy / "search").mkdir(parents=True)
    with pytest.raises(RunDirectoryError, match="no search.json"):
        open_search(str(legacy), _fingerprint())
    assert open_search(str(legacy), _fingerprint(), True) == "overwrite"

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / SEARCH_FILE).write_text("{not json")
    with pytest.raises(RunDirectoryError, match="damaged"):
        open_search(str(damaged), _fingerprint())

    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(RunDirectoryError, match="never overwritten"):
            open_search(str(foreign), _fingerprint(), overwrite)
    assert os.listdir(foreign) == ["notes.txt"]
    assert search_state(str(tmp_path / "absent")) == "absent"


def test_a_worker_waits_for_the_chiefs_search_file(tmp_path):
    folder = str(tmp_path / "search")
    with pytest.raises(RunDirectoryError, match="chief did not start"):
        wait_for_search_file(folder, timeout=0.2, poll=0.05)
    start_search(folder, _fingerprint(), "new")
    wait_for_search_file(folder, timeout=0.2, poll=0.05)


def test_only_what_tune_writes_is_a_search_folder(tmp_path):
    from tfrec_tricks.tuning.search_directory import is_search_folder

    search = tmp_path / "search_dir"
    start_search(str(search), _fingerprint(), "new")
    (search / "search").mkdir(parents=True)
    (search / "trials.md").write_text("")
    assert is_search_folder(str(search))
    # What KerasTuner's and TensorBoard's folders hold is the search's,
    # whatever its name (a crash leaves it unrecorded); anywhere else, a
    # file is someone's.
    (search / "search" / "trial_0").mkdir()
    (search / "search" / "trial_0" / "checkpoint.weights.h5").write_text("")
    assert is_search_folder(str(search))
    (search / "notes.txt").write_text("")
    assert not is_search_folder(str(search))
    # An older search's files beside someone's are not a search folder:
    # --overwrite must never remove them.
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "trials.md").write_text("my notes")
    (mine / "photo.jpg").write_text("")
    assert not is_search_folder(str(mine))


def test_data_path_written_another_way_is_the_same_search(
    tmp_path, monkeypatch
):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "u.data").write_text("1\t1\t3\t100\n")
    folder = str(tmp_path / "search")
    monkeypatch.chdir(tmp_path / "data")
    relative = TrainConfig(data="file", data_path="u.data")
    start_search(folder, _fingerprint(relative), "new")
    monkeypatch.chdir(tmp_path)
    absolute = TrainConfig(
        data="file", data_path=str(tmp_path / "data" / "u.data")
    )
    assert open_search(folder, _fingerprint(absolute)) == "resume"
    elsewhere = TrainConfig(data="file", data_path="data/../data/u.data")
    assert open_search(folder, _fingerprint(elsewhere)) == "resume"
    (tmp_path / "other.data").write_text("1\t1\t3\t100\n")
    with pytest.raises(RunDirectoryError, match="train.data_path"):
        open_search(folder, _fingerprint(TrainConfig(data_path="other.data")))
