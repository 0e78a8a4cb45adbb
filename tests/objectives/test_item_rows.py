"""objectives.item_rows: a head scores candidates from their rows only."""

import numpy as np
import pytest
import tensorflow as tf

from tfrec_tricks.heads import TiedSoftmax
from tfrec_tricks.objectives import EncodedBatch
from tfrec_tricks.objectives.item_rows import ItemRows

N, D = 7, 3
TABLE = tf.constant(np.random.default_rng(0).normal(size=(N, D)), tf.float32)
BIAS = tf.range(N, dtype=tf.float32) / 10.0


def _reads():
    """An ItemRows of TABLE and BIAS, and the ids it was asked for."""
    asked = []

    def read(ids):
        asked.append(tf.reshape(ids, [-1]).numpy().tolist())
        return tf.gather(TABLE, ids), tf.gather(BIAS, ids)

    return ItemRows(read, N), asked


@pytest.mark.parametrize(
    "candidates",
    [[3, 0, 6, 3], [[2, 5], [0, 1]]],
    ids=["shared", "per-row"],
)
def test_candidates_score_as_over_the_whole_table(candidates):
    rows, asked = _reads()
    inputs = {
        "hidden_states": tf.constant(
            np.random.default_rng(1).normal(size=(2, 3, D)), tf.float32
        ),
        "history_ids": tf.constant([[4, 2, 0], [1, 0, 0]]),
    }
    head = TiedSoftmax()
    batch = EncodedBatch(
        head,
        lambda history, states, training: inputs,
        inputs["history_ids"],
        [inputs["hidden_states"]],
        tf.constant([1, 2]),
        item_table=rows,
        training=True,
    )
    scores = batch.logits(inputs, candidate_ids=tf.constant(candidates))
    whole = head(
        inputs, TABLE, item_bias=BIAS, candidate_ids=candidates, training=True
    )
    np.testing.assert_array_equal(scores, whole)
    # Only padding, the history's ids and the candidates' were read.
    flat = np.ravel(candidates).tolist()
    assert asked == [[0, 4, 2, 0, 1, 0, 0, *flat]]
    # Without candidates, the whole table.
    renumbered, table, bias, none = rows.scoring_table(inputs, None)
    assert renumbered is inputs and none is None
    np.testing.assert_array_equal(table, TABLE)
    np.testing.assert_array_equal(bias, BIAS)


def test_ids_are_renumbered_into_the_rows_read_padding_kept():
    rows, _ = _reads()
    inputs = {"history_ids": tf.constant([[5, 0]])}
    renumbered, table, _, candidates = rows.scoring_table(
        inputs, tf.constant([[6, 0, 5]])
    )
    assert renumbered["history_ids"].numpy().tolist() == [[1, 0]]
    assert candidates.numpy().tolist() == [[3, 0, 5]]
    np.testing.assert_array_equal(table, tf.gather(TABLE, [0, 5, 0, 6, 0, 5]))
    assert rows.rows(tf.constant([[6]])).shape == (1, 1, D)
