"""tfrec_tricks.heads.cpr.loss: SoftmaxCPR.cross_entropy and
position_cross_entropy (scatter-free) against the written-out logits.

The written-out logits are those of ``SoftmaxCPR.call``, themselves pinned
to the loop-based NumPy reference in test_softmax_cpr.py; the losses are
also checked against that reference directly, in float64.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.heads.cpr.test_softmax_cpr import (
    CONFIGS,
    N,
    _data,
    _inputs,
    _reference_base_logits,
    reference,
)
from tfrec_tricks.evaluation.full_ranking import tf_target_ranks
from tfrec_tricks.heads import SoftmaxCPR

LABELS = tf.constant([3, 9, 5, 8])


@pytest.fixture(autouse=True)
def _seeded():
    tf.keras.utils.set_random_seed(1234)


def _setup(name, use_bias=True, seed=None, scale=1.0):
    config = CONFIGS[name]
    data = _data(seed=len(name) if seed is None else seed)
    data["table"] = data["table"] * scale
    layer = SoftmaxCPR(**config)
    mi_layers = config.get("mi_layers", 0) == 2
    inputs = _inputs(data, mi_layers)
    table = tf.Variable(data["table"])
    bias = tf.Variable(data["bias"]) if use_bias else None
    layer(inputs, table, item_bias=bias)
    layers = [data["layer0"], data["hidden"]] if mi_layers else None
    return layer, data, inputs, table, bias, layers


def _both(layer, inputs, table, bias, training, labels=LABELS, weight=0.7):
    """Loss, gradients and ranks: written-out logits, then scatter-free."""
    weights = [*layer.trainable_weights, table]
    if bias is not None:
        weights.append(bias)
    sources = [*weights, inputs["hidden_states"]]
    results = []
    for written in (True, False):
        with tf.GradientTape() as tape:
            tape.watch(inputs["hidden_states"])
            if written:
                logits, base = layer(
                    inputs,
                    table,
                    item_bias=bias,
                    training=training,
                    return_base_logits=True,
                )
                loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels, logits
                )
                base_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels, base
                )
                ranks = tf_target_ranks(logits, labels)
            else:
                loss, base_loss, ranks = layer.cross_entropy(
                    inputs, table, labels, item_bias=bias, training=training
                )
            total = tf.reduce_sum(loss) + weight * tf.reduce_sum(base_loss)
        grads = tape.gradient(total, sources)
        results.append(
            {
                "loss": loss.numpy(),
                "base_loss": base_loss.numpy(),
                "ranks": ranks.numpy(),
                "grads": [
                    None if g is None else np.asarray(tf.convert_to_tensor(g))
                    for g in grads
                ],
            }
        )
    return results


def _assert_gradients_agree(expected, actual):
    for want, got in zip(expected, actual):
        assert (want is None) == (got is None)
        if want is None:
            continue
        # Float32 rounding of sums whose terms cancel (a re-scored item's
        # dense and sparse paths): compared relative to the tensor's scale.
        scale = np.abs(want).max() + 1e-30
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5 * scale)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("use_bias", [True, False])
def test_matches_the_written_out_logits(name, training, use_bias):
    layer, _, inputs, table, bias, _ = _setup(name, use_bias)
    written, free = _both(layer, inputs, table, bias, training)
    np.testing.assert_allclose(
        free["loss"], written["loss"], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        free["base_loss"], written["base_loss"], rtol=1e-5
    )
    np.testing.assert_array_equal(free["ranks"], written["ranks"])
    _assert_gradients_agree(written["grads"], free["grads"])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_losses_match_the_numpy_reference(name):
    layer, data, inputs, table, bias, layers = _setup(name)
    logits = reference(layer, data, layers=layers)  # float64 [B, N]
    labels = LABELS.numpy()
    rows = np.arange(len(labels))

    def cross_entropy(z):
        top = z.max(axis=1, keepdims=True)
        normaliser = top[:, 0] + np.log(np.exp(z - top).sum(axis=1))
        return normaliser - z[rows, labels]

    base = np.array(
        _reference_base_logits(layer, data, layers is not None), "float64"
    )
    if layer.mask_padding:
        base[:, 0] = -1e9
    loss, base_loss, _ = layer.cross_entropy(
        inputs, table, LABELS, item_bias=bias
    )
    np.testing.assert_allclose(
        loss, cross_entropy(logits), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        base_loss, cross_entropy(base), rtol=1e-5, atol=1e-5
    )


def test_ranks_of_other_labels_than_the_loss_reads():
    layer, _, inputs, table, bias, _ = _setup("CPR_multi")
    rank_labels = tf.constant([3, 2, 5, 10])
    loss, _, ranks = layer.cross_entropy(
        inputs, table, LABELS, item_bias=bias, rank_labels=rank_labels
    )
    logits = layer(inputs, table, item_bias=bias)
    np.testing.assert_array_equal(ranks, tf_target_ranks(logits, rank_labels))
    np.testing.assert_allclose(
        loss,
        tf.nn.sparse_softmax_cross_entropy_with_logits(LABELS, logits),
        rtol=1e-5,
        atol=1e-5,
    )


def test_padding_label_scores_the_padding_logit():
    layer, _, inputs, table, bias, _ = _setup("CPR")
    labels = tf.constant([0, 9, 0, 8])
    logits = layer(inputs, table, item_bias=bias)
    loss, _, ranks = layer.cross_entropy(inputs, table, labels, item_bias=bias)
    expected = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    np.testing.assert_array_equal(ranks, tf_target_ranks(logits, labels))
    assert ranks[0] == N - 1


@pytest.mark.parametrize("name", ["CPR_multi_Mi2", "CPR_multi", "add_CPR"])
def test_peaked_base_logits_keep_the_loss_exact(name):
    # Large logits whose top-k the reranker demotes: the re-scored items
    # hold nearly all of the base softmax's mass (the whole sum minus
    # theirs would cancel in float32; the rest is summed as it is).
    layer, _, inputs, table, bias, _ = _setup(name, scale=4.0)
    written, free = _both(layer, inputs, table, bias, training=True)
    if name != "add_CPR":
        logits, base = layer(
            inputs, table, item_bias=bias, return_base_logits=True
        )
        ratios = tf.exp(
            tf.reduce_logsumexp(base, 1) - tf.reduce_logsumexp(logits, 1)
        )
        assert float(tf.reduce_max(ratios)) > 50  # the case this is for
    np.testing.assert_allclose(
        free["loss"], written["loss"], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        free["base_loss"], written["base_loss"], rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(free["ranks"], written["ranks"])
    _assert_gradients_agree(written["grads"], free["grads"])


def test_graph_mode_matches_eager():
    layer, _, inputs, table, bias, _ = _setup("CPR_Mi")
    eager = layer.cross_entropy(inputs, table, LABELS, item_bias=bias)
    graph = tf.function(
        lambda: layer.cross_entropy(inputs, table, LABELS, item_bias=bias)
    )()
    for want, got in zip(eager, graph):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def _float_scatters_of_shape(graph, shape):
    kinds = {
        "TensorScatterUpdate",
        "TensorScatterAdd",
        "ScatterNd",
        "UnsortedSegmentSum",
    }
    found = []
    for op in graph.get_operations():
        if op.type in kinds and any(
            out.shape.as_list() == shape and out.dtype.is_floating
            for out in op.outputs
        ):
            found.append(op.type)
    for function in graph._functions.values():
        found += _float_scatters_of_shape(function.graph, shape)
    return found


@pytest.mark.parametrize("name", ["CPR", "CPR_Mi", "add_CPR"])
def test_no_batch_by_catalogue_scatter_forward_or_backward(name):
    layer, _, inputs, table, bias, _ = _setup(name)

    def step(written):
        @tf.function
        def run():
            with tf.GradientTape() as tape:
                if written:
                    logits = layer(inputs, table, item_bias=bias, training=True)
                    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
                        LABELS, logits
                    )
                else:
                    loss, _, _ = layer.cross_entropy(
                        inputs, table, LABELS, item_bias=bias, training=True
                    )
            return tape.gradient(
                tf.reduce_sum(loss), [table, *layer.trainable_weights]
            )

        return run.get_concrete_function().graph

    shape = [LABELS.shape[0], N]
    # The written-out logits scatter floats into [B, N]; the loss does not
    # (its one [B, N] scatter is the boolean mask of the re-scored items,
    # forward only).
    assert _float_scatters_of_shape(step(written=True), shape)
    assert _float_scatters_of_shape(step(written=False), shape) == []


# ------------------------------------------------- every target position


def _position_case(name, seed=3):
    layer, data, inputs, table, bias, _ = _setup(name, seed=seed)
    ids = data["ids"]
    rng = np.random.default_rng(seed)
    targets = rng.integers(1, N, size=ids.shape).astype("int32")
    # Targets only after real items, and not after every one.
    targets[(ids == 0) | (rng.random(ids.shape) < 0.3)] = 0
    return layer, data, inputs, table, bias, tf.constant(targets)


def _expanded(data, inputs, targets):
    """`SequentialRetrievalModel.expand_positions` of the inputs."""
    rows, positions = np.nonzero(targets.numpy())
    width = data["ids"].shape[1]
    keep = np.arange(width)[None, :] <= positions[:, None]
    expanded = {
        "hidden_states": tf.gather(inputs["hidden_states"], rows),
        "history_ids": tf.constant(
            np.where(keep, data["ids"][rows], 0).astype("int32")
        ),
    }
    if "layer_hidden_states" in inputs:
        expanded["layer_hidden_states"] = [
            tf.gather(x, rows) for x in inputs["layer_hidden_states"]
        ]
    labels = tf.constant(targets.numpy()[rows, positions])
    return expanded, labels


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_position_matches_the_expanded_rows(name):
    layer, data, inputs, table, bias, targets = _position_case(name)
    expanded, labels = _expanded(data, inputs, targets)
    weights = [*layer.trainable_weights, table]
    if bias is not None:
        weights.append(bias)
    results = []
    for per_position in (False, True):
        with tf.GradientTape() as tape:
            tape.watch(inputs["hidden_states"])
            if per_position:
                out = layer.position_cross_entropy(
                    inputs, table, targets, item_bias=bias, training=True
                )
            else:
                # The expanded states are gathers of the inputs' states,
                # so both gradients reach inputs["hidden_states"].
                expanded, labels = _expanded(data, inputs, targets)
                out = layer.cross_entropy(
                    expanded, table, labels, item_bias=bias, training=True
                )
            total = tf.reduce_sum(out[0]) + 0.7 * tf.reduce_sum(out[1])
        grads = tape.gradient(total, [*weights, inputs["hidden_states"]])
        results.append((out, grads))
    (want, want_grads), (got, got_grads) = results
    for a, b in zip(got[:2], want[:2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[2], want[2])
    _assert_gradients_agree(
        [
            None if g is None else np.asarray(tf.convert_to_tensor(g))
            for g in want_grads
        ],
        [
            None if g is None else np.asarray(tf.convert_to_tensor(g))
            for g in got_grads
        ],
    )


def test_every_position_ranks_the_true_targets_under_other_labels():
    layer, data, inputs, table, bias, targets = _position_case("CPR_multi")
    expanded, labels = _expanded(data, inputs, targets)
    perturbed = tf.reverse(labels, [0])
    got = layer.position_cross_entropy(
        inputs, table, targets, item_bias=bias, labels=perturbed
    )
    want = layer.cross_entropy(
        expanded, table, perturbed, item_bias=bias, rank_labels=labels
    )
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[2], want[2])


def test_every_position_refuses_last_positions():
    layer, data, inputs, table, bias, targets = _position_case("CPR")
    with pytest.raises(ValueError, match="last_positions"):
        layer.position_cross_entropy(
            {**inputs, "last_positions": tf.constant([3, 5, 0, 5])},
            table,
            targets,
            item_bias=bias,
        )
