"""tfrec_tricks.heads.cpr.softmax_cpr: SoftmaxCPR against a loop-based NumPy
reference (its candidate scoring: test_candidates.py; its loss:
test_loss.py)."""

import json

import numpy as np
import pytest
import tensorflow as tf

import tfrec_tricks.heads
from tfrec_tricks import testing
from tfrec_tricks.heads import SoftmaxCPR

NEG = -1e9
N, D, L = 14, 4, 6

# Row 0 right-padded with a duplicate, row 1 left-padded with a triple,
# row 2 all padding, row 3 full.
HISTORY = np.array(
    [
        [3, 5, 3, 7, 0, 0],
        [0, 0, 2, 9, 2, 2],
        [0, 0, 0, 0, 0, 0],
        [1, 4, 6, 8, 10, 4],
    ],
    "int32",
)


@pytest.fixture(autouse=True)
def _seeded():
    # Layer weights come from unseeded initializers: fix them per test.
    tf.keras.utils.set_random_seed(1234)


def _data(seed=0, batch=None):
    rng = np.random.default_rng(seed)
    ids = HISTORY if batch is None else HISTORY[:batch]
    b = ids.shape[0]
    return {
        "hidden": rng.normal(size=(b, L, D)).astype("float32"),
        "layer0": rng.normal(size=(b, L, D)).astype("float32"),
        "ids": ids,
        "table": rng.normal(size=(N, D)).astype("float32"),
        "bias": rng.normal(size=(N,)).astype("float32"),
    }


def _inputs(data, mi_layers=False):
    inputs = {"hidden_states": data["hidden"], "history_ids": data["ids"]}
    if mi_layers:
        inputs["layer_hidden_states"] = [data["layer0"], data["hidden"]]
    return {k: tf.nest.map_structure(tf.constant, v) for k, v in inputs.items()}


# ---------------------------------------------------------------- reference


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _proj(dense, x):
    kernel, bias = (w.astype("float64") for w in dense.get_weights())
    return x @ kernel + bias


def _reference_query(layer, hidden, ids, i, layers=None):
    """Row ``i``'s real positions and query ``q`` (``[h ; Mi]`` with Mi)."""
    real = [t for t in range(L) if ids[i, t] != 0]
    last = real[-1] if real else 0  # an empty row reads position 0
    q = hidden[i, last]
    if layer.use_mi:
        sources = layers if layers is not None else [hidden]
        parts = []
        for states in sources[::-1][: layer.mi_layers]:
            for j in range(layer.mi_window):
                p = last - j
                ok = p >= 0 and ids[i, p] != 0
                parts.append(states[i, p] if ok else np.zeros(D))
        mixed = _proj(layer.mi_projection, np.concatenate(parts))
        q = np.concatenate([q, _gelu(mixed)])
    return real, q


def reference(layer, data, use_bias=True, layers=None, training=False):
    """Softmax-CPR by loops over rows and items, from the documented math."""
    hidden = data["hidden"].astype("float64")
    ids = data["ids"]
    table = data["table"].astype("float64")
    bias = data["bias"].astype("float64") if use_bias else np.zeros(N)
    ks = list(layer.reranker_ks)
    out = np.zeros((ids.shape[0], N))
    for i in range(ids.shape[0]):
        real, q = _reference_query(layer, hidden, ids, i, layers)
        f_base = _proj(layer.base_projection, q)
        logit = table @ f_base + bias
        if layer.mask_padding:
            logit[0] = NEG
        for k in sorted(ks, reverse=True):
            f_rerank = _proj(layer.reranker_projections[ks.index(k)], q)
            # top-k, ties to the lower id
            top = sorted(range(N), key=lambda x: (-logit[x], x))[:k]
            for x in top:
                if layer.merge == "replace":
                    logit[x] = table[x] @ f_rerank + bias[x]
                else:
                    logit[x] += table[x] @ f_rerank
        for x in sorted({int(ids[i, t]) for t in real}):
            if layer.exclude_history and not training:
                logit[x] = NEG
                continue
            if not (layer.use_context or layer.use_pointer):
                continue
            f_context = (
                _proj(layer.context_projection, q)
                if layer.use_context
                else None
            )
            if layer.merge == "replace":
                f_item = f_context if layer.use_context else f_base
                value = table[x] @ f_item + bias[x]
            else:
                value = table[x] @ f_base + bias[x]
                if layer.use_context:
                    value += table[x] @ f_context
            if layer.use_pointer:
                keys = [
                    _proj(layer.key_projection, hidden[i, s])
                    for s in real
                    if ids[i, s] == x
                ]
                f_pointer = _proj(layer.pointer_projection, q)
                value += f_pointer @ np.mean(keys, axis=0)
            logit[x] = value
        out[i] = logit
    return out


def _tables(data):
    return tf.constant(data["table"]), tf.constant(data["bias"])


def _call(layer, data, mi_layers=False, use_bias=True, **kwargs):
    return layer(
        _inputs(data, mi_layers),
        tf.constant(data["table"]),
        item_bias=tf.constant(data["bias"]) if use_bias else None,
        **kwargs,
    )


