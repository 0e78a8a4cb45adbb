"""How a model ranks the items of the history against the rest.

A recommender on data with repeats merges two rankings into one: the items
of the history (a repeat) and the rest of the catalogue (a new item). When
a head such as Softmax-CPR gains on repeat targets and loses on new ones,
two causes are possible, and these functions tell them apart on any
model's full-catalogue scores:

- the ranking *among the items outside the history* got worse (the shared
  hidden state or the base logits degraded): ``non_history_ranks`` ranks
  each new target among the real items that are not in its history only;
- the rankings are as good but the *merge* puts history items above new
  targets: ``history_items_in_top_k`` counts the history items among the
  top-k of each example.

Conventions are those of ``tfrec_tricks.evaluation.full_ranking``: column 0
of the scores is the padding id and is never ranked, ranks are 1-based and
pessimistic (items scoring the same as the target rank ahead of it),
history arrays are ``[B, L]`` with padding id 0 on either side.

``example_diagnostics`` computes every per-example number of one batch of
scores; ``summarize_diagnostics`` turns the concatenated numbers of a test
set into the report's figures; ``paired_difference`` compares two models
on the same examples.
"""

from collections.abc import Iterable, Mapping

import numpy as np

from tfrec_tricks.evaluation.full_ranking import (
    metrics_from_ranks,
    repeat_targets,
    target_ranks,
)

# Re-exported: the diagnosis compares models on per-example NDCG.
from tfrec_tricks.evaluation.full_ranking import (
    ndcg_per_example as ndcg_per_example,
)
from tfrec_tricks.layers.common import is_integer

#: Per-example arrays of ``example_diagnostics``, in that order.
DIAGNOSTIC_FIELDS = (
    "rank",
    "repeat",
    "non_history_rank",
    "history_in_top_k",
    "history_length",
    "distinct_history",
)


def history_mask(histories: np.ndarray, num_items: int) -> np.ndarray:
    """Bool ``[B, N]``: item ``x`` is in row ``b``'s history (padding never).

    Args:
        histories: int array ``[B, L]``, padding id 0.
        num_items: N, the number of item ids (padding included).

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import history_mask
    >>> history_mask(np.array([[0, 2, 2], [3, 1, 0]]), 4)
    array([[False, False,  True, False],
           [False,  True, False,  True]])
    """
    histories = np.asarray(histories)
    if histories.ndim != 2:
        raise ValueError(
            "`histories` must be [B, L]. "
            f"Received: histories.shape={histories.shape}"
        )
    if histories.size and (histories.min() < 0 or histories.max() >= num_items):
        raise ValueError(
            f"`histories` must hold item ids in [0, {num_items}). Received: "
            f"ids from {histories.min()} to {histories.max()}"
        )
    mask = np.zeros((histories.shape[0], num_items), dtype=bool)
    rows = np.repeat(np.arange(histories.shape[0]), histories.shape[1])
    mask[rows, histories.ravel()] = True
    mask[:, 0] = False
    return mask


def _checked(
    scores: np.ndarray, history: np.ndarray, targets: np.ndarray | None
) -> tuple:
    """``(scores, history, targets)`` as arrays, shapes and ids checked."""
    scores = np.asarray(scores, dtype=np.float64)
    history = np.asarray(history)
    if (
        scores.ndim != 2
        or history.ndim != 2
        or (history.shape[0] != scores.shape[0])
    ):
        raise ValueError(
            "Expected scores [B, N] and history [B, L] with the same B. "
            f"Received: scores.shape={scores.shape}, "
            f"history.shape={history.shape}"
        )
    if not np.issubdtype(history.dtype, np.integer):
        raise ValueError(
            "`history` must hold integer item ids. "
            f"Received: history.dtype={history.dtype}"
        )
    num_items = scores.shape[1]
    if targets is not None:
        targets = np.asarray(targets)
        if targets.shape != (scores.shape[0],):
            raise ValueError(
                "Expected targets [B] for scores [B, N]. Received: "
                f"targets.shape={targets.shape}, scores.shape={scores.shape}"
            )
        bad = (targets < 1) | (targets >= num_items)
        if bad.any():
            raise ValueError(
                f"Targets must be item ids in 1..{num_items - 1} (0 is "
                f"padding). Received: targets={targets[bad][:5].tolist()}"
            )
        targets = targets.astype(np.int64)
    return scores, history, targets


