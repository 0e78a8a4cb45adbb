"""Reserved places for new items: a shop's "new this week" in every list.

A model ranks an item it never trained on (a new item: no interaction in
the run's training data, ranked by its attributes) against trained items
that also have an id row and a bias, and on most data a new item seldom
scores into a top 10 (``benchmarks/results/cold-items``). Reserving the
last ``slots`` places of each list for the best-scoring new items puts
them there, at a measured cost to the trained items' lists: the list is
the user's top ``k - slots`` items, then the ``slots`` best new items not
already among them, then (when fewer new items are eligible) the next
items of the user's own ranking. It is the rule the cold-items benchmark
measures (``benchmarks.cold_tradeoff.reserved_positions``).
"""

import numpy as np

from tfrec_tricks.layers.common import is_integer


def with_new_item_slots(ranked: tuple, new: tuple, k: int, slots: int) -> tuple:
    """Each row's list with its last ``slots`` places for new items.

    Args:
        ranked: ``(item_ids, scores, keep)``, each ``[B, W]``: a batch's
            lists best first (``ServedLists.lists``), at least ``k``
            places a row unless fewer items are eligible.
        new: the same for the batch's best new items only, best first
            (at least ``k`` places a row unless fewer are eligible).
        k: int. The list's length.
        slots: int in ``1..k``. Places reserved for new items.

    Returns:
        ``(item_ids, scores, keep)``, each ``[B, k]``: the top ``k -
        slots`` of ``ranked``, then the best new items not among them,
        then ``ranked``'s next items while places remain; each item once.

    Example: items ``n1`` and ``n2`` are new; a list of 3 with one
    reserved place holds the two best items, then the best new one not
    among them:

    >>> ranked = (np.array([["a", "n2", "b", "c"]]), np.array([[4.0, 3, 2, 1]]),
    ...           np.array([[True, True, True, True]]))
    >>> new = (np.array([["n2", "n1"]]), np.array([[3.0, 0.5]]),
    ...        np.array([[True, True]]))
    >>> with_new_item_slots(ranked, new, k=3, slots=1)[0].tolist()
    [['a', 'n2', 'n1']]
    """
    if not is_integer(slots) or not 1 <= slots <= k:
        raise ValueError(
            f"`slots` must be in 1..k={k}. Received: slots={slots!r}"
        )
    rows = len(ranked[0])
    item_ids = np.full((rows, k), "", dtype=object)
    scores = np.zeros((rows, k), np.float32)
    keep = np.zeros((rows, k), bool)
    for row in range(rows):
        listed = kept_places(ranked, row)
        head = listed[: k - slots]
        taken = {item for item, _ in head}
        fresh = [
            entry for entry in kept_places(new, row) if entry[0] not in taken
        ]
        chosen = head + fresh[:slots]
        taken.update(item for item, _ in fresh[:slots])
        chosen += [entry for entry in listed if entry[0] not in taken]
        for column, (item, score) in enumerate(chosen[:k]):
            item_ids[row, column] = item
            scores[row, column] = score
            keep[row, column] = True
    return item_ids, scores, keep


def kept_places(lists: tuple, row: int) -> list[tuple]:
    """``(item, score)`` of a row's kept places, best first (a row of
    ``(item_ids, scores, keep)`` lists)."""
    item_ids, scores, keep = lists
    kept = np.flatnonzero(keep[row])
    return [(str(item_ids[row, c]), float(scores[row, c])) for c in kept]