CONFIGS = {
    "plain": dict(use_context=False, use_pointer=False, reranker_ks=()),
    "C": dict(use_pointer=False, reranker_ks=()),
    "P": dict(use_context=False, reranker_ks=()),
    "CP": dict(reranker_ks=()),
    "R": dict(use_context=False, use_pointer=False, reranker_ks=(4,)),
    "CPR": dict(reranker_ks=(4,)),
    "CPR_multi": dict(reranker_ks=(2, 5, 9)),
    "CPR_Mi": dict(reranker_ks=(4,), use_mi=True, mi_layers=1),
    "CPR_multi_Mi2": dict(reranker_ks=(9, 3), use_mi=True, mi_layers=2),
    "CPR_Mi_window1": dict(
        reranker_ks=(4,), use_mi=True, mi_window=1, mi_layers=1
    ),
    "add_CPR": dict(reranker_ks=(4,), merge="add"),
    "add_CPR_multi": dict(reranker_ks=(2, 5, 9), merge="add"),
    "add_P": dict(use_context=False, reranker_ks=(3,), merge="add"),
    "no_mask": dict(reranker_ks=(4,), mask_padding=False),
    "exclude": dict(reranker_ks=(4,), exclude_history=True),
    "exclude_plain": dict(
        use_context=False,
        use_pointer=False,
        reranker_ks=(),
        exclude_history=True,
    ),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("use_bias", [True, False])
def test_matches_numpy_reference(name, use_bias):
    config = CONFIGS[name]
    data = _data(seed=len(name))
    layer = SoftmaxCPR(**config)
    mi_layers = config.get("mi_layers", 0) == 2
    logits = _call(layer, data, mi_layers=mi_layers, use_bias=use_bias)
    assert logits.dtype == tf.float32
    assert logits.shape == (4, N)
    layers = [data["layer0"], data["hidden"]] if mi_layers else None
    expected = reference(layer, data, use_bias=use_bias, layers=layers)
    np.testing.assert_allclose(logits.numpy(), expected, rtol=1e-5, atol=1e-4)
    if layer.mask_padding:
        assert np.all(logits.numpy()[:, 0] == NEG)
    # The all-padding row is finite and has no history partition.
    assert np.all(np.isfinite(logits.numpy()[2]))


def test_context_wins_over_a_top_k_set():
    data = _data(seed=3)
    data["bias"][5] = 100.0  # item 5 (in row 0's history) tops f_V
    layer = SoftmaxCPR(use_pointer=False, reranker_ks=(3,))
    logits = _call(layer, data).numpy()
    np.testing.assert_allclose(
        logits, reference(layer, data), rtol=1e-5, atol=1e-4
    )
    q = data["hidden"][0, 3]
    context = data["table"][5] @ _proj(layer.context_projection, q) + 100.0
    rerank = data["table"][5] @ _proj(layer.reranker_projections[0], q) + 100
    np.testing.assert_allclose(logits[0, 5], context, rtol=1e-5)
    assert abs(logits[0, 5] - rerank) > 1e-3


def _integer_layer(reranker_ks, merge="replace"):
    """D=2 layer whose base projection is the identity: exact logits."""
    layer = SoftmaxCPR(
        use_context=False,
        use_pointer=False,
        reranker_ks=reranker_ks,
        merge=merge,
    )
    ids = np.array([[1, 0, 0]], "int32")
    inputs = {"hidden_states": tf.ones((1, 3, 2)), "history_ids": ids}
    layer(inputs, tf.ones((8, 2)))
    layer.base_projection.set_weights(
        [np.eye(2, dtype="float32"), np.zeros(2, "float32")]
    )
    for projection in layer.reranker_projections:
        projection.set_weights(
            [np.zeros((2, 2), "float32"), np.full(2, 0.5, "float32")]
        )
    return layer, inputs


def test_ties_at_the_top_k_boundary_go_to_the_lower_id():
    # f_V = h = (1, 1); logits = row sums: item 1 is history (base kept),
    # items 3 and 6 tie at the boundary of the top 3 after items 2, 7.
    table = np.array(
        [[0, 0], [9, 9], [5, 4], [3, 1], [0, 1], [1, 0], [2, 2], [4, 4]],
        "float32",
    )
    layer, inputs = _integer_layer((3,))
    logits = layer(inputs, table).numpy()[0]
    # top 3 of the masked f_V logits: 1 (18), 2 (9) and 7 (8); then 3, 6
    # tie at 4. Reranker logit = 0.5 * row sum.
    np.testing.assert_array_equal(
        logits, [NEG, 9.0, 4.5, 4.0, 1.0, 1.0, 4.0, 4.0]
    )
    layer, inputs = _integer_layer((4,))
    logits = layer(inputs, table).numpy()[0]
    # k=4 takes 3 (lower id) and leaves 6 at its base logit.
    np.testing.assert_array_equal(
        logits, [NEG, 9.0, 4.5, 2.0, 1.0, 1.0, 4.0, 4.0]
    )


@pytest.mark.parametrize("name", ["R", "CPR_multi", "add_CPR_multi", "no_mask"])
@pytest.mark.parametrize("padding_bias", [100.0, -100.0])
def test_training_selects_the_same_sets_as_inference(name, padding_bias):
    # Training takes the top-k set unsorted; without dropout its logits
    # equal inference's, with the padding inside the top k + 1 (dropped
    # by id) or outside it (the smallest dropped).
    data = _data(seed=11)
    data["bias"][0] = padding_bias
    layer = SoftmaxCPR(**CONFIGS[name])
    inference = _call(layer, data).numpy()
    training = _call(layer, data, training=True).numpy()
    np.testing.assert_allclose(training, inference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        inference, reference(layer, data), rtol=1e-5, atol=1e-4
    )


def test_cascade_of_rerankers_smallest_k_scores_the_top():
    table = np.array(
        [[0, 0], [9, 9], [5, 4], [3, 1], [0, 1], [1, 0], [2, 2], [4, 4]],
        "float32",
    )
    layer, inputs = _integer_layer((1, 3))
    small, large = layer.reranker_projections
    small.set_weights(
        [np.zeros((2, 2), "float32"), np.full(2, -1.0, "float32")]
    )
    logits = layer(inputs, table).numpy()[0]
    # Stage k=3 rescored items 1, 2, 7 with 0.5 * sum: 9, 4.5, 4; stage
    # k=1 took the top of those (item 1) and gave it -18.
    np.testing.assert_array_equal(
        logits, [NEG, -18.0, 4.5, 4.0, 1.0, 1.0, 4.0, 4.0]
    )


def test_left_and_right_padding_agree():
    rng = np.random.default_rng(1)
    real = rng.normal(size=(2, 3, D)).astype("float32")
    left = np.zeros((2, L, D), "float32")
    right = np.zeros((2, L, D), "float32")
    left[:, L - 3 :] = real
    right[:, :3] = real
    # Non-zero garbage at padding positions must not matter.
    left[:, : L - 3] = 7.0
    right[:, 3:] = -7.0
    ids_left = np.array([[0, 0, 0, 4, 2, 4], [0, 0, 0, 1, 1, 1]], "int32")
    ids_right = np.array([[4, 2, 4, 0, 0, 0], [1, 1, 1, 0, 0, 0]], "int32")
    table = tf.constant(rng.normal(size=(N, D)).astype("float32"))
    layer = SoftmaxCPR(reranker_ks=(3,), use_mi=True, mi_layers=1, mi_window=4)
    a = layer({"hidden_states": left, "history_ids": ids_left}, table)
    b = layer({"hidden_states": right, "history_ids": ids_right}, table)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


def test_exclude_history_only_at_inference():
    data = _data(seed=5)
    plain = SoftmaxCPR(reranker_ks=(4,))
    excluding = SoftmaxCPR(reranker_ks=(4,), exclude_history=True)
    base = _call(plain, data, training=True)
    _call(excluding, data)
    excluding.set_weights(plain.get_weights())
    trained = _call(excluding, data, training=True)
    np.testing.assert_array_equal(trained.numpy(), base.numpy())
    served = _call(excluding, data, training=False).numpy()
    np.testing.assert_allclose(
        served, reference(excluding, data), rtol=1e-5, atol=1e-4
    )
    for row, ids in zip(served, HISTORY):
        for x in set(ids.tolist()) - {0}:
            assert row[x] == NEG
    assert np.all(served[2, 1:] > NEG)


CANDIDATE_CONFIGS = [
    "plain",
    "CP",
    "P",
    "add_P",
    "CPR",
    "CPR_multi_Mi2",
    "add_CPR_multi",
    "exclude",
    "exclude_plain",
    "no_mask",
]


@pytest.mark.parametrize("name", CANDIDATE_CONFIGS)
def test_candidate_scores_equal_full_logits(name):
    config = CONFIGS[name]
    data = _data(seed=7)
    layer = SoftmaxCPR(**config)
    mi_layers = config.get("mi_layers", 0) == 2
    full = _call(layer, data, mi_layers=mi_layers).numpy()
    shared = np.array([0, 2, 3, 4, 5, 9, 13, 3], "int32")
    scores = _call(
        layer, data, mi_layers=mi_layers, candidate_ids=tf.constant(shared)
    ).numpy()
    np.testing.assert_allclose(scores, full[:, shared], rtol=1e-6, atol=1e-6)
    rng = np.random.default_rng(0)
    per_example = rng.integers(0, N, size=(4, 9)).astype("int32")
    per_example[:, 0] = HISTORY[:, 0]
    scores = _call(
        layer, data, mi_layers=mi_layers, candidate_ids=tf.constant(per_example)
    ).numpy()
    expected = np.take_along_axis(full, per_example, axis=1)
    np.testing.assert_allclose(scores, expected, rtol=1e-6, atol=1e-6)
    # The partition is exact: masked candidates are masked in both.
    np.testing.assert_array_equal(scores == NEG, expected == NEG)


def _reference_base_logits(layer, data, mi_layers=False):
    """f_V . e_x + b_x by rows, padding masked: the head's plain softmax."""
    hidden = data["hidden"].astype("float64")
    layers = [data["layer0"], hidden] if mi_layers else None
    out = np.zeros((data["ids"].shape[0], N))
    for i in range(data["ids"].shape[0]):
        _, q = _reference_query(layer, hidden, data["ids"], i, layers)
        out[i] = data["table"] @ _proj(layer.base_projection, q) + data["bias"]
        if layer.mask_padding:
            out[i, 0] = NEG
    return out


@pytest.mark.parametrize("name", CANDIDATE_CONFIGS)
def test_base_logits_are_the_plain_softmax_inside_the_head(name):
    config = CONFIGS[name]
    data = _data(seed=5)
    layer = SoftmaxCPR(**config)
    mi_layers = config.get("mi_layers", 0) == 2
    logits, base = _call(
        layer, data, mi_layers=mi_layers, return_base_logits=True
    )
    expected = _reference_base_logits(layer, data, mi_layers)
    np.testing.assert_allclose(base.numpy(), expected, rtol=1e-5, atol=1e-5)
    # The logits themselves do not change.
    np.testing.assert_allclose(
        logits.numpy(), _call(layer, data, mi_layers=mi_layers).numpy()
    )
    # Candidates (shared or per row) get the same base logits.
    for ids in (
        np.array([0, 2, 3, 9, 13], "int32"),
        np.random.default_rng(1).integers(0, N, (4, 6)).astype("int32"),
    ):
        scores, candidate_base = _call(
            layer,
            data,
            mi_layers=mi_layers,
            candidate_ids=tf.constant(ids),
            return_base_logits=True,
        )
        gathered = expected[:, ids] if ids.ndim == 1 else None
        if gathered is None:
            gathered = np.take_along_axis(expected, ids, axis=1)
        np.testing.assert_allclose(
            candidate_base.numpy(), gathered, rtol=1e-5, atol=1e-5
        )
        assert scores.shape == candidate_base.shape


@pytest.mark.parametrize(
    "name", ["R", "CPR", "CPR_multi_Mi2", "add_CPR_multi", "no_mask"]
)
@pytest.mark.parametrize("training", [False, True])
def test_candidate_gradient_is_sparse_rows_of_the_full_gradient(name, training):
    # The sampled objective scores the batch's targets: with rerankers the
    # [B, N] product only selects the sets, so the table's gradient is the
    # candidates' rows (IndexedSlices, a sparse optimizer update) and
    # equals that of the full logits gathered at the candidates.
    config = CONFIGS[name]
    data = _data(seed=8)
    layer = SoftmaxCPR(**config)
    mi_layers = config.get("mi_layers", 0) == 2
    inputs = _inputs(data, mi_layers)
    table = tf.Variable(data["table"])
    bias = tf.Variable(data["bias"])
    targets = tf.constant([3, 9, 0, 4, 11], tf.int32)
    weights = tf.constant(np.random.default_rng(1).normal(size=(4, 5)))
    weights = tf.cast(weights, tf.float32)

    def loss(candidate_ids):
        with tf.GradientTape() as tape:
            logits = layer(
                inputs,
                table,
                item_bias=bias,
                candidate_ids=candidate_ids,
                training=training,
            )
            if candidate_ids is None:
                logits = tf.gather(logits, targets, axis=1)
            value = tf.reduce_sum(weights * tf.maximum(logits, -10.0))
        return value, tape.gradient(value, [table, bias])

    sparse_value, sparse_grads = loss(targets)
    full_value, full_grads = loss(None)
    np.testing.assert_allclose(sparse_value, full_value, rtol=1e-5)
    for sparse, full in zip(sparse_grads, full_grads):
        assert isinstance(sparse, tf.IndexedSlices)
        np.testing.assert_allclose(
            tf.convert_to_tensor(sparse), tf.convert_to_tensor(full), atol=1e-5
        )


def test_add_merge_history_item_in_a_reranker_set_gets_no_reranker_term():
    # merge="add": a history item inside a reranker's top-k gets exactly
    # base + context + pointer, no reranker term (the authors' RecBole
    # code, partition_merging_mode="add", would add f_R . e_x too).
    data = _data(seed=3)
    data["bias"][5] = 100.0  # item 5 (in row 0's history) tops f_V
    layer = SoftmaxCPR(reranker_ks=(3,), merge="add")
    logits = _call(layer, data).numpy()
    q = data["hidden"][0, 3].astype("float64")
    e = data["table"][5].astype("float64")
    base = e @ _proj(layer.base_projection, q) + 100.0
    assert base > np.max(data["table"] @ _proj(layer.base_projection, q))
    context = e @ _proj(layer.context_projection, q)
    key = _proj(layer.key_projection, data["hidden"][0, 1])  # 5 is at t=1
    pointer = _proj(layer.pointer_projection, q) @ key
    rerank = e @ _proj(layer.reranker_projections[0], q)
    np.testing.assert_allclose(logits[0, 5], base + context + pointer, 1e-5)
    assert abs(rerank) > 0.01  # so the difference would show
    table, bias = _tables(data)
    candidates, base_logits = layer.top_k_candidates(
        _inputs(data), table, 0, item_bias=bias
    )
    assert 5 in candidates.numpy()[0]
    scores = layer.score_candidates(
        _inputs(data),
        table,
        candidates,
        item_bias=bias,
        base_logits=base_logits,
    ).numpy()
    np.testing.assert_allclose(
        scores[0, list(candidates.numpy()[0]).index(5)], logits[0, 5], 1e-6
    )


def test_add_differs_from_replace_only_by_the_base_logit():
    # One reranker: each item gets the terms of exactly one partition in
    # both modes, so add = replace + f_V . e_x on the C/P and R items and
    # add = replace on the others.
    data = _data(seed=19)
    replace = SoftmaxCPR(reranker_ks=(4,))
    add = SoftmaxCPR(reranker_ks=(4,), merge="add")
    expected = _call(replace, data).numpy()
    _call(add, data)
    add.set_weights(replace.get_weights())
    logits = _call(add, data).numpy()
    for row, ids in enumerate(HISTORY):
        real = [t for t in range(L) if ids[t] != 0]
        q = data["hidden"][row, real[-1] if real else 0].astype("float64")
        base = data["table"] @ _proj(replace.base_projection, q)
        ranked = base + data["bias"]
        ranked[0] = -np.inf
        top = set(np.argsort(-ranked, kind="stable")[:4].tolist())
        partitioned = top | (set(ids.tolist()) - {0})
        for x in range(1, N):
            shift = base[x] if x in partitioned else 0.0
            np.testing.assert_allclose(
                logits[row, x] - expected[row, x], shift, atol=1e-4
            )


# ---------------------------------------------------------------- gradients


def _by_layer(layer, data, loss_fn):
    """Gradient of each sublayer's kernel, keyed by sublayer attribute."""
    inputs = _inputs(data)
    table = tf.constant(data["table"])
    bias = tf.constant(data["bias"])
    layer(inputs, table, item_bias=bias)
    sublayers = {
        "base": layer.base_projection,
        "context": layer.context_projection,
        "pointer": layer.pointer_projection,
        "key": layer.key_projection,
        "mi": layer.mi_projection,
    }
    for k, projection in zip(layer.reranker_ks, layer.reranker_projections):
        sublayers[f"rerank{k}"] = projection
    sublayers = {k: v for k, v in sublayers.items() if v is not None}
    with tf.GradientTape() as tape:
        logits = layer(inputs, table, item_bias=bias, training=True)
        loss = loss_fn(logits)
    kernels = [s.kernel for s in sublayers.values()]
    grads = tape.gradient(loss, kernels)
    return {
        name: np.zeros(k.shape) if g is None else np.asarray(g)
        for name, k, g in zip(sublayers, kernels, grads)
    }


def _partitions(layer, data, row):
    """Top-k set (by the f_V logits) and history set of one row."""
    real = [t for t in range(L) if data["ids"][row, t] != 0]
    q = data["hidden"][row, real[-1]]
    base = data["table"] @ _proj(layer.base_projection, q) + data["bias"]
    base[0] = -np.inf
    top = set(np.argsort(-base, kind="stable")[: layer.reranker_ks[0]])
    history = set(data["ids"][row].tolist()) - {0}
    return top, history


def test_reranker_gradient_only_through_selected_items():
    data = _data(seed=11)
    layer = SoftmaxCPR(reranker_ks=(4,))
    _call(layer, data)
    top, history = _partitions(layer, data, row=3)
    selected = sorted(top - history)[0]
    other = sorted(set(range(1, N)) - top - history)[0]
    grads = _by_layer(layer, data, lambda z: z[3, selected])
    assert np.abs(grads["rerank4"]).sum() > 0
    # Nothing flows through the top-k selection into f_V.
    assert np.abs(grads["base"]).sum() == 0
    assert np.abs(grads["context"]).sum() == 0
    grads = _by_layer(layer, data, lambda z: z[3, other])
    assert np.abs(grads["rerank4"]).sum() == 0
    assert np.abs(grads["base"]).sum() > 0


def test_no_reranker_gradient_when_its_set_is_all_history():
    data = _data(seed=2, batch=1)
    data["ids"] = np.arange(1, L + 1, dtype="int32")[None]  # items 1..6
    data["bias"][L + 1 :] = -50.0  # items 7.. are far below the top 3
    layer = SoftmaxCPR(reranker_ks=(3,))
    grads = _by_layer(layer, data, lambda z: tf.reduce_sum(z[:, 1:]))
    assert np.all(grads["rerank3"] == 0)
    assert np.abs(grads["context"]).sum() > 0
    assert np.abs(grads["pointer"]).sum() > 0


def test_context_replaces_base_gradient_and_add_keeps_it():
    data = _data(seed=4)
    for merge, base_grad in (("replace", False), ("add", True)):
        layer = SoftmaxCPR(reranker_ks=(), merge=merge)
        grads = _by_layer(layer, data, lambda z: z[0, 7])
        assert np.abs(grads["context"]).sum() > 0
        assert np.abs(grads["pointer"]).sum() > 0
        assert (np.abs(grads["base"]).sum() > 0) == base_grad


def test_pointer_gradient_averages_duplicates_once():
    data = _data(seed=6)
    layer = SoftmaxCPR(use_context=False, reranker_ks=())
    grads = _by_layer(layer, data, lambda z: z[1, 2])  # item 2: 3 times
    q = data["hidden"][1, 5]
    keys = [
        _proj(layer.key_projection, data["hidden"][1, t]) for t in (2, 4, 5)
    ]
    np.testing.assert_allclose(
        grads["pointer"],
        np.outer(q, np.mean(keys, axis=0)),
        rtol=1e-5,
        atol=1e-6,
    )
    # Keys: d/dW_L of f_P . mean_t(W_L H_t) = mean_t H_t (x) f_P.
    f_pointer = _proj(layer.pointer_projection, q)
    mean_h = data["hidden"][1, [2, 4, 5]].mean(axis=0)
    np.testing.assert_allclose(
        grads["key"], np.outer(mean_h, f_pointer), rtol=1e-5, atol=1e-6
    )


def test_mi_projection_only_with_mi():
    data = _data(seed=8)
    layer = SoftmaxCPR(reranker_ks=(), use_mi=False)
    _call(layer, data)
    assert layer.mi_projection is None
    assert len(layer.trainable_weights) == 8  # base, context, pointer, key
    layer = SoftmaxCPR(reranker_ks=(4,), use_mi=True, mi_layers=1)
    grads = _by_layer(
        layer,
        data,
        lambda z: tf.reduce_sum(tf.nn.log_softmax(z)[:, 1:] * 0.1),
    )
    assert np.abs(grads["mi"]).sum() > 0
    assert layer.mi_projection.kernel.shape == (3 * D, D)
    assert layer.base_projection.kernel.shape == (2 * D, D)


def test_cross_entropy_gradients_are_finite_with_padding_targets_excluded():
    data = _data(seed=9)
    layer = SoftmaxCPR(reranker_ks=(2, 5), use_mi=True, mi_layers=2)
    inputs = _inputs(data, mi_layers=True)
    table = tf.Variable(data["table"])
    with tf.GradientTape() as tape:
        logits = layer(inputs, table, training=True)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.constant([1, 2, 3, 4]), logits=logits
            )
        )
    grads = tape.gradient(loss, [table, *layer.trainable_weights])
    assert all(np.all(np.isfinite(tf.convert_to_tensor(g))) for g in grads)
    # Padding's row of the table gets no gradient from the softmax.
    assert np.all(tf.convert_to_tensor(grads[0]).numpy()[0] == 0)


