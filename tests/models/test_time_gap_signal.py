"""The soft one-hot time gap helps where the gaps carry signal.

In the synthetic data a user copies an item of the history ten times less
often after a long gap than after a short one. With ``copy_window=1`` a copy
repeats the latest item, so knowing whether the user copies changes the
ranking. The pointer partition of Softmax-CPR gives the model a switch for
"repeat the history" that the encoder state can turn with the gap.
"""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.data import prepare
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

pytestmark = pytest.mark.slow

MAX_LEN = 20


@pytest.fixture(scope="module")
def data():
    source = synthetic.generate(
        num_users=400,
        num_items=200,
        num_clusters=10,
        mean_length=25,
        non_repeater_share=0.0,
        long_gap_probability=0.5,
        copy_window=1,
        seed=0,
    )
    return prepare(source.interactions, max_len=MAX_LEN)


def trained(data, features):
    tf.keras.utils.set_random_seed(0)
    config = ModelConfig(
        num_items=data.num_items,
        max_len=MAX_LEN,
        embedding_dim=32,
        dropout=0.1,
        head="cpr",
        cpr_reranker_ks=(),
        features=features,
    )
    model = SequentialRetrievalModel.from_data(config, data)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(5e-3), steps_per_execution=16
    )
    model.fit(
        make_dataset(
            data.train, 128, shuffle=True, seed=0, bucket_by_length=True
        ),
        epochs=6,
        verbose=0,
    )
    return model


def test_time_gap_improves_ndcg_through_the_copy_decision(data):
    test = make_dataset(data.test, 512)
    without = trained(data, ())
    with_gap = trained(data, ("time_gap",))
    ndcg = {
        name: model.evaluate(test, return_dict=True, verbose=0)["ndcg@10"]
        for name, model in (("without", without), ("with", with_gap))
    }
    assert ndcg["with"] > 1.03 * ndcg["without"], ndcg

    # The mechanism: after a long gap the latest item (a copy's target)
    # gets a much smaller probability than after a short gap.
    lengths = (data.test.history > 0).sum(axis=1)
    rows = np.arange(len(lengths))
    latest = data.test.history[rows, lengths - 1]
    long_gap = data.test.features["time_gap"][rows, lengths - 1] > 3600
    assert 0.2 < long_gap.mean() < 0.8
    probability = tf.nn.softmax(with_gap.predict(test, verbose=0)).numpy()
    p_latest = probability[rows, latest]
    assert p_latest[~long_gap].mean() > 2 * p_latest[long_gap].mean()
