import json
import time

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks import testing
from tfrec_tricks.layers import StochasticSharedEmbedding
from tfrec_tricks.layers.stochastic_shared_embedding import graph_to_csr

IDS = np.array([[3, 1, 0, 0], [9, 2, 2, 0]], "int32")
EDGES = np.array([[1, 2], [2, 3], [4, 9], [2, 9]])


def chi_square_critical(dof, z=3.090):
    """Wilson-Hilferty upper quantile of chi2(dof); z=3.090 is alpha 1e-3."""
    a = 2.0 / (9.0 * dof)
    return dof * (1.0 - a + z * np.sqrt(a)) ** 3


def test_chi_square_critical_matches_tables():
    # Published chi-square table values for alpha = 0.001.
    assert chi_square_critical(10) == pytest.approx(29.588, rel=0.01)
    assert chi_square_critical(100) == pytest.approx(149.449, rel=0.01)


@pytest.mark.parametrize(
    "init_kwargs",
    [
        {"num_ids": 10, "probability": 0.3, "seed": 1},
        {
            "num_ids": 10,
            "probability": 0.3,
            "graph": EDGES,
            "rho": 4.0,
            "seed": 1,
        },
    ],
)
def test_run_layer_test(init_kwargs):
    layer = testing.run_layer_test(
        StochasticSharedEmbedding,
        init_kwargs,
        IDS,
        expected_output_shape=(2, 4),
        expected_output_dtype="int32",
        expected_num_trainable_weights=0,
    )
    np.testing.assert_array_equal(layer(IDS), IDS)


def test_identity_unless_training():
    layer = StochasticSharedEmbedding(10, 0.9, graph=EDGES, seed=0)
    for ids in [IDS, IDS.astype("int64"), IDS[0]]:
        np.testing.assert_array_equal(layer(ids), ids)
        np.testing.assert_array_equal(layer(ids, training=False), ids)
        assert layer(ids).dtype == ids.dtype
    # The identity path has no random op: a served graph is deterministic.
    graph = (
        tf.function(lambda x: layer(x, training=False))
        .get_concrete_function(tf.TensorSpec([None, 4], tf.int32))
        .graph
    )
    op_types = {op.type for op in graph.get_operations()}
    assert not [t for t in op_types if "Random" in t], op_types
    assert layer.seed_state.numpy() == 0


def test_symbolic_training_flag():
    layer = StochasticSharedEmbedding(10, 0.99, seed=0)
    ids = np.tile(IDS, (50, 1))
    np.testing.assert_array_equal(layer(ids, training=tf.constant(False)), ids)
    changed = layer(ids, training=tf.constant(True)).numpy() != ids
    assert changed.mean() > 0.5


def test_sse_se_statistics():
    p, num_ids, n = 0.3, 100_000, 200_000
    rng = np.random.default_rng(0)
    ids = rng.integers(1, num_ids, size=n)
    ids[rng.random(n) < 0.2] = 0
    layer = StochasticSharedEmbedding(num_ids, p, seed=7)
    out = layer(ids, training=True).numpy()
    real = ids != 0
    np.testing.assert_array_equal(out[~real], 0)
    assert out[real].min() >= 1 and out.max() < num_ids
    # A replacement draws the same id with probability 1 / (num_ids - 1).
    rate = (out[real] != ids[real]).mean()
    expected = p * (1 - 1 / (num_ids - 1))
    assert abs(rate - expected) < 5 * np.sqrt(p * (1 - p) / real.sum())


def test_sse_se_replacements_are_uniform():
    p, num_ids, n = 0.5, 51, 200_000
    ids = np.ones(n, "int64")
    out = StochasticSharedEmbedding(num_ids, p, seed=3)(
        ids, training=True
    ).numpy()
    counts = np.bincount(out, minlength=num_ids)
    assert counts[0] == 0
    # Every id but the original is reached only by a uniform replacement.
    others = counts[2:]
    expected = others.sum() / others.size
    statistic = ((others - expected) ** 2 / expected).sum()
    assert statistic < chi_square_critical(others.size - 1)
    # Kept, or replaced by itself: (1 - p) + p / (num_ids - 1).
    kept = counts[1] / n
    assert kept == pytest.approx((1 - p) + p / (num_ids - 1), abs=0.01)
    assert expected / n == pytest.approx(p / (num_ids - 1), rel=0.05)


