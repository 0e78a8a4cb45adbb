"""An encoder defined in this file alone (its layer and its spec) trains,
resumes, tunes, exports, serves and recommends: nothing outside this file
knows its name."""

import contextlib
import io
import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import tensorflow as tf

from tests.run_helpers import Interrupt, tiny_config
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
    """A run of the encoder, interrupted after its first epoch, then
    resumed by the same call."""
    from tfrec_tricks.training.training import train

    root = tmp_path_factory.mktemp("own-encoder")
    model = {"embedding_dim": 8, "encoder": encoder, "head": "softmax"}
    config = tiny_config(root, epochs=2, model=model)
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=0)])
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        result = train(config, verbose=2)
    return said.getvalue(), result


@pytest.mark.slow
def test_it_trains_and_resumes(run):
    said, result = run
    assert isinstance(result.model.encoder, CausalMeanEncoder)
    assert "Resuming the interrupted run" in said and "after 1 epoch" in said
    assert result.metrics["epochs_run"] == 2


@pytest.mark.slow
def test_it_recommends_and_serves_what_it_recommends(run, tmp_path):
    from tfrec_tricks.export.export_for_serving import export_for_serving
    from tfrec_tricks.recommendation import recommend_frame
    from tfrec_tricks.training.persistence import load_model

    _, result = run
    history = ["i4", "i5", "i6"]
    frame = pd.DataFrame(
        {"user_id": ["new"] * 3, "item_id": history, "timestamp": [1, 2, 3]}
    )
    listed = recommend_frame(result.run_dir, k=5, histories=frame)
    with open(os.path.join(result.run_dir, "vocabulary.json")) as handle:
        items = json.load(handle)["items"]
    path = export_for_serving(
        load_model(result.run_dir), str(tmp_path / "served"), items, k=8
    )
    # Plain TensorFlow in a fresh process: no tfrec_tricks, no encoder.
    client = (
        "import json, sys, tensorflow as tf\n"
        "served = tf.saved_model.load(sys.argv[1])\n"
        "out = served.signatures['serving_default'](history=tf.constant("
        "[sys.argv[2].split(',')]))\n"
        "print(json.dumps([x.decode() for x in "
        "out['item_ids'].numpy()[0].tolist()]))\n"
    )
    answer = subprocess.run(
        [sys.executable, "-c", client, path, ",".join(history)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert answer.returncode == 0, answer.stderr[-3000:]
    served = json.loads(answer.stdout.splitlines()[-1])
    unseen = [item for item in served if item not in history]
    assert unseen[:5] == listed["item_id"].tolist()


@pytest.mark.slow
def test_a_search_tunes_it(encoder, tmp_path, monkeypatch):
    from tfrec_tricks.tuning.search import SearchOptions, run_search

    monkeypatch.chdir(tmp_path)
    config = tiny_config(
        ".",
        epochs=1,
        name=None,
        model={"embedding_dim": 8, "encoder": encoder, "head": "softmax"},
    )
    result = run_search(
        config,
        SearchOptions(
            tuner="random",
            max_trials=2,
            output_dir="tuning",
            verbose=0,
            compile_options={"run_eagerly": True},
            retrain_top=1,
        ),
    )
    assert [row["status"] for row in result.trials] == ["COMPLETED"] * 2
    assert result.best_config["model"]["encoder"] == encoder
