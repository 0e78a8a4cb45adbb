"""Inputs shared by the output heads' tests: histories, a table, a bias.

Three rows of ``L`` ids: right-padded, left-padded with a repeat, empty;
an item table of ``N`` items of width ``D``.
"""

import numpy as np
import tensorflow as tf

N, D, L = 11, 4, 5
HISTORY = np.array([[2, 4, 0, 0, 0], [0, 0, 1, 3, 3], [0, 0, 0, 0, 0]], "int32")


def head_data(seed: int = 0, width: int = D) -> dict:
    """Hidden states of ``width``, the histories, a table and a bias."""
    rng = np.random.default_rng(seed)
    return {
        "hidden": rng.normal(size=(3, L, width)).astype("float32"),
        "ids": HISTORY,
        "table": rng.normal(size=(N, D)).astype("float32"),
        "bias": rng.normal(size=(N,)).astype("float32"),
    }


def head_inputs(data: dict) -> dict:
    """The head's first argument: hidden states and history ids."""
    return {
        "hidden_states": tf.constant(data["hidden"]),
        "history_ids": tf.constant(data["ids"]),
    }


def call_head(layer, data: dict, use_bias: bool = True, **kwargs):
    """Calls a head on ``data``, with the bias unless ``use_bias`` is False."""
    return layer(
        head_inputs(data),
        tf.constant(data["table"]),
        item_bias=tf.constant(data["bias"]) if use_bias else None,
        **kwargs,
    )
