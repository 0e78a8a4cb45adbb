import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks import testing
from tfrec_tricks.testing import test_case


def test_run_layer_test_accepts_a_correct_layer():
    testing.run_layer_test(
        tf.keras.layers.Dense,
        {"units": 3},
        np.ones((2, 4), "float32"),
        expected_output_shape=(2, 3),
        expected_num_trainable_weights=2,
    )


def test_run_layer_test_catches_a_missing_config_entry():
    class Forgetful(tf.keras.layers.Dense):
        def __init__(self, units, scale=1.0, **kwargs):
            super().__init__(units, **kwargs)
            self.scale = scale

    with pytest.raises(AssertionError, match="scale"):
        testing.run_layer_test(
            Forgetful, {"units": 3, "scale": 2.0}, np.ones((2, 4), "float32")
        )


@pytest.mark.slow
def test_saved_model_reloads_in_a_process_without_the_package():
    layer = tf.keras.layers.Dense(3)
    served = testing.assert_saved_model_in_fresh_process(
        layer, np.ones((2, 4), "float32")
    )
    assert served["output_0"].shape == (2, 3)


# --- run_layer_test's phases ------------------------------------------------


def _built_dense():
    layer = tf.keras.layers.Dense(3)
    return layer, layer(tf.ones((2, 4)))


def test_eager_outputs_check_shape_dtype_and_weight_count_when_given():
    layer, eager = _built_dense()
    test_case._check_eager_outputs(layer, eager, (2, 3), "float32", 2)
    test_case._check_eager_outputs(layer, eager, None, None, None)
    with pytest.raises(AssertionError, match=r"output shape \(2, 3\) !="):
        test_case._check_eager_outputs(layer, eager, (2, 4), None, None)
    with pytest.raises(AssertionError, match="output dtype"):
        test_case._check_eager_outputs(layer, eager, None, "float16", None)
    with pytest.raises(AssertionError, match="2 trainable weights, expected"):
        test_case._check_eager_outputs(layer, eager, None, None, 3)


def test_gradient_check_names_a_weight_no_gradient_reaches():
    class Unused(tf.keras.layers.Dense):
        def build(self, input_shape):
            super().build(input_shape)
            self.unused = self.add_weight(name="unused", shape=(1,))

    layer = Unused(3)
    layer(tf.ones((2, 4)))
    with pytest.raises(AssertionError, match="no gradient reaches.*unused"):
        test_case._check_gradients(layer, tf.ones((2, 4)), {})
    dense, _ = _built_dense()
    test_case._check_gradients(dense, tf.ones((2, 4)), {})


def test_mixed_precision_check_catches_overflow_and_restores_policy():
    previous = tf.keras.mixed_precision.global_policy().name
    inputs = tf.fill((2, 4), 1e5)  # float16 overflows past 65504
    with pytest.raises(AssertionError, match="non-finite output"):
        test_case._check_mixed_precision(
            tf.keras.layers.Dense,
            {"units": 3, "kernel_initializer": "ones"},
            inputs,
            {},
        )
    assert tf.keras.mixed_precision.global_policy().name == previous
    test_case._check_mixed_precision(
        tf.keras.layers.Dense, {"units": 3}, tf.ones((2, 4)), {}
    )
