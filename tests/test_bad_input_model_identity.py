"""A model used is the model checked, through the real CLI: an export made
before its run was retrained, or one that does not say which model it
holds, is refused by ``recommend --engine beam --saved-model`` in a fresh
process, exit 1, naming both models, with no traceback and every file of
the workspace unchanged (SHA-256 and mode).

The sequence the issue names: ``train``, ``export`` (version 1), then
``train --overwrite`` with another learning rate: other weights, the same
catalogue and features, so before, version 1 was accepted and the old
model's lists written.
"""

import os
import shutil

import pytest

from tests.recommendation.recommend_helpers import (
    MAX_LEN,
    TINY_DATA,
    train_tiny_run,
)
from tests.run_helpers import Case, assert_refused
from tfrec_tricks import cli

pytestmark = pytest.mark.slow


def _identity(run_dir):
    from tfrec_tricks.export.model_identity import ModelIdentity
    from tfrec_tricks.training.run_directory import check_finished_run

    return ModelIdentity.of_run(run_dir, check_finished_run(run_dir))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """``runs/run`` retrained after ``served/tiny/1`` was exported;
    ``served/old/1``, that version as an older tfrec-tricks wrote it (no
    record of its model). Also the identities of the model exported and
    of the run's model now."""
    from tfrec_tricks.export.model_identity import (
        IDENTITY_FILE,
        check_exported_model,
    )
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    root = tmp_path_factory.mktemp("identity")
    run = train_tiny_run(root / "runs", "run")
    export = ["export", run, "--name", "tiny", "--base-path"]
    assert cli.main([*export, str(root / "served")]) == 0
    first = _identity(run)
    # The export of the run's model is accepted (recommend --saved-model
    # with it: tests/cli/test_recommend.py).
    check_exported_model(str(root / "served" / "tiny" / "1"), first)
    old = root / "served" / "old" / "1"
    shutil.copytree(root / "served" / "tiny" / "1", old)
    os.remove(old / IDENTITY_FILE)
    config = TrainConfig(
        **TINY_DATA,
        max_len=MAX_LEN,
        epochs=1,
        output_dir=str(root / "runs"),
        name="run",
        learning_rate=0.01,
        model={"embedding_dim": 8, "features": ("time_gap",)},
    )
    train(config, verbose=0, overwrite=True)
    return root, first, _identity(run)


def test_the_job_checks_the_export_against_the_runs_model_now(workspace):
    from tfrec_tricks.recommendation.beam_model_handler import (
        check_saved_model,
    )
    from tfrec_tricks.recommendation.job import (
        RecommendationJob,
        RecommendationOptions,
    )

    root, first, now = workspace
    assert first.sha256 != now.sha256
    assert first.run_dir == now.run_dir
    job = RecommendationJob(str(root / "runs" / "run"), RecommendationOptions())
    assert job.model_identity == now
    engine = job.engine
    with pytest.raises(ValueError, match="the run was retrained since"):
        check_saved_model(
            str(root / "served" / "tiny" / "1"),
            engine.items,
            engine.feature_names,
            job.k,
            job.model_identity,
        )


RECOMMEND = ["recommend", "runs/run", "--engine", "beam", "--output"]


def test_an_export_made_before_the_run_was_retrained_is_refused(workspace):
    root, first, now = workspace
    run = str(root / "runs" / "run")
    case = Case(
        "retrained",
        [*RECOMMEND, "recs.csv", "--saved-model", "served/tiny/1"],
        1,
        [
            "tfrec-tricks recommend: error: The SavedModel 'served/tiny/1' "
            f"was exported from another model than the run's ({run}: "
            f"{now.facts()}); the run was retrained since. Export the run "
            f"again (tfrec-tricks export {run} --name NAME) and give the new "
            f"version. Received: an export of {first.describe()}\n",
        ],
    )
    result = assert_refused(case, root)
    assert first.sha256[:12] in result.stderr and now.sha256[:12] in (
        result.stderr
    )
    assert not os.path.exists(root / "recs.csv")


def test_an_export_without_a_record_of_its_model_is_refused(workspace):
    root, _, now = workspace
    case = Case(
        "unrecorded",
        [*RECOMMEND, "recs.parquet", "--saved-model", "served/old/1"],
        1,
        [
            "The SavedModel 'served/old/1' does not say which model it was "
            "exported from (it has no assets.extra/tfrec_tricks_model.json: "
            "an older tfrec-tricks exported it",
            f"so it cannot be checked against the run's, {now.describe()}.",
            "Export the run again (tfrec-tricks export",
        ],
    )
    assert_refused(case, root)
    assert not os.path.exists(root / "recs.parquet")
