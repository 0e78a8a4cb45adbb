"""benchmarks.recbole_reference: RecBole's models as the peer."""

import json
import sys

import pytest

from benchmarks import recbole_reference, recbole_worker

# Stands in for RecBole's interpreter running recbole_worker.py --fit:
# argv is (this file, worker, --fit, epochs, data_dir, dataset, model).
FAKE_RECBOLE = """
import json, os, sys
_, _, flag, epochs, data_dir, dataset, model = sys.argv
assert flag == "--fit" and epochs == "3"
assert os.path.exists(os.path.join(data_dir, dataset, dataset + ".inter"))
if model == "Broken":
    sys.stderr.write("CUDA driver missing")
    print(json.dumps({"error": "Traceback: RuntimeError"}))
    sys.exit(1)
score = {"GRU4Rec": 0.41, "GRU4RecCPR": 0.39}[model]
metrics = {"ndcg@10": score, "hit@10": 0.6, "mrr@10": 0.35}
print(json.dumps({"model": model, "best_valid": metrics, "test": metrics}))
"""


@pytest.fixture
def fake_recbole_python(fake_interpreter):
    return fake_interpreter(FAKE_RECBOLE)


SYNTHETIC = ["--data", "synthetic", "--epochs", "3"]


def test_table_of_each_models_metrics(fake_recbole_python, tmp_path):
    args = [*SYNTHETIC, "--recbole-python", fake_recbole_python]
    assert (
        recbole_reference.main(
            [*args, "--models", "GRU4Rec", "GRU4RecCPR"]
            + ["--report-dir", str(tmp_path)]
        )
        == 0
    )
    report = (tmp_path / "recbole_reference-synthetic.md").read_text()
    assert "| GRU4Rec | 0.4100 | 0.4100 | 0.6000 | 0.3500 |" in report
    assert "| GRU4RecCPR | 0.3900 | 0.3900 | 0.6000 | 0.3500 |" in report
    assert "at most 3 epochs" in report


def test_a_failed_model_names_itself_and_its_log(fake_recbole_python, tmp_path):
    with pytest.raises(RuntimeError) as raised:
        recbole_reference.main(
            [*SYNTHETIC, "--recbole-python", fake_recbole_python]
            + ["--models", "Broken", "--report-dir", str(tmp_path)]
        )
    message = str(raised.value)
    assert "RecBole's Broken failed (exit code 1)" in message
    assert "Traceback: RuntimeError" in message
    assert "CUDA driver missing" in message


@pytest.mark.parametrize(
    "args, message",
    [
        (["--recbole-python", "/no/such/python"], "not an executable file"),
        (["--recbole-python", sys.executable, "--epochs", "0"], "Received: 0"),
    ],
)
def test_bad_arguments_are_usage_errors(args, message, capsys):
    with pytest.raises(SystemExit) as raised:
        recbole_reference.main(args)
    assert raised.value.code == 2
    assert message in capsys.readouterr().err


def test_worker_fit_mode_checks_its_arguments(capsys):
    assert recbole_worker.main(["--fit", "25", "data"]) == 2
    reply = json.loads(capsys.readouterr().out)
    assert reply["error"].startswith("usage: --fit EPOCHS")
