"""model.fit under tf.distribute.MirroredStrategy on 2 logical CPUs.

Logical devices must be configured before TensorFlow initialises its
runtime, so the fit runs in a fresh process, under the Keras of this one
(tf-keras unless TF_USE_LEGACY_KERAS=0: CI's Keras 3 job runs this file).
"""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json, os, sys
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

from tfrec_tricks.data import prepare
from tfrec_tricks.data.sources import synthetic
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

overrides = json.loads(sys.argv[1])
every_position = overrides.pop("every_position", False)
source = synthetic.generate(num_users=60, num_items=40, num_clusters=4)
data = prepare(source.interactions, max_len=10)
graph = np.char.add("i", source.item_graph.astype(str))
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
with strategy.scope():
    config = ModelConfig(num_items=data.num_items, max_len=10,
                         embedding_dim=8, **overrides)
    model = SequentialRetrievalModel.from_data(config, data, item_graph=graph)
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2))
train = make_dataset(data.train, 32, shuffle=True, seed=0,
                     every_position=every_position).take(4)
history = model.fit(train, epochs=2, verbose=0,
                    validation_data=make_dataset(data.validation, 32))
# A non-distributed twin with the same weights.
validation = make_dataset(data.validation, 32)
single = SequentialRetrievalModel.from_data(config, data, item_graph=graph)
single(next(iter(validation)))
single.set_weights(model.get_weights())
single.compile()
# The reported loss is the mean over every example of every replica.
evaluated = [
    m.evaluate(validation, return_dict=True, verbose=0)["loss"]
    for m in (model, single)
]
split_loss = whole_loss = None
if every_position:
    # The replicas get different numbers of target positions: their losses
    # must still add up to the mean over the whole batch.
    batch = next(iter(make_dataset(data.train, 64, every_position=True)))
    whole_loss = float(single.compute_loss(batch))
    parts = next(iter(strategy.experimental_distribute_dataset(
        tf.data.Dataset.from_tensors(batch))))

    @tf.function
    def replica_losses(parts):
        return strategy.run(model.compute_loss, args=(parts,))

    split_loss = float(strategy.reduce(
        tf.distribute.ReduceOp.SUM, replica_losses(parts), axis=None))
print(json.dumps({
    "replicas": strategy.num_replicas_in_sync,
    "loss": history.history["loss"],
    "val_ndcg": history.history["val_ndcg@10"],
    "split_loss": split_loss,
    "whole_loss": whole_loss,
    "evaluated": evaluated,
}))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {
            "encoder": "sasrec",
            "head": "cpr",
            "cpr_reranker_ks": [5],
            "features": ["time_gap"],
            "objective": "sampled",
        },
        {"sse_item_probability": 0.1, "sse_label_probability": 0.1},
        {
            "encoder": "sasrec",
            "head": "cpr",
            "cpr_reranker_ks": [5],
            "cpr_mi": True,
            "every_position": True,
        },
    ],
    ids=["gru4rec", "sasrec_cpr_sampled_features", "sse", "every_position"],
)
def test_fit_under_mirrored_strategy_with_two_cpus(overrides):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(overrides)],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **os.environ,
            "TF_USE_LEGACY_KERAS": os.environ.get("TF_USE_LEGACY_KERAS", "1"),
            "TF_CPP_MIN_LOG_LEVEL": "2",
        },
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["replicas"] == 2
    assert all(v == v and abs(v) < 1e6 for v in report["loss"])
    if overrides.get("every_position"):
        assert report["split_loss"] == pytest.approx(
            report["whole_loss"], rel=1e-5
        )
    if overrides.get("objective") != "sampled":
        # (An in-batch sampled loss depends on each replica's candidates.)
        distributed, single = report["evaluated"]
        assert distributed == pytest.approx(single, rel=1e-5)
    assert 0.0 <= report["val_ndcg"][-1] <= 1.0
