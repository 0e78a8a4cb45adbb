"""serialization.register: the package's Keras names."""

import tensorflow as tf

from tfrec_tricks.serialization import PACKAGE, register


def test_registered_class_is_found_by_its_package_name():
    @register
    class ScaledIdentity(tf.keras.layers.Layer):
        pass

    assert PACKAGE == "tfrec_tricks"
    name = tf.keras.utils.get_registered_name(ScaledIdentity)
    assert name == "tfrec_tricks>ScaledIdentity"
    assert tf.keras.utils.get_registered_object(name) is ScaledIdentity
    restored = tf.keras.layers.deserialize(
        tf.keras.layers.serialize(ScaledIdentity(name="s"))
    )
    assert type(restored) is ScaledIdentity and restored.name == "s"
