"""One-call layer checks, in the spirit of Keras' own ``run_layer_test``.

``run_layer_test`` checks, for one layer class and one set of arguments: the
config round trip (``get_config`` / ``from_config`` and Keras
serialize/deserialize, JSON-safe), eager, ``tf.function`` and functional-model
calls that agree, output shape and dtype, that every trainable weight receives
a gradient, and a ``mixed_float16`` call with finite outputs.
``assert_saved_model_in_fresh_process`` saves a layer or model with
``tf.saved_model.save`` and reloads it in another Python process in which
importing ``tfrec_tricks`` fails, as TF Serving would.
"""

import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable

import numpy as np
import tensorflow as tf

BLOCK_PACKAGE_PREAMBLE = r"""
import importlib.abc, sys

class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "tfrec_tricks" or name.startswith("tfrec_tricks."):
            raise ImportError("tfrec_tricks is blocked in this process")

sys.meta_path.insert(0, _Block())
try:
    import tfrec_tricks  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("tfrec_tricks should not be importable here")
"""
"""Start of a script for ``python -c`` in which ``import tfrec_tricks``
fails, as in TF Serving: prepend it to code that loads a SavedModel."""

_FRESH_PROCESS_SCRIPT = (
    BLOCK_PACKAGE_PREAMBLE
    + r"""
import numpy as np
import tensorflow as tf

model_dir, inputs_path, outputs_path = sys.argv[1:4]
loaded = tf.saved_model.load(model_dir)
serve = loaded.signatures["serving_default"]
with np.load(inputs_path) as data:
    feed = {name: tf.constant(data[name]) for name in data.files}
first = {k: v.numpy() for k, v in serve(**feed).items()}
second = {k: v.numpy() for k, v in serve(**feed).items()}
for key in first:
    if not np.array_equal(first[key], second[key]):
        raise SystemExit(f"served output {key} differs between two calls")
np.savez(outputs_path, **first)
"""
)


def _to_tensors(data: Any) -> Any:
    return tf.nest.map_structure(tf.convert_to_tensor, data)


def _call(layer: Callable, inputs: Any, call_kwargs: dict) -> Any:
    return layer(inputs, **call_kwargs)


def _symbolic_inputs(data: Any) -> Any:
    def make(tensor: tf.Tensor) -> Any:
        return tf.keras.Input(shape=tensor.shape[1:], dtype=tensor.dtype)

    return tf.nest.map_structure(make, data)


def _assert_close(actual: Any, expected: Any, atol: float, msg: str) -> None:
    tf.nest.assert_same_structure(actual, expected)
    for a, e in zip(tf.nest.flatten(actual), tf.nest.flatten(expected)):
        np.testing.assert_allclose(
            np.asarray(a), np.asarray(e), atol=atol, rtol=atol, err_msg=msg
        )


def run_layer_test(
    layer_cls: type,
    init_kwargs: dict,
    input_data: Any,
    expected_output_shape: Any = None,
    expected_output_dtype: Any = None,
    call_kwargs: dict | None = None,
    expected_num_trainable_weights: int | None = None,
    run_training_step: bool = True,
    run_mixed_precision: bool = True,
    run_functional: bool = True,
    atol: float = 1e-5,
) -> tf.keras.layers.Layer:
    """Runs the standard checks on one layer configuration.

    In order: the config round trip; an eager call (shape, dtype, weight
    count); a ``tf.function`` call, a revived layer's call and (with
    ``run_functional``) a functional model's call, each agreeing with the
    eager one; a gradient for every trainable weight (with
    ``run_training_step``); a ``mixed_float16`` call (with
    ``run_mixed_precision``).

    Args:
        layer_cls: the layer class.
        init_kwargs: dict. Constructor arguments.
        input_data: a tensor, or a list / dict of tensors, batch first.
        expected_output_shape: tuple or nested tuples. Checked when given.
        expected_output_dtype: dtype the (float32-policy) output must have.
        call_kwargs: dict. Extra call arguments (e.g. ``training``).
        expected_num_trainable_weights: int. Checked when given.
        run_training_step: bool. Check every trainable weight gets a
            gradient of ``sum(outputs)``.
        run_mixed_precision: bool. Call under ``mixed_float16``.
        run_functional: bool. Call inside a functional model.
        atol: float. Tolerance between eager, graph and functional calls.

    Returns:
        The built layer used for the eager call.
    """
    call_kwargs = dict(call_kwargs or {})
    inputs = _to_tensors(input_data)
    layer, revived = _check_config_round_trip(layer_cls, init_kwargs)
    eager = _call(layer, inputs, call_kwargs)
    _check_eager_outputs(
        layer,
        eager,
        expected_output_shape,
        expected_output_dtype,
        expected_num_trainable_weights,
    )
    _check_graph_call(layer, inputs, call_kwargs, eager, atol)
    _check_revived_call(revived, layer, inputs, call_kwargs, eager, atol)
    if run_functional:
        _check_functional_call(layer, inputs, call_kwargs, eager, atol)
    if run_training_step and layer.trainable_weights:
        _check_gradients(layer, inputs, call_kwargs)
    if run_mixed_precision:
        _check_mixed_precision(layer_cls, init_kwargs, inputs, call_kwargs)
    return layer