# ------------------------------------------------------------ Keras plumbing


@pytest.mark.parametrize(
    "init_kwargs, mi_layers",
    [
        (dict(reranker_ks=(3,), use_mi=True, mi_layers=2), True),
        (dict(reranker_ks=(2, 5), merge="add", dropout=0.1), False),
        (dict(use_context=False, use_pointer=False, reranker_ks=()), False),
        (
            dict(
                reranker_ks=(3,),
                exclude_history=True,
                output_dim=D,
                kernel_initializer="he_normal",
                bias_initializer="ones",
            ),
            False,
        ),
    ],
)
def test_run_layer_test(init_kwargs, mi_layers):
    data = _data(seed=12)
    testing.run_layer_test(
        SoftmaxCPR,
        init_kwargs,
        _inputs(data, mi_layers),
        expected_output_shape=(4, N),
        expected_output_dtype="float32",
        call_kwargs={
            "item_embeddings": tf.constant(data["table"]),
            "item_bias": tf.constant(data["bias"]),
        },
        run_functional=False,
    )


class TinyRecommender(tf.keras.Model):
    """Minimal subclassed model: tied table -> Dense encoder -> CPR head."""

    def __init__(self, head, num_items=N, dim=D, **kwargs):
        super().__init__(**kwargs)
        self.items = tf.keras.layers.Embedding(num_items, dim)
        self.encoder = tf.keras.layers.Dense(dim, activation="tanh")
        self.head = head
        self.item_bias = self.add_weight(
            name="item_bias", shape=(num_items,), initializer="zeros"
        )

    def call(self, ids, training=None):
        # Keras 3 traces its own serving signature with float inputs.
        ids = tf.cast(ids, "int32")
        hidden = self.encoder(self.items(ids))
        return self.head(
            {"hidden_states": hidden, "history_ids": ids},
            self.items.embeddings,
            item_bias=self.item_bias,
            training=training,
        )


