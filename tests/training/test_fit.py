"""training.fit: the inputs and protocols a run fits with."""

import json

import pytest

from tests.run_helpers import tiny_config
from tfrec_tricks.training.run_training import train

pytestmark = pytest.mark.slow


def test_training_without_bucketing_or_multi_step_calls(tmp_path):
    config = tiny_config(
        tmp_path, epochs=1, bucket_by_length=False, steps_per_execution=1
    )
    result = train(config, verbose=0)
    assert 0.0 <= result.metrics["test"]["ndcg@10"] <= 1.0
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["bucket_by_length"] is False
    assert saved["train"]["steps_per_execution"] == 1


def test_training_every_position_in_one_pass(tmp_path):
    config = tiny_config(
        tmp_path,
        epochs=2,
        every_position=True,
        model={"embedding_dim": 8, "encoder": "sasrec"},
    )
    result = train(config, verbose=0)
    assert result.history["loss"][-1] < result.history["loss"][0]
    assert 0.0 < result.metrics["test"]["ndcg@10"] <= 1.0
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["every_position"] is True


@pytest.mark.parametrize("encoder", ["gru4rec", "sasrec", "hstu"])
def test_training_windows_on_disk_and_in_memory(tmp_path, encoder):
    """--train-windows trains; the prepared path gives the same metrics."""
    from tfrec_tricks.training.prepare_dataset import prepare_dataset

    model = {"embedding_dim": 8, "encoder": encoder}
    memory = train(
        tiny_config(
            tmp_path, epochs=2, train_windows=True, window_stride=4, model=model
        ),
        verbose=0,
    )
    assert memory.history["loss"][-1] < memory.history["loss"][0]
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["train"]["train_windows"] is True
    assert saved["train"]["window_stride"] == 4
    prepared = prepare_dataset(
        tiny_config(tmp_path), str(tmp_path / "prepared"), verbose=False
    )
    disk = train(
        tiny_config(
            tmp_path,
            epochs=2,
            train_windows=True,
            window_stride=4,
            model=model,
            prepared=prepared,
            name="disk",
        ),
        verbose=0,
    )
    # Same rows, other shuffles: close, not equal.
    for split in ("validation", "test"):
        assert (
            abs(
                disk.metrics[split]["ndcg@10"]
                - memory.metrics[split]["ndcg@10"]
            )
            < 0.1
        )