def non_history_ranks(
    scores: np.ndarray, history: np.ndarray, targets: np.ndarray
) -> np.ndarray:
    """1-based pessimistic rank of each target among non-history items.

    Only the real items (ids 1..N-1) that are not in the example's own
    history compete with the target: ``r = 1 + #{x not in history scoring
    higher} + #{other x not in history scoring the same}``. The rank a model
    would give a new target if it never recommended a history item.

    Args:
        scores: float array ``[B, N]``; column 0 is the padding id.
        history: int array ``[B, L]``, padding id 0.
        targets: int array ``[B]`` of item ids in 1..N-1, none of them in
            its own history (a "new" target).

    Returns:
        int64 array ``[B]`` of ranks in ``1..(N - 1 - distinct history
        items)``.

    Raises:
        ValueError: shapes that do not match, ids out of range, or a target
            that is in its own history (the rows are named).

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import non_history_ranks
    >>> scores = np.array([[0.0, 0.9, 0.8, 0.5, 0.1]])  # target 3 is 3rd
    >>> non_history_ranks(scores, np.array([[1, 0]]), np.array([3]))
    array([2])
    """
    scores, history, targets = _checked(scores, history, targets)
    in_history = history_mask(history, scores.shape[1])
    rows = np.arange(len(targets))
    repeated = np.flatnonzero(in_history[rows, targets])
    if repeated.size:
        raise ValueError(
            "Every target must be outside its own history (a new target). "
            f"Received: targets in their history at rows "
            f"{repeated[:10].tolist()}"
        )
    eligible = ~in_history
    eligible[:, 0] = False
    target_scores = scores[rows, targets][:, None]
    # NaN scores are the worst (``metrics.target_ranks``): other NaN items
    # compare false and rank below the target; a NaN target ranks last.
    higher = ((scores > target_scores) & eligible).sum(axis=1)
    tied_others = ((scores == target_scores) & eligible).sum(axis=1) - 1
    ranks = 1 + higher + tied_others
    last = eligible.sum(axis=1)
    return np.where(np.isnan(target_scores[:, 0]), last, ranks).astype(np.int64)


def history_items_in_top_k(
    scores: np.ndarray, history: np.ndarray, k: int = 10
) -> np.ndarray:
    """How many distinct history items are among each example's top-k.

    The top-k is taken among the real items (ids 1..N-1) by a *stable*
    order: higher score first, ties to the lower item id (as
    ``tfrec_tricks.layers.top_k`` breaks them). No pessimistic tie rule
    here: a top-k is a set of exactly ``min(k, N - 1)`` items.

    Args:
        scores: float array ``[B, N]``; column 0 is the padding id.
        history: int array ``[B, L]``, padding id 0; an item repeated in
            the history counts once.
        k: int >= 1, the cut-off. With ``k >= N - 1`` the whole catalogue
            is the top-k. Defaults to 10.

    Returns:
        int64 array ``[B]`` of counts in ``0..min(k, distinct history
        items)``.

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import (
    ...     history_items_in_top_k)
    >>> scores = np.array([[0.0, 0.9, 0.5, 0.5, 0.1]])
    >>> history_items_in_top_k(scores, np.array([[3, 4, 3]]), k=2)
    array([0])
    >>> history_items_in_top_k(scores, np.array([[2, 0, 0]]), k=2)
    array([1])
    """
    if not is_integer(k) or k < 1:
        raise ValueError(f"k must be an int >= 1. Received: k={k!r}")
    scores, history, _ = _checked(scores, history, None)
    in_history = history_mask(history, scores.shape[1])
    # Stable: equal scores keep the order of their ids, lowest first.
    order = np.argsort(-scores[:, 1:], axis=1, kind="stable")[:, :k] + 1
    rows = np.arange(scores.shape[0])[:, None]
    return in_history[rows, order].sum(axis=1).astype(np.int64)


