"""The encoder registry: every ModelConfig.encoder has its class."""

import pytest

from tfrec_tricks.models import ModelConfig
from tfrec_tricks.models.config import ENCODERS
from tfrec_tricks.models.encoders import ENCODER_CLASSES, encoder_for


def test_every_config_encoder_has_a_class():
    assert set(ENCODER_CLASSES) == set(ENCODERS)


@pytest.mark.parametrize("name", ENCODERS)
def test_each_encoder_builds_from_the_config_under_the_models_name(name):
    config = ModelConfig(
        num_items=5, encoder=name, num_layers=2, max_len=7, dropout=0.2
    )
    encoder = encoder_for(config, 8)
    assert type(encoder) is ENCODER_CLASSES[name]
    assert encoder.name == "encoder"
    assert (encoder.hidden_dim, encoder.num_layers) == (8, 2)
    if name != "gru4rec":  # GRU4Rec's dropouts are the model's
        assert (encoder.max_len, encoder.dropout) == (7, 0.2)


def test_an_encoder_without_a_class_is_an_error():
    config = ModelConfig(num_items=5)
    config.encoder = "lstm"
    with pytest.raises(ValueError, match="Received: encoder='lstm'"):
        encoder_for(config, 8)
