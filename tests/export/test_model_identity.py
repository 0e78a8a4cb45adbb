"""A model's identity (``tfrec_tricks.export.model_identity``): a digest of
the model files ``run.json`` records, written into each exported version,
and the check that refuses an export of another model, naming both."""

import datetime
import hashlib
import json
import os

import pytest

from tests.run_helpers import snapshot
from tfrec_tricks.export.model_identity import (
    IDENTITY_FILE,
    RUN_MODEL_FOLDER,
    ModelIdentity,
    check_exported_model,
    read_identity,
    write_identity,
)
from tfrec_tricks.training.run_directory import MODEL_DIR


def run_record(weights="a", seed=0, metrics="m"):
    """A finished run's ``run.json`` of that weights file digest."""
    return {
        "format": 1,
        "status": "finished",
        "fingerprint": {"train": {"seed": seed}},
        "files": {
            "config.json": "c" * 64,
            "metrics.json": metrics * 64,
            "model/config.json": "b" * 64,
            "model/weights.index": weights * 64,
        },
    }


def test_the_run_model_folder_is_the_run_directorys():
    assert RUN_MODEL_FOLDER == MODEL_DIR


def test_the_digest_is_of_the_recorded_model_files_only(tmp_path):
    identity = ModelIdentity.of_run(str(tmp_path / "a"), run_record())
    lines = f"{'b' * 64}  model/config.json\n{'a' * 64}  model/weights.index\n"
    assert identity.sha256 == hashlib.sha256(lines.encode()).hexdigest()
    assert (identity.run_dir, identity.seed) == (str(tmp_path / "a"), 0)
    # Other weights: another model; another metrics.json or folder: not.
    other = ModelIdentity.of_run(str(tmp_path / "a"), run_record(weights="d"))
    assert other.sha256 != identity.sha256
    moved = ModelIdentity.of_run(
        str(tmp_path / "copy"), run_record(metrics="n")
    )
    assert moved.sha256 == identity.sha256


def test_the_time_is_when_the_weights_were_written(tmp_path, monkeypatch):
    (tmp_path / "model").mkdir()
    for name, when in (("config.json", 1_700_000_000), ("weights.index", 0)):
        path = tmp_path / "model" / name
        path.write_text("x")
        os.utime(path, (when, when))
    identity = ModelIdentity.of_run(str(tmp_path), run_record())
    trained = datetime.datetime.fromisoformat(identity.trained)
    assert trained.timestamp() == 1_700_000_000  # the newest file's
    assert trained.utcoffset() is not None
    shown = identity.trained[:19].replace("T", " ")
    assert identity.facts() == (
        f"seed 0, trained {shown}, weights {identity.sha256[:12]}"
    )
    # A relative run directory is recorded absolute.
    monkeypatch.chdir(tmp_path)
    assert ModelIdentity.of_run(".", run_record()).run_dir == str(tmp_path)


def test_a_run_without_recorded_model_files_has_no_identity():
    run = run_record()
    run["files"] = {"config.json": "c" * 64}
    with pytest.raises(ValueError, match="records no file of its model"):
        ModelIdentity.of_run("runs/a", run)


def test_the_record_reads_back(tmp_path):
    item_file = tmp_path / "new.item"
    item_file.write_text("item_id:token\nx\n")
    identity = ModelIdentity.of_run("runs/a", run_record(seed=4))
    added = identity.with_added_items(str(item_file), 1)
    for one in (identity, added):
        version = tmp_path / f"v{bool(one.added_items)}"
        path = write_identity(str(version), one.record())
        assert path == str(version / IDENTITY_FILE)
        assert read_identity(str(version)) == one
    assert added.sha256 == identity.sha256
    assert added.added_items == {
        "file": str(item_file),
        "sha256": hashlib.sha256(item_file.read_bytes()).hexdigest(),
        "items": 1,
    }
    assert added.describe().endswith(f"with the 1 items of {item_file} added")
    assert read_identity(str(tmp_path / "none")) is None


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("{", "is damaged"),
        ('{"format": 2, "model": {"sha256": "x"}}', "not a tfrec-tricks"),
        ('{"format": 1, "model": {"digest": "x"}}', "not a tfrec-tricks"),
        ("[1]", "not a tfrec-tricks model identity of format 1"),
        (
            '{"format": 1, "model": {"sha256": "x", "added_items": {}}}',
            "not a tfrec-tricks",
        ),
    ],
)
def test_a_damaged_record_is_refused(tmp_path, text, fragment):
    path = tmp_path / IDENTITY_FILE
    path.parent.mkdir()
    path.write_text(text)
    with pytest.raises(ValueError, match=fragment) as error:
        read_identity(str(tmp_path))
    assert str(path) in str(error.value)


def test_an_export_of_another_model_is_refused_naming_both(tmp_path):
    run_dir = str(tmp_path / "runs" / "a")
    old = ModelIdentity.of_run(run_dir, run_record(weights="a"))
    new = ModelIdentity.of_run(run_dir, run_record(weights="d", seed=1))
    version = str(tmp_path / "m" / "1")
    write_identity(version, old.record())
    check_exported_model(version, old)
    with pytest.raises(ValueError) as error:
        check_exported_model(version, new)
    assert str(error.value) == (
        f"The SavedModel {version!r} was exported from another model than "
        f"the run's ({run_dir}: seed 1, weights {new.sha256[:12]}); the run "
        f"was retrained since. Export the run again (tfrec-tricks export "
        f"{run_dir} --name NAME) and give the new version. Received: an "
        f"export of the model trained in {run_dir} (seed 0, weights "
        f"{old.sha256[:12]})"
    )
    # Another run's: the run it was exported from is named too.
    elsewhere = ModelIdentity.of_run(str(tmp_path / "b"), run_record("d"))
    with pytest.raises(ValueError, match="or use the run it was exported "):
        check_exported_model(version, elsewhere)


def test_an_export_without_a_record_is_refused(tmp_path):
    identity = ModelIdentity.of_run("runs/a", run_record())
    with pytest.raises(ValueError) as error:
        check_exported_model(str(tmp_path), identity)
    message = str(error.value)
    assert "does not say which model it was exported from" in message
    assert f"it has no {IDENTITY_FILE}: an older tfrec-tricks" in message
    assert identity.describe() in message
    assert "Export the run again (tfrec-tricks export" in message


@pytest.mark.slow
def test_export_records_the_identity_beside_the_warmup(trained_runs, tmp_path):
    import tensorflow as tf

    from tfrec_tricks.export import export_for_serving
    from tfrec_tricks.training.persistence import load_model
    from tfrec_tricks.training.run_directory import check_finished_run

    run_dir = trained_runs["softmax"]
    identity = ModelIdentity.of_run(run_dir, check_finished_run(run_dir))
    vocabulary = os.path.join(run_dir, "vocabulary.json")
    model = load_model(run_dir)
    path = export_for_serving(
        model, str(tmp_path / "m"), vocabulary, identity=identity
    )
    with open(os.path.join(path, IDENTITY_FILE)) as handle:
        assert json.load(handle) == identity.record()
    assert sorted(os.listdir(os.path.join(path, "assets.extra"))) == [
        "tf_serving_warmup_requests",
        "tfrec_tricks_model.json",
    ]
    # Plain TensorFlow loads it as before.
    assert "serving_default" in tf.saved_model.load(path).signatures
    # Anything but a ModelIdentity is refused before anything is written.
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="`identity` must be a Model"):
        export_for_serving(
            model, str(tmp_path / "m"), vocabulary, identity=identity.record()
        )
    assert snapshot(tmp_path) == before
