"""Quickstart: a TFRS sequential recommender with Softmax-CPR in 5 minutes.

Title: Quickstart with tfrec_tricks
Description: Build, train and evaluate a GRU4Rec retrieval model on the
built-in synthetic data, then switch on Softmax-CPR and a soft one-hot time
gap feature and see what they buy.

Run it: `python examples/quickstart.py` (add `--smoke` for a 20-second run).
"""

# ## Setup
#
# TensorFlow Recommenders needs tf-keras (Keras 2): select it before
# TensorFlow is imported.

import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import argparse  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from tfrec_tricks.data import load_source, prepare  # noqa: E402
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.evaluation.full_ranking import full_ranking_metrics  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--smoke", action="store_true", help="tiny and quick")
args = parser.parse_args()
users, items, epochs = (150, 120, 1) if args.smoke else (2000, 1000, 8)
tf.keras.utils.set_random_seed(0)

# ## The data
#
# The synthetic generator walks users through clusters of items. Half of the
# users never repeat an item; the others copy items from their own history,
# and much less often right after a long time gap. `prepare` applies
# RecBole's leave-one-out protocol: the last item of each user is the test
# target, the one before it the validation target, every earlier prefix a
# training example.

source = load_source(
    "synthetic",
    synthetic_options={"num_users": users, "num_items": items, "seed": 0},
)
data = prepare(source.interactions, max_len=50)
print(data.summary())

train = make_dataset(data.train, batch_size=128, shuffle=True, seed=0)
validation = make_dataset(data.validation, batch_size=512)

# ## Two models, one switch apart
#
# `ModelConfig` holds every switch. The baseline scores all items with one
# projection of the GRU state against the tied item table (plus a per-item
# bias). The second model partitions the output: items of the history get
# their own projections (context and pointer), the top 100 other items a
# reranker, and the projections read several hidden states (Mi). It also
# adds the time gap before each history item through soft one-hot encoding.

variants = {
    "softmax": ModelConfig(num_items=data.num_items),
    "CPR:100 + Mi + time gap": ModelConfig(
        num_items=data.num_items,
        head="cpr",
        cpr_reranker_ks=(100,),
        cpr_mi=True,
        features=("time_gap",),
    ),
}

results = {}
for name, config in variants.items():
    model = SequentialRetrievalModel.from_data(
        config, data, item_graph=source.item_graph
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
    model.fit(
        train,
        validation_data=validation,
        epochs=epochs,
        verbose=2,
        callbacks=[
            tf.keras.callbacks.EarlyStopping(
                monitor="val_ndcg@10",
                mode="max",
                patience=2,
                restore_best_weights=True,
            )
        ],
    )
    # ## Full-ranking evaluation
    #
    # Scores over the whole catalogue, NDCG@10 / HR@10 / MRR@10 with
    # RecBole's definitions (the padding id never counts).
    scores = model.predict(make_dataset(data.test, 512), verbose=0)
    results[name] = full_ranking_metrics(scores, data.test.target)

for name, metrics in results.items():
    print(
        f"{name:>26}: " + "  ".join(f"{k} {v:.4f}" for k, v in metrics.items())
    )

# ## Recommendations in raw ids
#
# The vocabulary maps contiguous ids back to the raw ids of the data.

first = {k: v[:1] for k, v in data.test.as_dict().items()}
top = np.argsort(-model.predict(first, verbose=0)[0])[:10]
history = [data.vocabulary.items[i] for i in first["history"][0] if i]
print("history:", history[-8:])
print("top 10: ", [data.vocabulary.items[i] for i in top])
