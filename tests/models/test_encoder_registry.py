"""Encoders by name: registration, lookup, the layers the built-in specs
build."""

import pytest

from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.models.encoder_registry import (
    EncoderSpec,
    encoder_spec,
    register_encoder,
    register_encoder_layer,
    registered_encoders,
    unregister_encoder,
)


def test_a_registered_encoder_is_accepted_until_removed():
    @register_encoder
    class TinySpec(EncoderSpec):
        name = "tiny_encoder_for_test"

    try:
        assert ModelConfig(num_items=5, encoder="tiny_encoder_for_test")
        with pytest.raises(NotImplementedError, match="no layer is registered"):
            encoder_spec("tiny_encoder_for_test").build(None, 8)
    finally:
        unregister_encoder("tiny_encoder_for_test")
    with pytest.raises(ValueError, match="encoder must be one of"):
        ModelConfig(num_items=5, encoder="tiny_encoder_for_test")


def test_a_registered_layer_is_what_the_spec_builds():
    class Layer:
        @classmethod
        def from_model_config(cls, config, hidden, **kwargs):
            return ("built", hidden, kwargs)

    @register_encoder
    class WithLayerSpec(EncoderSpec):
        name = "with_layer_for_test"

    register_encoder_layer("with_layer_for_test")(Layer)
    try:
        assert "with_layer_for_test" in registered_encoders()
        built = encoder_spec("with_layer_for_test").build(None, 4, name="e")
        assert built == ("built", 4, {"name": "e"})
    finally:
        unregister_encoder("with_layer_for_test")
    assert "with_layer_for_test" not in registered_encoders()
