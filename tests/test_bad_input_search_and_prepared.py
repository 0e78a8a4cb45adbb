"""Bad input through the real CLI: searches and prepared datasets.

A search folder holds one search (``search.json``: its fingerprint), and a
prepared dataset is exactly what ``metadata.json`` lists. Each case runs
``tfrec-tricks`` in this process (``run_cli_here``: the process boundary is
not what is tested) and asserts the exit code, the message, no traceback,
and that no file or folder of the workspace changed (SHA-256 and mode).
The search they refuse against, its resumption and its overwrite run as
``tfrec-tricks`` processes. docs/run-directories.md ("Bad input") lists
the same cases.
"""

import json
import os
import shutil

import pytest

from tests.run_helpers import (
    TINY_FLAGS,
    Case,
    assert_refused,
    run_cli,
    run_cli_here,
)

pytestmark = pytest.mark.slow

# Two one-epoch random trials, no retraining: the tiniest real search.
SEARCH = [
    "tune",
    *TINY_FLAGS,
    "--encoder",
    "gru4rec",
    "--head",
    "softmax",
    "--tuner",
    "random",
    "--max-trials",
    "2",
    "--epochs",
    "1",
    "--retrain-top",
    "0",
    "--output-dir",
    "tuning",
    "--quiet",
]
CHOICES = ["--choices", "dropout=0.1,0.2"]
SEARCH_DIR = os.path.join("tuning", "synthetic")
REFUSED = "holds a search with another space, data or budget"


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    """A workspace whose ``tuning/synthetic`` holds a finished search."""
    root = tmp_path_factory.mktemp("searched")
    result = run_cli(*SEARCH, *CHOICES, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    return root


def _workspace(searched, tmp_path):
    shutil.copytree(searched / "tuning", tmp_path / "tuning")


def _search_file(workspace):
    return json.loads((workspace / SEARCH_DIR / "search.json").read_text())


def _trial_files(workspace):
    """{trial folder: trial.json text} of the search's KerasTuner project."""
    project = workspace / SEARCH_DIR / "search"
    return {
        path.parent.name: path.read_text()
        for path in project.glob("trial_*/trial.json")
    }


def _without_search_file(workspace):
    (workspace / SEARCH_DIR / "search.json").unlink()


def _foreign_folder(workspace):
    (workspace / "tuning" / "notes").mkdir()
    (workspace / "tuning" / "notes" / "todo.txt").write_text("mine\n")


def _prepared(change=None):
    def setup(workspace):
        from tfrec_tricks.training.prepare_dataset import prepare_dataset
        from tfrec_tricks.training.train_config import TrainConfig

        config = TrainConfig(synthetic_users=60, synthetic_items=40, max_len=10)
        path = workspace / "prepared"
        prepare_dataset(config, str(path), num_shards=2, verbose=False)
        # Synthetic data has an item graph (SSE-Graph uses it).
        assert (path / "item_graph.json").is_file()
        if change:
            change(path)

    return setup


def _swap_vocabulary_items(path):
    file = path / "vocabulary.json"
    vocabulary = json.loads(file.read_text())
    vocabulary["items"][1:3] = vocabulary["items"][2:0:-1]
    file.write_text(json.dumps(vocabulary))


def _remove_item_graph(path):
    (path / "item_graph.json").unlink()


def _extra_file(path):
    (path / "notes.txt").write_text("added after preparation\n")


def _change_statistics(path):
    # Same size, other numbers: only the SHA-256 tells.
    file = path / "statistics.json"
    text = file.read_text()
    digit = next(c for c in text if c in "123456789")
    swapped = text.replace(digit, "1" if digit != "1" else "2", 1)
    assert len(swapped) == len(text) and swapped != text
    file.write_text(swapped)


def _older_format(path):
    file = path / "metadata.json"
    metadata = json.loads(file.read_text())
    metadata["format_version"] = 1
    del metadata["files"]
    file.write_text(json.dumps(metadata))


TRAIN_PREPARED = ["train", "--prepared", "prepared", "--epochs", "1"]

CASES = [
    # A search folder holds one search.
    Case(
        "tune-other-choices",
        [*SEARCH, "--choices", "dropout=0.1,0.3"],
        1,
        [REFUSED, "space.dropout.values.1: 0.2 -> 0.3", "--overwrite"],
    ),
    Case(
        "tune-other-setting-searched",
        [*SEARCH, *CHOICES, "--choices", "num_layers=1,2"],
        1,
        [REFUSED, 'space.num_layers: "<unset>" -> {'],
    ),
    Case(
        "tune-other-synthetic-size",
        [*SEARCH, *CHOICES, "--synthetic-users", "61"],
        1,
        [REFUSED, "train.synthetic_users: 60 -> 61"],
    ),
    Case(
        "tune-other-seed",
        [*SEARCH, *CHOICES, "--seed", "1"],
        1,
        [REFUSED, "train.seed: 0 -> 1"],
    ),
    Case(
        "tune-other-budget",
        [*SEARCH, *CHOICES, "--max-trials", "3", "--seeds", "2"],
        1,
        [REFUSED, "budget.max_trials: 2 -> 3", "budget.seeds: 1 -> 2"],
    ),
    Case(
        "tune-other-tuner",
        [*SEARCH, *CHOICES, "--tuner", "bayesian", "--max-trials", "4"],
        1,
        [REFUSED, 'budget.tuner: "random" -> "bayesian"'],
    ),
    Case(
        "tune-fixed-learning-rate",
        [*SEARCH, *CHOICES, "--learning-rate", "0.01"],
        1,
        [REFUSED, "fixed.learning_rate", "train.learning_rate"],
    ),
    Case(
        "tune-search-of-older-version",
        [*SEARCH, *CHOICES],
        1,
        ["no search.json", "--overwrite"],
        _without_search_file,
    ),
    Case(
        "tune-overwrite-foreign-folder",
        [*SEARCH, *CHOICES, "--name", "notes", "--overwrite"],
        1,
        ["holds files that are not a search folder", "never replaced"],
        _foreign_folder,
    ),
    # Non-finite values in the search space.
    Case(
        "tune-choices-inf",
        [*SEARCH, "--choices", "learning_rate=0.001,inf"],
        1,
        ["learning_rate must be a finite number", "learning_rate=inf"],
    ),
    Case(
        "tune-choices-above-float32",
        [*SEARCH, "--choices", "learning_rate=1e39,0.001"],
        1,
        ["learning_rate must be a finite number", "learning_rate=1e+39"],
    ),
    Case(
        "tune-choices-nan",
        [*SEARCH, "--choices", "dropout=nan,0.1"],
        1,
        ["dropout must be a finite number", "dropout=nan"],
    ),
    # A prepared dataset is what its metadata.json lists, every file.
    Case(
        "train-prepared-edited-vocabulary",
        TRAIN_PREPARED,
        1,
        ["vocabulary.json", "SHA-256 differs from metadata.json's"],
        _prepared(_swap_vocabulary_items),
    ),
    Case(
        "train-prepared-deleted-item-graph",
        TRAIN_PREPARED,
        1,
        ["item_graph.json listed in metadata.json is missing"],
        _prepared(_remove_item_graph),
    ),
    Case(
        "train-prepared-extra-file",
        TRAIN_PREPARED,
        1,
        ["files that metadata.json does not list: ['notes.txt']"],
        _prepared(_extra_file),
    ),
    Case(
        "train-prepared-changed-statistics",
        TRAIN_PREPARED,
        1,
        ["statistics.json", "SHA-256 differs from metadata.json's"],
        _prepared(_change_statistics),
    ),
    Case(
        "train-prepared-older-format",
        TRAIN_PREPARED,
        1,
        ["format version 1", "Prepare it again"],
        _prepared(_older_format),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_and_harms_nothing(case, searched, tmp_path):
    _workspace(searched, tmp_path)
    assert_refused(case, tmp_path, run=run_cli_here)


def test_same_search_resumes(searched, tmp_path):
    _workspace(searched, tmp_path)
    trials = _trial_files(tmp_path)
    best = (tmp_path / SEARCH_DIR / "best_config.json").read_bytes()
    result = run_cli(*SEARCH, *CHOICES, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Reloading Tuner" in result.stdout + result.stderr
    # Nothing trained again; the same search's best configuration.
    assert _trial_files(tmp_path) == trials and len(trials) == 2
    assert (tmp_path / SEARCH_DIR / "best_config.json").read_bytes() == best


def test_overwrite_starts_a_fresh_search(searched, tmp_path):
    _workspace(searched, tmp_path)
    old = _search_file(tmp_path)
    result = run_cli(
        *SEARCH, "--choices", "dropout=0.3,0.4", "--overwrite", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    document = _search_file(tmp_path)
    assert document["fingerprint_sha256"] != old["fingerprint_sha256"]
    space = document["fingerprint"]["space"]
    assert space["dropout"]["values"] == [0.3, 0.4]
    # Only the new search's trials, and its best configuration.
    trials = [json.loads(text) for text in _trial_files(tmp_path).values()]
    assert len(trials) == 2
    assert {t["hyperparameters"]["values"]["dropout"] for t in trials} <= {
        0.3,
        0.4,
    }
    best_path = tmp_path / SEARCH_DIR / "best_config.json"
    best = json.loads(best_path.read_text())
    assert best["model"]["dropout"] in (0.3, 0.4)
    from tfrec_tricks.atomic_files import file_sha256

    assert document["best_config_sha256"] == file_sha256(best_path)
    assert document["status"] == "finished"
