"""Old work keeps its identity: runs, a search, a prepared dataset and an
export written by an earlier version are reused, resumed or accepted by
this one, never refused.

``workspace/`` holds one artifact of every kind, as ``make_golden.py``
wrote them (its docstring lists them and says when to write them again:
never, except on purpose), and ``golden.json`` the identities the code
computed of each. Each test works on a copy of the workspace (one per
module), with the run fingerprints' data paths moved to it: they are
recorded resolved, so where the data lies is part of a run's identity.

(a) Identities, recomputed by the current code for the same command:
each run's fingerprint (what ``train`` compares with ``run.json``) and
model identity, the search's fingerprint (what ``tune`` compares with
``search.json``), the prepared dataset's metadata and preparation
options, the export's model identity and ``models.config``. A change
fails naming the artifact and each field (``model.x: <unset> -> 3``).

(b) Reuse, through the real path: ``tfrec-tricks train`` with the same
options reuses each finished run (nothing written, its model scoring as
when it was trained) and resumes the interrupted one; ``tune`` resumes
the search (no trial run, its retrained runs reused); ``train
--prepared`` loads the prepared dataset; ``recommend --saved-model``'s
check accepts the export.
"""

import csv
import io
import json
import os
import pathlib
import shutil
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

from tests.golden.make_golden import probe_logits
from tests.run_helpers import parsed_train_config, run_in_process, snapshot

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = json.loads((HERE / "golden.json").read_text(encoding="utf-8"))
FINISHED = [n for n, r in GOLDEN["runs"].items() if r["status"] == "finished"]
REUSED = "finished before with the same settings and data: reusing it"
# What to do when a golden test fails.
REMEDY = (
    "Work of this kind written before this change would be refused or "
    "reread differently. Keep the identity (a new option goes into "
    "resumption.LATER_OPTIONS or MODEL_LATER_OPTIONS, or a head's "
    "HeadSpec.later_options, with the value that "
    "behaves as before), or, if the change is deliberate and the old "
    "artifacts are still reused, update golden.json: `python -m "
    "tests.golden.make_golden --identities` (docs/architecture.md"
    "#golden-identities)."
)


def moved(value, old: str, new: str):
    """``value`` (JSON) with the absolute paths under ``old`` moved under
    ``new``."""
    text = json.dumps(value).replace(old + "/", new + "/")
    return json.loads(text)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> pathlib.Path:
    """A copy of the golden workspace, its recorded data paths moved to
    it (in ``run.json`` and ``search.json``: the fingerprints)."""
    root = pathlib.Path(os.path.realpath(tmp_path_factory.mktemp("golden")))
    copy = root / "workspace"
    shutil.copytree(HERE / "workspace", copy)
    written = {GOLDEN["written_in"]}
    written |= {run["written_in"] for run in GOLDEN["runs"].values()}
    for path in [*copy.rglob("run.json"), *copy.rglob("search.json")]:
        text = path.read_text(encoding="utf-8")
        for old in written:
            text = text.replace(old + "/", f"{copy}/")
        path.write_text(text, encoding="utf-8")
    return copy


@pytest.fixture
def inside(workspace, monkeypatch) -> pathlib.Path:
    """The workspace copy as the working directory: the golden commands
    name their inputs relative to it (``--item-features`` is recorded as
    given)."""
    monkeypatch.chdir(workspace)
    return workspace


def golden(part, workspace):
    """``part`` of ``golden.json`` with its paths moved to ``workspace``."""
    return moved(part, GOLDEN["computed_in"], str(workspace))


def assert_same(artifact: str, what: str, expected, now) -> None:
    """``now`` equals the golden ``expected``; else fails naming the
    artifact and each differing field."""
    from tfrec_tricks.training.run_directory import differences

    changed = differences(expected, now)
    assert not changed, (
        f"{artifact}: its {what} is not the golden one. Differences "
        "(golden -> now):\n  " + "\n  ".join(changed) + "\n" + REMEDY
    )


def train_config(argv):
    """The ``TrainConfig`` ``tfrec-tricks train ARGV`` trains, in
    ``runs/``."""
    return parsed_train_config("train", *argv, "--output-dir", "runs")


# (a) Identities.


