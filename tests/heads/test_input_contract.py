"""tfrec_tricks.heads.input_contract: what every head reads, and how."""

import doctest

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.heads import MixtureOfSoftmax, SoftmaxCPR, input_contract
from tfrec_tricks.heads.input_contract import (
    last_positions,
    unpack_head_inputs,
)


def test_docstring_examples():
    result = doctest.testmod(input_contract, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_last_positions_left_right_interior_and_empty_rows():
    ids = tf.constant(
        [
            [4, 2, 4, 0, 0, 0],  # right-padded
            [0, 0, 0, 4, 2, 4],  # left-padded
            [3, 0, 5, 0, 0, 0],  # a gap: the last real id still wins
            [1, 2, 3, 4, 5, 6],  # full
            [0, 0, 0, 0, 0, 0],  # empty: position 0
        ]
    )
    np.testing.assert_array_equal(last_positions(ids), [2, 5, 2, 5, 0])
    # An empty row reads 0 whatever the width.
    for width in (1, 3, 50):
        assert last_positions(tf.zeros([1, width], tf.int32)).numpy()[0] == 0


def test_heads_default_to_the_common_rule():
    rng = np.random.default_rng(0)
    ids = tf.constant([[3, 5, 0, 0], [0, 0, 0, 0], [0, 7, 7, 1]])
    inputs = {
        "hidden_states": tf.constant(rng.normal(size=(3, 4, 4)), tf.float32),
        "history_ids": ids,
    }
    hidden, got, layers, last = unpack_head_inputs(inputs)
    assert layers is None and got.dtype == tf.int32
    np.testing.assert_array_equal(last, last_positions(ids))
    table = tf.constant(rng.normal(size=(9, 4)), tf.float32)
    for head in (SoftmaxCPR(reranker_ks=(2,)), MixtureOfSoftmax(2)):
        explicit = {**inputs, "last_positions": last_positions(ids)}
        np.testing.assert_array_equal(
            head(inputs, table).numpy(), head(explicit, table).numpy()
        )


@pytest.mark.parametrize("head", ["cpr", "mos"])
def test_an_empty_row_does_not_depend_on_the_batch_width(head):
    # The empty row reads position 0: widening the batch (more padding
    # states after it) leaves its logits unchanged.
    rng = np.random.default_rng(1)
    table = tf.constant(rng.normal(size=(12, 4)), tf.float32)
    layer = (
        SoftmaxCPR(reranker_ks=(3,), use_mi=True, mi_layers=1)
        if head == "cpr"
        else MixtureOfSoftmax(2)
    )
    hidden = rng.normal(size=(2, 7, 4)).astype("float32")
    ids = np.array([[0] * 7, [4, 9, 4, 2, 8, 1, 3]], "int32")
    wide = layer({"hidden_states": hidden, "history_ids": ids}, table)
    alone = layer(
        {"hidden_states": hidden[:1, :1], "history_ids": ids[:1, :1]}, table
    )
    # (Batch-size dependent matmul rounding only.)
    np.testing.assert_allclose(
        wide.numpy()[0], alone.numpy()[0], rtol=1e-5, atol=1e-5
    )
