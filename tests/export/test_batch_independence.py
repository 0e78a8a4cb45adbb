"""Served answers per row: independent of the batch, equal to the model's.

Every head and scoring mode, both signatures: a row scored alone (batch of
one, at its own width and at the batch's) gets the answer it gets inside a
batch of rows of other lengths, empty histories included, and that answer
is the Keras model's own (an empty history reads position 0 whatever the
batch's width, ``SequentialRetrievalModel.last_positions``).
"""

import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import UNKNOWN, reference_inputs
from tfrec_tricks.export import ServingModule
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

# Traces the serving signatures at many widths, and saves a SavedModel.
pytestmark = pytest.mark.slow

NUM_ITEMS = 40
MAX_LEN = 8
K = 5
ITEMS = ["[PAD]"] + [f"i{i}" for i in range(1, NUM_ITEMS)]

HEADS = {
    "softmax": {},
    "softmax_no_dup": {"head": "softmax_no_dup"},
    "cpr": {"head": "cpr", "cpr_reranker_ks": (5,)},
    "cpr+mi": {
        "head": "cpr",
        "cpr_reranker_ks": (5,),
        "cpr_mi": True,
        "num_layers": 2,
        "features": ("time_gap",),
    },
    "mos": {"head": "mos"},
}
CASES = [
    (head, scoring)
    for head in HEADS
    for scoring in (("full",) if head == "mos" else ("index", "full"))
]


def make_model(head):
    tf.keras.utils.set_random_seed(3)
    config = ModelConfig(
        num_items=NUM_ITEMS,
        max_len=MAX_LEN,
        embedding_dim=8,
        **HEADS[head],
    )
    model = SequentialRetrievalModel(config)
    # Random biases: scores far apart, so rankings have no near-ties.
    bias = model.item_embedding.output_bias
    bias.assign(tf.random.normal(bias.shape))
    return model


def requests(features):
    """Rows of different lengths: empty, unknown-only, long, repeats.

    Returns the dense ``[B, W]`` batch (``""`` padding), its features
    (NaN among them) and each row's own length.
    """
    rows = [
        [],
        [f"i{i}" for i in range(1, 12)],  # longer than MAX_LEN
        ["i7"],
        [UNKNOWN],
        ["i3", "i9", UNKNOWN, "i3", "i20"],
        [],
        ["i5", "i5", "i30", "i1", "i2", "i8", "i39", "i11"],
    ]
    width = max(len(row) for row in rows)
    history = np.asarray(
        [row + [""] * (width - len(row)) for row in rows], dtype=object
    ).astype(str)
    rng = np.random.default_rng(0)
    values = {}
    for name in features:
        gaps = rng.exponential(3600.0, history.shape).astype(np.float32)
        gaps[0, 1] = np.nan
        gaps[4, 2] = np.nan
        values[name] = np.where(history != "", gaps, 0.0).astype(np.float32)
    return history, values, [len(row) for row in rows]


def call(signature, history, values, candidates=None):
    inputs = {"history": tf.constant(history)}
    inputs.update({name: tf.constant(v) for name, v in values.items()})
    if candidates is not None:
        inputs["candidate_ids"] = tf.constant(candidates)
    return {key: value.numpy() for key, value in signature(**inputs).items()}


def candidate_ids(batch):
    """Every item, padding and an unknown id, per row: ``[B, N + 1]``."""
    return np.asarray([ITEMS + [UNKNOWN]] * batch, dtype=object).astype(str)


def keras_logits(model, history, values):
    """The Keras model's logits, one call per row (its own width)."""
    ids, inputs = reference_inputs(ITEMS, MAX_LEN, history, values)
    rows = []
    for row in range(len(ids)):
        width = max(1, int((ids[row] > 0).sum()))
        one = {name: v[row : row + 1, :width] for name, v in inputs.items()}
        one["history"] = ids[row : row + 1, :width]
        rows.append(model(one).numpy()[0])
    return np.stack(rows), model({"history": ids, **inputs}).numpy()


def check_rows(signatures, model, history, values, lengths):
    """Batch vs each row alone vs the Keras model, both signatures."""
    candidates = candidate_ids(len(history))
    batch = call(signatures["serving_default"], history, values)
    scored = call(signatures["score_candidates"], history, values, candidates)

    per_row, in_batch = keras_logits(model, history, values)
    # The Keras model itself does not depend on the batch.
    np.testing.assert_allclose(per_row, in_batch, rtol=1e-5, atol=1e-5)
    expected = np.concatenate([per_row, np.full((len(history), 1), -1e9)], 1)
    expected[:, 0] = -1e9  # padding
    np.testing.assert_allclose(scored["scores"], expected, atol=1e-4)
    top = np.argsort(-per_row[:, 1:], axis=1, kind="stable")[:, :K] + 1
    np.testing.assert_array_equal(
        batch["item_ids"].astype(str), np.asarray(ITEMS)[top]
    )
    np.testing.assert_allclose(
        batch["scores"],
        np.take_along_axis(per_row, top, axis=1),
        rtol=1e-5,
        atol=1e-5,
    )

    for row, length in enumerate(lengths):
        for width in (length, history.shape[1]):
            one = {name: v[row : row + 1, :width] for name, v in values.items()}
            alone = call(
                signatures["serving_default"],
                history[row : row + 1, :width],
                one,
            )
            np.testing.assert_array_equal(
                alone["item_ids"][0], batch["item_ids"][row], f"row {row}"
            )
            np.testing.assert_allclose(
                alone["scores"][0], batch["scores"][row], rtol=1e-5, atol=1e-5
            )
            alone = call(
                signatures["score_candidates"],
                history[row : row + 1, :width],
                one,
                candidates[:1],
            )
            np.testing.assert_allclose(
                alone["scores"][0], scored["scores"][row], rtol=1e-5, atol=1e-5
            )


@pytest.mark.parametrize("head, scoring", CASES)
def test_each_row_is_scored_as_alone_and_as_the_model_does(head, scoring):
    model = make_model(head)
    module = ServingModule(model, ITEMS, k=K, scoring=scoring)
    assert module.scoring == scoring
    history, values, lengths = requests(model.config.features)
    check_rows(module.signatures(), model, history, values, lengths)


@pytest.mark.parametrize("head", ["cpr+mi", "mos"])
def test_reloaded_saved_model_scores_each_row_as_alone(head, tmp_path):
    # scoring="full": the path that read an empty history's last position
    # from the batch's width.
    model = make_model(head)
    module = ServingModule(model, ITEMS, k=K, scoring="full")
    path = str(tmp_path / "model")
    tf.saved_model.save(module, path, signatures=module.signatures())
    loaded = tf.saved_model.load(path)
    history, values, lengths = requests(model.config.features)
    check_rows(loaded.signatures, model, history, values, lengths)
