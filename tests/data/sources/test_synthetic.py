"""The synthetic generator: determinism, sizes, graph, repeats, time gaps."""

import numpy as np
import pytest

from tfrec_tricks.data.sources import synthetic

SMALL = dict(num_users=300, num_items=200, num_clusters=8, mean_length=20)


@pytest.fixture(scope="module")
def data():
    return synthetic.generate(**SMALL, seed=0)


@pytest.fixture(scope="module")
def sequences(data):
    """Per user: (items as a list, timestamps), in generation order."""
    table = data.interactions
    users = table.users
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
    ends = np.r_[starts[1:], len(users)]
    return [
        (list(table.items[s:e]), table.timestamps[s:e])
        for s, e in zip(starts, ends)
    ]


def repeated_share(items):
    """Share of positions whose item was already seen earlier."""
    seen, repeats = set(), 0
    for item in items:
        repeats += item in seen
        seen.add(item)
    return repeats / len(items)


def test_same_seed_same_data(data):
    again = synthetic.generate(**SMALL, seed=0)
    for name in ("users", "items", "timestamps"):
        np.testing.assert_array_equal(
            getattr(again.interactions, name), getattr(data.interactions, name)
        )
    np.testing.assert_array_equal(again.item_graph, data.item_graph)
    np.testing.assert_array_equal(again.item_cluster, data.item_cluster)
    np.testing.assert_array_equal(
        again.repeat_propensity, data.repeat_propensity
    )


def test_different_seed_differs(data):
    other = synthetic.generate(**SMALL, seed=1)
    assert not np.array_equal(other.repeat_propensity, data.repeat_propensity)
    n = min(len(other.interactions), len(data.interactions))
    assert np.mean(other.interactions.items[:n] != data.interactions.items[:n])
    assert other.interactions.source != data.interactions.source


def test_sizes_honoured(data, sequences):
    table = data.interactions
    assert len(sequences) == SMALL["num_users"]
    assert set(table.users) == {f"u{k}" for k in range(1, 301)}
    assert set(table.items) <= {f"i{k}" for k in range(1, 201)}
    lengths = np.array([len(items) for items, _ in sequences])
    assert lengths.min() >= 5
    assert abs(lengths.mean() - SMALL["mean_length"]) < 1.0
    assert len(table) == lengths.sum()
    assert table.timestamps.dtype == np.float64
    assert table.numeric == {}
    assert data.repeat_propensity.shape == (SMALL["num_users"],)
    assert data.item_cluster.shape == (SMALL["num_items"] + 1,)


def test_users_are_contiguous_and_time_increases(sequences):
    for _, times in sequences:
        assert np.all(np.diff(times) > 0)


def test_clusters_partition_the_catalogue(data):
    clusters = data.item_cluster[1:]
    counts = np.bincount(clusters, minlength=SMALL["num_clusters"])
    assert len(counts) == SMALL["num_clusters"]
    assert counts.min() >= 2
    assert counts.max() - counts.min() <= 1  # near-equal blocks
    assert np.all(np.diff(clusters) >= 0)  # contiguous blocks


def test_item_graph_edges_within_clusters_without_self_loops(data):
    graph = data.item_graph
    assert graph.ndim == 2 and graph.shape[1] == 2 and len(graph) > 0
    assert np.issubdtype(graph.dtype, np.integer)
    assert graph.min() >= 1 and graph.max() <= SMALL["num_items"]
    assert np.all(graph[:, 0] != graph[:, 1])
    clusters = data.item_cluster
    np.testing.assert_array_equal(clusters[graph[:, 0]], clusters[graph[:, 1]])
    undirected = {tuple(sorted(edge)) for edge in graph.tolist()}
    assert len(undirected) == len(graph)  # no duplicate edges
    # Ring of 25 items, radius 3: each item has 6 neighbours.
    degree = np.bincount(graph.ravel(), minlength=SMALL["num_items"] + 1)
    np.testing.assert_array_equal(degree[1:], 6)


