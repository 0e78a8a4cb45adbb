"""A trained run's metrics: full ranking, and the papers' protocols beside.

``evaluate_run`` ranks each validation and test target against the whole
catalogue (the test split also by target kind: a repeat of an item of the
history, or a new item), and adds the protocols a run asks for:
``--eval-negatives N`` (sampled negatives) and ``--eval-seen-excluded``
(the user's seen items ranked last). ``format_results`` is the table
``train`` prints.

``train --eval-negatives N``: SASRec and SSE-PT report MovieLens-1M with
100 sampled negatives per example
(``tfrec_tricks.evaluation.sampled_ranking``). ``train`` then also ranks
each validation and test target against ``N`` items the user had not
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

from typing import Any, Callable, Iterable

import numpy as np
import tensorflow as tf

from tfrec_tricks.data.in_memory_item_features import trained_items
from tfrec_tricks.evaluation.full_ranking import (
    metrics_by_target_kind,
    metrics_by_target_popularity,
    metrics_from_ranks,
    target_ranks,
    tf_target_ranks,
)
from tfrec_tricks.evaluation.sampled_ranking import distinct_sampled_ranks
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import TrainingData


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

    def item_counts(self, num_items: int) -> np.ndarray:
        """int64 [num_items]: each item's number of users.

        >>> SeenItems(np.array([1, 0, 1]), np.array([4, 4, 3])).item_counts(5)
        array([0, 0, 0, 1, 2])
        """
        return np.bincount(self.items, minlength=num_items)

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
    ranks, _ = seen_excluded_ranks(model, batches, seen)
    return metrics_from_ranks(ranks, tuple(ks))


def seen_excluded_ranks(
    model: tf.keras.Model, batches: tf.data.Dataset, seen: SeenItems
) -> tuple[np.ndarray, np.ndarray]:
    """The targets' full-ranking ranks [B] with the user's seen items last
    (``seen_excluded_metrics``' protocol), and the targets [B]."""
    ranks, all_targets = [], []
    for batch in batches:
        scores = model(batch, training=False).numpy()
        for row, (user, history) in enumerate(
            zip(batch["user"].numpy(), batch["history"].numpy())
        ):
            scores[row, seen[user]] = -np.inf
            scores[row, history[history > 0]] = -np.inf
        targets = batch["target"].numpy().reshape(-1)
        ranks.append(target_ranks(scores, targets))
        all_targets.append(targets)
    return np.concatenate(ranks), np.concatenate(all_targets)


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


EVAL_BATCH_SIZE = 512


# Evaluation scores a batch against the whole catalogue: its [B, N] float32
# logits are kept near this many values (256 MB), so a large catalogue
# evaluates in smaller batches rather than running out of memory.
EVAL_LOGITS_BUDGET = 1 << 26


def eval_batch_size(num_items: int) -> int:
    """Evaluation rows per batch for a catalogue of ``num_items``.

    >>> eval_batch_size(3_000), eval_batch_size(1_000_001)
    (512, 67)
    """
    return max(1, min(EVAL_BATCH_SIZE, EVAL_LOGITS_BUDGET // max(num_items, 1)))


def evaluate_run(
    model: tf.keras.Model,
    inputs: Any,
    data: TrainingData,
    config: TrainConfig,
    verbose: int,
) -> dict:
    """Validation and test metrics of the trained model (full ranking, by
    target kind, and the sampled or seen-excluded protocols if asked).

    ``inputs`` are the run's ``FitInputs``: the validation data as fit
    read it (distributed under a strategy).
    """
    metric_ks = model.config.metric_ks
    results = {
        "validation": _ranking_metrics(
            model, inputs.validation, inputs.validation_steps
        )
    }
    results["test"], results["test_by_target"] = _test_metrics(
        model,
        data.batches(
            "test",
            eval_batch_size(data.num_items),
            bucket_by_length=config.bucket_by_length,
        ),
        metric_ks,
        cold_items(data),
    )
    if config.eval_negatives or config.eval_seen_excluded:
        results.update(
            _seen_item_results(model, data, config, metric_ks, verbose)
        )
    return results


def _ranking_metrics(
    model: tf.keras.Model, dataset: Any, steps: int | None = None
) -> dict:
    values = model.evaluate(dataset, steps=steps, return_dict=True, verbose=0)
    names = [m.name for m in model.ranking_metrics]
    return {name: float(values[name]) for name in names}


def cold_items(data: TrainingData) -> np.ndarray | None:
    """bool [N]: the items of no training example (cold-start items), for
    the test metrics of their targets; None for data on disk prepared
    without item features (its training items are not recorded)."""
    trained = data.prepared.trained_items
    if trained is None:
        if data.on_disk:
            return None
        trained = trained_items(data.prepared)
    cold = ~np.asarray(trained, bool)
    cold[0] = False
    return cold


def _test_metrics(
    model: tf.keras.Model,
    test_ds: tf.data.Dataset,
    ks: tuple,
    cold: np.ndarray | None = None,
) -> tuple[dict, dict]:
    """Overall and repeat / new test metrics, from one pass over the test set.

    Both come from the same full-catalogue target ranks (what
    ``model.evaluate`` averages), so the two kinds weight back exactly into
    the overall metric.
    """

    # The ranks come from the logits in the graph: only [B] ranks leave
    # it, not [B, N] logits (at 1M items, 268 MB per batch of 67 rows).
    @tf.function(reduce_retracing=True)
    def batch_ranks(batch):
        return tf_target_ranks(model(batch, training=False), batch["target"])

    ranks, histories, targets = [], [], []
    for batch in test_ds:
        ranks.append(batch_ranks(batch).numpy().astype(np.int64))
        histories.append(batch["history"].numpy())
        targets.append(batch["target"].numpy().reshape(-1))
    ranks = np.concatenate(ranks)
    by_kind = metrics_by_target_kind(
        ranks, np.concatenate(histories), np.concatenate(targets), ks, cold
    )
    return metrics_from_ranks(ranks, ks), by_kind


def _seen_item_results(
    model: tf.keras.Model,
    data: TrainingData,
    config: TrainConfig,
    ks: tuple,
    verbose: int = 1,
) -> dict:
    """The protocols that need each user's seen items: validation and test
    metrics against ``config.eval_negatives`` sampled negatives, and with
    the seen items ranked last (``config.eval_seen_excluded``)."""
    batch_size = eval_batch_size(data.num_items)
    seen = seen_items(data.batches("train", batch_size))
    results = {}
    if config.eval_negatives:
        results["eval_negatives"] = config.eval_negatives
        for split in ("validation", "test"):
            results[f"{split}_sampled"] = sampled_metrics(
                model,
                data.batches(split, batch_size),
                seen,
                config.eval_negatives,
                config.seed,
                ks,
                log=lambda line, split=split: _log(verbose, f"{split}: {line}"),
            )
    if config.eval_seen_excluded:
        ranked = {}
        for split in ("validation", "test"):
            ranked[split] = seen_excluded_ranks(
                model, data.batches(split, batch_size), seen
            )
            results[f"{split}_seen_excluded"] = metrics_from_ranks(
                ranked[split][0], ks
            )
        # The test targets by their training users: where in the long
        # tail a model wins or loses (the overall mean is the head's).
        results["test_seen_excluded_by_popularity"] = (
            metrics_by_target_popularity(
                *ranked["test"], seen.item_counts(data.num_items), ks
            )
        )
        if model.head.excludes_history(False):
            # Its full ranking already ranks the history last: the plain
            # ranking of the same weights is the third protocol to show.
            for split in ("validation", "test"):
                results[f"{split}_history_kept"] = history_kept_metrics(
                    model, data.batches(split, batch_size), ks
                )
    return results


def _log(verbose: int, message: str) -> None:
    if verbose:
        print(message, flush=True)


def training_minutes(results: dict) -> float:
    """A run's training minutes from its metrics: epochs times their
    median (an estimate that needs no clock around a reused run; 0 for a
    run without epoch times)."""
    seconds = results.get("seconds_per_epoch_median") or 0.0
    return seconds * (results.get("epochs_run") or 0) / 60


def format_results(results: dict, run_dir: str) -> str:
    """The final table printed after training."""
    names = list(results["validation"])
    width = max(len(n) for n in names) + 2
    lines = ["", f"{'split':<12}" + "".join(f"{n:>{width}}" for n in names)]
    for split in ("validation", "test"):
        row = "".join(f"{results[split][n]:>{width}.4f}" for n in names)
        lines.append(f"{split:<12}{row}")
    kinds = results.get("test_by_target", {})
    for kind in ("repeat", "new", "cold"):
        part = kinds.get(kind, {})
        if len(part) > 1:
            row = "".join(f"{part[n]:>{width}.4f}" for n in names)
            label = f"test {kind}"
            lines.append(f"{label:<12}{row}   ({part['share']:.0%} of test)")
    for split in ("validation", "test"):
        sampled = results.get(f"{split}_sampled")
        if sampled:
            row = "".join(f"{sampled[n]:>{width}.4f}" for n in names)
            lines.append(
                f"{split:<12}{row}   ({results['eval_negatives']} sampled "
                "negatives: not full ranking)"
            )
    for split in ("validation", "test"):
        excluded = results.get(f"{split}_seen_excluded")
        if excluded:
            row = "".join(f"{excluded[n]:>{width}.4f}" for n in names)
            lines.append(f"{split:<12}{row}   (seen items ranked last)")
    groups = results.get("test_seen_excluded_by_popularity", {})
    for name, part in groups.items():
        if len(part) > 1:
            row = "".join(f"{part[n]:>{width}.4f}" for n in names)
            lines.append(
                f"{'test ' + name:<12}{row}   (seen last; targets with {name} "
                f"training users, {part['share']:.0%} of test)"
            )
    for split in ("validation", "test"):
        kept = results.get(f"{split}_history_kept")
        if kept:
            row = "".join(f"{kept[n]:>{width}.4f}" for n in names)
            lines.append(f"{split:<12}{row}   (history kept: plain ranking)")
    seconds = results["seconds_per_epoch_median"]
    # None when this process trained no epoch (its fit had ended before).
    timing = "" if seconds is None else f", median {seconds:.1f} s/epoch"
    lines.append(
        f"\n{results['epochs_run']} epochs{timing}, "
        f"{results['num_parameters']:,} parameters. "
        f"Run directory: {run_dir}"
    )
    return "\n".join(lines)
