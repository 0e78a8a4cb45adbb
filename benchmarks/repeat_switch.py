"""How much can a repeat / explore switch add to a model's ranking?

Softmax-CPR's context and pointer partitions let a model move probability
mass between the items of the history (repeats) and the rest of the
catalogue (new items) per example. Whether that can pay off on a dataset
is measurable on any trained model's logits, without training a CPR head:
re-rank the logits as a two-part mixture

    p'(x) = pi * p(x | x in history) + (1 - pi) * p(x | x not in history)

where ``p`` is the model's softmax and ``pi`` the probability that the
target is a repeat. In logits this adds ``logit(pi) - logit(m)`` to every
history item, ``m`` being the model's own history mass. Three switches:

- **perfect**: ``pi`` is 1 for repeat targets and 0 for new ones (an oracle:
  the most any switch can add);
- **constant**: ``pi`` is the repeat share of the split it is fitted on;
- **learned**: ``pi`` from a logistic regression on features of the
  history and of the logits (``repeat_features``), fitted on one split
  and applied to another.

With ``pi = m`` the ranking is the model's own. The ranking *within* the
history and *within* the rest is never changed, so the gap between the
model and the perfect switch is the whole gain a repeat / explore decision
can buy, and the learned switch shows how much of it is predictable.
"""

from typing import Any

import numpy as np

from benchmarks.history_ranking import history_mask
from tfrec_tricks.evaluation.full_ranking import (
    metrics_by_target_kind,
    metrics_from_ranks,
    repeat_targets,
    target_ranks,
)

#: Added to / taken from history logits for a certain decision.
CERTAIN = 1e6
_EPSILON = 1e-12

FEATURE_NAMES = (
    "log-odds of the history mass",
    "log history length",
    "distinct items / length",
    "last item repeats the one before",
    "log count of the last item",
    "top history logit - top other logit",
)


def history_mass(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The softmax probability of the history items, ``[B]``."""
    logits = np.asarray(logits, dtype=np.float64)
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (weights * mask).sum(axis=1) / weights.sum(axis=1)


def _log_odds(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EPSILON, 1 - _EPSILON)
    return np.log(p) - np.log1p(-p)


def switch_logits(
    logits: np.ndarray, mask: np.ndarray, repeat_probability: Any
) -> np.ndarray:
    """Logits of the mixture that gives the history mass ``pi``.

    Args:
        logits: float ``[B, N]``, the model's logits.
        mask: bool ``[B, N]``, ``history_mask``.
        repeat_probability: ``pi``, a float or ``[B]`` in ``[0, 1]``; 0 and
            1 are certain decisions (history items move by ``CERTAIN``).

    Returns:
        float64 ``[B, N]``: ``logits`` plus ``logit(pi) - logit(m)`` on
        history items. Rows with an empty history are unchanged.
    """
    logits = np.asarray(logits, dtype=np.float64)
    pi = np.broadcast_to(
        np.asarray(repeat_probability, dtype=np.float64), logits.shape[:1]
    )
    if np.any((pi < 0) | (pi > 1)) or np.any(np.isnan(pi)):
        raise ValueError(
            "`repeat_probability` must be in [0, 1]. Received: values from "
            f"{np.nanmin(pi)} to {np.nanmax(pi)}"
        )
    shift = _log_odds(pi) - _log_odds(history_mass(logits, mask))
    shift = np.where(pi >= 1, CERTAIN, np.where(pi <= 0, -CERTAIN, shift))
    return logits + shift[:, None] * mask


def repeat_features(
    logits: np.ndarray, histories: np.ndarray, mask: np.ndarray
) -> np.ndarray:
    """Features for predicting a repeat target, ``[B, 6]`` (``FEATURE_NAMES``).

    Args:
        logits: float ``[B, N]``; histories: int ``[B, L]`` (right- or
            left-padded, padding 0); mask: ``history_mask(histories, N)``.
    """
    logits = np.asarray(logits, dtype=np.float64)
    histories = np.asarray(histories)
    real = histories > 0
    length = np.maximum(real.sum(axis=1), 1)
    # The last and the one-before-last real ids, whatever the padding side.
    order = np.where(real, np.arange(histories.shape[1])[None, :], -1)
    last_at = order.max(axis=1)
    before_at = np.where(order == last_at[:, None], -1, order).max(axis=1)
    rows = np.arange(len(histories))
    last = np.where(last_at >= 0, histories[rows, np.maximum(last_at, 0)], 0)
    before = np.where(
        before_at >= 0, histories[rows, np.maximum(before_at, 0)], -1
    )
    last_count = ((histories == last[:, None]) & real).sum(axis=1)
    has_history = mask.any(axis=1)
    top_history = np.where(mask, logits, -np.inf).max(axis=1)
    others = mask.copy()
    others[:, 0] = True  # padding is neither
    top_other = np.where(others, -np.inf, logits).max(axis=1)
    gap = np.where(has_history, top_history - top_other, 0.0)
    return np.stack(
        [
            _log_odds(history_mass(logits, mask)),
            np.log(length),
            mask.sum(axis=1) / length,
            (last == before).astype(np.float64),
            np.log1p(last_count),
            gap,
        ],
        axis=1,
    )


def fit_logistic(
    features: np.ndarray,
    labels: np.ndarray,
    l2: float = 1e-3,
    iterations: int = 50,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """L2-regularised logistic regression by Newton's method.

    Args:
        features: float ``[B, F]``; labels: bool ``[B]``.
        l2: penalty on the weights (not the intercept), per example.
        iterations: Newton steps (it stops earlier once converged).

    Returns:
        ``(weights [F+1], mean [F], scale [F])``: apply with
        ``predict_logistic``. Features are standardised with ``mean`` and
        ``scale`` first; ``weights[-1]`` is the intercept.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 2 or y.shape != (x.shape[0],) or x.shape[0] == 0:
        raise ValueError(
            "Expected features [B, F] and labels [B] with B > 0. Received: "
            f"features.shape={x.shape}, labels.shape={y.shape}"
        )
    if y.min() == y.max():
        raise ValueError(
            "Both classes are needed to fit a repeat predictor. Received: "
            f"all {len(y)} labels equal to {bool(y[0])}"
        )
    mean = x.mean(axis=0)
    scale = np.where(x.std(axis=0) > 0, x.std(axis=0), 1.0)
    design = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    penalty = np.full(design.shape[1], l2 * len(x))
    penalty[-1] = 0.0
    weights = np.zeros(design.shape[1])
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-design @ weights))
        gradient = design.T @ (p - y) + penalty * weights
        hessian = (design * (p * (1 - p))[:, None]).T @ design
        step = np.linalg.solve(hessian + np.diag(penalty + 1e-9), gradient)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return weights, mean, scale


