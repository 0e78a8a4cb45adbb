"""``train --eval-negatives N``: the papers' sampled protocol beside ours.

SASRec and SSE-PT report MovieLens-1M with 100 sampled negatives per
example (``tfrec_tricks.evaluation.sampled_ranking``). ``train`` then also
ranks each
validation and test target against ``N`` items the user had not
interacted with before it, besides the full ranking it always reports. The
two are not comparable: the sampled numbers are much higher.

A user's items before a held-out target are all in the run's prefix
examples: every training target, the first item (the first training
example's history), and the held-out example's own history (it holds the
validation target before a test one). ``seen_items`` collects the first
two, user by user, from the training examples; ``sampled_metrics`` adds
each example's history.

The negatives are distinct (``sampled_ranking.distinct_sampled_ranks``),
so a target's sampled rank is never worse than its full rank. ``train``
refuses ``N`` at or above the catalogue's number of items
(``TrainConfig.check_catalogue``); a user who has fewer than ``N`` items
left besides those seen is ranked against all of them, and ``train``
prints how many examples that was.
"""

from typing import Callable, Iterable

import numpy as np
import tensorflow as tf

from tfrec_tricks.evaluation.full_ranking import (
    metrics_from_ranks,
    target_ranks,
)
from tfrec_tricks.evaluation.sampled_ranking import distinct_sampled_ranks


class SeenItems:
    """Each user's training items: sorted unique ids, looked up by user.

    Args:
        users: int array [n] of user ids.
        items: int array [n] of item ids (0, padding, is dropped).

    Example:

    >>> seen = SeenItems(np.array([1, 0, 1, 1]), np.array([4, 2, 3, 4]))
    >>> seen[1].tolist(), seen[0].tolist(), seen[7].tolist()
    ([3, 4], [2], [])
    """

    def __init__(self, users: np.ndarray, items: np.ndarray):
        users = np.asarray(users, np.int64)
        items = np.asarray(items, np.int64)
        keep = items > 0
        pairs = np.unique(np.stack([users[keep], items[keep]], axis=1), axis=0)
        self.users, starts = np.unique(pairs[:, 0], return_index=True)
        self.items = pairs[:, 1]
        self.bounds = np.append(starts, len(pairs))

    def __getitem__(self, user: int) -> np.ndarray:
        at = np.searchsorted(self.users, user)
        if at == len(self.users) or self.users[at] != user:
            return self.items[:0]
        return self.items[self.bounds[at] : self.bounds[at + 1]]


def seen_items(train_batches: tf.data.Dataset) -> SeenItems:
    """The training items of each user, from prefix-example batches.

    Args:
        train_batches: batches of the training prefix examples (``user``,
            ``history``, ``target``), in any order.
    """
    users, items = [], []
    for batch in train_batches:
        user = batch["user"].numpy()
        # Every later item is some example's target; the first one is in
        # the history of the user's first example.
        users += [user, user]
        items += [batch["target"].numpy(), batch["history"].numpy()[:, 0]]
    if not users:
        return SeenItems(np.zeros(0, np.int64), np.zeros(0, np.int64))
    return SeenItems(np.concatenate(users), np.concatenate(items))


def sampled_metrics(
    model: tf.keras.Model,
    batches: tf.data.Dataset,
    seen: SeenItems,
    num_negatives: int,
    seed: int,
    ks: Iterable[int] = (10,),
    log: Callable[[str], None] | None = None,
) -> dict[str, float]:
    """NDCG@K / HR@K / MRR@K of targets ranked against sampled negatives.

    The negatives are distinct; an example whose user has at most
    ``num_negatives`` items left is ranked against all of them (never
    worse than its full rank: ``distinct_sampled_ranks``).

    Args:
        model: scores ``[B, N]`` over the catalogue when called.
        batches: validation or test batches (``user``, ``history``,
            ``target``).
        seen: the users' training items (``seen_items``).
        num_negatives: int. Negatives per example.
        seed: int. With the user and the target, seeds each example's
            draws (the same negatives in any batch order).
        ks: cut-offs.
        log: called with a note when some examples were capped; None
            says nothing.
    """
    ranks, capped = [], 0
    for batch in batches:
        # Batch by batch: the [B, N] scores never pile up.
        scores = model(batch, training=False).numpy()
        target = batch["target"].numpy()
        user = batch["user"].numpy()
        excluded = [
            np.concatenate([seen[u], row[row > 0]])
            for u, row in zip(user, batch["history"].numpy())
        ]
        batch_ranks, batch_capped = distinct_sampled_ranks(
            scores, target, excluded, user, num_negatives, seed
        )
        ranks.append(batch_ranks)
        capped += int(batch_capped.sum())
    ranks = np.concatenate(ranks)
    if capped and log is not None:
        log(
            f"--eval-negatives {num_negatives}: {capped} of {len(ranks)} "
            "examples have at most that many items their user has not "
            "seen; each is ranked against all of those."
        )
    return metrics_from_ranks(ranks, tuple(ks))


def seen_excluded_metrics(
    model: tf.keras.Model,
    batches: tf.data.Dataset,
    seen: SeenItems,
    ks: Iterable[int] = (10,),
) -> dict[str, float]:
    """Full-ranking NDCG@K / HR@K / MRR@K with the user's seen items last.

    Every item the user interacted with before the target (training
    items and the example's history) scores -inf, as in the full-sort
    protocols of SASRec+, HSTU and RecBole on data without repeats. A
    target that is itself a seen item ties with them, below every unseen
    item: the protocol is for data without repeats.

    Args:
        model: scores ``[B, N]`` over the catalogue when called.
        batches: validation or test batches (``user``, ``history``,
            ``target``).
        seen: the users' training items (``seen_items``).
        ks: cut-offs.
    """
    ranks = []
    for batch in batches:
        scores = model(batch, training=False).numpy()
        for row, (user, history) in enumerate(
            zip(batch["user"].numpy(), batch["history"].numpy())
        ):
            scores[row, seen[user]] = -np.inf
            scores[row, history[history > 0]] = -np.inf
        targets = batch["target"].numpy().reshape(-1)
        ranks.append(target_ranks(scores, targets))
    return metrics_from_ranks(np.concatenate(ranks), tuple(ks))


def history_kept_metrics(
    model: tf.keras.Model,
    batches: tf.data.Dataset,
    ks: Iterable[int] = (10,),
) -> dict[str, float]:
    """Full-ranking NDCG@K / HR@K / MRR@K with nothing ranked last.

    The plain ranking of a model whose head ranks the history last
    (``--head softmax_no_dup``): the same weights, each example's history
    left in the ranking (``SequentialRetrievalModel.logits`` with
    ``exclude_history=False``). Beside ``seen_excluded_metrics`` it shows
    how much of a score the exclusion makes.

    Args:
        model: a ``SequentialRetrievalModel``.
        batches: validation or test batches (``history``, ``target``).
        ks: cut-offs.
    """
    ranks = []
    for batch in batches:
        history, states = model.encode(batch, training=False)
        scores = model.logits(history, states, exclude_history=False)
        targets = batch["target"].numpy().reshape(-1)
        ranks.append(target_ranks(scores.numpy(), targets))
    return metrics_from_ranks(np.concatenate(ranks), tuple(ks))
