"""Run directories: one fingerprint, resume / reuse / refuse, one manifest."""

import json
import os

import pytest

from tests import run_helpers
from tests.run_helpers import Interrupt, snapshot
from tfrec_tricks import ownership
from tfrec_tricks.errors import OutputError, RunDirectoryError
from tfrec_tricks.training import run_directory
from tfrec_tricks.training.resumption import (
    finished_metrics,
    with_recorded_head,
)
from tfrec_tricks.training.run_directory import (
    check_finished_run,
    check_run_name,
    differences,
    open_run,
    publish_model,
)
from tfrec_tricks.training.run_training import train
from tfrec_tricks.training.train_config import TrainConfig


def tiny_config(tmp_path, **overrides):
    return run_helpers.tiny_config(tmp_path, **{"epochs": 2, **overrides})


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """A finished two-epoch run, copied fresh into each test that needs it."""
    root = tmp_path_factory.mktemp("finished")
    train(tiny_config(root), verbose=0)
    return root


@pytest.fixture
def run_root(finished_run, tmp_path):
    import shutil

    shutil.copytree(finished_run / "run", tmp_path / "run")
    return tmp_path


@pytest.mark.slow
def test_finished_run_has_a_manifest_that_export_accepts(run_root):
    run = check_finished_run(str(run_root / "run"))
    assert run["status"] == "finished"
    assert {"config.json", "vocabulary.json", "metrics.json"} <= set(
        run["files"]
    )
    assert "model/weights.index" in run["files"]
    assert run["fingerprint"]["train"]["seed"] == 0
    assert "output_dir" not in run["fingerprint"]["train"]
    # The copy elsewhere is the same run: output_dir and name only place it.
    assert finished_metrics(tiny_config(run_root)) is not None


@pytest.mark.slow
def test_other_settings_on_a_finished_run_are_refused_untouched(run_root):
    before = snapshot(run_root)
    config = tiny_config(run_root, seed=1, model={"embedding_dim": 16})
    with pytest.raises(RunDirectoryError) as error:
        train(config, verbose=0)
    message = str(error.value)
    assert "holds a finished run with other settings" in message
    assert "train.seed: 0 -> 1" in message
    assert "model.embedding_dim: 8 -> 16" in message
    assert "--overwrite" in message
    assert snapshot(run_root) == before
    assert finished_metrics(config) is None


@pytest.mark.slow
def test_interrupted_run_resumed_with_another_seed_is_refused(tmp_path):
    config = tiny_config(tmp_path, epochs=3)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt()])
    before = snapshot(tmp_path)
    with pytest.raises(RunDirectoryError, match="interrupted run") as error:
        train(tiny_config(tmp_path, epochs=3, seed=1), verbose=0)
    assert "train.seed: 0 -> 1" in str(error.value)
    assert snapshot(tmp_path) == before
    # Export refuses the unfinished run.
    with pytest.raises(RunDirectoryError, match="has not finished"):
        check_finished_run(str(tmp_path / "run"))
    # The original command still resumes it.
    result = train(config, verbose=0)
    assert result.metrics["epochs_run"] == 3
    check_finished_run(str(tmp_path / "run"))


@pytest.mark.slow
def test_overwrite_replaces_the_run_as_a_whole(run_root):
    old = json.loads((run_root / "run" / "run.json").read_text())
    config = tiny_config(run_root, seed=1, epochs=1)
    result = train(config, verbose=0, overwrite=True)
    run = check_finished_run(result.run_dir)
    assert run["fingerprint"]["train"]["seed"] == 1
    assert run["files"]["vocabulary.json"] != old["files"]["vocabulary.json"]
    assert result.metrics["epochs_run"] == 1
    saved = json.loads((run_root / "run" / "config.json").read_text())
    assert saved["train"]["seed"] == 1