@pytest.mark.slow
def test_subclassed_model_trains_and_serves_in_a_fresh_process():
    model = TinyRecommender(SoftmaxCPR(reranker_ks=(4,)))
    ids = tf.constant(HISTORY)
    model(ids)
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(ids, tf.constant([1, 2, 3, 4]), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    served = testing.assert_saved_model_in_fresh_process(model, ids)
    assert served["output_0"].shape == (4, N)


def test_functional_model_with_table_of_an_embedding_layer():
    items = tf.keras.layers.Embedding(N, D)
    encoder = tf.keras.layers.Dense(D)
    head = SoftmaxCPR(reranker_ks=(3,))
    ids_in = tf.keras.Input(shape=(L,), dtype="int32")
    items.build((None,))
    hidden = encoder(items(ids_in))
    logits = head(
        {"hidden_states": hidden, "history_ids": ids_in}, items.embeddings
    )
    model = tf.keras.Model(ids_in, logits)
    ids = tf.constant(HISTORY)
    eager = head(
        {"hidden_states": encoder(items(ids)), "history_ids": ids},
        items.embeddings,
    )
    np.testing.assert_allclose(model(ids).numpy(), eager.numpy(), rtol=1e-6)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=tf.constant([1, 2, 3, 4]), logits=model(ids)
            )
        )
    grads = tape.gradient(loss, model.trainable_weights)
    assert len(model.trainable_weights) == 1 + 2 + 2 * 5  # table, enc, head
    assert all(g is not None for g in grads)


