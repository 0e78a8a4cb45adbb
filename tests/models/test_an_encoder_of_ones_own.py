"""An encoder defined in this file alone (its layer and its spec) trains,
resumes, tunes, exports, serves and recommends: nothing outside this file
knows its name."""

import pytest
import tensorflow as tf

from tests.member_checks import (
    assert_resumed,
    assert_serves_what_it_recommends,
    interrupted_and_resumed,
    tuned,
)
from tfrec_tricks.models.encoder_registry import (
    EncoderSpec,
    register_encoder,
    unregister_encoder,
)

NAME = "causal_mean"


@tf.keras.utils.register_keras_serializable(package="my_shop")
class CausalMeanEncoder(tf.keras.layers.Layer):
    """A projection of each item, averaged over the history so far: the
    state at position t reads positions <= t only."""

    def __init__(self, hidden_dim: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim

    def build(self, input_shape):
        self.projection = tf.keras.layers.Dense(self.hidden_dim, name="proj")
        super().build(input_shape)

    def call(self, inputs, training=None):
        x = self.projection(inputs)
        steps = tf.cast(tf.range(1, tf.shape(x)[1] + 1), x.dtype)
        return [tf.cumsum(x, axis=1) / steps[None, :, None]]

    def get_config(self) -> dict:
        return {**super().get_config(), "hidden_dim": self.hidden_dim}


class CausalMeanSpec(EncoderSpec):
    name = NAME
    summary = "the running mean of projected item embeddings"

    def build(self, config, hidden, **kwargs):
        return CausalMeanEncoder(hidden, **kwargs)

    def parameters(self, config, width):
        return config.embedding_dim * width + width


@pytest.fixture(scope="module")
def encoder():
    register_encoder(CausalMeanSpec)
    yield NAME
    unregister_encoder(NAME)


@pytest.fixture(scope="module")
def run(encoder, tmp_path_factory):
    """A run of the encoder, interrupted after its first epoch, then resumed
    by the same call."""
    root = tmp_path_factory.mktemp("own-encoder")
    model = {"encoder": encoder, "head": "softmax"}
    return interrupted_and_resumed(root, model)


@pytest.mark.slow
def test_it_trains_and_resumes(run):
    said, result = run
    assert isinstance(result.model.encoder, CausalMeanEncoder)
    assert_resumed(said, result)


@pytest.mark.slow
def test_it_recommends_and_serves_what_it_recommends(run, tmp_path):
    assert_serves_what_it_recommends(run[1].run_dir, tmp_path)


@pytest.mark.slow
def test_a_search_tunes_it(encoder, tmp_path, monkeypatch):
    result = tuned(
        {"encoder": encoder, "head": "softmax"}, tmp_path, monkeypatch
    )
    assert result.best_config["model"]["encoder"] == encoder
