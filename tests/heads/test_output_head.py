"""The OutputHead contract: every head against a naive NumPy reference.

One parametrised suite over every head a model can use (softmax, softmax
without duplication, CPR variants, MoS): ``call``'s logits equal the
reference's, ``score_candidates`` equals ``call`` at the candidates,
``top_k_candidates`` then scoring gives the full-catalogue top-k (or
raises, without an index), the capability members, the training-loss API
and the config round trip. A new head is one more entry in ``HEADS``.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

import tfrec_tricks.heads
import tfrec_tricks.layers
from tfrec_tricks.heads import (
    MixtureOfSoftmax,
    OutputHead,
    SoftmaxCPR,
    TiedSoftmax,
)
from tfrec_tricks.layers.top_k import top_k_positions

NEG = -1e9
N, D, L = 14, 4, 6
# Right-padded with a repeat, left-padded with a triple, empty, full.
HISTORY = np.array(
    [
        [3, 5, 3, 7, 0, 0],
        [0, 0, 2, 9, 2, 2],
        [0, 0, 0, 0, 0, 0],
        [1, 4, 6, 8, 10, 4],
    ],
    "int32",
)

HEADS = {
    "softmax": lambda: TiedSoftmax(),
    "softmax_no_dup": lambda: TiedSoftmax(exclude_history=True),
    "cpr": lambda: SoftmaxCPR(reranker_ks=(3,)),
    "cpr_no_rerankers": lambda: SoftmaxCPR(reranker_ks=()),
    "cpr_cascade_add_mi_no_dup": lambda: SoftmaxCPR(
        reranker_ks=(2, 5),
        merge="add",
        use_mi=True,
        mi_layers=1,
        exclude_history=True,
    ),
    "cpr_pointer_only": lambda: SoftmaxCPR(use_context=False, reranker_ks=(4,)),
    "mos": lambda: MixtureOfSoftmax(num_components=2),
}
HAS_INDEX = {name: not name.startswith("mos") for name in HEADS}


@pytest.fixture(autouse=True)
def _seeded():
    # Layer weights come from unseeded initializers: fix them per test.
    tf.keras.utils.set_random_seed(1234)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "hidden": rng.normal(size=(len(HISTORY), L, D)).astype("float32"),
        "table": rng.normal(size=(N, D)).astype("float32"),
        "bias": rng.normal(size=(N,)).astype("float32"),
    }


def _inputs(data):
    return {
        "hidden_states": tf.constant(data["hidden"]),
        "history_ids": tf.constant(HISTORY),
    }


def _logits(head, data):
    return head(
        _inputs(data),
        tf.constant(data["table"]),
        item_bias=tf.constant(data["bias"]),
    ).numpy()


# ----------------------------------------------------------- the reference


def _dense(layer, x):
    kernel, bias = (w.astype("float64") for w in layer.get_weights())
    return x @ kernel + bias


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))


def _last(row):
    real = [t for t in range(L) if HISTORY[row, t] != 0]
    return real, (real[-1] if real else 0)


def _softmax_reference(head, data):
    table, bias = data["table"].astype("float64"), data["bias"]
    out = np.zeros((len(HISTORY), N))
    for i in range(len(HISTORY)):
        real, last = _last(i)
        out[i] = table @ data["hidden"][i, last] + bias
        out[i, 0] = NEG
        if head.exclude_history:
            out[i, HISTORY[i, real]] = NEG
    return out


def _mos_reference(head, data):
    table, bias = data["table"].astype("float64"), data["bias"]
    out = np.zeros((len(HISTORY), N))
    for i in range(len(HISTORY)):
        h = data["hidden"][i, _last(i)[1]].astype("float64")
        prior = np.exp(_dense(head.prior_projection, h))
        prior /= prior.sum()
        queries = np.tanh(_dense(head.component_projection, h))
        queries = queries.reshape(head.num_components, D)
        probs = sum(
            prior[c] * _softmax_row(table @ queries[c] + bias)
            for c in range(head.num_components)
        )
        with np.errstate(divide="ignore"):
            out[i] = np.log(probs)
        out[i, 0] = NEG
    return out


def _softmax_row(logits):
    logits = logits.copy()
    logits[0] = -np.inf
    p = np.exp(logits - logits.max())
    return p / p.sum()


def _cpr_query(head, data, i):
    hidden = data["hidden"].astype("float64")
    real, last = _last(i)
    q = hidden[i, last]
    if head.use_mi:  # mi_layers=1: the last layer's window
        parts = [
            hidden[i, last - j]
            if last - j >= 0 and HISTORY[i, last - j] != 0
            else np.zeros(D)
            for j in range(head.mi_window)
        ]
        mixed = _dense(head.mi_projection, np.concatenate(parts))
        q = np.concatenate([q, _gelu(mixed)])
    return real, q


def _cpr_reference(head, data):
    """Softmax-CPR by loops over rows and items, from the documented math."""
    table = data["table"].astype("float64")
    bias = data["bias"].astype("float64")
    ks = list(head.reranker_ks)
    out = np.zeros((len(HISTORY), N))
    for i in range(len(HISTORY)):
        real, q = _cpr_query(head, data, i)
        f_base = _dense(head.base_projection, q)
        logit = table @ f_base + bias
        logit[0] = NEG
        history = {int(HISTORY[i, t]) for t in real}
        for k in sorted(ks, reverse=True):
            f_rerank = _dense(head.reranker_projections[ks.index(k)], q)
            for x in sorted(range(N), key=lambda x: (-logit[x], x))[:k]:
                if head.merge == "replace":
                    logit[x] = table[x] @ f_rerank + bias[x]
                else:  # a history item's term is overwritten below
                    logit[x] += table[x] @ f_rerank
        for x in sorted(history):
            if head.exclude_history:
                logit[x] = NEG
                continue
            value = table[x] @ f_base + bias[x]
            if head.use_context:
                context = table[x] @ _dense(head.context_projection, q)
                if head.merge == "replace":
                    value = context + bias[x]
                else:
                    value += context
            if head.use_pointer:
                keys = [
                    _dense(head.key_projection, data["hidden"][i, s])
                    for s in real
                    if HISTORY[i, s] == x
                ]
                f_pointer = _dense(head.pointer_projection, q)
                value += f_pointer @ np.mean(keys, axis=0)
            logit[x] = value
        out[i] = logit
    return out


def reference(head, data):
    """The head's inference logits, from its documented math in NumPy."""
    if isinstance(head, TiedSoftmax):
        return _softmax_reference(head, data)
    if isinstance(head, MixtureOfSoftmax):
        return _mos_reference(head, data)
    return _cpr_reference(head, data)