def test_graph_mode_matches_eager():
    data = _data(seed=13)
    layer = SoftmaxCPR(reranker_ks=(2, 6), use_mi=True, mi_layers=2)
    eager = _call(layer, data, mi_layers=True)
    inputs = _inputs(data, mi_layers=True)
    table = tf.constant(data["table"])
    bias = tf.constant(data["bias"])

    @tf.function(
        input_signature=[
            {
                "hidden_states": tf.TensorSpec([None, None, D]),
                "history_ids": tf.TensorSpec([None, None], tf.int32),
                "layer_hidden_states": [tf.TensorSpec([None, None, D])] * 2,
            },
            tf.TensorSpec([None, D]),
        ]
    )
    def run(x, t):  # unknown N: the k < N check becomes an assertion
        return layer(x, t, item_bias=bias)

    np.testing.assert_allclose(
        run(inputs, table).numpy(), eager.numpy(), rtol=1e-6, atol=1e-6
    )
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(inputs, table[:5])


def test_mixed_precision_outputs_float32_close_to_float32():
    data = _data(seed=14)
    reference_layer = SoftmaxCPR(reranker_ks=(4,), use_mi=True, mi_layers=2)
    expected = _call(reference_layer, data, mi_layers=True)
    previous = tf.keras.mixed_precision.global_policy()
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = SoftmaxCPR(reranker_ks=(4,), use_mi=True, mi_layers=2)
        _call(layer, data, mi_layers=True)
        layer.set_weights(reference_layer.get_weights())
        logits = _call(layer, data, mi_layers=True)
    finally:
        tf.keras.mixed_precision.set_global_policy(previous)
    assert logits.dtype == tf.float32
    assert np.all(np.isfinite(logits.numpy()))
    assert np.all(logits.numpy()[:, 0] == NEG)
    # Half-precision projections: close, not equal (top-k sets may differ
    # on near-ties, so compare the f_V-only padding-free mean error).
    error = np.abs(logits.numpy() - expected.numpy())[:, 1:]
    assert np.median(error) < 0.05


