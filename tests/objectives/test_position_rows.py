"""expand_positions and target_positions: one row per target position."""

import numpy as np
import tensorflow as tf

from tfrec_tricks.objectives.position_rows import (
    expand_positions,
    target_positions,
)

HISTORY = tf.constant([[4, 5, 6, 0], [7, 8, 0, 0]])
STATES = [tf.reshape(tf.range(16, dtype=tf.float32), [2, 4, 2])]
TARGETS = tf.constant([[5, 0, 9, 0], [0, 3, 0, 0]])


def test_expanded_rows_are_the_prefixes_of_the_target_positions():
    history, states, targets = expand_positions(HISTORY, STATES, TARGETS)
    np.testing.assert_array_equal(
        history, [[4, 0, 0, 0], [4, 5, 6, 0], [7, 8, 0, 0]]
    )
    np.testing.assert_array_equal(targets, [5, 9, 3])
    np.testing.assert_array_equal(states[0], tf.gather(STATES[0], [0, 0, 1]))


def test_target_positions_are_the_last_items_and_states_of_the_prefixes():
    history, states, targets = target_positions(HISTORY, STATES, TARGETS)
    np.testing.assert_array_equal(history, [[4], [6], [8]])
    np.testing.assert_array_equal(targets, [5, 9, 3])
    np.testing.assert_array_equal(
        states[0][:, 0], STATES[0].numpy()[[0, 0, 1], [0, 2, 1]]
    )


def test_targets_past_the_batchs_width_are_cut():
    # The model cuts the histories to the batch's longest one.
    history, _, targets = expand_positions(
        HISTORY[:, :2], [STATES[0][:, :2]], TARGETS
    )
    np.testing.assert_array_equal(targets, [5, 3])
    assert history.shape == (2, 2)
