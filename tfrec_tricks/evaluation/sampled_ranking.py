"""Sampled-negative ranking metrics: the SASRec / SSE-PT "100 negatives".

The evaluation protocol of SASRec (Kang & McAuley, 2018) and SSE-PT (Wu et
al., 2020), as in ``evaluate`` of ``util.py`` in kang205/SASRec: for each
evaluation example, draw ``num_negatives`` (100) items uniformly from the
catalogue, ids 1..N-1 (0 is padding), with replacement among themselves,
rejecting the items the user interacted with before the target; rank the
target among itself and those negatives by the model's scores, and compute
HR@10 / NDCG@10 from that rank.

These numbers are NOT comparable with full-catalogue ranking
(``tfrec_tricks.evaluation.full_ranking.full_ranking_metrics``): ranking one
item against
100 random ones is far easier than against the whole catalogue, so sampled
HR@10 is much higher, and sampled metrics can even order models differently
from full ranking (Krichene & Rendle, "On Sampled Metrics for Item
Recommendation", KDD 2020). Report them only next to numbers computed with
the same protocol, and say which one you used.

Differences from the reference code, all deliberate:

* Negatives are popularity-free (uniform over the allowed items) as there,
  but the target itself is also rejected (the reference code rejects only the
  training items, so a test target could rarely be drawn as its own
  negative).
* Ties are pessimistic, as in
  ``tfrec_tricks.evaluation.full_ranking.target_ranks``: a
  negative scoring the same as the target ranks ahead of it (the reference
  code's ``argsort().argsort()`` breaks ties arbitrarily). A model that
  scores everything alike gets the last rank, not the first.
* Draws are reproducible per example, independently of batching and order:
  example i's negatives come from
  ``np.random.default_rng([seed, users[i], targets[i]])``.

Duplicate negatives are kept and count each time they were drawn, as in the
reference code.

``distinct_sampled_ranks`` (what ``train --eval-negatives`` reports) draws
the negatives without replacement instead, and ranks a target whose user
has at most ``num_negatives`` items left against all of them: its sampled
rank is then never worse than its full-catalogue rank, whatever
``num_negatives`` (with replacement, an item above the target drawn twice
counts twice, and a draw from a small catalogue can rank the target below
its full rank).
"""

from typing import Iterable, Sequence

import numpy as np

from tfrec_tricks.evaluation.full_ranking import metrics_from_ranks

# Cap on one rejection-sampling block, so that an example whose user has seen
# nearly the whole catalogue loops over blocks instead of allocating one
# huge array.
_MAX_BLOCK = 1 << 20


def _as_int_vector(name: str, values) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(
            f"Expected {name} to be a 1-D array [B]. Received: "
            f"{name}.shape={array.shape}"
        )
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(
            f"Expected {name} to hold integer ids. Received: "
            f"{name}.dtype={array.dtype}"
        )
    return array.astype(np.int64)


def _check_targets(targets: np.ndarray, num_items: int) -> None:
    bad = (targets < 1) | (targets >= num_items)
    if bad.any():
        raise ValueError(
            f"Targets must be item ids in 1..{num_items - 1} (0 is padding). "
            f"Received: targets={targets[bad][:5].tolist()}"
        )