@pytest.mark.parametrize("name", list(GOLDEN["runs"]))
def test_a_runs_fingerprint_and_model_are_the_golden_ones(inside, name):
    from tfrec_tricks.export.model_identity import ModelIdentity
    from tfrec_tricks.training.prepare_dataset import resolved_config
    from tfrec_tricks.training.resumption import (
        fingerprint,
        with_recorded_head,
    )
    from tfrec_tricks.training.run_directory import check_finished_run

    expected = golden(GOLDEN["runs"][name], inside)
    run_dir = os.path.join("runs", name)
    config = resolved_config(train_config(expected["argv"]))
    config = with_recorded_head(config, run_dir)
    num_items = expected["fingerprint"]["model"]["num_items"]
    now = fingerprint(config, num_items)
    assert_same(f"runs/{name}", "fingerprint", expected["fingerprint"], now)
    if expected["status"] == "finished":
        identity = ModelIdentity.of_run(run_dir, check_finished_run(run_dir))
        assert identity.sha256 == expected["model_sha256"], (
            f"runs/{name}: its model's identity (ModelIdentity.sha256) is "
            f"not the golden one: {expected['model_sha256']} -> "
            f"{identity.sha256}. Its exports would be refused. {REMEDY}"
        )


def test_the_prepared_datasets_metadata_is_read_as_golden(inside):
    from tfrec_tricks.data.prepared.format import check_files, read_metadata
    from tfrec_tricks.training.prepare_dataset import preparation_options

    expected = GOLDEN["prepared"]
    folder = "prepared/synthetic"
    metadata = read_metadata(folder)
    assert_same(folder, "metadata.json", expected["metadata"], metadata)
    check_files(folder, metadata)  # every file as listed, no other
    # The same `prepare` command records the same options, which `train
    # --prepared` checks its data flags against.
    argv = [a for a in expected["argv"] if a != "--output" and a != folder]
    options = preparation_options(parsed_train_config("train", *argv))
    assert_same(folder, "preparation options", metadata["options"], options)


def test_the_exports_identity_and_models_config_are_golden(inside):
    from tfrec_tricks.export.model_identity import (
        ModelIdentity,
        read_identity,
    )
    from tfrec_tricks.export.models_config import (
        read_models_config,
        update_models_config,
    )
    from tfrec_tricks.training.run_directory import check_finished_run

    expected = GOLDEN["export"]
    version = expected["version"]
    exported = read_identity(version)
    assert (exported.sha256, exported.seed) == (
        expected["sha256"],
        expected["seed"],
    ), f"{version}: the identity it records reads as {exported}"
    record = check_finished_run("runs/softmax")
    run = ModelIdentity.of_run("runs/softmax", record)
    assert run.sha256 == expected["run"], (
        f"runs/softmax, exported as {version}: its model's identity "
        f"{expected['run']} -> {run.sha256}. {REMEDY}"
    )
    path = "served/models.config"
    text = pathlib.Path(path).read_text(encoding="utf-8")
    assert text == expected["models_config"]
    entries = read_models_config(path).model_config_list.config
    assert [(e.name, e.base_path) for e in entries] == [
        ("softmax", "/models/softmax")
    ]
    # A later export of the same model keeps the file as it is.
    update_models_config(path, "softmax", "/models/softmax")
    assert pathlib.Path(path).read_text(encoding="utf-8") == text


# (b) Reuse, through the real path.


@pytest.fixture(scope="module")
def resumed_search(workspace):
    """``tfrec-tricks tune`` of the golden search again, in this process:
    its exit code and output, the fingerprint it computed (what
    ``open_search`` compared with ``search.json``), and the search folder
    before and after."""
    import tfrec_tricks.tuning.search as search
    from tfrec_tricks import cli

    computed = []
    open_search = search.open_search

    def recording(search_dir, fingerprint, *args, **kwargs):
        computed.append(fingerprint)
        return open_search(search_dir, fingerprint, *args, **kwargs)

    folder = workspace / "searches" / "random"
    before = snapshot(folder)
    argv = ["tune", *GOLDEN["search"]["argv"], "--output-dir", "searches"]
    # A module fixture has no capsys: the output is caught here.
    output = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(workspace)
        patch.setattr(search, "open_search", recording)
        with redirect_stdout(output), redirect_stderr(output):
            code = cli.main(argv)
    return code, output.getvalue(), computed, before, snapshot(folder)


@pytest.mark.slow
def test_the_searchs_fingerprint_is_the_golden_one(
    workspace, tmp_path, resumed_search
):
    from tfrec_tricks.errors import RunDirectoryError
    from tfrec_tricks.tuning.search_directory import (
        SEARCH_FILE,
        SEARCH_FORMAT,
        TOKEN_FEATURES_KEY,
        open_search,
    )

    _, output, computed, _, _ = resumed_search
    assert computed, f"tune compared no fingerprint:\n{output[-2000:]}"
    expected = golden(GOLDEN["search"]["fingerprint"], workspace)
    # Recorded once the data is read; the synthetic data has none.
    assert TOKEN_FEATURES_KEY not in expected
    # Compared as `tune` compares them: a search records every training
    # option, and one added since (resumption.LATER_OPTIONS) at the value
    # that behaves as before is no difference.
    document = {"format": SEARCH_FORMAT, "fingerprint": expected}
    (tmp_path / SEARCH_FILE).write_text(json.dumps(document))
    try:
        refusal, action = None, open_search(str(tmp_path), computed[0])
    except RunDirectoryError as error:
        refusal, action = error, None
    assert refusal is None, (
        "searches/random: its fingerprint is not the golden one, as tune "
        f"compares them:\n{refusal}\n{REMEDY}"
    )
    assert action == "resume"


