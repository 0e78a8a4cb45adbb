"""memory_budget: the logits a training step holds, by objective."""

import pytest

from tfrec_tricks.models import ModelConfig
from tfrec_tricks.training.memory_budget import FLOAT_BYTES, training_bytes


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


def test_a_catalogue_too_large_for_the_logits_is_refused_with_negatives():
    from tfrec_tricks.errors import InsufficientMemoryError
    from tfrec_tricks.training.memory_budget import check_memory

    # The ml-1m recipe's windows over a 400,000-item catalogue: 76 GiB of
    # logits; 128 sampled negatives fit where the full softmax does not.
    config = ModelConfig(num_items=400_000, max_len=200, encoder="sasrec")
    with pytest.raises(InsufficientMemoryError) as refused:
        check_memory(config, 128, rows_per_example=200, available=24 * 2**30)
    message = str(refused.value)
    assert "logits 76.3 GiB" in message
    assert "--objective sampled --num-sampled-negatives K" in message
    assert "num_items=400000" in message
    sampled = ModelConfig(
        num_items=400_000,
        max_len=200,
        encoder="sasrec",
        objective="sampled",
        num_sampled_negatives=128,
    )
    check_memory(sampled, 128, rows_per_example=200, available=24 * 2**30)
