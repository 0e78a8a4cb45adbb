"""ServingModule: raw-id preparation, exact index scoring, determinism."""

import pathlib
import re

import numpy as np
import pytest
import tensorflow as tf

import tfrec_tricks.export
from tests.export.conftest import (
    UNKNOWN,
    random_requests,
    reference_inputs,
    reference_top_k,
)
from tfrec_tricks.export import ServingModule
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

NUM_ITEMS = 60
ITEMS = ["[PAD]"] + [f"item-{i}" for i in range(1, NUM_ITEMS)]

CONFIGS = {
    "softmax": {},
    "softmax_no_dup": {"head": "softmax_no_dup"},
    "softmax_no_dup, cosine": {
        "head": "softmax_no_dup",
        "cosine_temperature": 0.05,
    },
    "cpr:5+mi+time_gap": {
        "head": "cpr",
        "cpr_reranker_ks": (5,),
        "cpr_mi": True,
        "num_layers": 2,
        "features": ("time_gap",),
    },
    "cpr:3,7,12 add": {
        "head": "cpr",
        "cpr_reranker_ks": (3, 12, 7),
        "cpr_merge": "add",
    },
    "cpr:4 no context, sasrec": {
        "head": "cpr",
        "cpr_reranker_ks": (4,),
        "cpr_context": False,
        "encoder": "sasrec",
    },
    "softmax_no_dup, hstu": {
        "head": "softmax_no_dup",
        "encoder": "hstu",
        "num_layers": 2,
    },
    "cp (no reranker) + mi": {
        "head": "cpr",
        "cpr_reranker_ks": (),
        "cpr_mi": True,
    },
}


def make_model(**options):
    tf.keras.utils.set_random_seed(1)
    config = ModelConfig(
        num_items=NUM_ITEMS, max_len=6, embedding_dim=8, **options
    )
    model = SequentialRetrievalModel(config)
    # Random biases so that they matter (they start at zero).
    bias = model.item_embedding.output_bias
    bias.assign(tf.random.normal(bias.shape))
    return model


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_index_top_k_equals_full_catalogue_top_k(name):
    model = make_model(**CONFIGS[name])
    module = ServingModule(model, ITEMS, k=10)
    assert module.scoring == "index"
    features = model.config.features
    for seed in range(3):
        history, values = random_requests(ITEMS, 64, 9, features, seed=seed)
        served = module.recommend(tf.constant(history), **values)
        expected_ids, expected_scores, logits, ids = reference_top_k(
            model, ITEMS, history, values, k=10
        )
        np.testing.assert_array_equal(
            served["item_ids"].numpy().astype(str), expected_ids
        )
        np.testing.assert_allclose(
            served["scores"].numpy(), expected_scores, rtol=1e-5, atol=1e-5
        )
        # score_candidates gives the full logits at any ids.
        rng = np.random.default_rng(seed)
        wanted = rng.integers(0, NUM_ITEMS, (64, 20))
        wanted[:, :6] = ids  # history items too
        raw = np.asarray(ITEMS, dtype=object)[wanted].astype(str)
        raw[:, -1] = UNKNOWN
        scores = module.score_candidates(
            tf.constant(history), tf.constant(raw), **values
        )["scores"].numpy()
        expected = np.take_along_axis(logits, wanted, axis=1)
        expected[:, -1] = -1e9
        np.testing.assert_allclose(scores, expected, rtol=1e-5, atol=1e-4)


def test_full_scoring_matches_index_scoring():
    model = make_model(**CONFIGS["cpr:5+mi+time_gap"])
    history, values = random_requests(ITEMS, 32, 9, ("time_gap",), seed=4)
    history[[0, 7]] = ""  # empty histories too
    empty = ~(reference_inputs(ITEMS, 6, history, values)[0] > 0).any(1)
    assert empty.sum() >= 2 and not empty.all()
    index = ServingModule(model, ITEMS, k=5).recommend(history, **values)
    full = ServingModule(model, ITEMS, k=5, scoring="full").recommend(
        history, **values
    )
    np.testing.assert_array_equal(
        index["item_ids"].numpy(), full["item_ids"].numpy()
    )
    np.testing.assert_allclose(
        index["scores"].numpy(), full["scores"].numpy(), rtol=1e-5, atol=1e-5
    )


