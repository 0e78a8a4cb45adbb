"""tfrec_tricks.heads.cpr.partitions: the partition pieces of SoftmaxCPR.

The partitions' values are pinned through ``SoftmaxCPR.call`` in
test_softmax_cpr.py; this tests the module's own functions and the
`CPRPartitions` methods the loss and the candidate scoring compose.
"""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from tests.heads.cpr.test_softmax_cpr import _data, _inputs
from tfrec_tricks.heads import SoftmaxCPR
from tfrec_tricks.heads.cpr.cpr_inputs import CPRInputs
from tfrec_tricks.heads.cpr.partitions import (
    CPRPartitions,
    product_and_rows,
    reranker_sizes,
    row_sources,
)


@pytest.fixture(autouse=True)
def _seeded():
    tf.keras.utils.set_random_seed(1234)


@pytest.mark.parametrize(
    "given, expected", [(3, (3,)), ([5, 2], (5, 2)), (np.int64(4), (4,))]
)
def test_reranker_sizes(given, expected):
    assert reranker_sizes(given) == expected


@pytest.mark.parametrize(
    "given, match",
    [
        (None, "sequence"),
        ((2, 2), "repeat"),
        ((0,), "positive"),
        ((1.5,), "ints"),
    ],
)
def test_bad_reranker_sizes_say_what_was_received(given, match):
    with pytest.raises(ValueError, match=match):
        reranker_sizes(given)


def test_row_sources_are_float32_variables_only():
    table = tf.Variable(tf.zeros((5, 3)))
    bias = tf.Variable(tf.zeros(5))
    assert row_sources(table, bias, 3) == (table, bias)
    assert row_sources(table, None, 3) == (table, None)
    assert row_sources(tf.zeros((5, 3)), None, 3) is None
    assert row_sources(table, bias, 4) is None


def test_product_and_rows_gradient_is_that_of_matmul_and_gather():
    rng = np.random.default_rng(0)
    query = tf.constant(rng.normal(size=(2, 3)), tf.float32)
    table = tf.constant(rng.normal(size=(6, 3)), tf.float32)
    row_ids = tf.constant([[1, 4], [4, 0]])
    weights = tf.constant(rng.normal(size=(2, 6)), tf.float32)

    def loss(written):
        with tf.GradientTape() as tape:
            tape.watch([query, table])
            if written:
                product = tf.matmul(query, table, transpose_b=True)
                rows = tf.gather(table, row_ids)
            else:
                frozen = tf.matmul(query, table, transpose_b=True)
                product, rows = product_and_rows(query, table, row_ids, frozen)
            value = tf.reduce_sum(product * weights) + tf.reduce_sum(rows**2)
        return [value, *tape.gradient(value, [query, table])]

    for expected, got in zip(loss(True), loss(False)):
        np.testing.assert_allclose(
            tf.convert_to_tensor(got), tf.convert_to_tensor(expected), 1e-5
        )


def test_the_partitions_compose_call():
    head = SoftmaxCPR(reranker_ks=(3, 5))
    assert not isinstance(head, CPRPartitions)
    data = _data(seed=2)
    inputs, table = _inputs(data), tf.constant(data["table"])
    logits = head(inputs, table).numpy()
    partitions = CPRPartitions(head)
    assert partitions.head is head
    assert [k for k, _ in partitions.reranker_stages()] == [5, 3]
    hidden, ids, layers, last, table, bias = partitions.read_inputs(
        inputs, table, None
    )
    cpr = partitions.cpr_inputs(hidden, ids, layers, last, table, bias, False)
    assert isinstance(cpr, CPRInputs)
    assert cpr.query.shape == (ids.shape[0], hidden.shape[-1])
    composed, base = partitions.catalogue_logits(
        cpr, tf.not_equal(ids, 0), tf.shape(table)[0]
    )
    np.testing.assert_array_equal(composed.numpy(), logits)
    assert base.shape == logits.shape
    assert partitions.uses_history(False) and not partitions.excluding(False)


def test_cpr_inputs_are_frozen():
    cpr = CPRInputs(*[tf.zeros(1)] * 6, training=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cpr.training = True