def test_sse_graph_neighbour_ratio_is_rho():
    p, rho, num_ids, n = 0.5, 5.0, 21, 100_000
    # Id 1 has 3 neighbours, id 10 has 8; they share none.
    edges = [[1, 2], [1, 3], [1, 4]] + [[10, k] for k in range(11, 19)]
    ids = np.concatenate([np.full(n, 1), np.full(n, 10)])
    layer = StochasticSharedEmbedding(num_ids, p, graph=edges, rho=rho, seed=11)
    out = layer(ids, training=True).numpy()
    assert out.min() >= 1
    for source, neighbours in [(1, [2, 3, 4]), (10, list(range(11, 19)))]:
        counts = np.bincount(out[ids == source], minlength=num_ids)
        others = sorted(set(range(1, num_ids)) - {source} - set(neighbours))
        per_neighbour = counts[neighbours].mean() / n
        per_other = counts[others].mean() / n
        assert per_neighbour / per_other == pytest.approx(rho, rel=0.06)
        # Absolute level: p(j, l) for a non-neighbour l.
        degree, real = len(neighbours), num_ids - 1
        q = degree * (rho - 1) / (degree * (rho - 1) + real)
        assert per_other == pytest.approx(p * (1 - q) / real, rel=0.06)


def test_padding_is_never_replaced_with_a_graph():
    layer = StochasticSharedEmbedding(10, 0.9, graph=EDGES, rho=50.0, seed=2)
    ids = np.tile(IDS, (500, 1))
    out = layer(ids, training=True).numpy()
    np.testing.assert_array_equal(out[ids == 0], 0)
    assert out[ids != 0].min() >= 1


def test_seeded_and_repeated_calls():
    ids = np.tile(IDS, (200, 1))

    def draws(seed, graph=None):
        layer = StochasticSharedEmbedding(10, 0.5, graph=graph, seed=seed)
        return [layer(ids, training=True).numpy() for _ in range(3)]

    for graph in [None, EDGES]:
        first, second = draws(5, graph), draws(5, graph)
        for a, b in zip(first, second):
            np.testing.assert_array_equal(a, b)
        assert not np.array_equal(first[0], first[1])
        assert not np.array_equal(first[0], draws(6, graph)[0])


def test_graph_mode_gives_the_same_draws_in_a_tf_function():
    ids = np.tile(IDS, (100, 1))
    eager = StochasticSharedEmbedding(10, 0.5, graph=EDGES, seed=5)
    graph = StochasticSharedEmbedding(10, 0.5, graph=EDGES, seed=5)
    step = tf.function(lambda x: graph(x, training=True))
    for _ in range(2):
        np.testing.assert_array_equal(
            eager(ids, training=True), step(tf.constant(ids))
        )


def test_config_is_small_and_weights_carry_the_graph():
    rng = np.random.default_rng(0)
    edges = rng.integers(1, 1000, size=(5000, 2))
    layer = StochasticSharedEmbedding(1000, 0.4, graph=edges, seed=9)
    ids = rng.integers(0, 1000, size=(64, 20))
    layer(ids)
    config = layer.get_config()
    assert config["graph"] is None
    assert len(json.dumps(config)) < 1000
    indptr, indices = graph_to_csr(edges, 1000)
    assert config["num_edges"] == indices.size
    np.testing.assert_array_equal(layer.graph_indptr.numpy(), indptr)
    np.testing.assert_array_equal(layer.graph_indices.numpy(), indices)

    revived = StochasticSharedEmbedding.from_config(config)
    revived(ids)
    np.testing.assert_array_equal(revived.graph_indices.numpy(), 0)
    revived.set_weights(layer.get_weights())
    np.testing.assert_array_equal(
        revived(ids, training=True), layer(ids, training=True)
    )


def test_keras_file_round_trip_restores_the_graph(tmp_path):
    layer = StochasticSharedEmbedding(10, 0.5, graph=EDGES, seed=3)
    inputs = tf.keras.Input((4,), dtype="int32")
    model = tf.keras.Model(inputs, layer(inputs))
    path = str(tmp_path / "sse.keras")
    model.save(path)
    # Loading goes through from_config (no graph) and then the weights.
    restored = tf.keras.models.load_model(path)
    revived = restored.layers[-1]
    assert isinstance(revived, StochasticSharedEmbedding)
    for name in ["graph_indptr", "graph_indices"]:
        np.testing.assert_array_equal(
            getattr(revived, name).numpy(), getattr(layer, name).numpy()
        )
    ids = np.tile(IDS, (50, 1))
    np.testing.assert_array_equal(
        revived(ids, training=True), layer(ids, training=True)
    )