def _check_config_round_trip(
    layer_cls: type, init_kwargs: dict
) -> tuple[tf.keras.layers.Layer, tf.keras.layers.Layer]:
    """Checks the JSON-safe config round trip of a new layer.

    Returns:
        The new layer, and the (unbuilt) layer revived from its config.
    """
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    json.dumps(config)
    for name in init_kwargs:
        assert name in config, f"get_config() misses argument {name!r}"
    revived = layer_cls.from_config(config)
    assert revived.get_config() == config, "from_config changed the config"
    serialized = tf.keras.utils.serialize_keras_object(layer)
    json.dumps(serialized)
    deserialized = tf.keras.utils.deserialize_keras_object(serialized)
    assert type(deserialized) is layer_cls
    assert deserialized.get_config() == config
    return layer, revived


def _check_eager_outputs(
    layer: tf.keras.layers.Layer,
    eager: Any,
    expected_output_shape: Any,
    expected_output_dtype: Any,
    expected_num_trainable_weights: int | None,
) -> None:
    """Checks the eager outputs' shape and dtype and the weight count, each
    when expected."""
    if expected_output_shape is not None:
        shapes = tf.nest.map_structure(
            lambda t: tuple(t.shape), eager, expand_composites=False
        )
        assert shapes == expected_output_shape, (
            f"output shape {shapes} != {expected_output_shape}"
        )
    if expected_output_dtype is not None:
        for tensor in tf.nest.flatten(eager):
            assert tensor.dtype == tf.as_dtype(expected_output_dtype), (
                f"output dtype {tensor.dtype} != {expected_output_dtype}"
            )
    if expected_num_trainable_weights is not None:
        assert len(layer.trainable_weights) == expected_num_trainable_weights, (
            f"{len(layer.trainable_weights)} trainable weights, expected "
            f"{expected_num_trainable_weights}"
        )


def _check_graph_call(
    layer: Callable, inputs: Any, call_kwargs: dict, eager: Any, atol: float
) -> None:
    """Checks that a ``tf.function`` call agrees with the eager call."""
    graph = tf.function(lambda x: _call(layer, x, call_kwargs))(inputs)
    _assert_close(graph, eager, atol, "tf.function output != eager output")


def _check_revived_call(
    revived: tf.keras.layers.Layer,
    layer: tf.keras.layers.Layer,
    inputs: Any,
    call_kwargs: dict,
    eager: Any,
    atol: float,
) -> None:
    """Checks that ``revived``, given ``layer``'s weights, agrees too."""
    # Called once first: a layer has no weights to set until it is built.
    revived(inputs, **call_kwargs)
    revived.set_weights(layer.get_weights())
    _assert_close(
        _call(revived, inputs, call_kwargs),
        eager,
        atol,
        "from_config layer with copied weights gives other outputs",
    )


def _check_functional_call(
    layer: Callable, inputs: Any, call_kwargs: dict, eager: Any, atol: float
) -> None:
    """Checks that a functional model around ``layer`` agrees too."""
    symbolic = _symbolic_inputs(inputs)
    outputs = _call(layer, symbolic, call_kwargs)
    model = tf.keras.Model(symbolic, outputs)
    _assert_close(
        model(inputs), eager, atol, "functional model output != eager"
    )