def test_prepare_history_drops_unknown_compacts_and_truncates():
    model = make_model(features=("time_gap",))
    module = ServingModule(model, ITEMS, k=3)
    history = tf.constant(
        [
            ["item-1", UNKNOWN, "item-2", "", "item-3", ""],
            ["item-1", "item-2", "item-3", "item-4", "item-5", "item-6"],
            ["[PAD]", UNKNOWN, "", "", "", ""],
        ]
    )
    gaps = tf.constant(
        [
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        ]
    )
    module.max_len = 4
    ids, values = module.prepare_history(history, {"time_gap": gaps})
    np.testing.assert_array_equal(
        ids.numpy(), [[1, 2, 3, 0], [3, 4, 5, 6], [0, 0, 0, 0]]
    )
    np.testing.assert_array_equal(
        values["time_gap"].numpy(),
        [[1.0, 3.0, 5.0, 0.0], [3.0, 4.0, 5.0, 6.0], [0.0] * 4],
    )
    with pytest.raises(ValueError, match="time_gap"):
        module.prepare_history(history, {})


def test_empty_history_gets_the_same_ranking_in_any_batch():
    model = make_model(**CONFIGS["cpr:5+mi+time_gap"])
    module = ServingModule(model, ITEMS, k=10)
    alone = module.recommend(
        tf.constant([[UNKNOWN]]), time_gap=tf.constant([[1.0]])
    )
    history, values = random_requests(ITEMS, 8, 9, ("time_gap",), seed=2)
    history[3] = ""
    batch = module.recommend(tf.constant(history), **values)
    np.testing.assert_array_equal(
        batch["item_ids"].numpy()[3], alone["item_ids"].numpy()[0]
    )
    zero_width = module.recommend(
        tf.zeros([2, 0], tf.string), time_gap=tf.zeros([2, 0])
    )
    np.testing.assert_array_equal(
        zero_width["item_ids"].numpy()[1], alone["item_ids"].numpy()[0]
    )


@pytest.mark.slow
def test_served_model_is_deterministic_with_sse():
    model = make_model(
        sse_item_probability=0.5,
        sse_label_probability=0.3,
        head="cpr",
        cpr_reranker_ks=(5,),
    )
    module = ServingModule(model, ITEMS, k=10)
    signature = module.signatures()["serving_default"]
    history, _ = random_requests(ITEMS, 16, 9, seed=3)
    first = signature(history=tf.constant(history))
    second = signature(history=tf.constant(history))
    for key in ("item_ids", "scores"):
        np.testing.assert_array_equal(first[key].numpy(), second[key].numpy())


def test_mixture_of_softmax_is_served_with_full_scoring():
    model = make_model(head="mos")
    assert ServingModule(model, ITEMS, k=4).scoring == "full"
    with pytest.raises(ValueError, match="head='mos'"):
        ServingModule(model, ITEMS, scoring="index")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 0}, "k=0"),
        ({"k": NUM_ITEMS}, f"k={NUM_ITEMS}"),
        ({"scoring": "ann"}, "scoring='ann'"),
        ({"vocabulary": ITEMS[:-1]}, "59 raw ids"),
        ({"vocabulary": ITEMS[:-1] + ["item-1"]}, "1 duplicates"),
    ],
)
def test_bad_arguments_name_the_received_value(kwargs, message):
    model = make_model()
    kwargs = {"vocabulary": ITEMS, **kwargs}
    with pytest.raises(ValueError, match=message):
        ServingModule(model, **kwargs)


def fix_base_ranking(model, scaled_layers):
    """Projections that ignore the history: each ``(layer, scale)`` gets a
    zero kernel and the bias ``scale * direction`` (one random direction),
    item biases are zeroed. Returns the items (padding left out) in the
    resulting f_V order, best first.
    """
    direction = tf.random.normal([8])
    for layer, scale in scaled_layers:
        layer.kernel.assign(tf.zeros_like(layer.kernel))
        layer.bias.assign(scale * direction)
    bias = model.item_embedding.output_bias
    bias.assign(tf.zeros_like(bias))
    table = model.item_embedding.embeddings.numpy()
    ranking = np.argsort(-(table @ direction.numpy()), kind="stable")
    return ranking[ranking != 0]


@pytest.mark.parametrize(
    "history_ranks",
    [range(3, 9), range(0, 6), range(1, 12, 2)],
    ids=["below_reranked", "in_reranked", "interleaved"],
)
def test_history_items_near_the_reranked_items_are_covered(history_ranks):
    # f_V ignores the history (zero kernels), so its ranking is fixed;
    # reranked and history items are pushed down. With the history at the
    # f_V ranks right after the reranked ones, the top-K are f_V ranks
    # k + max_len + 1 .. k + max_len + K: beyond the index's top-(k + K)
    # unless the history is masked in the index. History items inside the
    # f_V top-k shrink the reranked set.
    model = make_model(head="cpr", cpr_reranker_ks=(3,), cpr_pointer=False)
    module = ServingModule(model, ITEMS, k=10)
    head = model.head
    ranking = fix_base_ranking(
        model,
        (
            (head.base_projection, 1.0),
            (head.context_projection, -10.0),
            (head.reranker_projections[0], -10.0),
        ),
    )
    history = np.asarray(ITEMS)[ranking[list(history_ranks)]][None, :]
    served = module.recommend(tf.constant(history))
    expected_ids, _, _, _ = reference_top_k(model, ITEMS, history, {}, k=10)
    np.testing.assert_array_equal(
        served["item_ids"].numpy().astype(str), expected_ids
    )
    if history_ranks == range(3, 9):
        np.testing.assert_array_equal(
            expected_ids[0], np.asarray(ITEMS)[ranking[9:19]]
        )


