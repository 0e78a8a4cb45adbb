"""benchmarks/epoch_speed.py: epochs timed in turns across the models."""

import importlib.util
import pathlib

import pytest

from tfrec_tricks.data import load_source, prepare

SCRIPT = pathlib.Path(__file__).parents[1] / "benchmarks" / "epoch_speed.py"


@pytest.fixture(scope="module")
def epoch_speed():
    spec = importlib.util.spec_from_file_location("epoch_speed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeModel:
    """Each ``fit`` advances a shared clock by its next duration."""

    def __init__(self, name, durations, clock, calls):
        self.name, self.durations = name, list(durations)
        self.clock, self.calls = clock, calls

    def fit(self, dataset, epochs, verbose):
        assert epochs == 1 and verbose == 0
        self.calls.append(self.name)
        self.clock[0] += self.durations.pop(0)


def test_models_take_turns_and_the_first_epoch_is_not_timed(
    epoch_speed, monkeypatch
):
    clock, calls = [0.0], []
    monkeypatch.setattr(epoch_speed.time, "perf_counter", lambda: clock[0])
    jobs = {
        "a": (FakeModel("a", [100, 1, 5, 2], clock, calls), None),
        "b": (FakeModel("b", [100, 7, 3, 9], clock, calls), None),
    }
    seconds = epoch_speed.interleaved_epoch_seconds(jobs, epochs=4)
    assert calls == ["a", "b"] * 4
    assert seconds == {"a": 2, "b": 7}  # medians of (1, 5, 2), (7, 3, 9)


def test_one_epoch_is_rejected(epoch_speed):
    with pytest.raises(ValueError, match="Received: epochs=1"):
        epoch_speed.interleaved_epoch_seconds({}, epochs=1)
    with pytest.raises(SystemExit) as raised:
        epoch_speed.main(["--epochs", "1"])
    assert raised.value.code == 2


def test_models_have_recboles_layers(epoch_speed):
    # RecBole's defaults (GRU4Rec 1 layer, SASRec 2), which its measured
    # seconds are for; runs A-F of the README timed a 1-layer SASRec.
    source = load_source("synthetic", synthetic_options={"num_items": 60})
    data = prepare(source.interactions)
    head = epoch_speed.HEADS["Softmax"]
    for encoder, layers in (("gru4rec", 1), ("sasrec", 2)):
        model = epoch_speed.ours(data, encoder, head, 1)
        assert model.config.num_layers == layers
        assert model.config.encoder == encoder