# --------------------------------------------------------------- the tests


@pytest.mark.parametrize("name", HEADS)
def test_call_matches_the_numpy_reference(name):
    head, data = HEADS[name](), _data()
    logits = _logits(head, data)
    assert logits.shape == (len(HISTORY), N) and logits.dtype == np.float32
    np.testing.assert_allclose(
        logits, reference(head, data), rtol=1e-4, atol=1e-4
    )


@pytest.mark.parametrize("name", HEADS)
def test_score_candidates_equal_call_at_the_candidates(name):
    head, data = HEADS[name](), _data(seed=1)
    full = _logits(head, data)
    rng = np.random.default_rng(1)
    # Every item (the precondition of CPR's rerankers), shuffled per row,
    # then repeats and padding.
    order = np.stack([rng.permutation(N) for _ in HISTORY])
    candidates = np.concatenate([order, order[:, :3], 0 * order[:, :1]], 1)
    scores = head.score_candidates(
        _inputs(data),
        tf.constant(data["table"]),
        tf.constant(candidates, tf.int32),
        item_bias=tf.constant(data["bias"]),
    ).numpy()
    np.testing.assert_allclose(
        scores,
        np.take_along_axis(full, candidates, 1),
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize("name", HEADS)
@pytest.mark.parametrize("k", [1, 5])
def test_top_k_candidates_then_scoring_give_the_full_top_k(name, k):
    head, data = HEADS[name](), _data(seed=2)
    inputs, table = _inputs(data), tf.constant(data["table"])
    bias = tf.constant(data["bias"])
    if not head.has_index:
        with pytest.raises(ValueError, match="one query vector"):
            head.top_k_candidates(inputs, table, k, item_bias=bias)
        return
    ids, base = head.top_k_candidates(inputs, table, k, item_bias=bias)
    scores = head.score_candidates(
        inputs, table, ids, item_bias=bias, base_logits=base
    )
    scores = tf.where(ids > 0, scores, float("-inf"))
    best = tf.gather(ids, top_k_positions(scores, ids, k), batch_dims=1)
    full = _logits(head, data)[:, 1:]  # padding is never recommended
    # The full catalogue's top-k, ties to the lower id.
    expected = np.argsort(-full, axis=1, kind="stable")[:, :k] + 1
    np.testing.assert_array_equal(best.numpy(), expected)


@pytest.mark.parametrize("name", HEADS)
def test_the_shared_members(name):
    head = HEADS[name]()
    assert isinstance(head, OutputHead)
    assert head.has_index is HAS_INDEX[name]
    excludes = name.endswith("no_dup")
    assert head.excludes_history(False) is excludes
    assert head.excludes_history(True) is False
    for training in (False, True):
        assert head.reads_last_state_only(training) in (True, False)
    with pytest.raises(ValueError, match="k"):
        if head.has_index:
            head.top_k_candidates(
                _inputs(_data()), tf.constant(_data()["table"]), -1
            )
        else:
            raise ValueError("no index, so no k")


@pytest.mark.parametrize("name", HEADS)
def test_the_training_loss_api(name):
    head, data = HEADS[name](), _data(seed=3)
    inputs, table = _inputs(data), tf.constant(data["table"])
    bias = tf.constant(data["bias"])
    labels = tf.constant([2, 11, 5, 4])
    if not head.has_cross_entropy:
        with pytest.raises(NotImplementedError, match="has_cross_entropy"):
            head.cross_entropy(inputs, table, labels, item_bias=bias)
        return
    # In training (no dropout here): the history is never excluded.
    loss, _, ranks = head.cross_entropy(
        inputs, table, labels, item_bias=bias, training=True
    )
    logits = head(inputs, table, item_bias=bias, training=True)
    expected = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    np.testing.assert_allclose(loss.numpy(), expected.numpy(), atol=1e-4)
    assert ranks.shape == (len(HISTORY),)


@pytest.mark.parametrize("name", HEADS)
def test_config_round_trip(name):
    head, data = HEADS[name](), _data(seed=4)
    logits = _logits(head, data)
    config = head.get_config()
    json.dumps(config)
    assert {"mask_padding", "output_dim"} <= set(config)
    revived = type(head).from_config(config)
    assert revived.get_config() == config
    _logits(revived, data)  # builds it
    revived.set_weights(head.get_weights())
    np.testing.assert_array_equal(_logits(revived, data), logits)
    # Registered under the package's name, unchanged by the move to heads.
    serialized = tf.keras.utils.serialize_keras_object(head)
    assert f"tfrec_tricks>{type(head).__name__}" in json.dumps(serialized)
    assert isinstance(
        tf.keras.utils.deserialize_keras_object(serialized), type(head)
    )


def test_the_heads_are_still_importable_from_layers():
    from tfrec_tricks.layers import MixtureOfSoftmax as M
    from tfrec_tricks.layers import SoftmaxCPR as S
    from tfrec_tricks.layers import TiedSoftmax as T

    assert (M, S, T) == (MixtureOfSoftmax, SoftmaxCPR, TiedSoftmax)
    assert "SoftmaxCPR" in dir(tfrec_tricks.layers)
    assert tfrec_tricks.heads.OutputHead is OutputHead
    with pytest.raises(AttributeError, match="NoSuchHead"):
        tfrec_tricks.layers.NoSuchHead  # noqa: B018


def test_the_base_class_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        OutputHead()

    class HalfAHead(OutputHead):
        def call(self, inputs, item_embeddings):
            return item_embeddings

    with pytest.raises(TypeError, match="abstract"):
        HalfAHead()