@pytest.mark.slow
def test_changed_data_file_is_a_difference(tmp_path):
    from tfrec_tricks.data import load_source

    interactions = load_source(
        "synthetic", synthetic_options={"num_users": 40, "num_items": 60}
    ).interactions
    path = tmp_path / "u.data"
    lines = [
        f"{u}\t{i}\t1\t{int(t)}"
        for u, i, t in zip(
            interactions.users, interactions.items, interactions.timestamps
        )
    ]
    path.write_text("\n".join(lines) + "\n")
    config = tiny_config(
        tmp_path / "runs", data="file", data_path=str(path), epochs=1
    )
    train(config, verbose=0)
    path.write_text("\n".join(lines[:-5]) + "\n")
    with pytest.raises(RunDirectoryError) as error:
        train(config, verbose=0)
    assert "data.0.sha256" in str(error.value)
    assert "data.0.bytes" in str(error.value)


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage, match",
    [
        ("remove_weights", "model/weights.index is missing"),
        ("other_vocabulary", "vocabulary.json changed after the run"),
        ("other_config", "config.json changed after the run"),
    ],
)
def test_export_check_names_a_missing_or_foreign_part(run_root, damage, match):
    run_dir = run_root / "run"
    if damage == "remove_weights":
        (run_dir / "model" / "weights.index").unlink()
    elif damage == "other_vocabulary":
        vocabulary = json.loads((run_dir / "vocabulary.json").read_text())
        vocabulary["items"][1:3] = vocabulary["items"][2:0:-1]
        (run_dir / "vocabulary.json").write_text(json.dumps(vocabulary))
    else:
        config = json.loads((run_dir / "model" / "config.json").read_text())
        config["name"] = "other"
        (run_dir / "model" / "config.json").write_text(json.dumps(config))
    with pytest.raises(RunDirectoryError, match=match):
        check_finished_run(str(run_dir))


@pytest.mark.slow
@pytest.mark.parametrize(
    "record, match",
    [
        ("no_files", "lists no files"),
        ("files_as_list", "lists no files"),
        ("without_vocabulary", "does not list vocabulary.json"),
        ("without_a_weights_file", "does not list model/weights.index"),
    ],
)
def test_export_check_refuses_a_run_without_a_complete_file_record(
    run_root, record, match
):
    # Verified or retrained: a finished run whose run.json cannot vouch
    # for every file of the run is never exported as it is.
    run_dir = run_root / "run"
    run = json.loads((run_dir / "run.json").read_text())
    if record == "no_files":
        del run["files"]
    elif record == "files_as_list":
        run["files"] = sorted(run["files"])
    elif record == "without_vocabulary":
        del run["files"]["vocabulary.json"]
    else:
        del run["files"]["model/weights.index"]
    (run_dir / "run.json").write_text(json.dumps(run))
    with pytest.raises(RunDirectoryError, match=match) as error:
        check_finished_run(str(run_dir))
    message = str(error.value)
    assert "has no complete record of its files" in message
    assert "tfrec-tricks train ... --overwrite" in message


@pytest.mark.slow
def test_export_check_names_a_file_added_to_model_and_the_way_out(run_root):
    # A file the run never wrote (a .DS_Store, a copy) is named, with the
    # way out that works: moving it (retraining would be refused for it).
    run_dir = run_root / "run"
    extra = run_dir / "model" / "extra.bin"
    extra.write_bytes(b"\0")
    with pytest.raises(RunDirectoryError) as error:
        check_finished_run(str(run_dir))
    message = str(error.value)
    assert str(extra) in message
    assert "Move it out of the run directory" in message
    assert "--overwrite" not in message
    extra.unlink()
    check_finished_run(str(run_dir))


def test_open_run_decides_from_the_directory(tmp_path):
    fingerprint = {"train": {"seed": 0}, "data": []}
    assert open_run(str(tmp_path / "absent"), fingerprint) == "new"
    assert open_run(str(tmp_path), fingerprint) == "new"  # empty
    run_directory.start_run(str(tmp_path), fingerprint, {"a.json": "{}"})
    assert open_run(str(tmp_path), fingerprint) == "resume"
    with pytest.raises(RunDirectoryError, match=r"train.seed: 0 -> 1"):
        open_run(str(tmp_path), {"train": {"seed": 1}, "data": []})
    assert (
        open_run(str(tmp_path), {"train": {"seed": 1}}, overwrite=True) == "new"
    )
    # Only what the run recorded is removed; the folder itself stays.
    assert os.listdir(tmp_path) == []


