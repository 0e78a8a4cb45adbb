"""One model definition under either Keras: the base by the Keras in use.

These tests run under tf-keras (the default) and under Keras 3
(``TF_USE_LEGACY_KERAS=0``, in CI's Keras 3 job): the same
``SequentialRetrievalModel``, built from a ``ModelConfig``, fits, lowers
its loss, evaluates with the ranking metrics and predicts the catalogue's
logits. Under tf-keras the base is ``tfrs.Model``; under Keras 3 it is
``Keras3RetrievalModel``.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.models.conftest import DIM, MAX_LEN
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

RANKING_METRICS = {"hr@10", "mrr@10", "ndcg@10"}

# Each model the Keras 3 step covers: GRU4Rec and SASRec with the softmax
# and Softmax-CPR heads, and the two sampled objectives (in-batch, with
# hard negatives; K uniform negatives).
MODELS = {
    "gru4rec-softmax": {},
    "sasrec-softmax": {"encoder": "sasrec"},
    "gru4rec-cpr": {"head": "cpr", "cpr_reranker_ks": (5,)},
    "sasrec-cpr": {"encoder": "sasrec", "head": "cpr", "cpr_reranker_ks": (5,)},
    "gru4rec-sampled": {"objective": "sampled", "num_hard_negatives": 8},
    "sasrec-sampled-negatives": {
        "encoder": "sasrec",
        "objective": "sampled",
        "num_sampled_negatives": 10,
    },
}


@pytest.fixture(scope="module")
def train_batches(data):
    # Fixed order: two epochs see the same batches, so the second epoch's
    # mean loss is below the first's once the model learns anything.
    return make_dataset(data.train, 32, shuffle=False).take(4)


@pytest.fixture(scope="module")
def eval_batches(data):
    return make_dataset(data.validation, 64, shuffle=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_fits_evaluates_and_predicts(name, data, train_batches, eval_batches):
    tf.keras.utils.set_random_seed(0)
    config = ModelConfig(
        num_items=data.num_items,
        max_len=MAX_LEN,
        embedding_dim=DIM,
        **MODELS[name],
    )
    model = SequentialRetrievalModel.from_data(config, data)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02))

    history = model.fit(train_batches, epochs=2, verbose=0).history
    losses = history["loss"]
    assert len(losses) == 2 and np.isfinite(losses).all(), history
    assert losses[1] < losses[0], history
    # Without regularization losses the steps leave their sum out.
    assert "regularization_loss" not in history
    if config.objective == "sampled":
        # It scores only its candidates in training: no ranks to report.
        assert not RANKING_METRICS & set(history)
    else:
        assert RANKING_METRICS <= set(history)

    results = model.evaluate(eval_batches, return_dict=True, verbose=0)
    assert RANKING_METRICS | {"loss"} <= set(results), results
    for metric in RANKING_METRICS:
        assert 0.0 <= results[metric] <= 1.0, results

    logits = model.predict(eval_batches.take(1), verbose=0)
    assert logits.shape[1] == data.num_items
    assert np.isfinite(logits[:, 1:]).all()
