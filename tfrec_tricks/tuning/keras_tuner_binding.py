"""Binds KerasTuner to tf-keras, so that it accepts TFRS models.

KerasTuner 1.4.x decides at import time which Keras it drives: it runs
``import keras`` and, finding Keras 3 (which TensorFlow 2.21 always
installs), checks every model against ``keras.Model`` of Keras 3. TFRS
models are tf-keras models, so each trial fails with ``FatalTypeError:
Expected the model-building function ... to return a valid Keras Model
instance`` (keras-tuner issue #1039; the fix, PR #1040, was never merged).

``import_keras_tuner()`` imports KerasTuner with ``keras`` resolving to
``tf_keras`` for the duration of that import only. KerasTuner then takes its
TensorFlow path (``from tensorflow.keras import *``, tf-keras under
``TF_USE_LEGACY_KERAS=1``); the rest of the process keeps whatever ``keras``
it had. KerasTuner's TensorFlow path also imports ``tensorboard``: without
it every trial ends INVALID, so its absence is reported here, up front. The
binding also makes KerasTuner's state writes atomic, so that a killed search
resumes.

``tests/tuning/test_keras_tuner_binding.py`` fails if a KerasTuner upgrade
changes how it picks its Keras.
"""

import importlib
import sys
import types

from tfrec_tricks.keras_version import require_legacy_keras


class KerasTunerBindingError(ImportError):
    """KerasTuner could not be bound to tf-keras."""


def import_keras_tuner() -> types.ModuleType:
    """Imports ``keras_tuner`` bound to tf-keras and returns it.

    Raises:
        KerasTunerBindingError: when KerasTuner was already imported bound
            to Keras 3, when ``tensorboard`` is missing, or when the
            binding did not take.
    """
    require_legacy_keras("tfrec_tricks.tuning")
    import tf_keras

    try:
        importlib.import_module("tensorboard")
    except ImportError as error:
        raise KerasTunerBindingError(
            "KerasTuner's TensorFlow path needs tensorboard; without it "
            "every trial silently ends INVALID. `pip install "
            "'tensorboard~=2.21.0'`."
        ) from error

    if "keras_tuner" not in sys.modules:
        import tensorflow as tf

        saved = sys.modules.get("keras")
        tf_dot_keras = tf.keras
        sys.modules["keras"] = tf_keras
        try:
            importlib.import_module("keras_tuner")
        finally:
            if saved is None:
                del sys.modules["keras"]
            else:
                sys.modules["keras"] = saved
            # KerasTuner runs `from tensorflow.keras import *`, which loads
            # tf-keras' API a second time as a module named
            # "tensorflow.keras" (same classes) and rebinds `tf.keras` to
            # it; keras_version's check reads the module name, so put the
            # original module back.
            if tf.keras is not tf_dot_keras:
                tf.keras = tf_dot_keras
    keras_tuner = sys.modules["keras_tuner"]
    from keras_tuner.src.backend import keras as tuner_keras

    if tuner_keras.Model is not tf_keras.Model:
        raise KerasTunerBindingError(
            "keras_tuner was imported before tfrec_tricks.tuning and is bound "
            f"to {tuner_keras.Model.__module__}, not tf-keras, so it rejects "
            "TFRS models. Import tfrec_tricks.tuning before keras_tuner (or "
            "set TF_USE_LEGACY_KERAS=1 and import tfrec_tricks.tuning "
            "first)."
        )
    _make_state_writes_atomic()
    return keras_tuner


def _make_state_writes_atomic() -> None:
    """Makes KerasTuner write its state files atomically.

    KerasTuner rewrites ``oracle.json``, ``tuner0.json`` and each
    ``trial.json`` in place; a search killed during one of those writes
    leaves a truncated file and cannot resume ("Expecting value: line 1
    column 1"). Every write goes through ``keras_tuner.src.utils.save_json``;
    this replaces it with ``atomic_files.write_text_atomic`` (a temporary
    file beside it, then one rename). A URL (``gs://...``), which only
    ``tf.io.gfile`` can write, still goes to a temporary file renamed with
    ``tf.io.gfile.rename``.
    """
    from keras_tuner.src import utils

    if getattr(utils.save_json, "atomic", False):
        return
    import json
    import os

    import tensorflow as tf

    from tfrec_tricks.atomic_files import write_text_atomic

    def save_json(path, obj):
        text = json.dumps(obj)
        if "://" not in str(path):
            write_text_atomic(path, text)
            return text
        temporary = f"{path}.tmp-{os.getpid()}"
        with tf.io.gfile.GFile(temporary, "w") as handle:
            handle.write(text)
        tf.io.gfile.rename(temporary, path, overwrite=True)
        return text

    save_json.atomic = True
    save_json.__doc__ = utils.save_json.__doc__
    utils.save_json = save_json
