"""``OnnxScoringModule``: ``serving_default``'s scoring path as tf2onnx
converts it (the conversion itself: tests/export/test_onnx_export.py)."""

import numpy as np
import pytest
import tensorflow as tf

from tests.export.conftest import random_requests
from tfrec_tricks.export.onnx_scoring_module import OnnxScoringModule
from tfrec_tricks.export.serving_module import ServingModule
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

ITEMS = ["[PAD]", *(f"item-{j}" for j in range(1, 10))]
TOKENS = (
    {"name": "device", "vocabulary_size": 4, "vocabulary": ["web", "app"]},
)


def make_model(**options):
    config = ModelConfig(num_items=len(ITEMS), max_len=4, **options)
    return SequentialRetrievalModel(config)


def test_history_last_heads_answer_logits():
    assert OnnxScoringModule(make_model(), ITEMS, k=3).output_kind == "top_k"
    module = OnnxScoringModule(make_model(head="softmax_no_dup"), ITEMS, k=3)
    assert module.output_kind == "logits"
    out = module(tf.constant([["item-2", "", "nope"]]))
    assert list(out) == ["logits"] and out["logits"].shape == (1, len(ITEMS))
    # The history's items and padding are ranked last, at -1e9.
    assert out["logits"].numpy()[0, [0, 2]].tolist() == [-1e9, -1e9]


def test_prepare_gives_the_serving_modules_ids_and_features():
    # Looked up before padding, as tf2onnx needs: the same model inputs.
    model = make_model(features=("time_gap",), token_features=TOKENS)
    module = OnnxScoringModule(model, ITEMS, k=3)
    served = ServingModule(model, ITEMS, k=3)
    history, values = random_requests(ITEMS, 16, 7, ("time_gap",), seed=3)
    rng = np.random.default_rng(3)
    values["device"] = rng.choice(["web", "app", "", "tv"], history.shape)
    got = module.prepare_history(history, values)
    expected = served.prepare_history(history, values)
    np.testing.assert_array_equal(got[0].numpy(), expected[0].numpy())
    for name in ("time_gap", "device"):
        np.testing.assert_array_equal(
            got[1][name].numpy(), expected[1][name].numpy()
        )
    # And the full-catalogue top-K is what serving_default serves.
    tensors = {n: tf.constant(v) for n, v in values.items()}
    ours = module(tf.constant(history), tensors["time_gap"], tensors["device"])
    theirs = served.recommend(tf.constant(history), **tensors)
    np.testing.assert_array_equal(
        ours["item_ids"].numpy(), theirs["item_ids"].numpy()
    )
    np.testing.assert_allclose(
        ours["scores"].numpy(), theirs["scores"].numpy(), atol=1e-6
    )


def test_inputs_come_one_by_one_or_as_one_list():
    module = OnnxScoringModule(make_model(features=("time_gap",)), ITEMS, k=3)
    history, gaps = (
        tf.constant([["item-1", "item-2"]]),
        tf.constant([[1.0, 2.0]]),
    )
    one = module(history, gaps)["item_ids"].numpy()
    assert (module([history, gaps])["item_ids"].numpy() == one).all()
    with pytest.raises(ValueError, match="Received: 1 inputs"):
        module(history)
