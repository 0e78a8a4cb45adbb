"""A request's own filters: items ranked last, its k, history last or not.

``ServingModule.recommend_filtered`` of every head and both scoring paths
against a naive reference ranking over the full catalogue, in-process
and through an exported SavedModel loaded by plain TensorFlow; and the
in-graph refusals of a ``k`` out of range and of misshapen options.
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import reference_inputs
from tests.export.test_served_lists import (
    HISTORIES,
    ITEMS,
    MAX_LEN,
    dense,
    make_model,
)
from tfrec_tricks.export import export_for_serving
from tfrec_tricks.export.serving_module import ServingModule

HEADS = {
    "softmax": {"head": "softmax"},
    "softmax_no_dup": {"head": "softmax_no_dup"},
    "cpr:3": {"head": "cpr", "cpr_reranker_ks": (3,)},
    "mos": {"head": "mos", "mos_components": 2},
}
CASES = [
    ("softmax", "index"),
    ("softmax", "full"),
    ("softmax_no_dup", "index"),
    ("softmax_no_dup", "full"),
    ("cpr:3", "index"),
    ("cpr:3", "full"),
    ("mos", "full"),
]
# Per history row: raw ids to exclude (unknown ids and "" are ignored).
EXCLUDED = [
    ["i1", "i2"],
    [],
    ["i2", "unknown"],
    ["i1", "i1", "i3", "i5", "i6"],
    [],
    ["i7"],
    ["i1", "i2", "i3", "i4", "i5", "i6", "i7"],
    ["i4"],
]


def reference(model, history, excluded, k, history_last):
    """Raw ids and scores: the model's logits without any exclusion, the
    row's excluded items (and its history's, with ``history_last``) after
    every other item, each part by logit then lower id; never padding."""
    ids, _ = reference_inputs(ITEMS, MAX_LEN, history, {})
    encoded, states = model.encode({"history": ids})
    keep = False if model.head.excludes_history(False) else None
    logits = model.logits(encoded, states, exclude_history=keep).numpy()
    rows, scores = [], []
    for row in range(len(history)):
        last = {ITEMS.index(i) for i in excluded[row] if i in ITEMS}
        if history_last[row]:
            last |= {ITEMS.index(i) for i in history[row] if i in ITEMS}
        by_score = sorted(
            range(1, len(ITEMS)), key=lambda i: (-logits[row, i], i)
        )
        ranked = [i for i in by_score if i not in last]
        ranked = (ranked + [i for i in by_score if i in last])[: k[row]]
        rows.append([ITEMS[i] for i in ranked])
        scores.append([-1e9 if i in last else logits[row, i] for i in ranked])
    return rows, scores


def requests(seed):
    """The histories with their filters, one ``k`` and flag per row."""
    rng = np.random.default_rng(seed)
    history = dense(HISTORIES)
    excluded = dense(EXCLUDED)
    k = rng.integers(1, len(ITEMS), len(HISTORIES)).astype(np.int32)
    history_last = rng.random(len(HISTORIES)) < 0.5
    return history, excluded, k, history_last


def listed(out, k):
    """Each row's served ids and scores, cut to its own ``k``; what
    follows must be "" and -1e9."""
    ids = out["item_ids"].numpy().astype(str)
    scores = out["scores"].numpy()
    assert ids.shape[1] == max(k)
    for row, length in enumerate(k):
        assert (ids[row, length:] == "").all()
        assert (scores[row, length:] == -1e9).all()
    return (
        [ids[row, :length].tolist() for row, length in enumerate(k)],
        [scores[row, :length] for row, length in enumerate(k)],
    )


def check(out, model, history, excluded, k, history_last):
    served, scores = listed(out, k)
    expected, expected_scores = reference(
        model, history.tolist(), excluded.tolist(), k, history_last
    )
    assert served == expected
    for got, want in zip(scores, expected_scores):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("head, scoring", CASES)
def test_filtered_lists_match_the_reference_ranking(head, scoring):
    model = make_model(HEADS[head])
    module = ServingModule(model, ITEMS, k=len(ITEMS) - 1, scoring=scoring)
    for seed in range(3):
        history, excluded, k, history_last = requests(seed)
        out = module.recommend_filtered(
            history=tf.constant(history),
            exclude_item_ids=tf.constant(excluded),
            k=tf.constant(k),
            history_last=tf.constant(history_last),
        )
        check(out, model, history, excluded, k, history_last)


@pytest.mark.slow
def test_exported_filter_signature_matches_the_reference(tmp_path):
    model = make_model(HEADS["cpr:3"])
    path = export_for_serving(
        model, str(tmp_path / "m"), ITEMS, k=5, warmup=False
    )
    loaded = tf.saved_model.load(path)
    signature = loaded.signatures["recommend_filtered"]
    history, excluded, k, history_last = requests(0)
    k = np.minimum(k, 5)
    out = signature(
        history=tf.constant(history),
        exclude_item_ids=tf.constant(excluded),
        k=tf.constant(k),
        history_last=tf.constant(history_last),
    )
    check(out, model, history, excluded, k, history_last)
    # No filter, k = the exported k, history last as the head decides:
    # serving_default's answer.
    default = loaded.signatures["serving_default"](history=tf.constant(history))
    same = signature(
        history=tf.constant(history),
        exclude_item_ids=tf.zeros([len(history), 0], tf.string),
        k=tf.fill([len(history)], 5),
        history_last=tf.fill(
            [len(history)], model.head.excludes_history(False)
        ),
    )
    np.testing.assert_array_equal(same["item_ids"], default["item_ids"])


@pytest.mark.parametrize(
    "k, message",
    [([0, 1], "input `k` must be from 1 to the exported k=3"),
     ([4, 1], r"Received: k=\[4 1\]")],
)  # fmt: skip
def test_a_k_out_of_range_is_refused(k, message):
    module = ServingModule(make_model(HEADS["softmax"]), ITEMS, k=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        module.recommend_filtered(
            history=tf.constant([["i1"], ["i2"]]),
            exclude_item_ids=tf.constant([[""], [""]]),
            k=tf.constant(k),
            history_last=tf.constant([True, False]),
        )


@pytest.mark.parametrize(
    "options, message",
    [
        (
            {"exclude_item_ids": [["i1"]]},
            r"`exclude_item_ids` must have the batch size B of `history`",
        ),
        ({"exclude_item_ids": ["i1", "i2"]}, r"must have rank 2"),
        ({"k": [1, 1, 1]}, r"`k` must have the batch size B"),
        ({"history_last": [[True], [True]]}, r"`history_last` must have "),
    ],
)
def test_misshapen_options_are_refused(options, message):
    module = ServingModule(make_model(HEADS["softmax"]), ITEMS, k=3)
    request = {
        "history": tf.constant([["i1"], ["i2"]]),
        "exclude_item_ids": tf.constant([[""], [""]]),
        "k": tf.constant([1, 2]),
        "history_last": tf.constant([True, False]),
    }
    request.update({name: tf.constant(v) for name, v in options.items()})
    signature = tf.function(module.recommend_filtered).get_concrete_function(
        **module.filter_signature()
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        signature(**request)
