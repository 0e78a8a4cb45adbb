"""An item table read by id: a step computes only the rows it reads."""

from collections.abc import Callable
from typing import Any

import tensorflow as tf


class ItemRows:
    """The item table of one training step, its rows computed on demand.

    With item attributes, an item's row is its id embedding fused with
    its attributes (``ItemFeatureEncoder.fusion_step``). An objective that
    scores only candidates (``--objective sampled``) reads a few hundred
    rows a step, and the encoder reads its histories' rows: computing the
    fused table of a million items for them would cost the whole
    catalogue's attributes each step. An ``EncodedBatch`` whose
    ``item_table`` is an ``ItemRows`` hands its head a table of only the
    rows it scores (``scoring_table``).

    Args:
        read: callable, int ids ``[M]`` -> ``(rows [M, d], bias [M] or
            None)``: the rows of the step's table and bias at those ids.
        num_items: int. ``N``, the catalogue with padding id 0.

    Example:

    >>> import tensorflow as tf
    >>> table = tf.reshape(tf.range(10.0), [5, 2])
    >>> rows = ItemRows(lambda ids: (tf.gather(table, ids), None), 5)
    >>> rows.rows(tf.constant([[4], [1]])).numpy().tolist()
    [[[8.0, 9.0]], [[2.0, 3.0]]]
    """

    def __init__(self, read: Callable, num_items: int) -> None:
        self.read = read
        self.num_items = int(num_items)

    def rows(self, ids: Any) -> tf.Tensor:
        """The table's rows at int ``ids`` (any shape): ``ids.shape +
        [d]``."""
        rows, _ = self.read(ids)
        return rows

    def scoring_table(self, inputs: dict, candidate_ids: Any) -> tuple:
        """The table a head scores ``candidate_ids`` from: their rows only.

        The head gets a table of the rows of every id it sees (0, the
        history's ids in ``inputs`` and the candidates), in that order,
        and those ids renumbered into it (0 stays 0, padding). A head
        whose score of a candidate reads that candidate's row and bias
        alone (the softmax heads) scores exactly what it would score over
        the whole table. Without candidates, the whole table.

        Args:
            inputs: the head's ``inputs`` dict (``"history_ids"`` int
                ``[B, L]``).
            candidate_ids: int ``[M]`` or ``[B, M]``, or None.

        Returns:
            ``(inputs, table, bias, candidate_ids)`` to call the head
            with: ``inputs`` with its ``"history_ids"`` renumbered, the
            rows ``[1 + B L + M, d]`` (or ``[N, d]``), their bias (or
            None) and the renumbered candidates (or None).
        """
        if candidate_ids is None:
            table, bias = self.read(tf.range(self.num_items))
            return inputs, table, bias, None
        history = tf.cast(inputs["history_ids"], tf.int32)
        candidate_ids = tf.cast(candidate_ids, tf.int32)
        ids = tf.concat(
            [[0], tf.reshape(history, [-1]), tf.reshape(candidate_ids, [-1])],
            0,
        )
        table, bias = self.read(ids)
        # Row 1 + k of the table is the k-th id after 0.
        history_rows = _renumbered(history, 1)
        candidate_rows = _renumbered(candidate_ids, 1 + tf.size(history))
        return (
            {**inputs, "history_ids": history_rows},
            table,
            bias,
            candidate_rows,
        )


def _renumbered(ids: tf.Tensor, first: Any) -> tf.Tensor:
    """``first, first + 1, ...`` in the shape of ``ids``, 0 where ``ids``
    is 0 (padding keeps its row 0)."""
    numbers = tf.reshape(tf.range(first, first + tf.size(ids)), tf.shape(ids))
    return tf.where(tf.equal(ids, 0), 0, numbers)
