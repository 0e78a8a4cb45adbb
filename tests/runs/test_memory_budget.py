"""memory_budget: the logits a training step holds, by objective."""

import pytest

from tfrec_tricks.models import ModelConfig
from tfrec_tricks.runs.memory_budget import FLOAT_BYTES, training_bytes


@pytest.mark.parametrize(
    "objective, columns",
    [
        ({}, 50_000),  # the catalogue
        ({"objective": "sampled"}, 128 * 200),  # the batch's targets
        ({"objective": "sampled", "num_sampled_negatives": 127}, 128),
    ],
)
def test_the_logits_are_rows_times_the_objectives_columns(objective, columns):
    config = ModelConfig(num_items=50_000, max_len=200, **objective)
    needed = training_bytes(config, batch_size=128, rows_per_example=200)
    # Logits and their gradient for every scored position.
    assert needed["logits"] == 128 * 200 * columns * 2 * FLOAT_BYTES