@pytest.mark.parametrize("merge", ["replace", "add"])
@pytest.mark.parametrize("use_mi", [False, True])
def test_start_as_softmax_starts_at_the_tied_softmax(merge, use_mi):
    data = _data(seed=5)
    layer = SoftmaxCPR(
        reranker_ks=(2, 5),
        use_mi=use_mi,
        mi_layers=1,
        merge=merge,
        start_as_softmax=True,
    )
    logits = _call(layer, data).numpy()
    last = [3, 5, 0, 5]  # true last positions of HISTORY's rows (0: empty)
    h = data["hidden"][np.arange(4), last]
    softmax = h @ data["table"].T + data["bias"]
    np.testing.assert_allclose(logits[:, 1:], softmax[:, 1:], atol=1e-5)
    assert np.all(logits[:, 0] == NEG)

    # The query projections learn from the first step; the pointer keys and
    # W_M feed only zero kernels there (like a zero-initialised residual
    # branch) and learn from the second step on.
    def loss_fn(logits):
        return tf.reduce_sum(tf.nn.softmax(logits)[:, 3])

    grads = _by_layer(layer, data, loss_fn)
    late = {"key", "mi"}
    for name, grad in grads.items():
        assert (np.abs(grad).max() > 0) == (name not in late), name
    inputs = _inputs(data)
    table, bias = tf.constant(data["table"]), tf.constant(data["bias"])
    with tf.GradientTape() as tape:
        loss = loss_fn(layer(inputs, table, item_bias=bias, training=True))
    step = tape.gradient(loss, layer.trainable_variables)
    tf.keras.optimizers.SGD(0.1).apply_gradients(
        zip(step, layer.trainable_variables)
    )
    grads = _by_layer(layer, data, loss_fn)
    for name, grad in grads.items():
        assert np.abs(grad).max() > 0, name


