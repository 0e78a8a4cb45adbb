"""write_warmup_requests: the PredictionLog records TF Serving replays."""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow_serving.apis import prediction_log_pb2

from tfrec_tricks.export.warmup import WARMUP_FILE, write_warmup_requests


def test_records_hold_each_request_in_order(tmp_path):
    path = write_warmup_requests(
        str(tmp_path),
        "demo",
        [
            ("serving_default", {"history": [["a", "b"]]}),
            (
                "score",
                {
                    "history": [["c"]],
                    "weights": [[1, 2]],
                    "k": np.array([3], np.int32),
                    "history_last": np.array([True]),
                },
            ),
        ],
    )
    assert path == str(tmp_path / WARMUP_FILE)
    logs = []
    for record in tf.data.TFRecordDataset(path):
        log = prediction_log_pb2.PredictionLog()
        log.ParseFromString(record.numpy())
        logs.append(log.predict_log.request)
    assert [(r.model_spec.name, r.model_spec.signature_name) for r in logs] == [
        ("demo", "serving_default"),
        ("demo", "score"),
    ]
    history = tf.make_ndarray(logs[0].inputs["history"])
    assert history.tolist() == [[b"a", b"b"]]
    weights = tf.make_ndarray(logs[1].inputs["weights"])
    assert weights.dtype == np.float32  # numbers are sent as float32
    np.testing.assert_array_equal(weights, [[1.0, 2.0]])
    k = tf.make_ndarray(logs[1].inputs["k"])
    assert k.dtype == np.int32 and k.tolist() == [3]
    flag = tf.make_ndarray(logs[1].inputs["history_last"])
    assert flag.dtype == np.bool_ and flag.tolist() == [True]


def test_no_requests_is_refused(tmp_path):
    with pytest.raises(ValueError, match="No warmup requests"):
        write_warmup_requests(str(tmp_path), "demo", [])
    assert not (tmp_path / WARMUP_FILE).exists()
