"""tfrec_tricks.layers.top_k: exact top-k, ties to the lower item id."""

import doctest

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.layers import top_k
from tfrec_tricks.layers.top_k import (
    TWO_STAGE_MIN_RATIO,
    brute_force_top_k,
    sort_keys,
    top_k_ids,
    top_k_positions,
)


def test_docstring_examples():
    result = doctest.testmod(top_k, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize(
    "n, k, two_stage",
    [(700, 3, True), (999, 4, True), (4000, 20, True), (499, 7, False)],
)
def test_top_k_ids_is_exact_with_ties(n, k, two_stage):
    assert (n >= TWO_STAGE_MIN_RATIO * k) == two_stage
    rng = np.random.default_rng(n)
    values = np.round(rng.normal(size=(6, n)) * 2).astype("float32")
    values[0] = 1.0  # a row of ties only
    expected = tf.math.top_k(values, k=k).indices.numpy()
    np.testing.assert_array_equal(top_k_ids(tf.constant(values), k), expected)


def test_top_k_positions_breaks_ties_to_the_lower_item_id():
    rng = np.random.default_rng(0)
    row = np.round(rng.normal(size=(5, 40))).astype("float32")  # many ties
    row[:, 3] = -0.0  # equal to 0.0, as in top_k
    row[:, 7] = float("-inf")
    expected = tf.math.top_k(row, k=12).indices.numpy()
    # The same items in another order per row, addressed by id.
    order = np.argsort(rng.random(row.shape), axis=1)
    shuffled = np.take_along_axis(row, order, axis=1)
    position = top_k_positions(tf.constant(shuffled), tf.constant(order), 12)
    np.testing.assert_array_equal(
        np.take_along_axis(order, position.numpy(), axis=1), expected
    )


def test_sort_keys_order_logits_then_lower_ids():
    logits = np.array([-np.inf, -3.5, -0.0, 0.0, 1e-30, 2.0, 2.0, 1e30])
    ids = np.array([1, 2, 3, 4, 5, 9, 6, 7])
    keys = sort_keys(tf.constant(logits, tf.float32), tf.constant(ids))
    order = np.argsort(-keys.numpy(), kind="stable")
    # Larger logit first; equal logits (2.0; -0.0 and 0.0) by lower id.
    np.testing.assert_array_equal(ids[order], [7, 6, 9, 5, 3, 4, 2, 1])


def test_brute_force_top_k_excludes_ids_and_returns_the_product():
    rng = np.random.default_rng(1)
    query = rng.normal(size=(3, 4)).astype("float32")
    table = rng.normal(size=(9, 4)).astype("float32")
    bias = rng.normal(size=(9,)).astype("float32")
    # Row 0 excludes 0 and 5 (twice), row 1 nothing (-1 fillers), row 2
    # all but items 2 and 7: the three asked come 2 or 7, then -inf.
    exclude = np.array(
        [
            [0, 5, 5, -1, -1, -1, -1],
            [-1, -1, -1, -1, -1, -1, -1],
            [0, 1, 3, 4, 5, 6, 8],
        ],
        "int32",
    )
    ids, scores, logits = brute_force_top_k(
        tf.constant(query), tf.constant(table), 3, tf.constant(bias), exclude
    )
    product = query @ table.T + bias
    np.testing.assert_allclose(logits.numpy(), product, rtol=1e-6)
    for row in range(3):
        allowed = [x for x in range(9) if x not in exclude[row]]
        best = sorted(allowed, key=lambda x: -product[row, x])[:3]
        got = ids.numpy()[row]
        np.testing.assert_array_equal(got[: len(best)], best)
        np.testing.assert_allclose(
            scores.numpy()[row, : len(best)], product[row, best], rtol=1e-6
        )
    # Fewer items left than asked: -inf for an excluded id, last.
    assert scores.numpy()[2, 2] == -np.inf
    assert ids.numpy()[2, 2] in exclude[2]


# ------------------------------------------------ the served list, every head

SERVED_N, SERVED_D, SERVED_L = 8, 4, 8  # 7 real items; id 0 is padding
# Histories of 0 to max_len items: repeats, left padding, all but one
# item, the whole catalogue (with a repeat too).
SERVED_HISTORIES = np.array(
    [
        [0, 0, 0, 0, 0, 0, 0, 0],
        [3, 0, 0, 0, 0, 0, 0, 0],
        [5, 2, 0, 0, 0, 0, 0, 0],
        [7, 7, 4, 4, 0, 0, 0, 0],
        [0, 0, 0, 6, 1, 5, 0, 0],
        [1, 2, 3, 4, 5, 6, 0, 0],
        [7, 1, 6, 2, 5, 3, 4, 0],
        [1, 2, 3, 4, 5, 6, 7, 1],
        [2, 2, 2, 2, 2, 2, 2, 2],
    ],
    "int32",
)


def served_heads():
    from tfrec_tricks.layers import MixtureOfSoftmax, SoftmaxCPR, TiedSoftmax

    return {
        "softmax": lambda: TiedSoftmax(),
        "softmax_no_dup": lambda: TiedSoftmax(exclude_history=True),
        "softmax_no_dup, cosine": lambda: TiedSoftmax(
            exclude_history=True, cosine_temperature=0.5
        ),
        "cpr:3": lambda: SoftmaxCPR(reranker_ks=(3,)),
        "cpr:4,2 add, exclude_history": lambda: SoftmaxCPR(
            reranker_ks=(4, 2), merge="add", exclude_history=True
        ),
        "cp, exclude_history": lambda: SoftmaxCPR(
            reranker_ks=(), exclude_history=True
        ),
        "mos": lambda: MixtureOfSoftmax(2),
    }


SERVED_CASES = [
    (name, use_index)
    for name in served_heads()
    for use_index in (False, True)
    if not (name == "mos" and use_index)  # a mixture has no index
]


def reference_served(scores, history, excludes, k):
    """The served list, naively: the items outside the history by score,
    then the history's items by score (ties to the lower id), never 0."""
    seen = set(history[history != 0].tolist()) if excludes else set()
    items = range(1, len(scores))
    by_score = sorted(items, key=lambda item: (-scores[item], item))
    ranked = [i for i in by_score if i not in seen]
    ranked += [i for i in by_score if i in seen]
    return ranked[:k]


@pytest.mark.parametrize(
    "name, use_index", SERVED_CASES, ids=[f"{n}-{i}" for n, i in SERVED_CASES]
)
def test_served_top_k_ranks_history_last_and_never_serves_padding(
    name, use_index
):
    rng = np.random.default_rng(5)
    batch = len(SERVED_HISTORIES)
    inputs = {
        "hidden_states": tf.constant(
            rng.normal(size=(batch, SERVED_L, SERVED_D)).astype("float32")
        ),
        "history_ids": tf.constant(SERVED_HISTORIES),
    }
    table = tf.constant(rng.normal(size=(SERVED_N, SERVED_D)), tf.float32)
    bias = tf.constant(rng.normal(size=(SERVED_N,)), tf.float32)
    head = served_heads()[name]()
    logits = head(inputs, table, item_bias=bias).numpy()  # what is served
    excludes = head.excludes_history(False)
    scores = logits
    if excludes:  # the order of the history's items among themselves
        scores = head(inputs, table, item_bias=bias, exclude_history=False)
        scores = scores.numpy()
    for k in range(1, SERVED_N):
        ids, served = top_k.served_top_k(
            head, inputs, table, k, item_bias=bias, use_index=use_index
        )
        ids, served = ids.numpy(), served.numpy()
        assert ids.shape == served.shape == (batch, k)
        for row, history in enumerate(SERVED_HISTORIES):
            expected = reference_served(scores[row], history, excludes, k)
            assert ids[row].tolist() == expected, (k, row)
            np.testing.assert_allclose(
                served[row], logits[row, expected], rtol=1e-5, atol=1e-5
            )
    with pytest.raises(ValueError, match=f"catalogue's {SERVED_N - 1} real"):
        top_k.served_top_k(head, inputs, table, SERVED_N, item_bias=bias)
