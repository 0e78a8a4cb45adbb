"""benchmarks.repeat_switch: the repeat / explore switches on logits."""

import numpy as np
import pytest

from benchmarks.history_ranking import history_mask
from benchmarks.repeat_switch import (
    CERTAIN,
    FEATURE_NAMES,
    cross_fitted_headroom,
    fit_logistic,
    history_mass,
    predict_logistic,
    repeat_features,
    repeat_headroom,
    roc_auc,
    switch_logits,
)
from tfrec_tricks.evaluation.full_ranking import (
    metrics_from_ranks,
    target_ranks,
)


def softmax(logits):
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


def test_history_mask_any_padding_side_and_never_padding():
    histories = np.array([[0, 0, 3, 1], [2, 2, 4, 0], [0, 0, 0, 0]])
    expected = np.array(
        [
            [False, True, False, True, False],
            [False, False, True, False, True],
            [False, False, False, False, False],
        ]
    )
    np.testing.assert_array_equal(history_mask(histories, 5), expected)


@pytest.mark.parametrize(
    "histories, message",
    [
        (np.array([[1, 5]]), r"\[0, 5\).*from 1 to 5"),
        (np.array([1, 2]), "[B, L]"),
    ],
)
def test_history_mask_rejects_bad_histories(histories, message):
    with pytest.raises(ValueError, match=message):
        history_mask(histories, 5)


def test_switch_to_the_models_own_mass_changes_nothing():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 9))
    mask = history_mask(rng.integers(0, 9, size=(6, 3)), 9)
    switched = switch_logits(logits, mask, history_mass(logits, mask))
    np.testing.assert_allclose(
        switched[mask.any(axis=1)], logits[mask.any(axis=1)], atol=1e-9
    )


def test_switch_gives_the_history_exactly_the_asked_mass():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(5, 12))
    mask = history_mask(rng.integers(1, 12, size=(5, 4)), 12)
    pi = np.array([0.1, 0.3, 0.5, 0.7, 0.95])
    probabilities = softmax(switch_logits(logits, mask, pi))
    np.testing.assert_allclose((probabilities * mask).sum(axis=1), pi)
    # Within the history and within the rest, the order is the model's.
    for row in range(5):
        for part in (mask[row], ~mask[row]):
            np.testing.assert_array_equal(
                np.argsort(probabilities[row][part]),
                np.argsort(logits[row][part]),
            )


def test_certain_switches_move_the_whole_history():
    logits = np.array([[0.0, 5.0, 1.0, 4.0], [0.0, 5.0, 1.0, 4.0]])
    mask = history_mask(np.array([[2, 0], [2, 0]]), 4)
    switched = switch_logits(logits, mask, np.array([1.0, 0.0]))
    assert switched[0, 2] == pytest.approx(1.0 + CERTAIN)
    assert switched[1, 2] == pytest.approx(1.0 - CERTAIN)
    np.testing.assert_array_equal(switched[:, [1, 3]], logits[:, [1, 3]])


def test_empty_history_rows_are_unchanged():
    logits = np.array([[0.0, 2.0, 1.0]])
    mask = history_mask(np.array([[0, 0]]), 3)
    for pi in (0.0, 0.4, 1.0):
        np.testing.assert_array_equal(switch_logits(logits, mask, pi), logits)


def test_switch_rejects_probabilities_outside_zero_one():
    logits = np.zeros((2, 3))
    mask = history_mask(np.array([[1], [2]]), 3)
    with pytest.raises(ValueError, match=r"\[0, 1\].*1\.5"):
        switch_logits(logits, mask, np.array([0.2, 1.5]))


def test_features_do_not_depend_on_the_padding_side():
    right = np.array([[4, 2, 2, 0, 0], [3, 0, 0, 0, 0], [1, 2, 3, 1, 0]])
    left = np.array([[0, 0, 4, 2, 2], [0, 0, 0, 0, 3], [0, 1, 2, 3, 1]])
    logits = np.random.default_rng(2).normal(size=(3, 6))
    features = repeat_features(logits, right, history_mask(right, 6))
    np.testing.assert_allclose(
        features, repeat_features(logits, left, history_mask(left, 6))
    )
    assert features.shape == (3, len(FEATURE_NAMES))
    np.testing.assert_allclose(features[:, 1], np.log([3, 1, 4]))
    np.testing.assert_allclose(features[:, 2], [2 / 3, 1, 3 / 4])
    np.testing.assert_array_equal(features[:, 3], [1, 0, 0])
    np.testing.assert_allclose(features[:, 4], np.log1p([2, 1, 2]))


