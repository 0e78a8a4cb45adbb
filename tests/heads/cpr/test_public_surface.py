"""SoftmaxCPR's public surface: what a user calls, and nothing internal.

The partition logic lives in a `CPRPartitions` the layer composes; these
tests keep its helpers (and any future one) off the layer, and keep that
object out of the layer's checkpoint.
"""

import inspect
import os
import tempfile

import pytest
import tensorflow as tf

from tfrec_tricks.heads import OutputHead, SoftmaxCPR

# Beyond tf.keras.layers.Layer's own (call, build, get_config,
# from_config, ...): the OutputHead contract, which a model and the
# serving module call every head by.
USER_FACING = {
    "cross_entropy",
    "position_cross_entropy",
    "top_k_candidates",
    "score_candidates",
    "has_index",
    "has_cross_entropy",
    "excludes_history",
    "reads_last_state_only",
    "check_k",
}
# The constructor's arguments, stored under their own names, and the
# sublayers `build` creates (the layer's weights).
ATTRIBUTES = {
    "use_context",
    "use_pointer",
    "reranker_ks",
    "use_mi",
    "mi_layers",
    "mi_window",
    "merge",
    "dropout",
    "exclude_history",
    "mask_padding",
    "output_dim",
    "start_as_softmax",
    "rerank_within_candidates",
    "kernel_initializer",
    "bias_initializer",
    "base_projection",
    "context_projection",
    "pointer_projection",
    "key_projection",
    "reranker_projections",
    "mi_projection",
    "dropout_layer",
}
# Keras' own, the class's and an instance's (``built``, ``name``, ...).
LAYER = set(dir(tf.keras.layers.Layer)) | set(dir(tf.keras.layers.Layer()))


@pytest.fixture(autouse=True)
def _seeded():
    tf.keras.utils.set_random_seed(1234)


def _public(names):
    return {name for name in names if not name.startswith("_")} - LAYER


def _built_head(**kwargs):
    head = SoftmaxCPR(**kwargs)
    inputs = {
        "hidden_states": tf.random.normal((2, 4, 8)),
        "history_ids": tf.constant([[0, 5, 2, 5], [7, 1, 0, 0]]),
    }
    head(inputs, tf.random.normal((10, 8)))
    return head


def test_the_class_adds_only_what_a_user_calls():
    assert _public(dir(SoftmaxCPR)) == USER_FACING
    # Nothing beyond the contract every head shares.
    assert _public(dir(OutputHead)) == USER_FACING


def test_a_built_layer_shows_its_arguments_and_weights_only():
    head = _built_head(reranker_ks=(3,), use_mi=True, mi_layers=1, dropout=0.1)
    public = _public(dir(head))
    assert public == USER_FACING | ATTRIBUTES
    methods = {name for name in public if inspect.ismethod(getattr(head, name))}
    # (check_k is a static method; has_index, has_cross_entropy properties.)
    assert methods == USER_FACING - {
        "check_k",
        "has_index",
        "has_cross_entropy",
    }


def test_the_partitions_are_no_checkpoint_dependency():
    head = _built_head(reranker_ks=(3, 5))
    path = tf.train.Checkpoint(head=head).write(
        os.path.join(tempfile.mkdtemp(), "ckpt")
    )
    keys = [name for name, _ in tf.train.list_variables(path)]
    # Every key is a sublayer's weight (the exact keys, under tf-keras and
    # Keras 3, are those of the layers before the partitions moved out:
    # tests/golden and benchmarks.bit_identity).
    owners = {key.split("/")[1] for key in keys if key.startswith("head/")}
    assert {"base_projection", "context_projection"} <= owners <= ATTRIBUTES
    assert not any("partitions" in key for key in keys)
