"""Malformed requests to a loaded SavedModel: INVALID_ARGUMENT, named."""

import re

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.export import export_for_serving
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

# The module fixture exports a SavedModel and loads it.
pytestmark = pytest.mark.slow

ITEMS = ["[PAD]"] + [f"i{i}" for i in range(1, 40)]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """Plain ``tf.saved_model.load`` of an exported CPR + time_gap model."""
    tf.keras.utils.set_random_seed(0)
    config = ModelConfig(
        num_items=len(ITEMS),
        max_len=8,
        embedding_dim=8,
        head="cpr",
        cpr_reranker_ks=(5,),
        features=("time_gap",),
    )
    model = SequentialRetrievalModel(config)
    base = tmp_path_factory.mktemp("saved_models") / "checks"
    path = export_for_serving(model, str(base), ITEMS, k=3, warmup=False)
    return tf.saved_model.load(path)


def s(rows):
    return tf.constant(np.asarray(rows, dtype=object).astype(str))


def f(rows):
    return tf.constant(np.asarray(rows, np.float32))


BAD_REQUESTS = {
    "feature longer than history": (
        "serving_default",
        dict(history=s([["i1", "i2"]]), time_gap=f([[1, 2, 3]])),
        "feature `time_gap` must have the shape of `history` [B, L]. "
        "Received: time_gap.shape=[1 3], history.shape=[1 2]",
    ),
    "feature shorter than history": (
        "serving_default",
        dict(history=s([["i1", "i2"]]), time_gap=f([[1]])),
        "time_gap.shape=[1 1], history.shape=[1 2]",
    ),
    "feature with another batch size": (
        "score_candidates",
        dict(
            history=s([["i1", "i2"]]),
            time_gap=f([[1, 2], [3, 4]]),
            candidate_ids=s([["i3"]]),
        ),
        "time_gap.shape=[2 2], history.shape=[1 2]",
    ),
    "feature of rank 1": (
        "serving_default",
        dict(history=s([["i1", "i2"]]), time_gap=f([1, 2])),
        "input `time_gap` must have rank 2 ([B, L]). "
        "Received: time_gap.shape=[2]",
    ),
    "history of rank 1": (
        "serving_default",
        dict(history=s(["i1", "i2"]), time_gap=f([[1, 2]])),
        "input `history` must have rank 2 ([B, L]). "
        "Received: history.shape=[2]",
    ),
    "history of rank 3": (
        "score_candidates",
        dict(
            history=s([[["i1"]]]),
            time_gap=f([[1]]),
            candidate_ids=s([["i3"]]),
        ),
        "history.shape=[1 1 1]",
    ),
    "candidates with another batch size": (
        "score_candidates",
        dict(
            history=s([["i1", "i2"]]),
            time_gap=f([[1, 2]]),
            candidate_ids=s([["i3"], ["i4"]]),
        ),
        "`candidate_ids` [B, M] must have the batch size B of `history` "
        "[B, L]. Received: candidate_ids.shape=[2 1], history.shape=[1 2]",
    ),
    "candidates of rank 1": (
        "score_candidates",
        dict(
            history=s([["i1", "i2"]]),
            time_gap=f([[1, 2]]),
            candidate_ids=s(["i3", "i4"]),
        ),
        "input `candidate_ids` must have rank 2 ([B, M]). "
        "Received: candidate_ids.shape=[2]",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_bad_request_shapes_are_invalid_argument_naming_the_input(case, loaded):
    signature, inputs, message = BAD_REQUESTS[case]
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=re.escape(message)
    ):
        loaded.signatures[signature](**inputs)


def test_good_requests_still_pass_the_checks(loaded):
    # Zero width, and a batch whose rows are mostly padding.
    out = loaded.signatures["serving_default"](
        history=tf.zeros([2, 0], tf.string), time_gap=tf.zeros([2, 0])
    )
    assert out["item_ids"].shape == (2, 3)
    out = loaded.signatures["score_candidates"](
        history=s([["i1", ""], ["", ""]]),
        time_gap=f([[np.nan, 0], [0, 0]]),
        candidate_ids=s([["i3", "nope"], ["", "i1"]]),
    )
    assert out["scores"].shape == (2, 2)