def test_a_folder_that_is_no_run_is_never_overwritten(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(RunDirectoryError, match="not a run directory"):
            open_run(str(tmp_path), {}, overwrite=overwrite)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_a_run_of_an_older_version_is_never_removed(tmp_path):
    # It has no record of what was written: someone's config.json could
    # look the same.
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(RunDirectoryError, match="older tfrec-tricks"):
        open_run(str(tmp_path), {})
    with pytest.raises(RunDirectoryError, match="older tfrec-tricks"):
        check_finished_run(str(tmp_path))
    with pytest.raises(OutputError, match=r"no record .*\(config.json\)"):
        open_run(str(tmp_path), {}, overwrite=True)
    assert os.listdir(tmp_path) == ["config.json"]


def test_a_damaged_run_file_is_named(tmp_path):
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(RunDirectoryError, match="run.json is damaged"):
        open_run(str(tmp_path), {})
    with pytest.raises(RunDirectoryError, match="run.json is damaged"):
        check_finished_run(str(tmp_path))


def test_publish_model_is_all_or_nothing(tmp_path):
    def write(folder):
        with open(os.path.join(folder, "weights"), "w") as handle:
            handle.write("new")

    def fail(folder):
        write(folder)
        raise OSError("disk full")

    publish_model(str(tmp_path), write)
    (tmp_path / "model" / "weights").write_text("old")
    with pytest.raises(OSError, match="disk full"):
        publish_model(str(tmp_path), fail)
    assert (tmp_path / "model" / "weights").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["model"]  # no staging left
    publish_model(str(tmp_path), write)
    assert (tmp_path / "model" / "weights").read_text() == "new"
    assert sorted(os.listdir(tmp_path)) == ["model"]


@pytest.mark.parametrize(
    "name", ["../x", "/abs", "a/b", ".", "..", "", "a\\b", "nul\0"]
)
def test_run_names_are_single_folder_names(name):
    with pytest.raises(ValueError, match="single folder name"):
        check_run_name(name)
    with pytest.raises(ValueError, match="single folder name"):
        TrainConfig(name=name)


def test_differences_name_each_changed_leaf():
    before = {"train": {"seed": 0, "epochs": 2}, "data": [{"bytes": 5}]}
    now = {"train": {"seed": 1, "epochs": 2}, "data": [{"bytes": 6}]}
    assert differences(before, now) == [
        "data.0.bytes: 5 -> 6",
        "train.seed: 0 -> 1",
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"optimizer": "adagrad"},
        {"train_windows": True},
        {"lr_schedule": "cosine"},
        {"warmup_epochs": 1},
        {
            "model": {
                "head": "cpr",
                "cpr_reranker_ks": (5,),
                "cpr_base_loss": 0.3,
            }
        },
    ],
)
def test_options_added_later_enter_the_fingerprint_only_when_set(
    tmp_path, options
):
    from tfrec_tricks.training.resumption import (
        LATER_OPTIONS,
        fingerprint,
        model_later_options,
    )

    # Runs from before drop_duplicates kept duplicates: today's default
    # drops them, so it is their --no-drop-duplicates twin that matches.
    before = fingerprint(
        tiny_config(tmp_path, drop_duplicates=False), 40, data=[]
    )
    # Runs from before these options existed keep their fingerprint.
    assert not set(LATER_OPTIONS) & set(before["train"])
    dropping = fingerprint(tiny_config(tmp_path), 40, data=[])
    assert dropping["train"]["drop_duplicates"] is True
    assert not set(model_later_options()) & set(before["model"])
    # So do runs that set the option to the value of those runs: a CPR run
    # with cpr_base_loss=0 has the fingerprint of a CPR run from before.
    cpr = {"head": "cpr", "cpr_reranker_ks": (5,)}
    pinned = {**cpr, "cpr_base_loss": 0.0}
    paper = fingerprint(
        tiny_config(tmp_path, model=pinned, drop_duplicates=False), 40, []
    )
    assert "cpr_base_loss" not in paper["model"]
    assert "cpr_base_loss" not in paper["train"]["model"]
    default = fingerprint(tiny_config(tmp_path, model=cpr), 40, data=[])
    assert default["model"]["cpr_base_loss"] == 1.0
    after = fingerprint(
        tiny_config(tmp_path, drop_duplicates=False, **options), 40, data=[]
    )
    assert after != before
    if "model" in options:
        assert after["model"]["cpr_base_loss"] == 0.3