def predict_logistic(model: tuple, features: np.ndarray) -> np.ndarray:
    """Probabilities ``[B]`` of a ``fit_logistic`` model."""
    weights, mean, scale = model
    x = (np.asarray(features, dtype=np.float64) - mean) / scale
    return 1 / (1 + np.exp(-(x @ weights[:-1] + weights[-1])))


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve (ties count one half)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels, dtype=bool)
    positives, negatives = labels.sum(), (~labels).sum()
    if positives == 0 or negatives == 0:
        return float("nan")
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    # Average ranks over ties.
    _, start, counts = np.unique(
        sorted_scores, return_index=True, return_counts=True
    )
    average = start + (counts + 1) / 2
    ranks[order] = np.repeat(average, counts)
    return float(
        (ranks[labels].sum() - positives * (positives + 1) / 2)
        / (positives * negatives)
    )


def _metrics(
    ranks: np.ndarray, histories: np.ndarray, targets: np.ndarray, ks: tuple
) -> dict:
    result = metrics_from_ranks(ranks, ks)
    by_kind = metrics_by_target_kind(ranks, histories, targets, ks)
    for kind in ("repeat", "new"):
        for name, value in by_kind[kind].items():
            if name != "share":
                result[f"{name} {kind}"] = value
    return result


def _prepared(split: tuple) -> tuple:
    logits, histories, targets = split
    logits = np.asarray(logits, dtype=np.float64)
    histories = np.asarray(histories)
    targets = np.asarray(targets)
    if logits.ndim != 2 or not len(logits) == len(histories) == len(targets):
        raise ValueError(
            "Expected (logits [B, N], histories [B, L], targets [B]). "
            f"Received: shapes {logits.shape}, {histories.shape}, "
            f"{targets.shape}"
        )
    mask = history_mask(histories, logits.shape[1])
    return logits, histories, targets, mask, repeat_targets(histories, targets)


def _switched(fit: tuple, evaluate: tuple) -> dict:
    """Target ranks on ``evaluate`` of the model and of each switch."""
    logits, histories, _, mask, repeats = fit
    constant_pi = float(repeats.mean())
    learned = fit_logistic(repeat_features(logits, histories, mask), repeats)
    logits, histories, targets, mask, repeats = evaluate
    learned_pi = predict_logistic(
        learned, repeat_features(logits, histories, mask)
    )
    scores = {
        "model": logits,
        "constant": switch_logits(logits, mask, constant_pi),
        "learned": switch_logits(logits, mask, learned_pi),
        "perfect": switch_logits(logits, mask, repeats.astype(np.float64)),
    }
    return {
        "ranks": {name: target_ranks(s, targets) for name, s in scores.items()},
        "learned_pi": learned_pi,
        "mass": history_mass(logits, mask),
        "constant_pi": constant_pi,
        "weights": dict(zip(FEATURE_NAMES, learned[0][:-1].tolist())),
    }


