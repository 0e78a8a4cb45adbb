"""The same model exported under tf-keras and under Keras 3, to compare.

Run as a script in a process of each Keras (``TF_USE_LEGACY_KERAS`` set
by the caller):

    python -m tests.export.cross_keras source WORK   # tf-keras
    python -m tests.export.cross_keras copy WORK     # Keras 3

``source`` builds each configuration of ``CONFIGS``, gives every trainable
float weight random values, saves the weights by path
(``WORK/<name>.npz``, ``weights_by_path``) and exports the model to
``WORK/<keras>/<name>/1``; ``copy`` builds the same configuration,
assigns the saved arrays by path and exports it the same way. A third
process, plain TensorFlow (``PLAIN_TF_SCRIPT``), loads both exports and
answers the same requests with each.

A weight's path is the names of the layers from the model down to the
one that owns it and the weight's own name
(``encoder/gru_0/gru_cell/kernel``): the two Kerases name variables
differently (tf-keras by name scope, ``cpr_head/kernel:0`` six times;
Keras 3 by layer path) and order ``model.weights`` differently, but the
layers, their names and their weights are the package's own, in both.
"""

import json
import os
import sys

import numpy as np

ITEMS = ["[PAD]"] + [f"item-{i}" for i in range(1, 30)]
K = 5
# Tiny models of the heads, encoders and inputs the export serves
# differently: the softmax through the index, CPR's re-scoring with a
# reranker and a float feature, history-last with a token feature,
# a mixture of softmaxes over the full catalogue.
CONFIGS = {
    "softmax": ({"encoder": "gru4rec"}, "auto"),
    "cpr": (
        {
            "encoder": "gru4rec",
            "head": "cpr",
            "cpr_reranker_ks": (5,),
            "cpr_mi": True,
            "features": ("time_gap",),
        },
        "auto",
    ),
    "no_dup": (
        {
            "encoder": "sasrec",
            "head": "softmax_no_dup",
            "token_features": (
                {
                    "name": "device",
                    "vocabulary_size": 4,
                    "vocabulary": ["web", "app"],
                },
            ),
        },
        "auto",
    ),
    "mos": ({"encoder": "hstu", "head": "mos", "num_layers": 1}, "full"),
}

# Loads both exports of each configuration in plain TensorFlow (no
# tfrec_tricks, no TF_USE_LEGACY_KERAS), answers WORK/requests.npz and
# replays the export's warmup records.
PLAIN_TF_SCRIPT = """
import json, sys
import numpy as np
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2


def decoded(tensor):
    value = tensor.numpy()
    if value.dtype == object:  # raw ids, as bytes
        value = np.char.decode(value.astype(bytes), "utf-8")
    return value


work, names = sys.argv[1], sys.argv[2].split(",")
requests = dict(np.load(f"{work}/requests.npz"))
answers, signatures = {}, {}
for keras in ("tf-keras", "keras-3"):
    for name in names:
        loaded = tf.saved_model.load(f"{work}/{keras}/{name}/1")
        described = {}
        for signature, function in sorted(loaded.signatures.items()):
            inputs = function.structured_input_signature[1]
            outputs = function.structured_outputs
            described[signature] = {
                "inputs": {k: [v.dtype.name, str(v.shape), v.name]
                           for k, v in sorted(inputs.items())},
                "outputs": {k: [v.dtype.name, str(v.shape)]
                            for k, v in sorted(outputs.items())},
            }
            feed = {k: requests[f"{name}/{k}"] for k in inputs}
            for key, value in function(**feed).items():
                answers[f"{keras}/{name}/{signature}/{key}"] = decoded(value)
        signatures[f"{keras}/{name}"] = described
        # The warmup records, replayed as TF Serving does at load.
        folder = f"{work}/{keras}/{name}/1/assets.extra"
        warmup = f"{folder}/tf_serving_warmup_requests"
        for index, record in enumerate(tf.data.TFRecordDataset(warmup)):
            log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
            request = log.predict_log.request
            feed = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}
            function = loaded.signatures[request.model_spec.signature_name]
            for key, value in function(**feed).items():
                answers[f"{keras}/{name}/warmup-{index}/{key}"] = decoded(value)
assert not [m for m in sys.modules if m.startswith("tfrec_tricks")]
np.savez(f"{work}/answers.npz", **answers)
with open(f"{work}/signatures.json", "w") as handle:
    json.dump(signatures, handle, indent=1, sort_keys=True)
"""