def sample_negatives(
    seen: Sequence[np.ndarray],
    targets: np.ndarray,
    users: np.ndarray,
    num_items: int,
    num_negatives: int = 100,
    seed: int = 0,
) -> np.ndarray:
    """Draws uniform negatives that the user has not interacted with.

    Each example gets ``num_negatives`` item ids drawn uniformly, with
    replacement, from 1..num_items-1 minus the items the user saw before
    the target and minus the target itself (rejection sampling, one block
    of draws at a time).

    Reproducibility: example i's draws come from
    ``np.random.default_rng([seed, int(users[i]), int(targets[i])])`` alone,
    so the same (seed, user, target) gets the same negatives in any batch,
    at any position, whatever the other examples are.

    Args:
        seen: B arrays of item ids, ``seen[i]`` the items example i's user
            interacted with before its target; any length, padding id 0 is
            ignored. A padded int array [B, L] works too.
        targets: int array [B] of item ids in 1..num_items-1.
        users: int array [B] of non-negative user ids (they seed the draws).
        num_items: catalogue size N, padding id included; items are
            1..N-1.
        num_negatives: negatives per example. Defaults to 100.
        seed: non-negative int. Defaults to 0.

    Returns:
        int64 array [B, num_negatives] of item ids in 1..num_items-1, none
        in the example's ``seen`` and none equal to its target.

    Raises:
        ValueError: if num_negatives < 1; if seen, targets and users differ
            in length; if a target, or a ``seen`` id, is outside the
            catalogue; if a user id or the seed is negative; or if an
            example excludes every item, leaving nothing to draw.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.evaluation.sampled_ranking import sample_negatives
    >>> seen = [np.array([1, 2, 0]), np.array([5])]
    >>> negatives = sample_negatives(
    ...     seen, np.array([3, 1]), np.array([7, 8]), num_items=6,
    ...     num_negatives=4)
    >>> negatives.shape, negatives.dtype
    ((2, 4), dtype('int64'))
    >>> set(negatives[0].tolist()) <= {4, 5}  # the only items allowed
    True
    >>> bool(np.isin(negatives[1], [1, 5]).any())
    False
    """
    num_items = int(num_items)
    num_negatives = int(num_negatives)
    if num_negatives < 1:
        raise ValueError(
            "num_negatives must be at least 1. "
            f"Received: num_negatives={num_negatives}"
        )
    if int(seed) < 0:
        raise ValueError(f"seed must be non-negative. Received: seed={seed}")
    targets = _as_int_vector("targets", targets)
    users = _as_int_vector("users", users)
    if not len(seen) == len(targets) == len(users):
        raise ValueError(
            "seen, targets and users must have one entry per example. "
            f"Received: len(seen)={len(seen)}, len(targets)={len(targets)}, "
            f"len(users)={len(users)}"
        )
    _check_targets(targets, num_items)
    if (users < 0).any():
        raise ValueError(
            "User ids must be non-negative (they seed the draws). "
            f"Received: users={users[users < 0][:5].tolist()}"
        )

    negatives = np.empty((len(targets), num_negatives), dtype=np.int64)
    for i, (history, target, user) in enumerate(zip(seen, targets, users)):
        history = np.asarray(history).ravel()
        if history.size and not np.issubdtype(history.dtype, np.integer):
            raise ValueError(
                "seen must hold integer item ids. Received: "
                f"seen[{i}].dtype={history.dtype}"
            )
        history = history.astype(np.int64)
        out = (history < 0) | (history >= num_items)
        if out.any():
            raise ValueError(
                f"seen ids must be in 0..{num_items - 1} (0 is padding). "
                f"Received: seen[{i}] contains {history[out][:5].tolist()}"
            )
        excluded = np.union1d(history[history != 0], [target])
        num_allowed = num_items - 1 - len(excluded)
        if num_allowed < 1:
            raise ValueError(
                f"No item left to draw for example {i}: user {user} has seen "
                f"or targets all {num_items - 1} items (num_items="
                f"{num_items}). Received: target={target}, "
                f"len(seen[{i}])={len(history)}"
            )
        rng = np.random.default_rng([int(seed), int(user), int(target)])
        acceptance = num_allowed / (num_items - 1)
        kept, have = [], 0
        while have < num_negatives:
            need = num_negatives - have
            size = min(int(np.ceil(need / acceptance * 1.2)) + 8, _MAX_BLOCK)
            block = rng.integers(1, num_items, size=size, dtype=np.int64)
            block = block[~np.isin(block, excluded)]
            kept.append(block[:need])
            have += len(kept[-1])
        negatives[i] = np.concatenate(kept)
    return negatives


