"""The built-in synthetic dataset: deterministic, no download.

Users walk an item catalogue split into clusters, so that every technique
of the toolkit has something to learn:

* **Sequential signal.** Items of a cluster sit on a ring; the next item is
  mostly a near successor of the current one on its ring, otherwise an item
  of one of the user's favourite clusters. The clusters are exposed as an
  item graph (ring neighbours within a cluster) for SSE-Graph.
* **Repeats, user by user.** Repeats come only from copying: a share of
  the users never re-consume (their other moves avoid items they have
  seen); the others copy an item from their own recent history with a
  personal propensity. A model must learn *when* to copy (what
  Softmax-CPR's context and pointer partitions are for).
* **Time gaps that carry signal.** Gaps are short within a visit and long
  between visits; the item right after a visit's first item is rarely a
  repeat, so the time gap before the last history item (a soft one-hot
  feature) tells whether to copy.
"""

import dataclasses

import numpy as np

from tfrec_tricks.data.sources.interactions import Interactions

SHORT_GAP_SECONDS = 300.0
LONG_GAP_SECONDS = 3 * 86400.0


@dataclasses.dataclass
class SyntheticData:
    """The generated interactions plus the ground truth behind them.

    Attributes:
        interactions: the ``Interactions`` table (raw ids are strings
            "u<k>" and "i<k>", so the vocabulary is exercised).
        item_graph: int array [E, 2] of undirected edges between raw item
            numbers 1..num_items (ring neighbours within a cluster).
        item_cluster: int array [num_items + 1]; entry i is item i's cluster
            (entry 0 unused).
        repeat_propensity: float array [num_users], each user's chance of
            copying from their history after a short gap.
    """

    interactions: Interactions
    item_graph: np.ndarray
    item_cluster: np.ndarray
    repeat_propensity: np.ndarray


def generate(
    num_users: int = 1000,
    num_items: int = 1000,
    num_clusters: int = 20,
    mean_length: int = 20,
    non_repeater_share: float = 0.5,
    long_gap_probability: float = 0.15,
    graph_radius: int = 3,
    copy_window: int = 10,
    seed: int = 0,
) -> SyntheticData:
    """Generates the synthetic dataset; the same arguments give the same data.

    Args:
        num_users: int. Number of users.
        num_items: int. Size of the catalogue (items "i1".."i<num_items>").
        num_clusters: int. Item clusters; must divide the catalogue into
            clusters of at least 2 items.
        mean_length: int. Mean interactions per user (at least 5 each).
        non_repeater_share: float. Share of users who never repeat.
        long_gap_probability: float. Chance that an interaction starts a
            new visit (long gap before it).
        copy_window: int. A copy draws uniformly from this many latest
            history items. A small window makes a copy's target predictable,
            so knowing *whether* the user copies (the time gap) changes the
            ranking, not only the probabilities. Defaults to 10.
        graph_radius: int. Ring neighbours on each side linked in the item
            graph.
        seed: int. Random seed.

    It checks the arguments, lays the catalogue out in cluster rings,
    draws each user's repeat propensity and length, walks each user
    through the catalogue, then links ring neighbours into the item graph.

    Returns:
        A ``SyntheticData``.

    Example:

    >>> from tfrec_tricks.data.sources import synthetic
    >>> data = synthetic.generate(num_users=50, num_items=40, num_clusters=4)
    >>> len(data.interactions.users) > 50 * 5, data.item_graph.shape[1]
    (True, 2)
    >>> same = synthetic.generate(num_users=50, num_items=40, num_clusters=4)
    >>> bool((same.interactions.items == data.interactions.items).all())
    True
    """
    _check_arguments(
        num_users=num_users,
        num_items=num_items,
        num_clusters=num_clusters,
        mean_length=mean_length,
        copy_window=copy_window,
        non_repeater_share=non_repeater_share,
        long_gap_probability=long_gap_probability,
    )
    rng = np.random.default_rng(seed)
    catalogue = _catalogue(num_items, num_clusters)
    propensity, lengths = _user_traits(
        rng, num_users, non_repeater_share, mean_length
    )
    users, items, times = _walk_users(
        rng, catalogue, propensity, lengths, copy_window, long_gap_probability
    )
    item_graph = _item_graph(catalogue.members, graph_radius)
    interactions = Interactions(
        users=np.asarray(users, dtype=str),
        items=np.asarray(items, dtype=str),
        timestamps=np.asarray(times, dtype=np.float64),
        numeric={},
        source=f"synthetic(seed={seed})",
    )
    return SyntheticData(
        interactions, item_graph, catalogue.item_cluster, propensity
    )


@dataclasses.dataclass
class _Catalogue:
    """Items 1..num_items, cluster c a contiguous block of them (its ring).

    Attributes:
        members: one int array per cluster, its items in ring order.
        item_cluster: int array [num_items + 1]: each item's cluster.
        position: int array [num_items + 1]: each item's place on its ring.
    """

    members: list[np.ndarray]
    item_cluster: np.ndarray
    position: np.ndarray


