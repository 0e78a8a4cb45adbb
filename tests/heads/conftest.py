"""The heads' tests run under tf-keras and Keras 3 (CI's Keras 3 tier),
but for the files that build models, which need tf-keras (TensorFlow
Recommenders) until the Keras 3 models of issue 74."""

from tests.keras_env import KERAS3

collect_ignore = (
    ["test_head_specs.py", "test_a_head_of_ones_own.py"] if KERAS3 else []
)