def test_logistic_regression_recovers_a_known_model():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20000, 2))
    p = 1 / (1 + np.exp(-(1.5 * x[:, 0] - 0.8 * x[:, 1] + 0.3)))
    y = rng.random(20000) < p
    model = fit_logistic(x, y, l2=0.0)
    weights, mean, scale = model
    # Weights are on standardised features: undo the scaling.
    np.testing.assert_allclose(weights[:2] / scale, [1.5, -0.8], atol=0.08)
    np.testing.assert_allclose(predict_logistic(model, x), p, atol=0.03)


def test_logistic_regression_needs_both_classes():
    with pytest.raises(ValueError, match="all 3 labels equal to True"):
        fit_logistic(np.ones((3, 1)), np.array([True, True, True]))


def test_roc_auc_with_ties():
    labels = np.array([False, False, True, True])
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), labels) == 0.75
    assert roc_auc(np.zeros(4), labels) == 0.5
    assert np.isnan(roc_auc(np.zeros(2), np.array([True, True])))


def split_with_predictable_repeats(seed, size=600, num_items=30):
    """Repeat targets exactly when the last item repeats the one before.

    The logits know nothing of it (noise), so only the learned switch,
    through its "last item repeats" feature, can tell repeats apart.
    """
    rng = np.random.default_rng(seed)
    histories = rng.integers(1, num_items, size=(size, 4))
    repeat = np.arange(size) % 2 == 0
    histories[repeat, 2] = histories[repeat, 3]
    new = ~repeat
    same = new & (histories[:, 2] == histories[:, 3])
    histories[same, 2] = histories[same, 3] % (num_items - 1) + 1
    targets = histories[:, 0].copy()
    for row in np.flatnonzero(new):
        outside = np.setdiff1d(np.arange(1, num_items), histories[row])
        targets[row] = rng.choice(outside)
    logits = rng.normal(size=(size, num_items))
    return logits, histories, targets


def test_learned_switch_finds_predictable_repeats():
    fit = split_with_predictable_repeats(4)
    evaluate = split_with_predictable_repeats(5)
    result = repeat_headroom(fit, evaluate)
    ndcg = {name: m["ndcg@10"] for name, m in result["metrics"].items()}
    assert result["auc"]["learned"] > 0.99
    assert result["auc"]["history mass"] < 0.7  # the noise logits cannot
    assert ndcg["learned"] > 2 * ndcg["model"]
    assert ndcg["learned"] == pytest.approx(ndcg["perfect"], abs=0.02)
    assert result["repeat_share"] == {"fit": 0.5, "evaluate": 0.5}
    assert result["weights"]["last item repeats the one before"] > 0


def test_model_and_perfect_metrics_are_exact():
    logits = np.array(
        [
            [0.0, 3.0, 2.0, 1.0, 0.5],  # history {3}: target 3, a repeat
            [0.0, 3.0, 2.0, 1.0, 0.5],  # history {1}: target 2, new
            [0.0, 1.0, 2.0, 3.0, 0.5],  # history {4}: target 1, new
            [0.0, 1.0, 2.0, 3.0, 0.5],  # history {1}: target 2, new
        ]
    )
    histories = np.array([[3], [1], [4], [1]])
    targets = np.array([3, 2, 1, 2])
    split = (logits, histories, targets)
    result = repeat_headroom(split, split)
    model = result["metrics"]["model"]
    expected = metrics_from_ranks(target_ranks(logits, targets), (10,))
    for name, value in expected.items():
        assert model[name] == pytest.approx(value)
    # Perfect: the repeat goes first; new targets lose the history item.
    ranks = np.array([1, 1, 3, 2])
    perfect = result["metrics"]["perfect"]
    assert perfect["mrr@10"] == pytest.approx(np.mean(1 / ranks))
    assert perfect["ndcg@10 repeat"] == pytest.approx(1.0)
    assert perfect["ndcg@10 new"] == pytest.approx(
        np.mean(1 / np.log2(ranks[1:] + 1))
    )
    assert result["constant_pi"] == 0.25


def test_cross_fitting_keeps_the_model_and_fits_on_the_split():
    split = split_with_predictable_repeats(6)
    crossed = cross_fitted_headroom(split, folds=3)
    plain = repeat_headroom(split, split)
    for name, value in plain["metrics"]["model"].items():
        assert crossed["metrics"]["model"][name] == pytest.approx(value)
    assert crossed["repeat_share"] == {"fit": 0.5, "evaluate": 0.5}
    assert crossed["auc"]["learned"] > 0.99
    with pytest.raises(ValueError, match="folds.*Received: 1"):
        cross_fitted_headroom(split, folds=1)


def test_mismatched_split_parts_are_rejected():
    with pytest.raises(ValueError, match=r"\(4, 5\), \(3, 1\), \(4,\)"):
        repeat_headroom(
            (np.zeros((4, 5)), np.ones((3, 1), int), np.ones(4, int)),
            (np.zeros((4, 5)), np.ones((4, 1), int), np.ones(4, int)),
        )
