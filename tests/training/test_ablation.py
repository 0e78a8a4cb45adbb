"""The ablation command: rows, dropout selection on validation, report."""

import dataclasses
import json
import subprocess
import sys

import pytest

from tfrec_tricks.training import ablation
from tfrec_tricks.training.ablation import ROWS, run_ablation
from tfrec_tricks.training.train_config import TrainConfig

pytestmark = pytest.mark.slow


def test_dropout_is_selected_on_validation(
    tmp_path, monkeypatch, tiny_ablation_base
):
    base = tiny_ablation_base
    (row,) = run_ablation(base, ["Softmax"], dropouts=(0.0, 0.5))
    validation = {}
    for dropout in (0.0, 0.5):
        metrics = json.loads(
            (
                tmp_path / f"abl-softmax-dropout{dropout}" / "metrics.json"
            ).read_text()
        )
        validation[dropout] = metrics["validation"]["ndcg@10"]
    assert row.dropout == max(validation, key=validation.get)
    assert set(row.test_by_target) == {"repeat", "new", "cold"}
    table = ablation.format_table([row])
    assert "NDCG@10 repeat / new targets" in table
    repeat, new = (row.test_by_target[k]["ndcg@10"] for k in ("repeat", "new"))
    assert f"{repeat:.4f} / {new:.4f}" in table
    assert row.validation["ndcg@10"] == max(validation.values())

    # A rerun reuses the finished runs: nothing is trained again...
    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr(ablation, "train", no_training)
    (again,) = run_ablation(base, ["Softmax"], dropouts=(0.0, 0.5))
    assert again == row
    # ...unless the configuration differs,
    with pytest.raises(AssertionError, match="trained again"):
        run_ablation(
            dataclasses.replace(base, epochs=2), ["Softmax"], dropouts=(0.0,)
        )
    # or a model default changed since the run (its resolved config in
    # the run's fingerprint no longer matches).
    path = tmp_path / "abl-softmax-dropout0.0" / "run.json"
    saved = json.loads(path.read_text())
    saved["fingerprint"]["model"]["cpr_start_as_softmax"] = False
    path.write_text(json.dumps(saved))
    with pytest.raises(AssertionError, match="trained again"):
        run_ablation(base, ["Softmax"], dropouts=(0.0,))


def test_a_row_resumed_after_its_training_ended_has_no_speed():
    # A run killed after its training ended is finished by its next
    # process, which trains no epoch: no time per epoch (None), which
    # the table shows as n/a. Before: a TypeError ended the ablation.
    metrics = {"ndcg@10": 0.5, "hr@10": 0.6, "mrr@10": 0.4}
    row = ablation.AblationRow(
        "Softmax", {}, 0.2, metrics, metrics, 981, None, 3
    )
    assert "| 981 | n/a | 3 |" in ablation.format_table([row])


@pytest.mark.parametrize("name", list(ROWS))
def test_every_row_is_a_valid_model_config(name):
    from tfrec_tricks.models import ModelConfig

    config = ModelConfig(num_items=600, **ROWS[name])
    for field, value in ROWS[name].items():
        assert getattr(config, field) == value


def test_unknown_row_is_rejected():
    with pytest.raises(ValueError, match="Unknown ablation rows"):
        run_ablation(TrainConfig(), ["Softmax + Q"])


def test_ablation_command_writes_table_and_chart(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfrec_tricks.cli",
            "ablation",
            "--synthetic-users",
            "80",
            "--synthetic-items",
            "150",
            "--epochs",
            "1",
            "--max-len",
            "10",
            "--embedding-dim",
            "8",
            "--rows",
            "Softmax",
            "Softmax + CPR:100 + Mi",
            "--dropouts",
            "0.1",
            "--output-dir",
            str(tmp_path),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = tmp_path / "synthetic-ablation"
    table = (report / "ablation.md").read_text()
    assert "| Softmax | 0.1 |" in table
    assert "| Softmax + CPR:100 + Mi | 0.1 |" in table
    assert (report / "ablation.png").stat().st_size > 1000
    rows = json.loads((report / "ablation.json").read_text())
    assert [r["name"] for r in rows] == ["Softmax", "Softmax + CPR:100 + Mi"]
    assert rows[1]["overrides"] == json.loads(
        json.dumps(ROWS["Softmax + CPR:100 + Mi"])
    )
