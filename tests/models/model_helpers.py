"""Models of the tiny data of conftest.py, shared by the model tests."""

import tensorflow as tf

from tests.models.conftest import DIM, MAX_LEN
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel


def make_config(data, **overrides):
    values = {
        "num_items": data.num_items,
        "max_len": MAX_LEN,
        "embedding_dim": DIM,
        "dropout": 0.1,
    }
    values.update(overrides)
    return ModelConfig(**values)


def make_model(data, raw_item_graph=None, **overrides):
    model = SequentialRetrievalModel.from_data(
        make_config(data, **overrides), data, item_graph=raw_item_graph
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2))
    return model