def build(name: str):
    """The model of ``CONFIGS[name]``, built (every weight created)."""
    import tensorflow as tf

    from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

    options, _ = CONFIGS[name]
    config = ModelConfig(
        num_items=len(ITEMS), max_len=6, embedding_dim=8, **options
    )
    model = SequentialRetrievalModel(config)
    model(
        {
            "history": tf.ones([1, 1], tf.int32),
            **{f: tf.zeros([1, 1]) for f in config.position_inputs},
        },
        training=False,
    )
    return model


def weights_by_path(model) -> dict:
    """Each weight of ``model`` (its metrics' aside) by its path: the
    owning layers' names below the model, then the weight's own name.

    Raises:
        ValueError: two weights share a path.
    """
    import tensorflow as tf

    found = {}
    # tf-keras lists the metrics' variables among the model's weights.
    metrics = {id(w) for metric in model.metrics for w in metric.variables}

    def walk(layer, prefix):
        inner = layer._flatten_layers(include_self=False, recursive=False)
        layers = [
            sub for sub in inner if not isinstance(sub, tf.keras.metrics.Metric)
        ]
        below = metrics | {id(w) for sub in layers for w in sub.weights}
        for weight in layer.weights:
            if id(weight) in below:
                continue
            leaf = weight.name.rsplit("/", 1)[-1].split(":")[0]
            path = "/".join([*prefix, leaf])
            if path in found:
                raise ValueError(f"Two weights at {path!r}")
            found[path] = weight
        for sub in layers:
            walk(sub, [*prefix, sub.name])

    walk(model, [])
    return found


def _export(model, work: str, keras: str, name: str) -> None:
    from tfrec_tricks.export import export_for_serving

    _, scoring = CONFIGS[name]
    export_for_serving(
        model,
        os.path.join(work, keras, name),
        ITEMS,
        version=1,
        k=K,
        scoring=scoring,
    )


def source(work: str) -> None:
    """Random weights for each configuration, saved and exported."""
    rng = np.random.default_rng(0)
    for name in CONFIGS:
        model = build(name)
        arrays = {}
        for path, weight in weights_by_path(model).items():
            value = weight.numpy()
            if weight.trainable and value.dtype.kind == "f":
                value = rng.normal(0.0, 0.5, value.shape).astype(value.dtype)
                weight.assign(value)
            arrays[path] = value
        np.savez(os.path.join(work, f"{name}.npz"), **arrays)
        _export(model, work, "tf-keras", name)


def copy(work: str) -> None:
    """Each configuration with the saved weights, exported."""
    for name in CONFIGS:
        model = build(name)
        weights = weights_by_path(model)
        arrays = dict(np.load(os.path.join(work, f"{name}.npz")))
        if sorted(weights) != sorted(arrays):
            raise ValueError(
                f"{name}: the weights' paths differ between the Kerases. "
                f"Only here: {sorted(set(weights) - set(arrays))}; only in "
                f"the source: {sorted(set(arrays) - set(weights))}"
            )
        for path, weight in weights.items():
            if tuple(weight.shape) != arrays[path].shape:
                raise ValueError(
                    f"{name}: {path} is {tuple(weight.shape)} here, "
                    f"{arrays[path].shape} in the source"
                )
            weight.assign(arrays[path])
        _export(model, work, "keras-3", name)


if __name__ == "__main__":
    step, work = sys.argv[1], sys.argv[2]
    from tfrec_tricks.training.run_keras import keras_in_use

    expected = {"source": "tf-keras", "copy": "keras-3"}[step]
    if keras_in_use() != expected:
        raise SystemExit(f"{step} runs under {expected}, not {keras_in_use()}")
    {"source": source, "copy": copy}[step](work)
    print(json.dumps({"done": step}))
