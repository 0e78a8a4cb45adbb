"""tfrec_tricks.layers.common: the pieces the layers and heads share."""

import numpy as np
import tensorflow as tf

from tfrec_tricks.layers.common import first_occurrences, history_positions


def test_first_occurrences_and_history_positions_match_numpy():
    rng = np.random.default_rng(2)
    items = rng.integers(0, 6, (8, 11)).astype("int32")
    history = rng.integers(0, 6, (8, 5)).astype("int32")
    first = first_occurrences(tf.constant(items)).numpy()
    found, position = history_positions(
        tf.constant(items), tf.constant(history)
    )
    for row in range(8):
        for col in range(11):
            x = items[row, col]
            assert first[row, col] == list(items[row]).index(x)
            real = [t for t in range(5) if history[row, t] == x != 0]
            assert found.numpy()[row, col] == bool(real)
            if real:
                assert position.numpy()[row, col] == real[0]