def test_graph_inputs_are_equivalent():
    indptr, indices = graph_to_csr(EDGES, 10)
    dense = np.zeros((10, 10), bool)
    dense[EDGES[:, 0], EDGES[:, 1]] = dense[EDGES[:, 1], EDGES[:, 0]] = True
    for j in range(10):
        np.testing.assert_array_equal(
            indices[indptr[j] : indptr[j + 1]], np.flatnonzero(dense[j])
        )
    # Duplicates, reversed duplicates and self-loops are dropped.
    noisy = np.concatenate([EDGES, EDGES[:, ::-1], [[5, 5]]])
    for a, b in zip(graph_to_csr(noisy, 10), (indptr, indices)):
        np.testing.assert_array_equal(a, b)
    ids = np.tile(IDS, (50, 1))
    outputs = []
    for graph in [
        EDGES,
        EDGES.tolist(),
        (indptr, indices),
        {"indptr": indptr, "indices": indices},
    ]:
        layer = StochasticSharedEmbedding(10, 0.5, graph=graph, seed=4)
        assert layer.num_edges == 8
        outputs.append(layer(ids, training=True).numpy())
    for other in outputs[1:]:
        np.testing.assert_array_equal(other, outputs[0])
    empty = StochasticSharedEmbedding(10, 0.5, graph=np.zeros((0, 2)), seed=4)
    assert empty.num_edges == 0
    assert empty(ids, training=True).numpy().min() >= 0


def test_a_million_ids_with_a_sparse_graph():
    num_ids = 1_000_000
    rng = np.random.default_rng(0)
    edges = rng.integers(1, num_ids, size=(2_000_000, 2))
    start = time.perf_counter()
    layer = StochasticSharedEmbedding(
        num_ids, 0.5, graph=edges, rho=100.0, seed=0
    )
    ids = rng.integers(0, num_ids, size=(256, 50))
    out = layer(ids, training=True).numpy()
    elapsed = time.perf_counter() - start
    assert elapsed < 10.0, elapsed
    assert layer.num_edges > 3_900_000
    np.testing.assert_array_equal(out[ids == 0], 0)
    assert 0.4 < (out != ids)[ids != 0].mean() < 0.6
    # No dense N x N anywhere: the weights are the CSR arrays.
    assert sum(np.prod(w.shape) for w in layer.weights) < 6_000_000


@pytest.mark.slow
def test_saved_model_in_fresh_process_is_the_identity():
    layer = StochasticSharedEmbedding(10, 0.5, graph=EDGES, seed=0)
    served = testing.assert_saved_model_in_fresh_process(
        layer, IDS, call_kwargs={"training": False}
    )
    np.testing.assert_array_equal(served["output_0"], IDS)


class SequenceModel(tf.keras.Model):
    def __init__(self, num_items, dim, probability, **kwargs):
        super().__init__(**kwargs)
        self.sse = StochasticSharedEmbedding(num_items, probability, seed=0)
        self.embedding = tf.keras.layers.Embedding(num_items, dim)
        self.head = tf.keras.layers.Dense(num_items)

    def call(self, ids, training=None):
        ids = self.sse(ids, training=training)
        return self.head(tf.reduce_mean(self.embedding(ids), axis=1))


@pytest.mark.slow
def test_subclassed_model_replaces_only_in_fit():
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 30, size=(64, 6)).astype("int32")
    model = SequenceModel(30, 8, 0.2)
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(ids, ids[:, 0], epochs=2, batch_size=16, verbose=0)
    # 4 steps per epoch, one draw each.
    assert model.sse.seed_state.numpy() == 8
    # One batch of 64 in both: oneDNN's matmul rounds differently per
    # batch size, which is not what this test is about.
    np.testing.assert_array_equal(
        model.predict(ids, batch_size=64, verbose=0),
        model(ids, training=False),
    )
    assert model.sse.seed_state.numpy() == 8


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_ids": 1}, "num_ids=1"),
        ({"probability": 1.0}, "probability=1.0"),
        ({"probability": -0.1}, "probability=-0.1"),
        ({"rho": 0.5}, "rho=0.5"),
        ({"seed": 1.5}, "seed=1.5"),
        ({"graph": [[0, 1]]}, r"ids in \[0, 1\]"),
        ({"graph": [[1, 10]]}, r"ids in \[1, 10\]"),
        ({"graph": [1, 2, 3]}, r"edges.shape=\(3,\)"),
        ({"graph": (np.zeros(5), np.zeros(0))}, r"indptr.shape=\(5,\)"),
        ({"graph": (np.arange(11), np.ones(3))}, r"indptr\[-1\]=10"),
        (
            {"graph": (np.r_[0, np.ones(10)], np.zeros(1))},
            r"indices in \[0, 0\]",
        ),
        ({"graph": EDGES, "num_edges": 3}, "num_edges=3"),
        ({"num_edges": -1}, "num_edges=-1"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        StochasticSharedEmbedding(
            **{"num_ids": 10, "probability": 0.1, **kwargs}
        )