def test_graph_radius_limited_by_small_rings():
    data = synthetic.generate(
        num_users=3, num_items=15, num_clusters=3, graph_radius=5, seed=0
    )
    # Rings of 5 items: at most 2 neighbours each side, no duplicates.
    degree = np.bincount(data.item_graph.ravel(), minlength=16)
    np.testing.assert_array_equal(degree[1:], 4)
    undirected = {tuple(sorted(e)) for e in data.item_graph.tolist()}
    assert len(undirected) == len(data.item_graph)


def test_two_item_clusters_get_one_edge():
    data = synthetic.generate(num_users=3, num_items=4, num_clusters=2, seed=0)
    np.testing.assert_array_equal(data.item_graph, [[1, 2], [3, 4]])
    assert np.issubdtype(data.item_graph.dtype, np.integer)


def test_graph_radius_zero_gives_an_empty_graph():
    data = synthetic.generate(
        num_users=3, num_items=20, num_clusters=2, graph_radius=0, seed=0
    )
    assert data.item_graph.shape == (0, 2)


def test_some_users_repeat_and_others_much_less(data, sequences):
    """Zero-propensity users repeat only by chance, repeaters often."""
    propensity = data.repeat_propensity
    share_zero = np.mean(propensity == 0)
    assert 0.4 < share_zero < 0.6  # non_repeater_share=0.5
    assert np.all(
        (propensity == 0) | ((propensity >= 0.3) & (propensity <= 0.8))
    )
    shares = np.array([repeated_share(items) for items, _ in sequences])
    non_repeaters = shares[propensity == 0].mean()
    repeaters = shares[propensity > 0].mean()
    assert repeaters > 3 * non_repeaters
    assert repeaters > 0.3


def test_non_repeater_share_bounds():
    nobody = synthetic.generate(**SMALL, non_repeater_share=1.0, seed=0)
    everybody = synthetic.generate(**SMALL, non_repeater_share=0.0, seed=0)
    assert np.all(nobody.repeat_propensity == 0)
    assert np.all(everybody.repeat_propensity > 0)


def items_by_user(data):
    table = data.interactions
    starts = np.flatnonzero(np.r_[True, table.users[1:] != table.users[:-1]])
    ends = np.r_[starts[1:], len(table)]
    return [list(table.items[s:e]) for s, e in zip(starts, ends)]


def test_more_repeats_with_more_repeaters():
    nobody = items_by_user(
        synthetic.generate(**SMALL, non_repeater_share=1.0, seed=0)
    )
    everybody = items_by_user(
        synthetic.generate(**SMALL, non_repeater_share=0.0, seed=0)
    )
    low = np.mean([repeated_share(s) for s in nobody])
    high = np.mean([repeated_share(s) for s in everybody])
    assert high > 3 * low


def test_non_repeaters_never_repeat_in_their_sequences(data, sequences):
    never = np.array([len(set(items)) == len(items) for items, _ in sequences])
    # About non_repeater_share=0.5 of the users have no repeated item.
    assert never.mean() > 0.4
    assert np.all(never[data.repeat_propensity == 0])


def test_time_gap_before_last_item_signals_repeats(sequences):
    """After a long gap the next item is a repeat much less often."""
    counts = {True: [0, 0], False: [0, 0]}  # long gap: [repeats, total]
    for items, times in sequences:
        for k in range(1, len(items) - 1):
            long_gap = times[k] - times[k - 1] > 3600.0
            counts[long_gap][0] += items[k + 1] in items[: k + 1]
            counts[long_gap][1] += 1
    after_short = counts[False][0] / counts[False][1]
    after_long = counts[True][0] / counts[True][1]
    assert counts[True][1] > 300  # enough long gaps to measure
    assert after_short > 5 * after_long  # the generator copies 10x less