@pytest.mark.slow
def test_the_same_tune_command_resumes_the_search(resumed_search):
    code, output, _, before, after = resumed_search
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    # Its trials are kept (none runs again), its retrained runs reused.
    assert "Reloading Tuner from searches/random/search" in output
    assert output.count(REUSED) == 2, output[-3000:]
    assert "2 trials (2 completed)" in output
    # KerasTuner's trials and the retrained runs are as they were; the
    # reports (best_config.json, trials.md, ...) may be written again.
    kept = ("search/", "selection/", ".tfrec-tricks-owned.json")
    changed = sorted(
        name
        for name in set(before) | set(after)
        if name.startswith(kept) and before.get(name) != after.get(name)
    )
    assert not changed, f"the resumed search changed {changed}"


@pytest.mark.slow
@pytest.mark.parametrize("name", FINISHED)
def test_the_same_train_command_reuses_a_finished_run(inside, capsys, name):
    from tfrec_tricks.training.persistence import load_model

    expected = GOLDEN["runs"][name]
    run_dir = inside / "runs" / name
    before = snapshot(run_dir)
    code, output = run_in_process(
        capsys, "train", *expected["argv"], "--output-dir", "runs"
    )
    assert code == 0, output[-3000:]
    assert f"runs/{name} {REUSED}" in output, output[-3000:]
    assert snapshot(run_dir) == before, f"runs/{name} changed"
    np.testing.assert_allclose(
        probe_logits(load_model(str(run_dir))),
        expected["logits"],
        rtol=1e-5,
        atol=1e-5,
        # load_model accepts a partial checkpoint: a weight whose
        # attribute was renamed loads nothing, and only the scores tell.
        err_msg=f"runs/{name}: its model scores other logits than trained "
        "(a weight no longer loaded?)",
    )


@pytest.mark.slow
def test_the_same_train_command_resumes_the_interrupted_run(
    workspace, tmp_path, capsys, monkeypatch
):
    # On a copy of its own: resuming finishes it.
    shutil.copytree(
        workspace / "runs" / "interrupted", tmp_path / "runs" / "interrupted"
    )
    monkeypatch.chdir(tmp_path)
    expected = GOLDEN["runs"]["interrupted"]
    code, output = run_in_process(
        capsys, "train", *expected["argv"], "--output-dir", "runs"
    )
    assert code == 0, output[-3000:]
    assert "Resuming the interrupted run from runs/interrupted/backup" in (
        output
    ), output[-3000:]
    run = json.loads((tmp_path / "runs/interrupted/run.json").read_text())
    assert run["status"] == "finished"
    with open(tmp_path / "runs/interrupted/history.csv") as handle:
        epochs = [int(row["epoch"]) for row in csv.DictReader(handle)]
    assert epochs == [0, 1]  # the first epoch kept, only the second run


@pytest.mark.slow
def test_train_prepared_loads_the_prepared_dataset(inside):
    from tfrec_tricks.training.prepare_dataset import resolved_config
    from tfrec_tricks.training.training_data import load_training_data

    expected = GOLDEN["runs"]["prepared"]
    config = resolved_config(train_config(expected["argv"]))
    # What `train --prepared` reads: every file checked against
    # metadata.json (SHA-256 too), the shards parsed.
    data = load_training_data(config)
    assert data.num_items == expected["fingerprint"]["model"]["num_items"]
    assert config.synthetic_users == 40  # the dataset's options apply


@pytest.mark.slow
def test_recommend_accepts_the_export(inside):
    from tfrec_tricks.recommendation.beam_model_handler import (
        check_saved_model,
    )
    from tfrec_tricks.recommendation.job import (
        RecommendationJob,
        RecommendationOptions,
    )

    # What `recommend runs/softmax --engine beam --saved-model
    # served/softmax/1` checks before its pipeline runs.
    job = RecommendationJob("runs/softmax", RecommendationOptions())
    engine = job.engine
    check_saved_model(
        GOLDEN["export"]["version"],
        engine.items,
        engine.feature_names,
        job.k,
        job.model_identity,
    )
