"""PublishWeights: the best epoch's weights renamed into place whole."""

import numpy as np
import pytest
import tensorflow as tf

from tests.keras_env import KERAS3
from tfrec_tricks.callbacks import PublishWeights
from tfrec_tricks.training.run_keras import load_weights, weights_path


def test_a_killed_process_leftover_is_removed_not_published(tmp_path):
    staging, path = tmp_path / "best.saving", tmp_path / "best"
    path.write_text("the best epoch")
    staging.write_text("half a file")
    publish = PublishWeights(str(staging), str(path))
    publish.on_train_begin()
    publish.on_epoch_end(0)
    assert not staging.exists()
    assert path.read_text() == "the best epoch"


@pytest.mark.skipif(
    not KERAS3, reason="tf-keras' checkpoints are renamed by TensorFlow"
)
def test_the_checkpoint_written_aside_is_the_one_read(tmp_path):
    # Keras 3's ModelCheckpoint writes aside, the callback after it
    # renames, and the weights load back (training runs: fit_callbacks).
    path = weights_path(str(tmp_path / "best"))
    staging = path.replace(".weights.h5", ".saving.weights.h5")
    model = tf.keras.Sequential(
        [tf.keras.Input((2,)), tf.keras.layers.Dense(1)]
    )
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((8, 2), np.float32), np.ones(8, np.float32)
    checkpoint = tf.keras.callbacks.ModelCheckpoint(
        staging, monitor="loss", save_best_only=True, save_weights_only=True
    )
    model.fit(
        x,
        y,
        epochs=2,
        verbose=0,
        callbacks=[checkpoint, PublishWeights(staging, path)],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.weights.h5"]
    clone = tf.keras.models.clone_model(model)
    clone.build((None, 2))
    load_weights(clone, path)
    for a, b in zip(clone.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