def test_cosine_temperature_enters_the_fingerprint_only_when_set(tmp_path):
    from tfrec_tricks.training.resumption import fingerprint

    def model_part(**model):
        config = tiny_config(tmp_path, model=model)
        return fingerprint(config, 40, data=[])["model"]

    # Runs from before the option scored the dot product.
    assert "cosine_temperature" not in model_part()
    assert "cosine_temperature" not in model_part(head="softmax_no_dup")
    for head in ("softmax", "softmax_no_dup"):
        scored = model_part(head=head, cosine_temperature=0.05)
        assert scored["cosine_temperature"] == 0.05


def test_sampled_negatives_enter_the_fingerprint_only_when_set(tmp_path):
    from tfrec_tricks.training.resumption import fingerprint

    def model_part(**model):
        config = tiny_config(tmp_path, model={"objective": "sampled", **model})
        return fingerprint(config, 40, data=[])["model"]

    # Sampled runs from before the option scored the in-batch candidates.
    assert "num_sampled_negatives" not in model_part()
    assert model_part(num_sampled_negatives=16)["num_sampled_negatives"] == 16


def test_sasrec_norm_enters_the_fingerprint_only_when_pre(tmp_path):
    from tfrec_tricks.training.resumption import fingerprint

    def model_part(**model):
        config = tiny_config(tmp_path, model=model)
        return fingerprint(config, 40, data=[])["model"]

    # SASRec runs from before the option trained post-norm blocks.
    assert "sasrec_norm" not in model_part(encoder="sasrec")
    assert "sasrec_norm" not in model_part(encoder="sasrec", sasrec_norm="post")
    assert (
        model_part(encoder="sasrec", sasrec_norm="pre")["sasrec_norm"] == "pre"
    )
    # GRU4Rec reads no SASRec block: the option changes nothing there.
    assert "sasrec_norm" not in model_part(sasrec_norm="pre")


def test_learning_rate_defaults_to_the_protocols_and_keeps_fingerprints(
    tmp_path,
):
    from tfrec_tricks.training.resumption import fingerprint

    # None: 1e-3 for prefix rows, 5e-3 for training windows; given wins.
    prefixes = run_helpers.tiny_config(tmp_path)
    assert prefixes.learning_rate is None
    assert prefixes.training_learning_rate() == 1e-3
    assert prefixes.model_config(40).learning_rate == 1e-3
    windows = run_helpers.tiny_config(tmp_path, train_windows=True)
    assert windows.training_learning_rate() == 5e-3
    assert windows.model_config(40).learning_rate == 5e-3
    given = run_helpers.tiny_config(
        tmp_path, train_windows=True, learning_rate=0.02
    )
    assert given.training_learning_rate() == 0.02
    # A run made with the old explicit 1e-3 default is the same run.
    explicit = run_helpers.tiny_config(tmp_path, learning_rate=1e-3)
    assert fingerprint(prefixes, 40, data=[]) == fingerprint(
        explicit, 40, data=[]
    )
    old_windows = run_helpers.tiny_config(
        tmp_path, train_windows=True, learning_rate=1e-3
    )
    assert fingerprint(windows, 40, data=[]) != fingerprint(
        old_windows, 40, data=[]
    )


def _record_head_dropout(run_dir, rate):
    """Rewrites ``run.json`` as a version that recorded ``rate`` would."""
    path = os.path.join(run_dir, run_directory.RUN_FILE)
    with open(path) as handle:
        run = json.load(handle)
    run["fingerprint"]["model"]["head_dropout"] = rate
    with open(path, "w") as handle:
        json.dump(run, handle)


@pytest.mark.slow
def test_a_run_recorded_with_the_effective_head_dropout_is_the_same_run(
    run_root,
):
    # Runs from before head_dropout defaulted to None recorded the
    # softmax's 0.0; the same command today records None: one model.
    config = tiny_config(run_root)
    assert config.model_config(40).head_dropout is None
    _record_head_dropout(run_root / "run", 0.0)
    assert finished_metrics(config) is not None
    before = snapshot(run_root)
    assert train(config, verbose=0).metrics == finished_metrics(config)
    assert snapshot(run_root) == before
    # Another rate is another model, refused as before.
    _record_head_dropout(run_root / "run", 0.3)
    assert finished_metrics(config) is None
    with pytest.raises(RunDirectoryError, match="head_dropout: 0.3 -> 0.0"):
        train(config, verbose=0)