def test_start_as_softmax_differs_from_the_default_start():
    data = _data(seed=5)
    layer = SoftmaxCPR(reranker_ks=(5,), use_mi=True, mi_layers=1)
    logits = _call(layer, data).numpy()
    h = data["hidden"][np.arange(4), [3, 5, 0, 5]]
    softmax = h @ data["table"].T + data["bias"]
    assert np.abs(logits[:, 1:] - softmax[:, 1:]).max() > 0.1
    # The Mi projection keeps its own (random) initializer.
    mi = SoftmaxCPR(
        reranker_ks=(), use_mi=True, mi_layers=1, start_as_softmax=True
    )
    _call(mi, data)
    assert np.abs(mi.mi_projection.kernel.numpy()).max() > 0


def test_config_round_trip_and_registration():
    layer = SoftmaxCPR(
        reranker_ks=(20, 100, 500),
        use_mi=True,
        mi_layers=1,
        merge="add",
        dropout=0.2,
        exclude_history=True,
        start_as_softmax=True,
        kernel_initializer="he_normal",
        name="cpr",
    )
    config = layer.get_config()
    json.dumps(config)
    assert config["reranker_ks"] == [20, 100, 500]
    assert config["start_as_softmax"] is True
    revived = SoftmaxCPR.from_config(config)
    assert revived.get_config() == config
    assert revived.reranker_ks == (20, 100, 500)
    serialized = tf.keras.utils.serialize_keras_object(layer)
    assert "tfrec_tricks" in json.dumps(serialized)
    assert isinstance(
        tf.keras.utils.deserialize_keras_object(serialized),
        tfrec_tricks.heads.SoftmaxCPR,
    )


# ----------------------------------------------------------- head interface


def test_has_an_index():
    # The serving module retrieves CPR's candidates from an index.
    assert SoftmaxCPR().has_index is True
    with pytest.raises(AttributeError):
        SoftmaxCPR().has_index = False  # read-only


@pytest.mark.parametrize("training", [None, False, True])
def test_reads_more_than_the_last_state(training):
    # Context, pointer and Mi read the history: rows stay whole.
    assert SoftmaxCPR().reads_last_state_only(training) is False