def sampled_ranks(
    scores: np.ndarray, targets: np.ndarray, negatives: np.ndarray
) -> np.ndarray:
    """1-based pessimistic rank of each target among itself and negatives.

    rank = 1 + #{negatives scoring higher} + #{negatives scoring the same}:
    ties count against the target, as in ``metrics.target_ranks``, and a
    negative drawn twice counts twice.

    Args:
        scores: float array [B, N] over the whole catalogue; column 0 is the
            padding id.
        targets: int array [B] of item ids in 1..N-1.
        negatives: int array [B, M] of item ids in 1..N-1
            (``sample_negatives``).

    Returns:
        int64 array [B] of ranks in 1..M+1.

    NaN scores are the worst scores (``metrics.target_ranks``' rule): a
    target scoring NaN ranks last (M + 1), a negative scoring NaN below
    the target.

    Raises:
        ValueError: on inconsistent shapes or ids outside 1..N-1.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.evaluation.sampled_ranking import sampled_ranks
    >>> scores = np.array([[9.0, 0.9, 0.5, 0.5, 0.1]])
    >>> sampled_ranks(scores, np.array([2]), np.array([[1, 3, 4, 4]]))
    array([3])
    """
    scores = np.asarray(scores, dtype=np.float64)
    targets = np.asarray(targets)
    negatives = np.asarray(negatives)
    if (
        scores.ndim != 2
        or targets.shape != (scores.shape[0],)
        or negatives.ndim != 2
        or negatives.shape[0] != scores.shape[0]
        or negatives.shape[1] < 1
    ):
        raise ValueError(
            "Expected scores [B, N], targets [B] and negatives [B, M] with "
            f"M >= 1. Received: scores.shape={scores.shape}, "
            f"targets.shape={targets.shape}, "
            f"negatives.shape={negatives.shape}"
        )
    targets = _as_int_vector("targets", targets)
    if negatives.size and not np.issubdtype(negatives.dtype, np.integer):
        raise ValueError(
            "Expected negatives to hold integer ids. Received: "
            f"negatives.dtype={negatives.dtype}"
        )
    negatives = negatives.astype(np.int64)
    num_items = scores.shape[1]
    _check_targets(targets, num_items)
    bad = (negatives < 1) | (negatives >= num_items)
    if bad.any():
        raise ValueError(
            f"Negatives must be item ids in 1..{num_items - 1} (0 is "
            f"padding). Received: negatives={negatives[bad][:5].tolist()}"
        )
    rows = np.arange(len(targets))
    target_scores = scores[rows, targets][:, None]
    negative_scores = np.take_along_axis(scores, negatives, axis=1)
    # NaN >= x is false: a NaN negative never counts against the target.
    ranks = 1 + (negative_scores >= target_scores).sum(axis=1)
    last = negatives.shape[1] + 1
    return np.where(np.isnan(target_scores[:, 0]), last, ranks).astype(np.int64)


