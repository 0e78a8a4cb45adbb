"""CandidateScoringMixin: the model's logits, index candidates and top-k."""

import numpy as np
import pytest
import tensorflow as tf

from tests.models.conftest import MAX_LEN
from tests.models.model_helpers import make_model
from tfrec_tricks.heads.input_contract import last_positions
from tfrec_tricks.layers.top_k import top_k_positions
from tfrec_tricks.models import SequentialRetrievalModel


def test_model_and_heads_share_one_last_position_rule():
    history = tf.constant([[4, 2, 0, 0], [0, 0, 0, 0], [7, 7, 7, 7]])
    np.testing.assert_array_equal(
        SequentialRetrievalModel.last_positions(history),
        last_positions(history),
    )
    np.testing.assert_array_equal(
        SequentialRetrievalModel.last_positions(history), [1, 0, 3]
    )


@pytest.mark.parametrize("head", ["softmax", "softmax_no_dup", "cpr"])
def test_index_candidates_hold_the_top_k_and_score_as_the_logits(
    data, batch, head
):
    model = make_model(
        data,
        head=head,
        cpr_reranker_ks=(3, 5),
        cpr_mi=head == "cpr",
        num_layers=2,
    )
    bias = model.item_embedding.output_bias
    bias.assign(tf.random.normal(bias.shape))  # no near-ties
    history, states = model.encode(batch)
    logits = model.logits(history, states).numpy()
    np.testing.assert_array_equal(logits, model(batch).numpy())
    for k in (1, 10):
        candidates, base = model.top_k_candidates(history, states, k)
        scores = model.score_candidates(
            history, states, candidates, base_logits=base
        )
        real = candidates.numpy() > 0
        expected = np.take_along_axis(logits, candidates.numpy(), axis=1)
        np.testing.assert_allclose(
            scores.numpy()[real], expected[real], rtol=1e-5, atol=1e-5
        )
        scores = tf.where(candidates > 0, scores, float("-inf"))
        position = top_k_positions(scores, candidates, k)
        np.testing.assert_array_equal(
            tf.gather(candidates, position, batch_dims=1),
            np.argsort(-logits, axis=1, kind="stable")[:, :k],
        )
    # Any ids, scored through the index's set (history ids among them).
    wanted = np.random.default_rng(0).integers(0, data.num_items, (16, 12))
    wanted[:, :MAX_LEN] = history.numpy()[:, :MAX_LEN]
    candidates, base = model.top_k_candidates(
        history, states, 0, extra_ids=wanted
    )
    scores = model.score_candidates(
        history, states, candidates, base_logits=base
    ).numpy()[:, -12:]
    np.testing.assert_allclose(
        scores, np.take_along_axis(logits, wanted, axis=1), atol=1e-5
    )
    direct = model.score_candidates(history, states, wanted).numpy()
    if head != "cpr":  # CPR needs the index's set (its precondition)
        np.testing.assert_allclose(direct, scores, atol=1e-5)


def test_mos_has_no_index_but_scores_candidates(data, batch):
    model = make_model(data, head="mos")
    history, states = model.encode(batch)
    with pytest.raises(ValueError, match="head='mos'"):
        model.top_k_candidates(history, states, 3)
    wanted = np.tile(np.arange(data.num_items), (16, 1))
    np.testing.assert_array_equal(
        model.score_candidates(history, states, wanted),
        model.logits(history, states),
    )
