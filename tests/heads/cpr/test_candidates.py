"""tfrec_tricks.heads.cpr.candidates: SoftmaxCPR's candidate scoring.

The index set (``top_k_candidates``), ``score_candidates`` and the
rerankers within the candidates, against ``SoftmaxCPR.call``, itself
pinned to the loop-based NumPy reference of test_softmax_cpr.py.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.heads.cpr.test_softmax_cpr import (
    CONFIGS,
    HISTORY,
    NEG,
    D,
    L,
    N,
    _call,
    _data,
    _inputs,
    _integer_layer,
    _tables,
)
from tfrec_tricks.heads import SoftmaxCPR
from tfrec_tricks.layers.top_k import top_k_positions


@pytest.fixture(autouse=True)
def _seeded():
    # Layer weights come from unseeded initializers: fix them per test.
    tf.keras.utils.set_random_seed(1234)


# ----------------------------------------------------------- candidate sets


def _extra_ids(seed):
    """Per-row ids to score: random, plus each row's history (padding
    and repeats included)."""
    extra = np.random.default_rng(seed).integers(0, N, (4, 9)).astype("int32")
    extra[:, :L] = HISTORY
    return extra


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_score_candidates_of_the_index_set_equal_full_logits(name):
    config = CONFIGS[name]
    data = _data(seed=17)
    layer = SoftmaxCPR(**config)
    inputs = _inputs(data, mi_layers=config.get("mi_layers", 0) == 2)
    table, bias = _tables(data)
    full = layer(inputs, table, item_bias=bias).numpy()
    for k in (0, 1, 5):
        candidates, base = layer.top_k_candidates(
            inputs, table, k, item_bias=bias, extra_ids=_extra_ids(k)
        )
        count = min(sum(layer.reranker_ks) + k, N - layer.mask_padding)
        if count == 0:  # no reranker, k=0: nothing to retrieve
            assert candidates.shape == (4, 9)
        else:
            assert candidates.shape == (4, count + L + 9)
        expected = np.take_along_axis(full, candidates.numpy(), axis=1)
        for given in (base, None):
            scores = layer.score_candidates(
                inputs, table, candidates, item_bias=bias, base_logits=given
            ).numpy()
            np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(scores == NEG, expected == NEG)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("k", [1, 4, N - 1])
def test_ranked_index_candidates_are_the_full_top_k(name, k):
    config = CONFIGS[name]
    data = _data(seed=23)
    layer = SoftmaxCPR(**config)
    inputs = _inputs(data, mi_layers=config.get("mi_layers", 0) == 2)
    table, bias = _tables(data)
    full = layer(inputs, table, item_bias=bias).numpy()
    candidates, base = layer.top_k_candidates(inputs, table, k, item_bias=bias)
    scores = layer.score_candidates(
        inputs, table, candidates, item_bias=bias, base_logits=base
    )
    scores = tf.where(candidates > 0, scores, float("-inf"))
    position = top_k_positions(scores, candidates, k)
    served = tf.gather(candidates, position, batch_dims=1).numpy()
    # Id 0 is left out (with mask_padding=False it is an item too, but
    # the set's ranking leaves the fillers out). Ties (the -1e9 of
    # excluded history items) go to the lower id in both.
    expected = np.argsort(-full[:, 1:], axis=1, kind="stable")[:, :k] + 1
    np.testing.assert_array_equal(served, expected)


def test_score_candidates_count_a_repeated_id_once():
    # The index set twice over, shuffled: a cascade that counted both
    # copies of an item would take k/2 items.
    data = _data(seed=29)
    layer = SoftmaxCPR(reranker_ks=(3, 6), merge="add")
    inputs = _inputs(data)
    table, bias = _tables(data)
    full = layer(inputs, table, item_bias=bias).numpy()
    candidates, _ = layer.top_k_candidates(inputs, table, 2, item_bias=bias)
    doubled = tf.concat([candidates, candidates], axis=1).numpy()
    doubled = np.take_along_axis(
        doubled, np.argsort(np.random.default_rng(0).random(doubled.shape)), 1
    )
    scores = layer.score_candidates(inputs, table, doubled, item_bias=bias)
    np.testing.assert_allclose(
        scores.numpy(),
        np.take_along_axis(full, doubled, axis=1),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("name", ["CPR_multi", "add_CPR_multi", "exclude"])
def test_assume_unique_skips_the_repeat_search_of_a_unique_set(name):
    data = _data(seed=41)
    layer = SoftmaxCPR(**CONFIGS[name])
    inputs = _inputs(data)
    table, bias = _tables(data)
    candidates, base = layer.top_k_candidates(inputs, table, 3, item_bias=bias)
    given = dict(item_bias=bias, base_logits=base)
    np.testing.assert_array_equal(
        layer.score_candidates(inputs, table, candidates, **given),
        layer.score_candidates(
            inputs, table, candidates, assume_unique=True, **given
        ),
    )
    doubled = tf.concat([candidates, candidates[:, :1]], axis=1)
    with pytest.raises(ValueError, match="row 0 repeats"):
        layer.score_candidates(inputs, table, doubled, assume_unique=True)


def test_score_candidates_break_ties_at_the_top_k_boundary_as_call():
    table = np.array(
        [[0, 0], [9, 9], [5, 4], [3, 1], [0, 1], [1, 0], [2, 2], [4, 4]],
        "float32",
    )
    every_item = np.array([[6, 3, 0, 7, 2, 5, 1, 4]], "int32")
    for ks in ((3,), (4,), (1, 3)):
        layer, inputs = _integer_layer(ks)
        if ks == (1, 3):
            layer.reranker_projections[0].set_weights(
                [np.zeros((2, 2), "float32"), np.full(2, -1.0, "float32")]
            )
        full = layer(inputs, table).numpy()
        scores = layer.score_candidates(inputs, table, every_item).numpy()
        np.testing.assert_array_equal(scores, full[:, every_item[0]])


def test_score_candidates_shared_by_the_batch():
    data = _data(seed=31)
    layer = SoftmaxCPR(reranker_ks=(4,))
    inputs = _inputs(data)
    table, bias = _tables(data)
    full = layer(inputs, table, item_bias=bias).numpy()
    every_item = np.arange(N - 1, -1, -1, dtype="int32")
    scores = layer.score_candidates(inputs, table, every_item, item_bias=bias)
    np.testing.assert_allclose(
        scores.numpy(), full[:, every_item], rtol=1e-5, atol=1e-5
    )


def test_candidate_methods_check_what_they_can():
    data = _data(seed=37)
    inputs = _inputs(data)
    table, bias = _tables(data)
    layer = SoftmaxCPR(reranker_ks=(3,))
    # Rerankers: the history must be among the candidates (eager check).
    with pytest.raises(ValueError, match="row 0 lacks its history item 3"):
        layer.score_candidates(inputs, table, tf.constant([1, 2]))
    # Without rerankers any ids are fine.
    SoftmaxCPR(reranker_ks=()).score_candidates(
        inputs, table, tf.constant([1, 2])
    )
    candidates, base = layer.top_k_candidates(inputs, table, 2)
    with pytest.raises(ValueError, match=r"base_logits.shape=\(4, 3\)"):
        layer.score_candidates(
            inputs, table, candidates, base_logits=base[:, :3]
        )
    with pytest.raises(ValueError, match="candidate_ids containing 14"):
        layer.score_candidates(inputs, table, tf.fill([4, 1], 14))
    with pytest.raises(ValueError, match="Received: k=-1"):
        layer.top_k_candidates(inputs, table, -1)
    with pytest.raises(ValueError, match=r"extra_ids.shape=\(2,\)"):
        layer.top_k_candidates(inputs, table, 1, extra_ids=[1, 2])


@pytest.mark.slow
def test_candidate_methods_in_graph_mode_match_eager():
    data = _data(seed=13)
    layer = SoftmaxCPR(reranker_ks=(2, 6), use_mi=True, mi_layers=2)
    inputs = _inputs(data, mi_layers=True)
    table, bias = _tables(data)
    full = layer(inputs, table, item_bias=bias).numpy()

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
    def run(x, t):  # unknown N and L
        candidates, base = layer.top_k_candidates(x, t, 3, item_bias=bias)
        scores = layer.score_candidates(
            x, t, candidates, item_bias=bias, base_logits=base
        )
        return candidates, scores

    candidates, scores = run(inputs, table)
    np.testing.assert_allclose(
        scores.numpy(),
        np.take_along_axis(full, candidates.numpy(), axis=1),
        rtol=1e-5,
        atol=1e-5,
    )


# ----------------------------------------- rerankers within the candidates

WITHIN_CONFIGS = {
    "C+P+R": dict(reranker_ks=(2, 4)),
    "R add": dict(use_context=False, reranker_ks=(3,), merge="add"),
    "C+P+R+Mi": dict(reranker_ks=(2,), use_mi=True, mi_layers=2),
}


def _sub_catalogue_logits(layer, data, row, candidates, mi_layers):
    """``call`` on one row over a catalogue of its candidates and history."""
    pool = sorted(set(candidates.tolist()) | set(data["ids"][row].tolist()))
    keep = [0] + [item for item in pool if item != 0]
    index = {item: position for position, item in enumerate(keep)}
    sub = {
        "hidden": data["hidden"][row : row + 1],
        "layer0": data["layer0"][row : row + 1],
        "ids": np.vectorize(index.get)(data["ids"][row : row + 1]),
        "table": data["table"][keep],
        "bias": data["bias"][keep],
    }
    sub["ids"] = sub["ids"].astype("int32")
    logits = _call(layer, sub, mi_layers=mi_layers, training=True)
    return logits.numpy()[0, [index[c] for c in candidates]]


@pytest.mark.parametrize("name", list(WITHIN_CONFIGS))
def test_within_candidates_each_row_is_scored_as_over_its_pool(name):
    # Its definition: each row as `call` scores it over a catalogue of
    # just its candidates and its history (the same weights).
    kwargs = WITHIN_CONFIGS[name]
    mi_layers = kwargs.get("use_mi", False)
    data = _data(seed=11)
    layer = SoftmaxCPR(rerank_within_candidates=True, **kwargs)
    candidates = np.array([1, 2, 11, 12, 13, 3], "int32")
    logits, base = _call(
        layer,
        data,
        mi_layers=mi_layers,
        candidate_ids=tf.constant(candidates),
        training=True,
        return_base_logits=True,
    )
    for row in range(len(HISTORY)):
        np.testing.assert_allclose(
            logits.numpy()[row],
            _sub_catalogue_logits(layer, data, row, candidates, mi_layers),
            rtol=1e-5,
            atol=1e-5,
        )
    # The catalogue's sets are others: without the option, other logits.
    exact = SoftmaxCPR(**kwargs)
    _call(exact, data, mi_layers=mi_layers)
    exact.set_weights(layer.get_weights())
    over_catalogue = _call(
        exact,
        data,
        mi_layers=mi_layers,
        candidate_ids=tf.constant(candidates),
        training=True,
    )
    assert np.abs(over_catalogue.numpy() - logits.numpy()).max() > 1e-3
    # The base logits are the candidates' f_V logits, as over the catalogue.
    full_base = _call(
        layer, data, mi_layers=mi_layers, training=True, return_base_logits=True
    )[1]
    np.testing.assert_allclose(
        base.numpy(), full_base.numpy()[:, candidates], rtol=1e-5, atol=1e-5
    )


def test_within_candidates_only_in_training():
    data = _data(seed=12)
    within = SoftmaxCPR(rerank_within_candidates=True, reranker_ks=(2,))
    candidates = tf.constant([1, 2, 11])
    at_inference = _call(within, data, candidate_ids=candidates)
    full = _call(within, data)
    np.testing.assert_allclose(
        at_inference.numpy(), full.numpy()[:, [1, 2, 11]], atol=1e-5
    )


def test_within_candidates_never_scores_the_catalogue():
    # No [B, N] tensor in the step, and the table's gradient is its rows.
    num_items, batch = 5003, 4
    rng = np.random.default_rng(0)
    table = tf.Variable(rng.normal(size=(num_items, D)).astype("float32"))
    layer = SoftmaxCPR(rerank_within_candidates=True, reranker_ks=(3,))
    inputs = _inputs(_data(seed=13, batch=batch))
    candidates = tf.constant([7, 8, 9, 10, 4000])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = layer(
                inputs, table, candidate_ids=candidates, training=True
            )
            loss = tf.reduce_sum(logits)
        return tape.gradient(loss, table)

    gradient = step()
    assert isinstance(gradient, tf.IndexedSlices)
    graph = step.get_concrete_function().graph
    for op in graph.get_operations():
        for output in op.outputs:
            shape = output.shape
            if shape.rank is not None and shape.rank >= 2:
                assert shape[-1] != num_items, (op.type, op.name, shape)
                # Nor a whole read of the table: a model's lookup gathers
                # from it, after which a whole read copies it every step.
                assert shape[0] != num_items, (op.type, op.name, shape)