def test_gap_lengths_are_bimodal(sequences):
    gaps = np.concatenate([np.diff(times) for _, times in sequences])
    long_share = np.mean(gaps > 3600.0)
    assert 0.1 < long_share < 0.2  # long_gap_probability=0.15
    assert np.median(gaps[gaps <= 3600.0]) < 600.0
    assert np.median(gaps[gaps > 3600.0]) > 86400.0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_users=0),
        dict(num_items=-1),
        dict(num_clusters=0),
        dict(mean_length=0),
        dict(num_items=10, num_clusters=6),
        dict(non_repeater_share=1.5),
        dict(non_repeater_share=-0.1),
        dict(long_gap_probability=2.0),
    ],
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match="Received"):
        synthetic.generate(**{**SMALL, **kwargs})


# --- generate's phases ------------------------------------------------------


def test_check_arguments_reports_the_first_problem():
    good = dict(
        num_users=1,
        num_items=4,
        num_clusters=2,
        mean_length=5,
        copy_window=1,
        non_repeater_share=0.0,
        long_gap_probability=1.0,
    )
    synthetic._check_arguments(**good)
    with pytest.raises(ValueError, match="^copy_window must be positive"):
        synthetic._check_arguments(**{**good, "copy_window": 0})
    with pytest.raises(ValueError, match="^Each cluster needs at least 2"):
        synthetic._check_arguments(
            **{**good, "num_items": 3, "non_repeater_share": 2.0}
        )
    with pytest.raises(ValueError, match="^long_gap_probability must be in"):
        synthetic._check_arguments(**{**good, "long_gap_probability": 1.5})


def test_catalogue_splits_items_into_contiguous_rings():
    catalogue = synthetic._catalogue(num_items=7, num_clusters=3)
    assert [block.tolist() for block in catalogue.members] == [
        [1, 2],
        [3, 4],
        [5, 6, 7],
    ]
    assert catalogue.item_cluster.tolist() == [0, 0, 0, 1, 1, 2, 2, 2]
    assert catalogue.position.tolist() == [0, 0, 1, 0, 1, 0, 1, 2]


def test_user_traits_give_non_repeaters_no_propensity():
    rng = np.random.default_rng(0)
    propensity, lengths = synthetic._user_traits(rng, 200, 1.0, 3)
    assert not propensity.any()
    assert (lengths == 5).all()  # at least 5, and a mean below 5 adds none
    rng = np.random.default_rng(0)
    propensity, lengths = synthetic._user_traits(rng, 200, 0.0, 20)
    assert ((propensity >= 0.3) & (propensity <= 0.8)).all()
    assert (lengths >= 5).all() and lengths.mean() > 15


def test_walk_user_without_propensity_never_repeats():
    catalogue = synthetic._catalogue(num_items=100, num_clusters=4)
    rng = np.random.default_rng(1)
    items, times = synthetic._walk_user(rng, catalogue, 0.0, 30, 10, 0.5)
    assert len(items) == len(times) == 30
    assert len(set(items)) == 30
    assert np.all(np.diff(times) >= 1.0)  # every gap is at least a second
    rng = np.random.default_rng(1)
    items, _ = synthetic._walk_user(rng, catalogue, 1.0, 30, 1, 0.0)
    # The first move cannot copy (a one-item history); then, with short
    # gaps only, every move copies the latest item.
    assert items[0] != items[1] and items[1:] == [items[1]] * 29


def test_item_graph_lists_each_ring_edge_once():
    members = [np.array([1, 2]), np.array([3, 4, 5, 6])]
    edges = synthetic._item_graph(members, graph_radius=3)
    assert edges.tolist() == [
        [1, 2],
        [3, 4],
        [3, 5],
        [3, 6],
        [4, 5],
        [4, 6],
        [5, 6],
    ]
    assert synthetic._item_graph(members, graph_radius=0).shape == (0, 2)