def history_lengths(history: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(lengths, distinct)``: real ids and distinct real ids per row.

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import history_lengths
    >>> history_lengths(np.array([[0, 4, 2, 4], [0, 0, 0, 0]]))
    (array([3, 0]), array([2, 0]))
    """
    history = np.asarray(history)
    if history.ndim != 2:
        raise ValueError(
            f"Expected history [B, L]. Received: history.shape={history.shape}"
        )
    ordered = np.sort(history, axis=1)
    real = ordered != 0
    first = np.ones_like(real)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    return real.sum(axis=1), (real & first).sum(axis=1)


def example_diagnostics(
    scores: np.ndarray,
    history: np.ndarray,
    targets: np.ndarray,
    k: int = 10,
) -> dict[str, np.ndarray]:
    """Every per-example number of the diagnosis, for one batch.

    Args:
        scores: float array ``[B, N]``; column 0 is the padding id.
        history: int array ``[B, L]``, padding id 0.
        targets: int array ``[B]``.
        k: the top-k of ``history_in_top_k``. Defaults to 10.

    Returns:
        dict of ``[B]`` arrays (``DIAGNOSTIC_FIELDS``): ``rank`` (among all
        real items, ``tfrec_tricks.evaluation.full_ranking.target_ranks``),
        ``repeat`` (the
        target is in the history), ``non_history_rank`` (``non_history_
        ranks`` for new targets, 0 for repeat ones), ``history_in_top_k``,
        ``history_length`` and ``distinct_history``. Concatenate batches
        with ``concatenate_diagnostics``.

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import example_diagnostics
    >>> scores = np.array([[0.0, 0.9, 0.8, 0.5], [0.0, 0.1, 0.7, 0.3]])
    >>> found = example_diagnostics(
    ...     scores, np.array([[1, 0], [2, 2]]), np.array([3, 2]), k=2)
    >>> found["rank"], found["repeat"], found["non_history_rank"]
    (array([3, 1]), array([False,  True]), array([2, 0]))
    >>> found["history_in_top_k"], found["distinct_history"]
    (array([1, 1]), array([1, 1]))
    """
    scores, history, targets = _checked(scores, history, targets)
    repeat = repeat_targets(history, targets)
    non_history = np.zeros(len(targets), dtype=np.int64)
    new = ~repeat
    if new.any():
        non_history[new] = non_history_ranks(
            scores[new], history[new], targets[new]
        )
    lengths, distinct = history_lengths(history)
    return {
        "rank": target_ranks(scores, targets).astype(np.int64),
        "repeat": repeat,
        "non_history_rank": non_history,
        "history_in_top_k": history_items_in_top_k(scores, history, k),
        "history_length": lengths,
        "distinct_history": distinct,
    }


def concatenate_diagnostics(
    batches: Iterable[Mapping[str, np.ndarray]],
) -> dict[str, np.ndarray]:
    """The ``example_diagnostics`` of several batches, as one.

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import (
    ...     concatenate_diagnostics, example_diagnostics)
    >>> one = example_diagnostics(
    ...     np.array([[0.0, 0.2, 0.1]]), np.array([[2]]), np.array([1]))
    >>> concatenate_diagnostics([one, one])["rank"]
    array([1, 1])
    """
    batches = list(batches)
    if not batches:
        raise ValueError("Expected at least one batch. Received: none")
    return {
        name: np.concatenate([np.asarray(b[name]) for b in batches])
        for name in DIAGNOSTIC_FIELDS
    }


def paired_difference(
    first: np.ndarray, second: np.ndarray
) -> tuple[float, float]:
    """Mean of ``first - second`` over paired examples, and its standard error.

    Two models scored on the same examples differ by less noise than their
    separate means suggest: the standard error is that of the per-example
    differences (0 for fewer than two examples).

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import paired_difference
    >>> mean, error = paired_difference(
    ...     np.array([1.0, 0.5, 0.0, 0.5]), np.array([0.5, 0.5, 0.0, 0.0]))
    >>> round(mean, 4), round(error, 4)
    (0.25, 0.1443)
    """
    first = np.asarray(first, dtype=np.float64)
    second = np.asarray(second, dtype=np.float64)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError(
            "Expected two [B] arrays of the same examples. Received: "
            f"shapes {first.shape} and {second.shape}"
        )
    difference = first - second
    if difference.size < 2:
        return float(difference.mean()) if difference.size else 0.0, 0.0
    error = difference.std(ddof=1) / np.sqrt(difference.size)
    return float(difference.mean()), float(error)


def summarize_diagnostics(
    diagnostics: Mapping[str, np.ndarray], k: int = 10
) -> dict:
    """The report's figures of one model's test diagnostics.

    Args:
        diagnostics: ``example_diagnostics`` of the whole test set.
        k: the cut-off of the metrics and of ``history_in_top_k``.
            Defaults to 10.

    Returns:
        dict (JSON-serialisable) with

        - ``"overall"``: NDCG@K, HR@K, MRR@K of all targets;
        - ``"by_kind"``: the metrics of ``"repeat"`` and ``"new"``
          targets, each with its ``"share"``, as
          ``tfrec_tricks.evaluation.full_ranking.metrics_by_target_kind``
          gives them;
        - ``"new_non_history"``: new targets ranked among non-history
          items: NDCG@K, HR@K, MRR@K, ``median_rank``, ``mean_rank``,
          ``hr@100`` and ``count``;
        - ``"merge_loss"``: the share of new targets in the top-K among
          non-history items but not among all items (history items pushed
          them out);
        - ``"history_in_top_k"``: histograms (counts of examples with 0..K
          history items in their top-K) and means, of ``"all"``, ``"new"``
          and ``"repeat"`` examples;
        - ``"history"``: mean history length and mean distinct items.

    Example:

    >>> import numpy as np
    >>> from benchmarks.history_ranking import (
    ...     example_diagnostics, summarize_diagnostics)
    >>> scores = np.array([[0.0, 0.9, 0.8, 0.5], [0.0, 0.1, 0.7, 0.3]])
    >>> summary = summarize_diagnostics(example_diagnostics(
    ...     scores, np.array([[1, 0], [2, 2]]), np.array([3, 2]), k=2), k=2)
    >>> summary["new_non_history"]["median_rank"], summary["merge_loss"]
    (2.0, 1.0)
    >>> summary["history_in_top_k"]["all"]
    {'histogram': [0, 2, 0], 'mean': 1.0, 'count': 2}
    """
    if not is_integer(k) or k < 1:
        raise ValueError(f"k must be an int >= 1. Received: k={k!r}")
    missing = [name for name in DIAGNOSTIC_FIELDS if name not in diagnostics]
    if missing:
        raise ValueError(
            f"diagnostics lacks {missing}. Received: keys={sorted(diagnostics)}"
        )
    ranks = np.asarray(diagnostics["rank"])
    if ranks.size == 0:
        raise ValueError("Expected at least one example. Received: none")
    repeat = np.asarray(diagnostics["repeat"], dtype=bool)
    new = ~repeat
    counts = np.asarray(diagnostics["history_in_top_k"])
    ks = (k,)
    by_kind = {}
    for kind, mask in (("repeat", repeat), ("new", new)):
        by_kind[kind] = {"share": float(mask.mean())}
        if mask.any():
            by_kind[kind].update(metrics_from_ranks(ranks[mask], ks))
    summary = {
        "overall": metrics_from_ranks(ranks, ks),
        "by_kind": by_kind,
        "new_non_history": {"count": int(new.sum())},
        "merge_loss": 0.0,
        "history_in_top_k": {},
        "history": {
            "mean_length": float(np.mean(diagnostics["history_length"])),
            "mean_distinct": float(np.mean(diagnostics["distinct_history"])),
        },
    }
    if new.any():
        inner = np.asarray(diagnostics["non_history_rank"])[new]
        summary["new_non_history"].update(
            {
                **metrics_from_ranks(inner, ks),
                "hr@100": float(np.mean(inner <= 100)),
                "median_rank": float(np.median(inner)),
                "mean_rank": float(np.mean(inner)),
            }
        )
        pushed_out = (inner <= k) & (ranks[new] > k)
        summary["merge_loss"] = float(pushed_out.mean())
    for kind, mask in (("all", slice(None)), ("new", new), ("repeat", repeat)):
        part = counts[mask]
        summary["history_in_top_k"][kind] = {
            "histogram": np.bincount(part, minlength=k + 1)[: k + 1].tolist(),
            "mean": float(part.mean()) if part.size else 0.0,
            "count": int(part.size),
        }
    return summary
