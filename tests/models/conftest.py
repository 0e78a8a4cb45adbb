"""Tiny synthetic data shared by the model tests."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.data import prepare
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.tf_data_pipeline import make_dataset

MAX_LEN = 10
DIM = 8


@pytest.fixture(scope="session")
def synthetic_data():
    return synthetic.generate(num_users=60, num_items=40, num_clusters=4)


@pytest.fixture(scope="session")
def data(synthetic_data):
    return prepare(synthetic_data.interactions, max_len=MAX_LEN)


@pytest.fixture(scope="session")
def raw_item_graph(synthetic_data):
    return np.char.add("i", synthetic_data.item_graph.astype(str))


@pytest.fixture(scope="session")
def batch(data):
    """16 training examples with histories of several lengths."""
    examples = data.train.as_dict()
    pick = np.linspace(0, len(data.train) - 1, 16).astype(int)
    return {k: tf.constant(v[pick]) for k, v in examples.items()}


@pytest.fixture(scope="session")
def small_train(data):
    """A few batches of training data (fast fits)."""
    return make_dataset(data.train, 32, shuffle=True, seed=0).take(3)