def _report(parts: list, evaluated: list, fit_share: float, ks: tuple) -> dict:
    """Joins the switched ranks of one or more evaluated parts."""
    histories = np.concatenate([part[1] for part in evaluated])
    targets = np.concatenate([part[2] for part in evaluated])
    repeats = np.concatenate([part[4] for part in evaluated])

    def joined(key: str) -> np.ndarray:
        return np.concatenate([part[key] for part in parts])

    return {
        "metrics": {
            name: _metrics(
                np.concatenate([part["ranks"][name] for part in parts]),
                histories,
                targets,
                ks,
            )
            for name in parts[0]["ranks"]
        },
        "repeat_share": {"fit": fit_share, "evaluate": float(repeats.mean())},
        "auc": {
            "history mass": roc_auc(joined("mass"), repeats),
            "learned": roc_auc(joined("learned_pi"), repeats),
        },
        "constant_pi": float(np.mean([part["constant_pi"] for part in parts])),
        "weights": parts[0]["weights"],
    }


def repeat_headroom(fit: tuple, evaluate: tuple, ks: tuple = (10,)) -> dict:
    """The model and the three switches, fitted on one split, on another.

    Args:
        fit: ``(logits [B, N], histories [B, L], targets [B])`` of the split
            the constant and learned switches are fitted on (validation).
        evaluate: the same for the split they are measured on (test).
        ks: metric cut-offs. Defaults to (10,).

    Returns:
        A dict with ``"metrics"``: ``{switch: metrics}`` for ``"model"``,
        ``"constant"``, ``"learned"`` and ``"perfect"``, each with
        NDCG / HR / MRR at ``ks`` overall and of repeat and new targets
        (``"ndcg@10 repeat"``, ...); ``"repeat_share"`` of both splits;
        ``"auc"``: how well the model's history mass and the learned
        switch rank repeat targets above new ones on ``evaluate``;
        ``"constant_pi"``; ``"weights"``: the learned switch's weights on
        the standardised features, by name.

    Example:

    >>> import numpy as np
    >>> from benchmarks.repeat_switch import repeat_headroom
    >>> rng = np.random.default_rng(0)
    >>> histories = rng.integers(1, 20, size=(200, 4))
    >>> targets = np.where(
    ...     np.arange(200) % 3 == 0, histories[:, -1], rng.integers(1, 20, 200))
    >>> split = (rng.normal(size=(200, 20)), histories, targets)
    >>> result = repeat_headroom(split, split)
    >>> sorted(result["metrics"])
    ['constant', 'learned', 'model', 'perfect']
    >>> perfect = result["metrics"]["perfect"]["ndcg@10"]
    >>> bool(perfect >= result["metrics"]["model"]["ndcg@10"])
    True
    """
    fit, evaluate = _prepared(fit), _prepared(evaluate)
    return _report(
        [_switched(fit, evaluate)], [evaluate], float(fit[4].mean()), ks
    )


def cross_fitted_headroom(
    split: tuple, folds: int = 2, ks: tuple = (10,)
) -> dict:
    """``repeat_headroom`` with the switches fitted on the same split.

    Row ``i`` goes to fold ``i % folds``; each fold is evaluated with
    switches fitted on the other folds, and the folds' ranks are joined.
    Fitting on the split that is measured removes any shift between two
    splits (e.g. more repeats among test targets than among validation
    ones), so the learned switch shows what its features can predict.

    Args:
        split: ``(logits [B, N], histories [B, L], targets [B])``.
        folds: int >= 2. Defaults to 2.
        ks: metric cut-offs. Defaults to (10,).

    Returns:
        The dict of ``repeat_headroom``; ``"repeat_share"["fit"]`` equals
        ``"evaluate"``, and ``"constant_pi"`` is the mean over folds.
    """
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise ValueError(f"`folds` must be an int >= 2. Received: {folds!r}")
    whole = _prepared(split)
    fold = np.arange(len(whole[0])) % folds
    parts, evaluated = [], []
    for j in range(folds):
        fit = tuple(x[fold != j] for x in whole)
        evaluate = tuple(x[fold == j] for x in whole)
        parts.append(_switched(fit, evaluate))
        evaluated.append(evaluate)
    return _report(parts, evaluated, float(whole[4].mean()), ks)
