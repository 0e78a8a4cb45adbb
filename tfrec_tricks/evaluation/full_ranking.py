"""Full-ranking metrics: NDCG@K, HR@K and MRR@K over the whole catalogue.

Definitions follow RecBole's for one relevant item per example: the target's
rank r is its 1-based position among all real items (column 0, the padding
id, never counts), HR@K = [r <= K], MRR@K = [r <= K] / r and
NDCG@K = [r <= K] / log2(r + 1), each averaged over examples.

Tie rule (pessimistic): items whose score equals the target's are ranked
ahead of it, so r = 1 + #{items scoring higher} + #{other items scoring the
same}. A model that scores everything alike therefore gets rank N - 1, not 1.

NaN rule: a NaN score is the worst score. A target scoring NaN ranks last
(N - 1, behind every other item, NaN ones included); another item scoring
NaN ranks below the target. Every rank is thus in 1..N-1 and every metric
in [0, 1], even for a model whose scores diverged.
"""

from typing import Iterable, Sequence

import numpy as np
import tensorflow as tf

from tfrec_tricks.serialization import register

METRIC_KINDS = ("ndcg", "hr", "mrr")


def target_ranks(scores: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """1-based pessimistic rank of each target among items 1..N-1.

    Args:
        scores: float array [B, N]; column 0 is the padding id.
        targets: int array [B] of item ids in 1..N-1.

    Returns:
        int64 array [B] of ranks in 1..N-1.
    """
    scores = np.asarray(scores, dtype=np.float64)
    targets = np.asarray(targets, dtype=np.int64)
    if scores.ndim != 2 or targets.shape != (scores.shape[0],):
        raise ValueError(
            "Expected scores [B, N] and targets [B]. Received: "
            f"scores.shape={scores.shape}, targets.shape={targets.shape}"
        )
    num_items = scores.shape[1]
    bad = (targets < 1) | (targets >= num_items)
    if bad.any():
        raise ValueError(
            f"Targets must be item ids in 1..{num_items - 1} (0 is padding). "
            f"Received: targets={targets[bad][:5].tolist()}"
        )
    real = scores[:, 1:]
    target_scores = scores[np.arange(len(targets)), targets][:, None]
    # A NaN compares false with everything: other NaN items count neither
    # higher nor tied (they rank below the target); a NaN target is last.
    higher = (real > target_scores).sum(axis=1)
    tied_others = (real == target_scores).sum(axis=1) - 1
    ranks = 1 + higher + tied_others
    return np.where(np.isnan(target_scores[:, 0]), num_items - 1, ranks)


def repeat_targets(history: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Whether each target repeats an item of its own history.

    Args:
        history: int array [B, L], padding id 0.
        targets: int array [B].

    Returns:
        bool array [B].

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.evaluation.full_ranking import repeat_targets
    >>> repeat_targets(np.array([[4, 2, 0], [1, 3, 0]]), np.array([2, 0]))
    array([ True, False])
    """
    history = np.asarray(history)
    targets = np.asarray(targets)
    if history.ndim != 2 or targets.shape != (history.shape[0],):
        raise ValueError(
            "Expected history [B, L] and targets [B]. Received: "
            f"history.shape={history.shape}, targets.shape={targets.shape}"
        )
    return ((history == targets[:, None]) & (history != 0)).any(axis=1)


def metrics_by_target_kind(
    ranks: np.ndarray,
    history: np.ndarray,
    targets: np.ndarray,
    ks: Iterable[int] = (10,),
    cold_items: np.ndarray | None = None,
) -> dict[str, dict[str, float]]:
    """Metrics of repeat targets and of new ones, separately.

    A recommender for sessions with repeats must both copy (the target is
    in the history) and explore (it is not); the overall NDCG averages the
    two and hides a trade between them.

    Args:
        ranks: 1-based target ranks [B] (``target_ranks``).
        history: int array [B, L], padding id 0.
        targets: int array [B].
        ks: cut-offs. Defaults to (10,).
        cold_items: bool array [N] or None. The items never in a training
            example (cold-start items): their targets are also reported
            as ``"cold"``. Defaults to None.

    Returns:
        ``{"repeat": {...}, "new": {...}}`` (and ``"cold"``), each with the
        metrics of its examples and ``"share"``, their fraction of all
        examples (a kind with no example has only its share, 0).

    Example:

    >>> by_kind = metrics_by_target_kind(
    ...     np.array([1, 4]), np.array([[1, 0], [1, 0]]), np.array([1, 2]),
    ...     cold_items=np.array([False, False, True]))
    >>> by_kind["repeat"]["hr@10"], by_kind["cold"]["share"]
    (1.0, 0.5)
    """
    ks = tuple(ks)
    ranks = np.asarray(ranks)
    is_repeat = repeat_targets(history, targets)
    results = {}
    kinds = [("repeat", is_repeat), ("new", ~is_repeat)]
    if cold_items is not None:
        kinds.append(("cold", np.asarray(cold_items, bool)[targets]))
    for kind, mask in kinds:
        results[kind] = {"share": float(mask.mean()) if len(mask) else 0.0}
        if mask.any():
            results[kind].update(metrics_from_ranks(ranks[mask], ks))
    return results


#: Lower edges of the popularity groups of ``metrics_by_target_popularity``:
#: powers of ten of the target's training users, so each group spans one
#: order of magnitude (the long tail is where side information should pay).
POPULARITY_EDGES = (1, 10, 100, 1000)


def popularity_group_names(edges: Sequence[int] = POPULARITY_EDGES) -> list:
    """The names of the popularity groups of ``edges``, least popular first.

    >>> popularity_group_names((1, 10, 100))
    ['0', '1-9', '10-99', '100+']
    """
    edges = [int(edge) for edge in edges]
    if not edges or edges[0] < 1 or sorted(set(edges)) != edges:
        raise ValueError(
            "Popularity edges must be increasing positive counts. "
            f"Received: edges={edges}"
        )
    names = ["0" if edges[0] == 1 else f"0-{edges[0] - 1}"]
    for low, high in zip(edges, edges[1:]):
        names.append(str(low) if high == low + 1 else f"{low}-{high - 1}")
    return names + [f"{edges[-1]}+"]


def metrics_by_target_popularity(
    ranks: np.ndarray,
    targets: np.ndarray,
    item_counts: np.ndarray,
    ks: Iterable[int] = (10,),
    edges: Sequence[int] = POPULARITY_EDGES,
) -> dict[str, dict[str, float]]:
    """Metrics of targets grouped by how popular they were in training.

    The overall NDCG is dominated by the popular items most targets are;
    a change that helps the long tail (item attributes, say) shows only
    here.

    Args:
        ranks: 1-based target ranks [B].
        targets: int array [B] of item ids.
        item_counts: int array [N]: each item's training users (or
            interactions); 0 for an item never trained on.
        ks: cut-offs. Defaults to (10,).
        edges: lower edges of the groups after the first; the groups are
            ``[0, edges[0])``, ``[edges[0], edges[1])``, ... and
            ``[edges[-1], inf)``. Defaults to ``POPULARITY_EDGES``.

    Returns:
        ``{group name: {metrics, "share"}}`` for each group, least popular
        first (``popularity_group_names``); a group with no target has
        only its share, 0.

    Example:

    >>> by_group = metrics_by_target_popularity(
    ...     np.array([1, 20, 2]), np.array([1, 2, 2]), np.array([0, 0, 5, 0]),
    ...     edges=(1, 10))
    >>> by_group["0"]["hr@10"], by_group["1-9"]["share"], by_group["10+"]
    (1.0, 0.6666666666666666, {'share': 0.0})
    """
    names = popularity_group_names(edges)
    ranks = np.asarray(ranks)
    targets = np.asarray(targets, np.int64).reshape(-1)
    if ranks.shape != targets.shape:
        raise ValueError(
            "Expected ranks [B] and targets [B]. Received: "
            f"ranks.shape={ranks.shape}, targets.shape={targets.shape}"
        )
    group = np.searchsorted(
        np.asarray(edges), np.asarray(item_counts)[targets], side="right"
    )
    results = {}
    for index, name in enumerate(names):
        mask = group == index
        results[name] = {"share": float(mask.mean()) if len(mask) else 0.0}
        if mask.any():
            results[name].update(metrics_from_ranks(ranks[mask], tuple(ks)))
    return results


def _ndcg_gains(ranks: np.ndarray, k) -> np.ndarray:
    """``[r <= k] / log2(r + 1)`` of float64 ``ranks``, unchecked."""
    return (ranks <= k) / np.log2(ranks + 1)


def ndcg_per_example(ranks: np.ndarray, k: int = 10) -> np.ndarray:
    """``[r <= k] / log2(r + 1)`` per example (NDCG@K of one target).

    ``metrics_from_ranks``' NDCG@K is the mean of these.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.evaluation.full_ranking import ndcg_per_example
    >>> ndcg_per_example(np.array([1, 3, 11]), k=10)
    array([1. , 0.5, 0. ])
    """
    ranks = np.asarray(ranks, dtype=np.float64)
    if ranks.size and ranks.min() < 1:
        raise ValueError(
            f"Ranks are 1-based. Received: a rank of {ranks.min():g}"
        )
    return _ndcg_gains(ranks, k)


def metrics_from_ranks(
    ranks: np.ndarray, ks: Iterable[int] = (10,)
) -> dict[str, float]:
    """Averages NDCG@K, HR@K and MRR@K from 1-based ranks."""
    ranks = np.asarray(ranks, dtype=np.float64)
    results = {}
    for k in ks:
        if int(k) <= 0:
            raise ValueError(f"Cut-offs must be positive. Received: k={k}")
        hit = ranks <= k
        results[f"ndcg@{k}"] = float(np.mean(_ndcg_gains(ranks, k)))
        results[f"hr@{k}"] = float(np.mean(hit))
        results[f"mrr@{k}"] = float(np.mean(hit / ranks))
    return results


def full_ranking_metrics(
    scores: np.ndarray, targets: np.ndarray, ks: Sequence[int] = (10,)
) -> dict[str, float]:
    """NDCG@K, HR@K and MRR@K of full-catalogue scores.

    Args:
        scores: float array [B, N] over the whole catalogue; column 0 is the
            padding id and is never ranked.
        targets: int array [B], the one relevant item of each example.
        ks: cut-offs. Defaults to (10,).

    Returns:
        dict like {"ndcg@10": ..., "hr@10": ..., "mrr@10": ...}, averaged
        over examples.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.evaluation.full_ranking import full_ranking_metrics
    >>> scores = np.array([[0.0, 0.9, 0.5, 0.1]])  # item 2 ranks 2nd
    >>> full_ranking_metrics(scores, np.array([2]), ks=(1, 10))["ndcg@10"]
    0.6309297535714575
    """
    return metrics_from_ranks(target_ranks(scores, targets), ks)


def tf_target_ranks(scores: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
    """TensorFlow twin of ``target_ranks`` (float32 ranks, same tie rule).

    The pessimistic rank 1 + #higher + #(other ties) is the number of real
    items scoring at least the target's score (the target included): one
    comparison pass over ``[B, N]``, without copying the real columns.
    NaN scores follow ``target_ranks``' rule: a NaN target ranks last
    (N - 1), other NaN items below the target.
    """
    scores = tf.cast(scores, tf.float32)
    targets = tf.cast(tf.reshape(targets, [-1]), tf.int32)
    target_scores = tf.gather(scores, targets, batch_dims=1)[:, None]
    at_least = tf.reduce_sum(tf.cast(scores >= target_scores, tf.float32), 1)
    padding = tf.cast(scores[:, 0] >= target_scores[:, 0], tf.float32)
    last = tf.cast(tf.shape(scores)[1] - 1, tf.float32)
    nan_target = tf.math.is_nan(target_scores[:, 0])
    return tf.where(nan_target, last, at_least - padding)


@register
class RankingMetric(tf.keras.metrics.Mean):
    """Streaming NDCG@K, HR@K or MRR@K for ``model.evaluate`` and callbacks.

    ``update_state(y_true, y_pred)`` takes the target ids [B] and the
    full-catalogue scores [B, N]; the definitions and the tie rule are those
    of ``tfrec_tricks.evaluation.full_ranking.full_ranking_metrics``.

    Args:
        kind: str. One of "ndcg", "hr", "mrr".
        k: int. The cut-off. Defaults to 10.
        name: str. Defaults to f"{kind}@{k}".
        **kwargs: passed on to ``tf.keras.metrics.Mean``.

    Example:

    >>> import tfrec_tricks.evaluation.full_ranking as m
    >>> metric = m.RankingMetric("hr", k=1)
    >>> _ = metric.update_state([1, 2], [[0.0, 0.9, 0.5], [0.0, 0.9, 0.5]])
    >>> float(metric.result())
    0.5
    """

    def __init__(self, kind: str = "ndcg", k: int = 10, name=None, **kwargs):
        if kind not in METRIC_KINDS:
            raise ValueError(
                f"kind must be one of {METRIC_KINDS}. Received: kind={kind!r}"
            )
        if int(k) <= 0:
            raise ValueError(f"k must be positive. Received: k={k}")
        super().__init__(name=name or f"{kind}@{k}", **kwargs)
        self.kind = kind
        self.k = int(k)

    def update_state(self, y_true, y_pred, sample_weight=None):
        return self.update_from_ranks(
            tf_target_ranks(y_pred, y_true), sample_weight=sample_weight
        )

    def update_from_ranks(self, ranks, sample_weight=None):
        """Updates from 1-based target ranks [B] (``tf_target_ranks``).

        Several metrics of one model share one ranking pass this way: over
        a large catalogue the ``[B, N]`` comparison costs as much as the
        logits.
        """
        ranks = tf.cast(ranks, tf.float32)
        hit = tf.cast(ranks <= self.k, tf.float32)
        if self.kind == "hr":
            values = hit
        elif self.kind == "mrr":
            values = hit / ranks
        else:
            values = hit / (tf.math.log(ranks + 1.0) / tf.math.log(2.0))
        return super().update_state(values, sample_weight=sample_weight)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"kind": self.kind, "k": self.k})
        return config
