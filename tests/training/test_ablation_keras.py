"""``tfrec-tricks ablation`` under either Keras.

Runs under tf-keras (the default) and under Keras 3
(``TF_USE_LEGACY_KERAS=0``, in CI's Keras 3 job): the ablation's rows are
training runs (``training.run_keras``), so they train in the format of the
Keras in use, a rerun reuses them, and a row trained under the other Keras
is refused, naming both, rather than trained again over it.
"""

import json

import pytest

from tests.keras_env import KERAS3
from tests.run_helpers import TINY_FLAGS, run_in_process, snapshot
from tfrec_tricks.training import run_keras

pytestmark = pytest.mark.slow

THIS = "keras-3" if KERAS3 else "tf-keras"
OTHER = "tf-keras" if KERAS3 else "keras-3"
NAMES = {"tf-keras": "tf-keras (Keras 2)", "keras-3": "Keras 3"}
WEIGHTS = {
    "tf-keras": "model/weights.index",
    "keras-3": "model/weights.weights.h5",
}


def test_an_ablation_trains_its_rows_under_the_keras_in_use(tmp_path, capsys):
    args = ["ablation", *TINY_FLAGS, "--epochs", "1", "--rows", "Softmax"]
    args += ["--dropouts", "0.1", "--output-dir", tmp_path, "--quiet"]
    code, output = run_in_process(capsys, *args)
    assert code == 0, output[-3000:]
    report = tmp_path / "synthetic-ablation"
    (row,) = json.loads((report / "ablation.json").read_text())
    assert row["name"] == "Softmax" and row["dropout"] == 0.1
    assert "| Softmax | 0.1 |" in (report / "ablation.md").read_text()
    run_dir = tmp_path / "synthetic-softmax-dropout0.1"
    assert (run_dir / WEIGHTS[THIS]).is_file()
    run_file = run_dir / "run.json"
    run = json.loads(run_file.read_text())
    assert run_keras.recorded_keras(run["fingerprint"]) == THIS

    # Run again, the row is reused: its run is left as it was.
    before = snapshot(run_dir)
    code, output = run_in_process(capsys, *args)
    assert code == 0, output[-3000:]
    assert snapshot(run_dir) == before

    # The row's run as the other Keras records it (its fingerprint is what
    # the check reads; tests/training/test_run_keras.py makes a real one).
    fingerprint = {k: v for k, v in run["fingerprint"].items() if k != "keras"}
    if not KERAS3:
        fingerprint["keras"] = "keras-3"
    run_file.write_text(json.dumps({**run, "fingerprint": fingerprint}))
    before = snapshot(tmp_path)
    code, output = run_in_process(capsys, *args)
    assert code == 1
    assert f"holds a run trained under {NAMES[OTHER]}" in output
    assert f"this process uses {NAMES[THIS]}" in output
    assert snapshot(tmp_path) == before  # not trained over
