"""TF Serving warmup records: ``assets.extra/tf_serving_warmup_requests``."""

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def write_warmup_requests(
    model_dir: str,
    model_name: str,
    requests: Sequence[tuple[str, Mapping[str, Any]]],
) -> str:
    """Writes ``PredictionLog`` records that TF Serving replays at load.

    TF Serving runs every record of
    ``<version>/assets.extra/tf_serving_warmup_requests`` (a TFRecord file
    of ``tensorflow.serving.PredictionLog`` protos) before it marks the
    version available, so the first real request does not pay for graph
    initialisation.

    Args:
        model_dir: str. The SavedModel version folder.
        model_name: str. The model's name in TF Serving (``model_spec``).
        requests: sequence of ``(signature_name, inputs)``, ``inputs`` a
            dict of arrays (strings as ``str`` / ``bytes``). bool and
            int32 arrays keep their type; other numbers are sent as
            float32.

    Returns:
        The path of the written file.

    Example:

    >>> import tempfile
    >>> from tfrec_tricks.export.warmup import write_warmup_requests
    >>> folder = tempfile.mkdtemp()
    >>> path = write_warmup_requests(
    ...     folder, "demo", [("serving_default", {"history": [["a", "b"]]})])
    >>> os.path.basename(path)
    'tf_serving_warmup_requests'
    """
    from tensorflow_serving.apis import (
        model_pb2,
        predict_pb2,
        prediction_log_pb2,
    )

    if not requests:
        raise ValueError(f"No warmup requests given. Received: {requests!r}")
    path = os.path.join(model_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, inputs in requests:
            request = predict_pb2.PredictRequest(
                model_spec=model_pb2.ModelSpec(
                    name=model_name, signature_name=signature_name
                )
            )
            for key, value in inputs.items():
                array = np.asarray(value)
                if array.dtype.kind in "USO":
                    array = array.astype(object)
                    proto = tf.make_tensor_proto(array, dtype=tf.string)
                elif array.dtype in (np.bool_, np.int32):  # flags, k
                    proto = tf.make_tensor_proto(array)
                else:
                    proto = tf.make_tensor_proto(array.astype(np.float32))
                request.inputs[key].CopyFrom(proto)
            log = prediction_log_pb2.PredictionLog(
                predict_log=prediction_log_pb2.PredictLog(request=request)
            )
            writer.write(log.SerializeToString())
    return path
