"""benchmarks.epoch_speed: epochs timed in turns across the models."""

import io
import json
import sys

import numpy as np
import pytest

from benchmarks import epoch_speed, recbole_worker
from tfrec_tricks.data import Interactions, load_source, prepare

# Enough synthetic data for these checks, in milliseconds rather than seconds.
SMALL = {"num_users": 50, "num_items": 60}


class FakeModel:
    """Each ``fit`` advances a shared clock by its next duration."""

    def __init__(self, name, durations, clock, calls):
        self.name, self.durations = name, list(durations)
        self.clock, self.calls = clock, calls

    def fit(self, dataset, epochs, verbose):
        assert epochs == 1 and verbose == 0
        self.calls.append(self.name)
        self.clock[0] += self.durations.pop(0)


def test_models_take_turns_and_the_first_epoch_is_not_timed(monkeypatch):
    clock, calls = [0.0], []
    monkeypatch.setattr(epoch_speed.time, "perf_counter", lambda: clock[0])
    jobs = {
        "a": epoch_speed.keras_epoch(
            FakeModel("a", [100, 1, 5, 2], clock, calls), None
        ),
        "b": epoch_speed.keras_epoch(
            FakeModel("b", [100, 7, 3, 9], clock, calls), None
        ),
    }
    seconds = epoch_speed.interleaved_epoch_seconds(jobs, epochs=4)
    assert calls == ["a", "b"] * 4
    assert seconds == {"a": 2, "b": 7}  # medians of (1, 5, 2), (7, 3, 9)


def test_a_job_reports_its_own_seconds():
    # RecBole's jobs return the worker's own epoch time, not the wall
    # time of the call.
    reported = iter([50.0, 3.0, 1.0, 2.0])
    seconds = epoch_speed.interleaved_epoch_seconds(
        {"recbole": lambda: next(reported)}, epochs=4
    )
    assert seconds == {"recbole": 2.0}


def test_one_epoch_is_rejected():
    with pytest.raises(ValueError, match="Received: epochs=1"):
        epoch_speed.interleaved_epoch_seconds({}, epochs=1)
    with pytest.raises(SystemExit) as raised:
        epoch_speed.main(["--epochs", "1"])
    assert raised.value.code == 2


def test_models_have_recboles_layers():
    # RecBole's defaults (GRU4Rec 1 layer, SASRec 2), which its measured
    # seconds are for; runs A-F of the README timed a 1-layer SASRec.
    source = load_source("synthetic", synthetic_options=SMALL)
    data = prepare(source.interactions)
    head = epoch_speed.HEADS["Softmax"]
    for encoder, layers in (("gru4rec", 1), ("sasrec", 2)):
        model = epoch_speed.ours(data, encoder, head, 1)
        assert model.config.num_layers == layers
        assert model.config.encoder == encoder


def test_recbole_atomic_file(tmp_path):
    interactions = Interactions(
        users=np.array(["s1", "s1", "s2"]),
        items=np.array(["10", "11", "10"]),
        timestamps=np.array([1396437466.94, 1396438212.318, 5.0]),
    )
    epoch_speed.write_recbole_atomic_file(interactions, str(tmp_path), "yc")
    lines = (tmp_path / "yc" / "yc.inter").read_text().splitlines()
    assert lines == [
        "session_id:token\titem_id:token\ttimestamp:float",
        "s1\t10\t1396437466.94",
        "s1\t11\t1396438212.318",
        "s2\t10\t5.0",
    ]


def test_recbole_atomic_file_needs_timestamps(tmp_path):
    interactions = Interactions(
        users=np.array(["u"]), items=np.array(["i"]), source="ratings.txt"
    )
    with pytest.raises(ValueError, match="'ratings.txt' has no timestamps"):
        epoch_speed.write_recbole_atomic_file(interactions, str(tmp_path), "x")


# Stands in for RecBole's interpreter: argv is (this file, worker,
# data_dir, dataset, models...); answers as recbole_worker.py does.
FAKE_RECBOLE = """
import json, os, sys
_, _, data_dir, dataset, *models = sys.argv
assert os.path.exists(os.path.join(data_dir, dataset, dataset + ".inter"))
if models == ["Broken"]:
    print(json.dumps({"error": "Traceback: no module named recbole"}))
    sys.exit(1)
if models == ["Crash"]:
    sys.stderr.write("Segmentation fault in torch")
    sys.exit(139)
print(json.dumps({"ready": {name: 42 for name in models}}), flush=True)
for epoch, line in enumerate(sys.stdin):
    reply = {"model": line.strip(), "seconds": 30.0 + epoch, "loss": 1.0}
    print(json.dumps(reply), flush=True)
"""


@pytest.fixture
def fake_recbole_python(fake_interpreter):
    return fake_interpreter(FAKE_RECBOLE)


def test_recbole_worker_protocol(fake_recbole_python, tmp_path):
    source = load_source("synthetic", synthetic_options=SMALL)
    worker = epoch_speed.RecBoleWorker(
        fake_recbole_python,
        source.interactions,
        ["GRU4Rec", "SASRecCPR"],
        str(tmp_path / "work"),
    )
    assert worker.examples == {"GRU4Rec": 42, "SASRecCPR": 42}
    assert worker.job("GRU4Rec")() == 30.0
    assert worker.job("SASRecCPR")() == 31.0
    worker.close()
    assert worker.process.returncode == 0


def test_recbole_worker_error_is_raised(fake_recbole_python, tmp_path):
    source = load_source("synthetic", synthetic_options=SMALL)
    with pytest.raises(RuntimeError, match="no module named recbole"):
        epoch_speed.RecBoleWorker(
            fake_recbole_python,
            source.interactions,
            ["Broken"],
            str(tmp_path / "work"),
        )


def test_recbole_worker_crash_shows_its_log(fake_recbole_python, tmp_path):
    source = load_source("synthetic", synthetic_options=SMALL)
    with pytest.raises(RuntimeError) as raised:
        epoch_speed.RecBoleWorker(
            fake_recbole_python,
            source.interactions,
            ["Crash"],
            str(tmp_path / "work"),
        )
    assert "exit code 139" in str(raised.value)
    assert "Segmentation fault in torch" in str(raised.value)


def test_bad_recbole_python_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as raised:
        epoch_speed.main(["--recbole-python", str(tmp_path / "nope")])
    assert raised.value.code == 2
    assert "--recbole-python: not an executable file" in (
        capsys.readouterr().err
    )


def test_the_recbole_worker_answers_each_model(monkeypatch, capsys):
    # recbole_worker.py's protocol, with RecBole's models stood in for.
    epochs_seen = []

    class Trainer:
        def _train_epoch(self, train_data, epoch_idx):
            epochs_seen.append(epoch_idx)
            return 12.5

    class TrainData:
        dataset = [0] * 7  # RecBole's training examples

    monkeypatch.setattr(
        recbole_worker, "build", lambda name, settings: (Trainer(), TrainData())
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO("A\nB\nA\n"))
    assert recbole_worker.main(["data", "yc", "A", "B"]) == 0
    replies = [
        json.loads(line) for line in capsys.readouterr().out.splitlines()
    ]
    assert replies[0] == {"ready": {"A": 7, "B": 7}}
    assert [r["model"] for r in replies[1:]] == ["A", "B", "A"]
    assert all(r["loss"] == 12.5 for r in replies[1:])
    assert epochs_seen == [0, 0, 1]
    monkeypatch.setattr(sys, "stdin", io.StringIO("C\n"))
    assert recbole_worker.main(["data", "yc", "A"]) == 2
    assert "unknown model 'C'" in capsys.readouterr().out
