"""Binds KerasTuner to the Keras in use: tf-keras (TFRS models) or Keras 3.

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

Under Keras 3 (``TF_USE_LEGACY_KERAS=0``: the models then subclass
``keras.Model``, ``retrieval_base``) KerasTuner's own choice is the right
one: its multi-backend path, ``from keras import *``, with Keras 3 on the
TensorFlow backend, which writes each trial's best checkpoint as
``checkpoint.weights.h5`` beside its ``build_config.json``. The binding
then only checks that choice, and that ``tensorboard`` is installed, and
makes the state writes atomic, as under tf-keras.

``tests/tuning/test_keras_tuner_binding.py`` fails if a KerasTuner upgrade
changes how it picks its Keras.
"""

import importlib
import sys
import types

from tfrec_tricks.keras_version import keras_3_in_use, require_model_keras


class KerasTunerBindingError(ImportError):
    """KerasTuner could not be bound to the Keras in use."""


def import_keras_tuner() -> types.ModuleType:
    """Imports ``keras_tuner`` bound to the Keras in use and returns it.

    tf-keras unless the environment chose Keras 3, as for the models
    (``keras_version.choose_model_keras``).

    Raises:
        KerasTunerBindingError: when KerasTuner was already imported bound
            to another Keras, when ``tensorboard`` is missing, or when the
            binding did not take.
        KerasVersionError: Keras 3 on another backend than TensorFlow, or
            tf-keras asked for and not installed.
    """
    require_model_keras("tfrec_tricks.tuning")
    _require_tensorboard()
    if keras_3_in_use():
        keras_tuner = _import_keras_3_tuner()
    else:
        keras_tuner = _import_tf_keras_tuner()
    _make_state_writes_atomic()
    return keras_tuner


def _require_tensorboard() -> None:
    try:
        importlib.import_module("tensorboard")
    except ImportError as error:
        raise KerasTunerBindingError(
            "KerasTuner's TensorFlow path needs tensorboard; without it "
            "every trial silently ends INVALID. `pip install "
            "'tensorboard~=2.21.0'`."
        ) from error


def _import_keras_3_tuner() -> types.ModuleType:
    """``keras_tuner`` on its multi-backend path, over Keras 3.

    ``tf.keras`` is Keras 3 here, so ``import keras`` (KerasTuner's choice)
    is the same Keras unless a binding to tf-keras came first.
    """
    import keras

    keras_tuner = importlib.import_module("keras_tuner")
    from keras_tuner.src.backend import keras as tuner_keras

    if tuner_keras.Model is not keras.Model:
        raise KerasTunerBindingError(
            "keras_tuner is bound to "
            f"{tuner_keras.Model.__module__}, not to Keras 3, which this "
            "process uses (TF_USE_LEGACY_KERAS=0): it rejects the models. "
            "Import tfrec_tricks.tuning before keras_tuner, in a process "
            "that uses one Keras."
        )
    return keras_tuner


def _import_tf_keras_tuner() -> types.ModuleType:
    """``keras_tuner`` on its TensorFlow path, over tf-keras."""
    import tf_keras

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
