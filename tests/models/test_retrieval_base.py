"""The model's base is that of the Keras in use: ``tfrs.Model`` under
tf-keras, ``Keras3RetrievalModel`` under Keras 3 (``TF_USE_LEGACY_KERAS=0``,
in CI's Keras 3 job). tests/models/test_keras3_retrieval_model.py fits
the models on either."""

import tensorflow as tf

from tests.keras_env import KERAS3
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.models.retrieval_base import RetrievalBase


def test_the_base_is_that_of_the_keras_in_use():
    assert issubclass(SequentialRetrievalModel, RetrievalBase)
    if KERAS3:
        import keras

        assert RetrievalBase.__name__ == "Keras3RetrievalModel"
        assert issubclass(SequentialRetrievalModel, keras.Model)
    else:
        import tensorflow_recommenders as tfrs

        assert RetrievalBase is tfrs.Model
        assert tf.keras.Model.__module__.startswith("tf_keras")