def _check_gradients(
    layer: tf.keras.layers.Layer, inputs: Any, call_kwargs: dict
) -> None:
    """Checks that every trainable weight gets a gradient of the outputs'
    sum, in a training call."""
    with tf.GradientTape() as tape:
        outputs = _call(layer, inputs, {**call_kwargs, "training": True})
        loss = tf.add_n(
            [
                tf.reduce_sum(tf.cast(t, tf.float32))
                for t in tf.nest.flatten(outputs)
            ]
        )
    grads = tape.gradient(loss, layer.trainable_weights)
    missing = [
        w.name for w, g in zip(layer.trainable_weights, grads) if g is None
    ]
    assert not missing, f"no gradient reaches {missing}"


def _check_mixed_precision(
    layer_cls: type, init_kwargs: dict, inputs: Any, call_kwargs: dict
) -> None:
    """Checks that a new layer under ``mixed_float16`` gives finite floating
    outputs; restores the global policy."""
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        mixed = layer_cls(**init_kwargs)
        outputs = _call(mixed, inputs, call_kwargs)
        for tensor in tf.nest.flatten(outputs):
            if tensor.dtype.is_floating:
                assert np.all(np.isfinite(tensor.numpy())), (
                    "non-finite output under mixed_float16"
                )
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)


class _Serving(tf.Module):
    def __init__(self, layer: Callable, structure: Any, call_kwargs: dict):
        super().__init__()
        self.layer = layer
        self._structure = structure
        self._call_kwargs = call_kwargs

    def serve(self, **flat_inputs: tf.Tensor) -> dict:
        ordered = [flat_inputs[f"input_{i}"] for i in range(len(flat_inputs))]
        inputs = tf.nest.pack_sequence_as(self._structure, ordered)
        outputs = self.layer(inputs, **self._call_kwargs)
        return {
            f"output_{i}": t for i, t in enumerate(tf.nest.flatten(outputs))
        }


def assert_saved_model_in_fresh_process(
    layer: Callable,
    input_data: Any,
    call_kwargs: dict | None = None,
    atol: float = 1e-5,
) -> dict:
    """Saves ``layer`` (a layer or model) and compares a fresh-process reload.

    The other process blocks ``import tfrec_tricks``, loads the SavedModel
    with plain TensorFlow, calls its ``serving_default`` signature twice
    (which must give identical outputs) and returns the outputs, which must
    equal the in-process outputs.

    Args:
        layer: a built layer or model.
        input_data: a tensor or a list / dict of tensors, batch first.
        call_kwargs: dict. Extra call arguments fixed in the signature.
        atol: float. Tolerance against the in-process outputs.

    Returns:
        The served outputs, as a dict of NumPy arrays.
    """
    call_kwargs = dict(call_kwargs or {})
    inputs = _to_tensors(input_data)
    flat = tf.nest.flatten(inputs)
    module = _Serving(layer, inputs, call_kwargs)
    signature = {
        f"input_{i}": tf.TensorSpec(
            [None, *t.shape[1:]], t.dtype, name=f"input_{i}"
        )
        for i, t in enumerate(flat)
    }
    function = tf.function(
        lambda **kw: module.serve(**kw),
    ).get_concrete_function(**signature)
    expected = {
        f"output_{i}": t.numpy()
        for i, t in enumerate(tf.nest.flatten(layer(inputs, **call_kwargs)))
    }
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "model")
        tf.saved_model.save(module, model_dir, signatures=function)
        inputs_path = os.path.join(tmp, "inputs.npz")
        outputs_path = os.path.join(tmp, "outputs.npz")
        np.savez(
            inputs_path, **{f"input_{i}": t.numpy() for i, t in enumerate(flat)}
        )
        # Run from the temporary directory so the working tree's package is
        # not on sys.path either.
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                _FRESH_PROCESS_SCRIPT,
                model_dir,
                inputs_path,
                outputs_path,
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
            env=dict(os.environ),
        )
        if result.returncode != 0:
            raise AssertionError(
                "reload in a fresh process failed:\n" + result.stderr[-4000:]
            )
        with np.load(outputs_path) as data:
            served = {name: data[name] for name in data.files}
    for key, value in expected.items():
        np.testing.assert_allclose(
            served[key],
            value,
            atol=atol,
            rtol=atol,
            err_msg=f"served {key} differs from the in-process output",
        )
    return served
