"""The encoder a config names, built by its spec."""

import pytest

from tfrec_tricks.models import ModelConfig
from tfrec_tricks.models.encoder_registry import _LAYERS
from tfrec_tricks.models.encoders import encoder_for
from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder
from tfrec_tricks.models.hstu_encoder import HSTUEncoder
from tfrec_tricks.models.sasrec_encoder import SASRecEncoder

LAYERS = {
    "gru4rec": GRU4RecEncoder,
    "sasrec": SASRecEncoder,
    "hstu": HSTUEncoder,
}


def test_every_built_in_encoder_has_its_layer():
    assert {name: _LAYERS[name] for name in LAYERS} == LAYERS


@pytest.mark.parametrize("name", list(LAYERS))
def test_each_encoder_builds_from_the_config_under_the_models_name(name):
    config = ModelConfig(
        num_items=5, encoder=name, num_layers=2, max_len=7, dropout=0.2
    )
    encoder = encoder_for(config, 8)
    assert type(encoder) is LAYERS[name]
    assert encoder.name == "encoder"
    assert (encoder.hidden_dim, encoder.num_layers) == (8, 2)
    if name != "gru4rec":  # GRU4Rec's dropouts are the model's
        assert (encoder.max_len, encoder.dropout) == (7, 0.2)


def test_an_encoder_without_a_spec_is_an_error():
    config = ModelConfig(num_items=5)
    config.encoder = "lstm"
    with pytest.raises(ValueError, match="Received: encoder='lstm'"):
        encoder_for(config, 8)