def _check_arguments(
    num_users: int,
    num_items: int,
    num_clusters: int,
    mean_length: int,
    copy_window: int,
    non_repeater_share: float,
    long_gap_probability: float,
) -> None:
    """Raises ValueError on the first argument of ``generate`` out of range."""
    _check_positive(
        num_users=num_users,
        num_items=num_items,
        num_clusters=num_clusters,
        mean_length=mean_length,
        copy_window=copy_window,
    )
    if num_items < 2 * num_clusters:
        raise ValueError(
            "Each cluster needs at least 2 items. Received: "
            f"num_items={num_items}, num_clusters={num_clusters}"
        )
    for name, value in (
        ("non_repeater_share", non_repeater_share),
        ("long_gap_probability", long_gap_probability),
    ):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be in [0, 1]. Received: {value}")


def _catalogue(num_items: int, num_clusters: int) -> _Catalogue:
    """Splits items 1..num_items into ``num_clusters`` near-equal rings."""
    item_cluster = np.zeros(num_items + 1, dtype=np.int64)
    bounds = np.linspace(0, num_items, num_clusters + 1).astype(int)
    members = []
    for c in range(num_clusters):
        block = np.arange(bounds[c] + 1, bounds[c + 1] + 1)
        item_cluster[block] = c
        members.append(block)
    position = np.zeros(num_items + 1, dtype=np.int64)
    for block in members:
        position[block] = np.arange(len(block))
    return _Catalogue(members, item_cluster, position)


def _user_traits(
    rng: np.random.Generator,
    num_users: int,
    non_repeater_share: float,
    mean_length: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Each user's repeat propensity (0 for non-repeaters) and length."""
    repeaters = rng.random(num_users) >= non_repeater_share
    propensity = np.where(repeaters, rng.uniform(0.3, 0.8, num_users), 0.0)
    lengths = 5 + rng.poisson(max(mean_length - 5, 0), num_users)
    return propensity, lengths


def _walk_users(
    rng: np.random.Generator,
    catalogue: _Catalogue,
    propensity: np.ndarray,
    lengths: np.ndarray,
    copy_window: int,
    long_gap_probability: float,
) -> tuple[list[str], list[str], list[float]]:
    """The raw user ids, raw item ids and times of all users, user by user."""
    users, items, times = [], [], []
    for u in range(len(lengths)):
        walked, walked_times = _walk_user(
            rng,
            catalogue,
            propensity[u],
            lengths[u],
            copy_window,
            long_gap_probability,
        )
        users.extend([f"u{u + 1}"] * len(walked))
        items.extend(f"i{item}" for item in walked)
        times.extend(walked_times)
    return users, items, times


def _walk_user(
    rng: np.random.Generator,
    catalogue: _Catalogue,
    propensity: float,
    length: int,
    copy_window: int,
    long_gap_probability: float,
) -> tuple[list[int], list[float]]:
    """One user's items and times: copies from the history, otherwise new
    items (``_new_item``), with short and long gaps."""
    members = catalogue.members
    favourites = rng.choice(len(members), size=2, replace=False)
    clock = 1.6e9 + rng.uniform(0, 86400 * 30)
    history: list[int] = []
    times: list[float] = []
    seen: set[int] = set()
    item = int(rng.choice(members[favourites[0]]))
    seen.add(item)
    # Whether the gap before the current (latest) item was long: it is
    # the last time gap a model sees in the history, and after a long gap
    # the next item is a repeat ten times less often.
    long_gap = True
    for _ in range(length):
        history.append(item)
        times.append(clock)
        copy = propensity * (0.1 if long_gap else 1.0)
        if len(history) > 1 and rng.random() < copy:
            item = int(rng.choice(history[-copy_window:]))
        else:
            item = _new_item(
                rng,
                item,
                favourites,
                members,
                catalogue.item_cluster,
                catalogue.position,
                seen,
            )
        seen.add(item)
        long_gap = rng.random() < long_gap_probability
        gap_scale = LONG_GAP_SECONDS if long_gap else SHORT_GAP_SECONDS
        clock += rng.exponential(gap_scale) + 1.0
    return history, times


def _item_graph(members: list[np.ndarray], graph_radius: int) -> np.ndarray:
    """The undirected edges between ring neighbours up to ``graph_radius``
    apart, each once, as an int array [E, 2]."""
    edges = [np.zeros((0, 2), dtype=np.int64)]
    for block in members:
        for r in range(1, min(graph_radius, len(block) // 2) + 1):
            edges.append(np.stack([block, np.roll(block, -r)], axis=1))
    # Small rings would list some edges twice.
    return np.unique(np.sort(np.concatenate(edges), axis=1), axis=0)


def _new_item(rng, item, favourites, members, item_cluster, position, seen):
    """The next item when not copying: a step along the ring (70%) or a jump
    into a favourite cluster, avoiding items the user has seen, so that
    repeats come from copying only."""
    for _ in range(10):
        if rng.random() < 0.7:
            block = members[item_cluster[item]]
            step = int(rng.integers(1, 3))
            candidate = int(block[(position[item] + step) % len(block)])
        else:
            candidate = int(rng.choice(members[rng.choice(favourites)]))
        if candidate not in seen:
            return candidate
    # Ring and favourites nearly exhausted: any unseen item, if one is left.
    for _ in range(100):
        candidate = int(rng.integers(1, len(item_cluster)))
        if candidate not in seen:
            return candidate
    return candidate


def _check_positive(**values: int) -> None:
    for name, value in values.items():
        if int(value) <= 0:
            raise ValueError(f"{name} must be positive. Received: {value}")
