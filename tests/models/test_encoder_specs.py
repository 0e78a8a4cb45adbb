"""The built-in encoders' specs, and the registry of encoders."""

import pytest

from tfrec_tricks.models.config import ENCODERS, ModelConfig
from tfrec_tricks.models.encoder_registry import encoder_spec, encoders_where


def test_the_built_in_encoders_and_what_their_specs_say():
    assert tuple(ENCODERS)[:3] == ("gru4rec", "sasrec", "hstu")
    assert encoders_where("attention")[:2] == ("sasrec", "hstu")
    assert encoders_where("searched")[:2] == ("gru4rec", "sasrec")
    assert encoders_where("copies_history")[:1] == ("sasrec",)
    assert encoder_spec("sasrec").later_options == {"sasrec_norm": "post"}


def test_parameter_and_attention_estimates():
    config = ModelConfig(
        num_items=10, embedding_dim=8, num_layers=2, max_len=5, num_heads=2
    )
    # Two GRU layers of width 8 on 8 inputs: 3 gates each.
    assert encoder_spec("gru4rec").parameters(config, 8) == 2 * 3 * (
        8 * 8 + 8 * 8 + 2 * 8
    )
    # Positions, then two blocks of attention and a feed-forward network.
    assert encoder_spec("sasrec").parameters(config, 8) == 5 * 8 + 2 * (
        4 * 64 + 2 * 64
    )
    assert encoder_spec("hstu").parameters(config, 8) == 5 * 8 + 2 * (
        5 * 64 + 5
    )
    assert encoder_spec("gru4rec").attention_elements(config, 4) == 0
    assert encoder_spec("sasrec").attention_elements(config, 4) == (
        4 * 2 * 25 * 2 * 2
    )


def test_num_heads_must_divide_an_attention_encoders_width():
    with pytest.raises(ValueError, match="must divide the encoder width 8"):
        ModelConfig(num_items=5, encoder="sasrec", embedding_dim=8, num_heads=3)
    ModelConfig(num_items=5, encoder="gru4rec", embedding_dim=8, num_heads=3)