def test_head_dropout_compares_at_its_effective_rate(tmp_path):
    from tfrec_tricks.training.resumption import (
        as_trained_fingerprint,
        fingerprint,
    )

    cpr = {"head": "cpr", "cpr_reranker_ks": (5,)}
    today = fingerprint(tiny_config(tmp_path, model=cpr), 40, data=[])
    assert today["model"]["head_dropout"] is None
    compared = as_trained_fingerprint(today)
    assert compared["model"]["head_dropout"] == 0.3
    assert today["model"]["head_dropout"] is None  # not modified

    def recorded(rate):
        model = {**today["model"], "head_dropout": rate}
        return as_trained_fingerprint({**today, "model": model})

    assert differences(recorded(0.3), compared) == []
    # A cpr run recorded at 0.0 trained without head dropout: not today's.
    assert differences(recorded(0.0), compared) == [
        "model.head_dropout: 0.0 -> 0.3"
    ]
    # A fingerprint without a model (damaged) is compared as it is.
    assert as_trained_fingerprint({"train": {}}) == {"train": {}}


def test_only_what_train_writes_is_a_run_directory(tmp_path):
    from tfrec_tricks.training.run_directory import is_run_directory

    run = tmp_path / "run"
    run_directory.start_run(str(run), {"train": {}}, {})
    staging = run / ".run.json.abcd1234.tmp"  # a killed write, marked
    staging.mkdir()
    ownership.mark_staging(str(staging), str(run / "run.json"))
    assert is_run_directory(str(run))
    # What the libraries' folders hold is the run's, whatever its name (a
    # crash leaves it unrecorded); anywhere else, a file is someone's.
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "ckpt-1_temp").mkdir()
    assert is_run_directory(str(run))
    (run / "photo.jpg").write_text("")
    assert not is_run_directory(str(run))
    # Names prove nothing: the same files without a record are no run.
    os.remove(run / ownership.RECORD_FILE)
    os.remove(run / "photo.jpg")
    assert not is_run_directory(str(run))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / ".git").mkdir()
    assert not is_run_directory(str(mine))


@pytest.mark.slow
def test_a_config_without_a_head_finds_the_run_its_auto_choice_made(run_root):
    # tiny_config names no head: train chose one (40 items: the softmax)
    # and recorded it; the same config finds the run before any loading.
    config = tiny_config(run_root)
    assert "head" not in config.model
    settings = json.loads((run_root / "run" / "config.json").read_text())
    assert settings["head_choice"]["head"] == "softmax"
    recorded = with_recorded_head(config, str(run_root / "run"))
    assert recorded.model == {**config.model, "head": "softmax"}
    assert finished_metrics(config) is not None


@pytest.mark.slow
def test_a_run_that_named_its_head_is_matched_to_auto_only_after_loading(
    tmp_path,
):
    named = tiny_config(tmp_path, model={"embedding_dim": 8, "head": "softmax"})
    metrics = train(named, verbose=0).metrics
    auto = tiny_config(tmp_path)  # no head: auto
    # Before loading, auto's choice is unknown: not taken for this run...
    assert with_recorded_head(auto, str(tmp_path / "run")) == auto
    assert finished_metrics(auto) is None
    # ...and after loading it is the softmax (40 items), the same run.
    before = snapshot(tmp_path)
    assert train(auto, verbose=0).metrics == metrics
    assert snapshot(tmp_path) == before


def test_train_metrics_enter_the_fingerprint_only_when_off(tmp_path):
    from tfrec_tricks.training.resumption import fingerprint

    def parts(**model):
        found = fingerprint(tiny_config(tmp_path, model=model), 40, data=[])
        return found["model"], found["train"]["model"]

    # Runs from before the option ranked their training batches.
    for model, overrides in (parts(), parts(train_metrics=True)):
        assert "train_metrics" not in model
        assert "train_metrics" not in overrides
    model, overrides = parts(train_metrics=False)
    assert model["train_metrics"] is False
    assert overrides["train_metrics"] is False
