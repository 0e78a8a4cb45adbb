"""New items against trained ones: what a new-item offset or reserved slots
of the list buy for the cold targets, and what they cost the warm ones.

A model ranks a cold item (no training interaction) by its attributes,
against trained items that also have an id row and a bias. Two ways to
let new items into a top 10, both applied to a trained model's scores:

- **an offset** (``tfrec-tricks recommend --new-item-boost``): every cold
  item's score is raised by ``step`` standard deviations of the user's
  scores (``tfrec_tricks.recommendation.new_item_boost``: over a fixed
  sample of the catalogue, the user's history left out; one number,
  chosen on the validation split). The lists mix warm and cold items by
  the raised scores, so a cold item enters only where its score comes
  close to the warm items'.
- **reserved slots**: the top ``10 - r`` items by score, then the ``r``
  best cold items not already among them (a shop's "new this week" row).
  A warm target ranked below ``10 - r`` drops out of the list.

``TradeOff.add`` takes one batch of scores at a time (the full-catalogue
score matrix of a large dataset does not fit in memory) and accumulates,
per offset and per reserved slot count, the cold targets' HR@10 and
NDCG@10 and the warm targets' NDCG@10. Ties rank the target last, as
``tfrec_tricks.evaluation.full_ranking.target_ranks`` does.
"""

import dataclasses

import numpy as np

from tfrec_tricks.evaluation.full_ranking import target_ranks
from tfrec_tricks.recommendation.new_item_boost import row_spread, spread_sample

#: The list's length.
K = 10
#: Offsets tried, in standard deviations of each user's scores (scores of
#: different models and users differ in scale): ``--new-item-boost``.
OFFSET_STEPS = tuple(np.round(np.arange(0.0, 3.01, 0.1), 2))
#: Reserved slots tried: 0 (the model's list) to 3.
SLOTS = (0, 1, 2, 3)


def _gain(positions: np.ndarray, k: int = K) -> np.ndarray:
    """NDCG@k of one relevant item at 1-based ``positions`` (0 outside)."""
    positions = np.asarray(positions, np.float64)
    inside = (positions >= 1) & (positions <= k)
    return np.where(inside, 1.0 / np.log2(np.maximum(positions, 1) + 1), 0.0)


def reserved_positions(
    scores: np.ndarray,
    targets: np.ndarray,
    cold: np.ndarray,
    slots: int,
    k: int = K,
) -> np.ndarray:
    """Each target's 1-based position in a list of ``k`` items whose last
    ``slots`` places go to the best cold items not among the top
    ``k - slots``; 0 when the target is not in the list.

    Args:
        scores: float ``[B, N]`` (column 0 is padding and never listed).
        targets: int ``[B]`` item ids in ``1..N-1``.
        cold: bool ``[N]``, the items without a trained id.
        slots: int in ``0..k``.
        k: int. The list's length. Defaults to ``K``.

    Items 4 and 5 are cold; a list of 3 with one reserved slot holds the
    two best items, then the best cold one (item 5):

    >>> scores = np.array([[0, 5, 4, 3, 1, 2.0]])
    >>> cold = np.array([False, False, False, False, True, True])
    >>> [int(reserved_positions(scores, np.array([i]), cold, 1, k=3)[0])
    ...  for i in range(1, 6)]
    [1, 2, 0, 0, 3]
    """
    scores = np.asarray(scores, np.float64)
    targets = np.asarray(targets, np.int64)
    ranks = target_ranks(scores, targets)
    head = k - slots
    positions = np.where(ranks <= head, ranks, 0)
    if slots == 0:
        return positions
    target_cold = cold[targets]
    real = scores[:, 1:]
    real_cold = cold[1:]
    rows = np.arange(len(targets))
    target_scores = scores[rows, targets][:, None]
    # Cold items above the target (ties: the target last), and those
    # already in the top ``head`` by score.
    cold_above = ((real >= target_scores) & real_cold[None, :]).sum(
        axis=1
    ) - target_cold.astype(np.int64)
    if head > 0:
        nth = min(head, real.shape[1]) - 1
        threshold = -np.partition(-real, nth, axis=1)[:, nth]
        cold_in_head = ((real >= threshold[:, None]) & real_cold).sum(axis=1)
        cold_in_head = np.minimum(cold_in_head, head)
    else:
        cold_in_head = np.zeros(len(targets), np.int64)
    # The target's place among the cold items outside the head.
    beyond = cold_above - cold_in_head + 1
    reserved = target_cold & (ranks > head) & (beyond <= slots)
    return np.where(reserved, head + beyond, positions)


@dataclasses.dataclass
class TradeOff:
    """Accumulates cold and warm metrics over batches.

    Attributes:
        cold: bool ``[N]``, the items without a trained id.
        offsets: the offsets tried, in standard deviations of each
            row's scores (``OFFSET_STEPS``).
    """

    cold: np.ndarray
    offsets: tuple
    sums: dict = dataclasses.field(default_factory=dict)
    counts: dict = dataclasses.field(
        default_factory=lambda: {"cold": 0, "warm": 0}
    )

    def _add(self, key: tuple, gains: np.ndarray, is_cold: np.ndarray):
        entry = self.sums.setdefault(
            key, {"cold ndcg@10": 0.0, "cold hr@10": 0.0, "warm ndcg@10": 0.0}
        )
        entry["cold ndcg@10"] += float(gains[is_cold].sum())
        entry["cold hr@10"] += float((gains[is_cold] > 0).sum())
        entry["warm ndcg@10"] += float(gains[~is_cold].sum())

    def add(self, scores: np.ndarray, targets: np.ndarray) -> None:
        """One batch: scores ``[B, N]`` (a user's history, which no list
        holds, at ``-1e9``) and targets ``[B]``."""
        scores = np.asarray(scores, np.float64)
        targets = np.asarray(targets, np.int64)
        is_cold = self.cold[targets]
        self.counts["cold"] += int(is_cold.sum())
        self.counts["warm"] += int((~is_cold).sum())
        sampled = scores[:, spread_sample(scores.shape[1])]
        spread = row_spread(sampled, sampled > -1e8)
        shift = self.cold.astype(np.float64)[None, :] * spread[:, None]
        for offset in self.offsets:
            ranks = target_ranks(scores + offset * shift, targets)
            self._add(("offset", offset), _gain(ranks), is_cold)
        for slots in SLOTS:
            positions = reserved_positions(scores, targets, self.cold, slots)
            self._add(("slots", slots), _gain(positions), is_cold)

    def results(self) -> dict:
        """``{"offset": {offset: metrics}, "slots": {r: metrics}}``: each
        metric the mean over its targets (cold or warm)."""
        out: dict = {"offset": {}, "slots": {}}
        for (kind, value), sums in self.sums.items():
            out[kind][value] = {
                name: total / max(self.counts[name.split()[0]], 1)
                for name, total in sums.items()
            }
        return out


def choose_offset(validation: dict, warm_cost: float = 0.02) -> float:
    """The largest offset whose validation warm NDCG@10 is at most
    ``warm_cost`` below the offset-0 list's: as many new items as the
    warm targets allow.

    >>> choose_offset({0.0: {"warm ndcg@10": 0.1}, 1.0: {"warm ndcg@10":
    ...     0.099}, 2.0: {"warm ndcg@10": 0.09}})
    1.0
    """
    base = validation[0.0]["warm ndcg@10"] if 0.0 in validation else None
    if base is None:
        base = validation[min(validation)]["warm ndcg@10"]
    allowed = [
        offset
        for offset, row in validation.items()
        if row["warm ndcg@10"] >= (1 - warm_cost) * base
    ]
    return max(allowed)
