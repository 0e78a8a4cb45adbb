"""Cold items' baselines: user-independent rankings of the same targets.

Random (its exact expectation), popularity, popularity within an
attribute, and the references that know what a model cannot (which items
are new, how popular they turn out), each scored on the test examples as
the model is (``baseline_results``): full ranking, ties pessimistic, the
history ranked last when the run's head ranks it last, and beside that
the exact expectation with ties broken at random (``expected_metrics``).
"""

from collections.abc import Iterable

import numpy as np

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from tfrec_tricks.evaluation.full_ranking import (  # noqa: E402
    metrics_by_target_kind,
    metrics_from_ranks,
    ndcg_per_example,
    target_ranks,
)
from tfrec_tricks.training.evaluate import cold_items  # noqa: E402
from tfrec_tricks.training.training_data import TrainingData  # noqa: E402

#: Cut-offs: 10, the model's metrics.json's, and 100, where the cold
#: targets' ranks still tell rankers apart.
KS = (10, 100)

#: The baselines whose order is random: every column is the expectation.
RANDOM_ORDER = ("random", "new items, random order")


def row_ties(scores: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per row of ``scores`` [B, N], the real items scoring as the target
    does, the target included (at least 1: a NaN target ties nothing).

    >>> row_ties(np.array([[9.0, 1.0, 2.0, 1.0]]), np.array([3]))
    array([2])
    """
    target_scores = scores[np.arange(len(targets)), targets][:, None]
    return np.maximum((scores[:, 1:] == target_scores).sum(axis=1), 1)


def attribute_popularity(tokens: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each item's mean, over its tokens, of the tokens' popularity.

    A token's popularity is the sum of the training counts of the items
    holding it; an item holding a token twice counts once. Token id 0 is
    padding (no token); an item without a token scores 0.

    Args:
        tokens: int [N, W], the encoded ``token_seq`` feature.
        counts: int [N], the items' training target counts.

    Returns:
        float64 [N].

    >>> tokens = np.array([[0, 0], [2, 3], [2, 0], [3, 0]])
    >>> attribute_popularity(tokens, np.array([0, 5, 1, 0])).tolist()
    [0.0, 5.5, 6.0, 5.0]
    """
    tokens = np.asarray(tokens, np.int64).reshape(len(tokens), -1)
    member = np.zeros((len(tokens), int(tokens.max(initial=0)) + 1), bool)
    member[np.arange(len(tokens))[:, None], tokens] = True
    member[:, 0] = False
    popularity = np.asarray(counts, np.float64) @ member
    held = member.sum(axis=1)
    total = (member * popularity).sum(axis=1)
    return np.divide(total, held, out=np.zeros(len(tokens)), where=held > 0)


def lexicographic(*keys: np.ndarray) -> np.ndarray:
    """Dense ranks of the tuples ``(keys[0][i], keys[1][i], ...)``: a score
    ordering items by the first key, then the next, with exact ties.

    >>> lexicographic(np.array([1.0, 2.0, 1.0, 1.0]), np.array([3, 0, 3, 4]))
    array([0, 2, 0, 1])
    """
    _, inverse = np.unique(
        np.stack([np.asarray(k, np.float64) for k in keys], axis=1),
        axis=0,
        return_inverse=True,
    )
    return inverse.reshape(-1)


def baseline_scores(
    training: TrainingData,
    attribute: str,
    counts_before: dict[str, int] | None = None,
) -> dict[str, np.ndarray]:
    """Each baseline's item scores [N] (``RANDOM_ORDER``'s: ties broken
    at random); with ``counts_before`` (raw id -> training-target count
    before the hold-out), the "popularity before the hold-out" reference
    too."""
    data = training.prepared
    counts = np.asarray(data.statistics.item_counts, np.float64)
    cold = cold_items(training)
    values = data.item_features.values
    if attribute not in values:
        raise ValueError(
            f"--attribute must be a token feature of the run: one of "
            f"{sorted(values)}. Received: {attribute!r}"
        )
    by_attribute = attribute_popularity(
        data.item_features.dense(attribute), counts
    )
    scores = {
        "random": np.zeros(len(counts)),
        "popularity": counts,
        "popularity within attribute": lexicographic(by_attribute, counts),
    }
    if counts_before is not None:
        names = training.vocabulary.items
        scores["popularity before the hold-out"] = np.array(
            [0.0] + [counts_before.get(name, 0) for name in names[1:]]
        )
    return {
        **scores,
        "new items, random order": cold.astype(np.float64),
        "new items, by attribute": lexicographic(cold, by_attribute, counts),
    }


def expected_metrics(
    higher: np.ndarray,
    ties: np.ndarray,
    num_real: int,
    ks: Iterable[int] = KS,
) -> dict[str, float]:
    """Each metric's mean over examples of its mean over the ranks
    ``higher + 1 .. higher + ties`` (ties broken uniformly at random),
    ranks up to ``num_real``.

    >>> metrics = expected_metrics(
    ...     np.array([0, 10]), np.array([2, 1]), 20, [10])
    >>> {name: round(value, 4) for name, value in metrics.items()}
    {'ndcg@10': 0.4077, 'hr@10': 0.5, 'mrr@10': 0.375}
    """
    higher = np.asarray(higher, np.int64)
    ties = np.asarray(ties, np.int64)
    ranks = np.arange(1, num_real + 1, dtype=np.float64)
    results = {}
    for k in ks:
        gains = {
            f"ndcg@{k}": ndcg_per_example(ranks, k),
            f"hr@{k}": (ranks <= k).astype(np.float64),
            f"mrr@{k}": (ranks <= k) / ranks,
        }
        for name, gain in gains.items():
            cumulative = np.r_[0.0, np.cumsum(gain)]
            expected = (cumulative[higher + ties] - cumulative[higher]) / ties
            results[name] = float(np.mean(expected))
    return results


#: The score the history-excluding heads give the history's items
#: (``SequentialRetrievalModel``'s): below every real score, all tied.
HISTORY_SCORE = -1e9


def baseline_ranks(
    scores: np.ndarray,
    history: np.ndarray,
    targets: np.ndarray,
    exclude_history: bool,
    batch_size: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Pessimistic ranks (``target_ranks``) and ties (``row_ties``) of the
    targets under user-independent ``scores`` [N], with each example's
    history items scored ``HISTORY_SCORE`` when ``exclude_history`` (as
    the run's head does).

    >>> baseline_ranks(np.array([0.0, 3.0, 2.0, 2.0, 1.0]),
    ...                np.array([[1], [0]]), np.array([4, 2]), True)
    (array([3, 3]), array([1, 2]))
    """
    ranks, ties = [], []
    for start in range(0, len(targets), batch_size):
        target = np.asarray(targets[start : start + batch_size])
        rows = np.repeat(
            np.asarray(scores, np.float64)[None, :], len(target), axis=0
        )
        if exclude_history:
            block = np.asarray(history[start : start + batch_size])
            rows[np.arange(len(target))[:, None], block] = HISTORY_SCORE
        ranks.append(target_ranks(rows, target))
        ties.append(row_ties(rows, target))
    return np.concatenate(ranks), np.concatenate(ties)


def baseline_results(
    training: TrainingData,
    attribute: str,
    exclude_history: bool,
    counts_before: dict[str, int] | None = None,
) -> dict:
    """The baselines' metrics on the test examples: over the cold targets
    (those of the model's ``test_by_target["cold"]``, ``cold_items``) and
    over all; pessimistic ties (the model's rule) and ties at random
    (``RANDOM_ORDER``'s: every column is the expectation, the median rank
    that of the tie ranges' midpoints). ``exclude_history``: rank each
    example's history last, as the run's head does. ``counts_before``:
    see ``baseline_scores``."""
    test = training.prepared.test
    cold = cold_items(training)
    num_real = training.num_items - 1
    is_cold = cold[test.target]
    results = {}
    all_scores = baseline_scores(training, attribute, counts_before)
    for name, scores in all_scores.items():
        ranks, ties = baseline_ranks(
            scores, test.history, test.target, exclude_history
        )
        higher = ranks - ties
        tied = expected_metrics(higher[is_cold], ties[is_cold], num_real)
        if name in RANDOM_ORDER:
            middle = higher[is_cold] + (ties[is_cold] + 1) / 2
            results[name] = {
                "cold": {**tied, "median rank": float(np.median(middle))},
                "all": expected_metrics(higher, ties, num_real),
                "cold ties at random": dict(tied),
            }
            continue
        by_kind = metrics_by_target_kind(
            ranks, test.history, test.target, KS, cold
        )
        results[name] = {
            "cold": {
                **{k: v for k, v in by_kind["cold"].items() if k != "share"},
                "median rank": float(np.median(ranks[is_cold])),
            },
            "all": metrics_from_ranks(ranks, KS),
            "cold ties at random": tied,
        }
    return results
