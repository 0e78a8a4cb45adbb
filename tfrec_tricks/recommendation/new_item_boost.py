"""A raise of the new items' scores: new items enter a list where they
come close to the trained ones.

A model ranks an item it never trained on (a new item: no interaction in
the run's training data, ranked by its attributes) against trained items
that also have an id row and a bias, and on most data a new item seldom
scores into a top 10 (``benchmarks/results/cold-items``). A boost of
``b`` raises every new item's score, for each user, by ``b`` standard
deviations of that user's scores (their *spread*), and ranks the
catalogue by the raised scores: a new item enters a list where its score
comes within ``b`` spreads of the trained items', so the lists stay the
model's own where no new item comes close. Measured in standard
deviations, one boost means the same for models and users whose scores
differ in scale.

The spread of a user is the standard deviation of their scores over a
fixed sample of the catalogue (``spread_sample``: at most
``SPREAD_SAMPLE`` items, evenly spaced over the contiguous ids), the
items the user may not get (their history unless seen items are kept,
the deny-list) left out: one scoring call of a fixed size per batch,
whatever the catalogue's size, that a TF Serving client can make too
(``score_candidates`` of the sample). It is the rule the cold-items
benchmark measures (``benchmarks.cold_tradeoff``).
"""

import math
from typing import Any

import numpy as np

from tfrec_tricks.recommendation.new_item_slots import kept_places

#: The most items a user's spread is measured over.
SPREAD_SAMPLE = 4096


def spread_sample(num_items: int) -> np.ndarray:
    """The contiguous ids a user's spread is measured over: every real
    item of a catalogue of up to ``SPREAD_SAMPLE``, else ``SPREAD_SAMPLE``
    ids evenly spaced from 1 to ``num_items - 1``.

    Args:
        num_items: int. The catalogue's size, padding (id 0) included.

    >>> spread_sample(5).tolist()
    [1, 2, 3, 4]
    >>> sample = spread_sample(100_001)
    >>> len(sample), int(sample[0]), int(sample[-1])
    (4096, 1, 100000)
    """
    real = num_items - 1
    if real <= SPREAD_SAMPLE:
        return np.arange(1, num_items, dtype=np.int64)
    return np.round(np.linspace(1, real, SPREAD_SAMPLE)).astype(np.int64)


def row_spread(scores: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Each row's standard deviation over its kept scores (population:
    divided by their count); 0 for a row with fewer than two.

    Args:
        scores: float ``[B, M]``.
        keep: bool ``[B, M]``.

    >>> row_spread(np.array([[1.0, 3.0, 9.0]]), np.array([[True, True, False]]))
    array([1.])
    """
    scores = np.asarray(scores, np.float64)
    keep = np.asarray(keep, bool)
    count = keep.sum(axis=1)
    mean = np.where(keep, scores, 0.0).sum(axis=1) / np.maximum(count, 1)
    squares = np.where(keep, (scores - mean[:, None]) ** 2, 0.0).sum(axis=1)
    spread = np.sqrt(squares / np.maximum(count, 1))
    return np.where(count >= 2, spread, 0.0)


def check_boost(boost: Any) -> float:
    """``new_item_boost``: a finite number at least 0, as a float.

    >>> check_boost(1)
    1.0
    """
    is_number = isinstance(boost, int | float) and not isinstance(boost, bool)
    if not is_number or not math.isfinite(boost) or boost < 0:
        raise ValueError(
            "`new_item_boost` must be a finite number >= 0: each new item's "
            "score is raised by that many standard deviations of the "
            f"user's scores. Received: new_item_boost={boost!r}"
        )
    return float(boost)


def with_new_item_boost(
    ranked: tuple, new: tuple, raise_by: np.ndarray, k: int
) -> tuple:
    """Each row's list with its new items' scores raised.

    The top ``k`` of the catalogue by the raised scores is among the
    ``k`` best items by the model's scores and the ``k`` best new items
    (a raise moves no trained item up), so the two lists are all it
    takes.

    Args:
        ranked: ``(item_ids, scores, keep)``, each ``[B, W]``: a batch's
            lists best first (``ServedLists.lists``), at least ``k``
            places a row unless fewer items are eligible.
        new: the same for the batch's best new items only, best first
            (at least ``k`` places a row unless fewer are eligible).
        raise_by: float ``[B]``. Each row's raise (boost times spread).
        k: int. The list's length.

    Returns:
        ``(item_ids, scores, keep)``, each ``[B, k]``: each row's ``k``
        best items by the raised scores (the new items' scores raised),
        each item once; equal scores keep the order of ``ranked``, then
        of ``new``.

    Example: items ``n1`` and ``n2`` are new; a raise of 2 lifts ``n1``
    above ``b`` and leaves ``n2`` out:

    >>> ranked = (np.array([["a", "b", "c"]]), np.array([[5.0, 3, 2]]),
    ...           np.array([[True, True, True]]))
    >>> new = (np.array([["n1", "n2"]]), np.array([[1.5, -4.0]]),
    ...        np.array([[True, True]]))
    >>> ids, scores, _ = with_new_item_boost(ranked, new, np.array([2.0]), k=3)
    >>> ids.tolist(), scores.tolist()
    ([['a', 'n1', 'b']], [[5.0, 3.5, 3.0]])
    """
    rows = len(ranked[0])
    item_ids = np.full((rows, k), "", dtype=object)
    scores = np.zeros((rows, k), np.float32)
    keep = np.zeros((rows, k), bool)
    for row in range(rows):
        raised = {
            item: score + float(raise_by[row])
            for item, score in kept_places(new, row)
        }
        merged = [
            (raised.get(item, score), item)
            for item, score in kept_places(ranked, row)
        ]
        listed = {item for _, item in merged}
        merged += [
            (s, item) for item, s in raised.items() if item not in listed
        ]
        # Stable: equal raised scores keep ranked's order, then new's.
        merged.sort(key=lambda entry: -entry[0])
        for column, (score, item) in enumerate(merged[:k]):
            item_ids[row, column] = item
            scores[row, column] = score
            keep[row, column] = True
    return item_ids, scores, keep
