import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks import testing


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
