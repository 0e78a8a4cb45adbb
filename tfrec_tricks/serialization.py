"""Registration of the package's Keras objects."""

from typing import TypeVar

import tensorflow as tf

T = TypeVar("T")

PACKAGE = "tfrec_tricks"


def register(cls: T) -> T:
    """Registers ``cls`` as Keras-serializable as ``tfrec_tricks>Name``."""
    return tf.keras.utils.register_keras_serializable(package=PACKAGE)(cls)
