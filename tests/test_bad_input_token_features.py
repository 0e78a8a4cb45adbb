"""Categorical per-interaction features (``token`` columns of a RecBole
``.inter`` file) through the CLI: refused and named, or counted. The
refusals and ``prepare`` run ``cli.main`` in this process
(``run_cli_here``), the trainings as ``tfrec-tricks`` processes.

Refused (exit 1, no traceback, nothing written): a ``--features`` name the
data does not have (the message lists the token features, marked
``(token)``). Not refused: ``prepare`` with ``--features`` selecting a
token column (prepared datasets carry every token column), and
``recommend`` of a run that reads one (it sends the raw values). Counted, not
refused: an empty value is no value (id 0: masked like padding), which
lowers the feature's coverage; a value seen only in held-out interactions
is out-of-vocabulary. The unit tests are tests/data/test_interaction_tokens.py
and tests/training/test_feature_selection.py.
"""

import json
import os

import pytest

from tests.run_helpers import (
    TINY_FLAGS,
    assert_clean_error,
    run_cli,
    run_cli_here,
    snapshot,
    write_token_interactions,
)


def _train(tmp_path, *flags, run=run_cli):
    path = write_token_interactions(tmp_path / "shop.inter", empty=True)
    return run(
        "train",
        "--data",
        "file",
        "--data-path",
        path,
        *TINY_FLAGS[4:],  # --max-len, --embedding-dim
        "--epochs",
        "1",
        "--output-dir",
        str(tmp_path / "runs"),
        "--name",
        "run",
        *flags,
    )


def test_an_unknown_feature_name_is_refused_with_the_token_features(tmp_path):
    before = snapshot(tmp_path)
    result = _train(tmp_path, "--features", "devize", run=run_cli_here)
    assert_clean_error(
        result,
        "--features names 'devize', which the data does not have",
        "time_gap, channel (token), device (token)",
    )
    assert not (tmp_path / "runs").exists()
    assert snapshot(tmp_path).keys() - before.keys() == {"shop.inter"}


def test_prepare_refuses_an_unknown_feature_name_with_the_token_features(
    tmp_path,
):
    path = write_token_interactions(tmp_path / "shop.inter")
    output = tmp_path / "prepared"
    result = run_cli_here(
        "prepare",
        "--data",
        "file",
        "--data-path",
        path,
        "--features",
        "devize",
        "--output",
        str(output),
    )
    # As train's message: the token features marked.
    assert_clean_error(
        result,
        "--features names 'devize', which the data does not have",
        "time_gap, channel (token), device (token)",
    )
    assert not output.exists()


@pytest.mark.slow
def test_prepare_carries_the_token_features_it_is_asked_for(tmp_path):
    path = write_token_interactions(tmp_path / "shop.inter")
    for features in (["device"], ["all"]):
        output = tmp_path / f"prepared-{features[0]}"
        result = run_cli_here(
            "prepare",
            "--data",
            "file",
            "--data-path",
            path,
            "--features",
            *features,
            "--output",
            str(output),
        )
        assert result.returncode == 0, result.stderr[-3000:]
        # Every token column, whichever --features names.
        assert "token features: ['channel', 'device']" in result.stdout
        with open(output / "metadata.json") as handle:
            metadata = json.load(handle)
        assert metadata["token_feature_names"] == ["channel", "device"]
        assert (output / "interaction_tokens.json").is_file()


@pytest.mark.slow
def test_an_empty_value_is_no_value_and_counted(tmp_path):
    result = _train(tmp_path, "--features", "device")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "Interaction feature device: token, 5 ids (padding and OOV "
        "included), 87.5% of interactions have a value" in result.stdout
    )
    run = tmp_path / "runs" / "run"
    with open(run / "metrics.json") as handle:
        rows = json.load(handle)["interaction_features"]
    assert rows[0]["coverage"] == pytest.approx(84 / 96)
    with open(run / "interaction_features.json") as handle:
        saved = json.load(handle)
    # "" is not a value, and kiosk (test positions only) is OOV.
    assert saved[0]["vocabulary"] == ["web", "app", "tv"]
    assert os.path.isdir(run / "model")
    # Offline recommendations send each history's raw values (the empty
    # ones as no value): every user gets a list.
    result = run_cli(
        "recommend", str(run), "--k", "3", "--output", str(tmp_path / "r.csv")
    )
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "r.csv") as handle:
        lines = handle.read().splitlines()
    assert lines[0] == "user_id,rank,item_id,score"
    assert len(lines) == 1 + 12 * 3
    # New users' histories without the device column are refused, the
    # message naming that column (not time_gap's: the times are there).
    new = tmp_path / "new.inter"
    new.write_text("user_id:token\titem_id:token\ttimestamp:float\nn\ti1\t5\n")
    before = snapshot(tmp_path)
    result = run_cli(
        "recommend", str(run), "--histories", str(new),
        "--output", str(tmp_path / "new.csv"),
    )  # fmt: skip
    assert_clean_error(
        result,
        "The model reads the per-interaction features ['device']; "
        f"{new} has no ['device'] (device needs a column of its raw values "
        "(a categorical feature: device:token in a RecBole .inter file); "
        "its columns are user_id, item_id, timestamp)",
    )
    assert snapshot(tmp_path) == before