def distinct_sampled_ranks(
    scores: np.ndarray,
    targets: np.ndarray,
    seen: Sequence[np.ndarray],
    users: np.ndarray,
    num_negatives: int = 100,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Ranks of targets against distinct sampled negatives, capped.

    Example i's negatives are ``num_negatives`` distinct items drawn
    uniformly from 1..N-1 minus ``seen[i]`` and the target (seeded by
    ``(seed, users[i], targets[i])``, as ``sample_negatives``). An example
    with at most ``num_negatives`` such items is *capped*: ranked against
    all of them. Ties and NaN scores follow ``sampled_ranks``. A negative
    is a real item other than the target, counted once, so the rank is
    never worse than ``metrics.target_ranks``' full-catalogue rank.

    Args:
        scores, targets, seen, users, num_negatives, seed: as
            ``sampled_ranking_metrics``.

    Returns:
        ``(ranks, capped)``: int64 ranks [B] in 1..num_negatives+1, and a
        bool array [B], the capped examples.

    Example:

    >>> import numpy as np
    >>> scores = np.array([[0.0, 0.9, 0.5, 0.1]])  # items 1..3
    >>> ranks, capped = distinct_sampled_ranks(
    ...     scores, np.array([2]), [np.array([])], np.array([0]), 100)
    >>> ranks, capped  # against items 1 and 3 only: its full rank
    (array([2]), array([ True]))
    """
    scores = np.asarray(scores, dtype=np.float64)
    num_negatives = int(num_negatives)
    if num_negatives < 1:
        raise ValueError(
            "num_negatives must be at least 1. "
            f"Received: num_negatives={num_negatives}"
        )
    if scores.ndim != 2 or np.shape(targets) != (scores.shape[0],):
        raise ValueError(
            "Expected scores [B, N] and targets [B]. Received: "
            f"scores.shape={scores.shape}, targets.shape={np.shape(targets)}"
        )
    targets = _as_int_vector("targets", targets)
    users = _as_int_vector("users", users)
    num_items = scores.shape[1]
    _check_targets(targets, num_items)
    if not len(seen) == len(targets) == len(users):
        raise ValueError(
            "seen, targets and users must have one entry per example. "
            f"Received: len(seen)={len(seen)}, len(targets)={len(targets)}, "
            f"len(users)={len(users)}"
        )
    ranks = np.empty(len(targets), np.int64)
    capped = np.zeros(len(targets), bool)
    for i, (history, target, user) in enumerate(zip(seen, targets, users)):
        history = np.asarray(history, np.int64).ravel()
        out = (history < 0) | (history >= num_items)
        if out.any():
            raise ValueError(
                f"seen ids must be in 0..{num_items - 1} (0 is padding). "
                f"Received: seen[{i}] contains {history[out][:5].tolist()}"
            )
        history = history[history > 0]
        excluded = np.union1d(history, [target])
        num_allowed = num_items - 1 - len(excluded)
        rng = np.random.default_rng([int(seed), int(user), int(target)])
        if num_allowed <= 2 * num_negatives:
            allowed = np.ones(num_items, bool)
            allowed[0] = False
            allowed[excluded] = False
            candidates = np.flatnonzero(allowed)
            capped[i] = num_allowed <= num_negatives
            if not capped[i]:
                candidates = rng.choice(candidates, num_negatives, False)
        else:
            candidates = _distinct_draws(
                rng, excluded, num_items, num_negatives, num_allowed
            )
        target_score = scores[i, target]
        if np.isnan(target_score):
            ranks[i] = len(candidates) + 1
        else:
            ranks[i] = 1 + int((scores[i, candidates] >= target_score).sum())
    return ranks, capped


def _distinct_draws(
    rng: np.random.Generator,
    excluded: np.ndarray,
    num_items: int,
    count: int,
    num_allowed: int,
) -> np.ndarray:
    """``count`` distinct items of 1..num_items-1 not in ``excluded``, by
    rejection (``num_allowed`` is more than twice ``count``)."""
    acceptance = num_allowed / (num_items - 1)
    drawn = np.zeros(0, np.int64)
    while len(drawn) < count:
        size = min(int(np.ceil(count / acceptance * 1.5)) + 8, _MAX_BLOCK)
        block = rng.integers(1, num_items, size=size, dtype=np.int64)
        drawn = np.concatenate([drawn, block[~np.isin(block, excluded)]])
        # Distinct, in the order drawn.
        _, first = np.unique(drawn, return_index=True)
        drawn = drawn[np.sort(first)]
    return drawn[:count]


def sampled_ranking_metrics(
    scores: np.ndarray,
    targets: np.ndarray,
    seen: Sequence[np.ndarray],
    users: np.ndarray,
    num_negatives: int = 100,
    seed: int = 0,
    ks: Iterable[int] = (10,),
) -> dict[str, float]:
    """NDCG@K, HR@K and MRR@K of each target against sampled negatives.

    ``sample_negatives`` then ``sampled_ranks`` then
    ``metrics.metrics_from_ranks``. Not comparable with
    ``metrics.full_ranking_metrics`` (see the module docstring).

    Args:
        scores: float array [B, N] over the whole catalogue; column 0 is the
            padding id. N is the catalogue size negatives are drawn from.
        targets: int array [B] of item ids in 1..N-1.
        seen: B arrays of the item ids each user interacted with before its
            target (padding 0 ignored); they are never drawn as negatives.
        users: int array [B] of non-negative user ids.
        num_negatives: negatives per example. Defaults to 100.
        seed: non-negative int. Defaults to 0.
        ks: cut-offs. Defaults to (10,).

    Returns:
        dict like {"ndcg@10": ..., "hr@10": ..., "mrr@10": ...}, averaged
        over examples.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.evaluation.sampled_ranking import (
    ...     sampled_ranking_metrics)
    >>> scores = np.array([[0.0, 0.9, 0.5, 0.1, 0.3]])  # item 1 scores best
    >>> sampled_ranking_metrics(
    ...     scores, np.array([1]), [np.array([2])], np.array([0]),
    ...     num_negatives=5, ks=(1,))
    {'ndcg@1': 1.0, 'hr@1': 1.0, 'mrr@1': 1.0}
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or np.shape(targets) != (scores.shape[0],):
        raise ValueError(
            "Expected scores [B, N] and targets [B]. Received: "
            f"scores.shape={scores.shape}, targets.shape={np.shape(targets)}"
        )
    negatives = sample_negatives(
        seen,
        targets,
        users,
        num_items=scores.shape[1],
        num_negatives=num_negatives,
        seed=seed,
    )
    return metrics_from_ranks(sampled_ranks(scores, targets, negatives), ks)
