"""One step's fused items, read whole or by id."""

from typing import Any

import tensorflow as tf


class ItemFusion:
    """One step's fused items (``ItemFeatureEncoder.fusion_step``), read whole
    or by id.

    It holds the step's draw of the id dropout, so that every read of the
    step drops the same items, and computes the known items' means (over
    the whole catalogue: a weighted sum of the id table, cheap beside the
    attributes' mean) once, on the first read by id.

    Args:
        encoder: the ``ItemFeatureEncoder``.
        table: float ``[N, d]``, the id table read whole.
        bias: float32 ``[N]`` or None.
        stand_in: bool ``[N]``, the items whose id row and bias are the
            known means this step (the cold ones and those dropped).
        weights: float ``[N]``, 1 for the known items but padding.
    """

    def __init__(
        self,
        encoder: Any,
        table: tf.Tensor,
        bias: Any,
        stand_in: tf.Tensor,
        weights: tf.Tensor,
    ) -> None:
        self._encoder = encoder
        self._table = table
        self._bias = bias
        self._stand_in = stand_in
        self._weights = weights
        self._means = None

    def table(self) -> tuple:
        """``(table, bias)``: the fused table ``[N, d]`` (padding row 0
        zeros) and float32 bias ``[N]`` (None without a bias)."""
        encoder = self._encoder
        id_rows = with_known_mean(self._table, self._stand_in, self._weights)
        fused = encoder._fused_vectors(id_rows, encoder.item_rows, None)
        if self._bias is None:
            return fused, None
        weights = tf.cast(self._weights, self._bias.dtype)
        return fused, with_known_mean(self._bias, self._stand_in, weights)

    def rows(self, ids: Any) -> tuple:
        """``table()`` at ``ids``, computed for those items only.

        Args:
            ids: int item ids in ``[0, N)``, any shape.

        Returns:
            ``(rows, bias)``: ``ids.shape + [d]`` and float32 ``ids.shape``
            (None without a bias).
        """
        encoder = self._encoder
        ids = tf.convert_to_tensor(ids)
        shape = tf.shape(ids)
        flat = tf.reshape(tf.cast(ids, tf.int32), [-1])
        id_mean, bias_mean = self._known_means()
        stand_in = tf.gather(self._stand_in, flat)
        id_rows = tf.where(
            stand_in[:, tf.newaxis],
            id_mean[tf.newaxis, :],
            tf.gather(self._table, flat),
        )
        fused = encoder._fused_vectors(
            id_rows,
            lambda index: encoder.item_rows(index, flat),
            flat,
        )
        fused = tf.reshape(fused, tf.concat([shape, [encoder.output_dim]], 0))
        if self._bias is None:
            return fused, None
        bias = tf.where(stand_in, bias_mean, tf.gather(self._bias, flat))
        return fused, tf.reshape(bias, shape)

    def _known_means(self) -> tuple:
        """``(id mean [d], bias mean or None)``, computed once."""
        if self._means is None:
            bias_mean = None
            if self._bias is not None:
                weights = tf.cast(self._weights, self._bias.dtype)
                bias_mean = _known_mean(self._bias, weights)
            self._means = (_known_mean(self._table, self._weights), bias_mean)
        return self._means


def _known_mean(values: tf.Tensor, weights: tf.Tensor) -> tf.Tensor:
    """The ``weights``-weighted mean of the entries of ``values`` (``[N]``
    or ``[N, d]``: the known items'), a constant for the gradient."""
    expanded = tf.reshape(weights, [-1] + [1] * (values.shape.rank - 1))
    mean = tf.reduce_sum(values * expanded, axis=0)
    mean /= tf.maximum(tf.reduce_sum(weights), 1.0)
    return tf.stop_gradient(mean)


def with_known_mean(
    values: tf.Tensor, replaced: tf.Tensor, weights: tf.Tensor
) -> tf.Tensor:
    """``values`` (``[N]`` or ``[N, d]``) with the entries of ``replaced``
    (bool ``[N]``) set to their known mean (``_known_mean``)."""
    mean = _known_mean(values, weights)
    where = tf.reshape(replaced, [-1] + [1] * (values.shape.rank - 1))
    return tf.where(where, mean[tf.newaxis, ...], values)
