"""Fails when a KerasTuner upgrade breaks its binding to the Keras in use.

Runs under tf-keras (the default: KerasTuner bound to tf-keras, which
accepts TFRS models) and under Keras 3 (``TF_USE_LEGACY_KERAS=0``, in CI's
Keras 3 job: KerasTuner's own multi-backend path).
"""

import subprocess
import sys

import pytest
import tensorflow as tf

from tests.keras_env import KERAS3
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.tuning import (
    import_keras_tuner,
)

keras_tuner = import_keras_tuner()


def test_keras_tuner_drives_the_keras_in_use():
    from keras_tuner.src import backend
    from keras_tuner.src.backend import keras as tuner_keras

    assert tuner_keras.Model is tf.keras.Model
    assert backend.config.backend() == "tensorflow"
    assert bool(backend.config.multi_backend()) == KERAS3
    if not KERAS3:
        import tf_keras

        assert tuner_keras.Model is tf_keras.Model


def test_binding_leaves_the_keras_in_use_selected():
    # KerasTuner's `from tensorflow.keras import *` (tf-keras) must not
    # leave tf.keras renamed (tfrec_tricks' own Keras check reads the
    # module name).
    if KERAS3:
        import keras

        assert tf.keras.Model is keras.Model
        return
    import tf_keras

    assert tf.keras.__name__.startswith("tf_keras")
    assert tf.keras.Model is tf_keras.Model


def test_tuner_accepts_the_model(hypermodel, tmp_path):
    tuner = keras_tuner.RandomSearch(
        hypermodel,
        objective=hypermodel.objective,
        max_trials=1,
        directory=str(tmp_path),
    )
    model = tuner._try_build(keras_tuner.HyperParameters())
    assert isinstance(model, SequentialRetrievalModel)
    assert isinstance(model, tf.keras.Model)
    assert isinstance(hypermodel, keras_tuner.HyperModel)


@pytest.mark.slow
@pytest.mark.skipif(
    KERAS3, reason="the tf-keras binding's check, in a tf-keras process"
)
def test_keras_tuner_imported_first_is_reported():
    code = (
        "import os\n"
        "os.environ['TF_USE_LEGACY_KERAS'] = '1'\n"
        "import keras_tuner\n"
        "from tfrec_tricks.tuning import import_keras_tuner\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "KerasTunerBindingError" in result.stderr
    assert "Import tfrec_tricks.tuning before keras_tuner" in result.stderr


def test_state_files_are_written_atomically(tmp_path):
    from keras_tuner.src import utils

    assert getattr(utils.save_json, "atomic", False)
    path = tmp_path / "oracle.json"
    utils.save_json(str(path), {"a": 1})
    utils.save_json(str(path), {"a": 2})
    assert utils.load_json(str(path)) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["oracle.json"]