def test_history_items_in_the_first_reranker_set_feed_the_next_stage():
    # Cascade 6 then 3 over a fixed f_V ranking (zero kernels). The first
    # stage takes f_V ranks 0-5, two of them history items, and scales
    # them up; the second takes the best 3 of those (ranks 0-2, history
    # included) and pushes them down. Missing the history items in stage 1
    # would give stage 2 ranks 2-4 instead, and another top-K.
    model = make_model(head="cpr", cpr_reranker_ks=(3, 6), cpr_pointer=False)
    module = ServingModule(model, ITEMS, k=5)
    head = model.head
    stages = dict(zip(head.reranker_ks, head.reranker_projections))
    ranking = fix_base_ranking(
        model,
        (
            (head.base_projection, 1.0),
            (head.context_projection, -10.0),
            (stages[6], 10.0),
            (stages[3], -10.0),
        ),
    )
    history = np.asarray(ITEMS)[ranking[:2]][None, :]
    served = module.recommend(tf.constant(history))
    expected_ids, _, _, _ = reference_top_k(model, ITEMS, history, {}, k=5)
    np.testing.assert_array_equal(
        served["item_ids"].numpy().astype(str), expected_ids
    )
    assert expected_ids[0][0] == ITEMS[ranking[3]]


def test_export_reads_no_head_internals():
    # Serving goes through the model's public inference API
    # (top_k_candidates, score_candidates, logits); the CPR cascade and
    # the exact top-k live in tfrec_tricks.layers only.
    internals = re.compile(
        r"base_projection|reranker_projections|context_projection|"
        r"pointer_projection|key_projection|\.merge\b|history_logits|"
        r"\.projection\b|model\.head\b|\._query\b|item_embedding"
    )
    folder = pathlib.Path(tfrec_tricks.export.__file__).parent
    for path in sorted(folder.glob("*.py")):
        found = internals.findall(path.read_text())
        assert not found, f"{path.name} reads {found}"


@pytest.mark.parametrize(
    "scoring, has_index, resolved",
    [
        ("auto", True, "index"),
        ("auto", False, "full"),
        ("full", True, "full"),
        ("index", True, "index"),
    ],
)
def test_scoring_follows_whether_the_model_has_an_index(
    scoring, has_index, resolved
):
    from tfrec_tricks.export.serving_module import _resolved_scoring

    assert _resolved_scoring(scoring, has_index, "softmax") == resolved


def test_token_features_are_raw_string_inputs_looked_up_in_the_graph():
    tokens = (
        {"name": "device", "vocabulary_size": 4, "vocabulary": ["web", "app"]},
    )
    model = make_model(features=("time_gap",), token_features=tokens)
    module = ServingModule(model, ITEMS, k=3)
    specs = module.input_signature()
    assert specs["device"].dtype == tf.string
    assert specs["time_gap"].dtype == tf.float32
    history = tf.constant([["item-1", "nope", "item-2", ""], ["item-3"] * 4])
    gaps = tf.constant([[5.0, 1.0, 7.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    device = tf.constant([["app", "web", "tv", ""], ["web", "", "app", "x"]])
    ids, values = module.prepare_history(
        history, {"time_gap": gaps, "device": device}
    )
    # "nope" is dropped with its values; tv and x are OOV (1), "" no value.
    np.testing.assert_array_equal(
        values["device"].numpy()[:, :4], [[3, 1, 0, 0], [2, 0, 3, 1]]
    )
    served = module.score_candidates(
        history, tf.constant([ITEMS[1:4]] * 2), time_gap=gaps, device=device
    )["scores"].numpy()
    logits = model({"history": ids, **values}).numpy()
    np.testing.assert_allclose(served, logits[:, 1:4], rtol=1e-5, atol=1e-5)
    # The value matters, and a request without it is refused.
    other = module.recommend(
        history, time_gap=gaps, device=tf.fill([2, 4], "web")
    )
    first = module.recommend(history, time_gap=gaps, device=device)
    assert not np.allclose(other["scores"].numpy(), first["scores"].numpy())
    with pytest.raises(ValueError, match="device"):
        module.recommend(history, time_gap=gaps)