def test_computes_its_own_cross_entropy():
    # A model's train step asks for it instead of writing the logits.
    assert SoftmaxCPR().has_cross_entropy is True


def test_excludes_the_history_at_inference_only_when_asked():
    head = SoftmaxCPR(exclude_history=True)
    assert head.excludes_history(False) and head.excludes_history(None)
    assert not head.excludes_history(True)
    assert not SoftmaxCPR().excludes_history(False)


# ------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(reranker_ks=(0,)), r"Received: reranker_ks=\(0,\)"),
        (dict(reranker_ks=(5, -1)), r"Received: reranker_ks=\(5, -1\)"),
        (dict(reranker_ks=(5, 5)), r"Received: reranker_ks=\(5, 5\)"),
        (dict(reranker_ks=("5",)), r"Received: reranker_ks=\('5',\)"),
        (dict(merge="mix"), "Received: merge='mix'"),
        (dict(mi_layers=0), "Received: mi_layers=0"),
        (dict(mi_window=0), "Received: mi_window=0"),
        (dict(dropout=1.0), "Received: dropout=1.0"),
        (dict(output_dim=0), "Received: output_dim=0"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SoftmaxCPR(**kwargs)


def test_bad_call_arguments():
    data = _data(seed=15)
    with pytest.raises(ValueError, match=r"N=14 .*reranker_ks=\(14,\)"):
        _call(SoftmaxCPR(reranker_ks=(14,)), data)
    _call(SoftmaxCPR(reranker_ks=(13,)), data)  # k = N - 1 is fine
    bad = dict(data, ids=np.where(HISTORY == 9, 14, HISTORY).astype("int32"))
    with pytest.raises(ValueError, match="Received: history_ids containing 14"):
        _call(SoftmaxCPR(reranker_ks=(3,)), bad)
    bad = dict(data, ids=np.where(HISTORY == 9, -2, HISTORY).astype("int32"))
    with pytest.raises(ValueError, match="history_ids containing -2"):
        _call(SoftmaxCPR(reranker_ks=()), bad)
    with pytest.raises(ValueError, match="candidate_ids containing 20"):
        _call(
            SoftmaxCPR(reranker_ks=()), data, candidate_ids=tf.constant([1, 20])
        )
    with pytest.raises(ValueError, match="Received: mi_layers=2"):
        _call(SoftmaxCPR(use_mi=True, reranker_ks=()), data)
    with pytest.raises(ValueError, match=r"Received: input_shape=\{'hidden'"):
        SoftmaxCPR()({"hidden": data["hidden"]}, data["table"])
    with pytest.raises(ValueError, match=r"item_embeddings.shape=\(14, 3\)"):
        SoftmaxCPR(reranker_ks=())(_inputs(data), data["table"][:, :3])


def test_table_gradient_matches_plain_autodiff():
    # The layer adds the gathered rows' gradient into the matmul's table
    # gradient by hand; compare with TF's own autodiff of the same logits
    # written out row by row (partitions from the NumPy reference).
    data = _data(seed=16)
    layer = SoftmaxCPR(reranker_ks=(4,))
    inputs = _inputs(data)
    bias = tf.constant(data["bias"])
    labels = tf.constant([3, 9, 5, 8])
    layer(inputs, tf.constant(data["table"]), item_bias=bias)

    def explicit(table):
        rows = []
        for i, ids in enumerate(HISTORY):
            real = [t for t in range(L) if ids[t] != 0]
            q = data["hidden"][i, real[-1] if real else 0]
            f = {
                name: tf.constant(_proj(dense, q), tf.float32)
                for name, dense in (
                    ("V", layer.base_projection),
                    ("C", layer.context_projection),
                    ("P", layer.pointer_projection),
                    ("R", layer.reranker_projections[0]),
                )
            }
            logit = tf.linalg.matvec(table, f["V"]) + bias
            base = data["table"] @ _proj(layer.base_projection, q)
            base = base + data["bias"]
            base[0] = -np.inf
            top = list(np.argsort(-base, kind="stable")[:4])
            index, values = [[0]], [tf.constant(NEG)]
            for x in top:
                index.append([x])
                values.append(tf.tensordot(table[x], f["R"], 1) + bias[x])
            for x in sorted({int(ids[t]) for t in real}):
                keys = [
                    _proj(layer.key_projection, data["hidden"][i, t])
                    for t in real
                    if ids[t] == x
                ]
                mean_key = tf.constant(np.mean(keys, axis=0), tf.float32)
                value = tf.tensordot(table[x], f["C"], 1) + bias[x]
                values.append(value + tf.tensordot(mean_key, f["P"], 1))
                if [x] in index:
                    values.pop(index.index([x]))
                    index.remove([x])
                index.append([x])
            rows.append(
                tf.tensor_scatter_nd_update(logit, index, tf.stack(values))
            )
        return tf.stack(rows)

    table = tf.constant(data["table"])
    grads = []
    for fn in (lambda t: layer(inputs, t, item_bias=bias), explicit):
        with tf.GradientTape() as tape:
            tape.watch(table)
            logits = fn(table)
            loss = tf.reduce_sum(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
            )
        grads.append(tf.convert_to_tensor(tape.gradient(loss, table)))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-4, atol=1e-5)
    assert np.abs(grads[0].numpy()).sum() > 0
