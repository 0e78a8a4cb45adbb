"""Small pieces the layers and the heads share: constants, checks, item
logits, id bookkeeping. The heads' own input contract (their inputs, item
table, candidate ids, the position that scores) is
``tfrec_tricks.heads.input_contract``.
"""

import numbers
from typing import Any

import tensorflow as tf

# Logit given to ids that must never win (padding id 0; history items of
# "softmax without duplication"): finite in float32, so 0 * logit stays 0
# in a loss, yet exp() of it is exactly 0.
PADDING_LOGIT = -1e9


def is_integer(value: Any) -> bool:
    """Python and NumPy integers; bool is an int subclass but a mistake."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def softmax_dtype(compute_dtype: Any) -> tf.DType:
    """The dtype for softmax-related math: float32 under mixed precision.

    float16 / bfloat16 compute dtypes get float32; float32 and float64 stay.
    """
    dtype = tf.as_dtype(compute_dtype)
    if dtype in (tf.float16, tf.bfloat16):
        return tf.float32
    return dtype


def is_training(training: Any) -> bool:
    """Python bool of a ``training`` argument (None or unknown: inference)."""
    if training is None:
        return False
    value = tf.get_static_value(training)
    return bool(value) if value is not None else False


def batch_indices(ids: tf.Tensor) -> tf.Tensor:
    """``[B, K]`` column ids -> ``[B, K, 2]`` (row, column) scatter indices."""
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(ids))
    return tf.stack([rows, ids], axis=-1)


def num_rows(table: Any) -> Any:
    """``N`` of an item table: a Python int when static, else a tensor.

    (``tf.shape`` of a variable would add a read of the whole table.)
    """
    static = table.shape[0]
    return int(static) if static is not None else tf.shape(table)[0]


def first_occurrences(ids: tf.Tensor) -> tf.Tensor:
    """For each entry of ``ids`` ``[B, M]``, the column of its id's first
    occurrence in the row, int32 ``[B, M]``.

    ``O(M log M)`` per row (a stable sort and a binary search), instead
    of an ``[B, M, M]`` comparison.
    """
    order = tf.argsort(ids, axis=1, stable=True)
    ordered = tf.gather(ids, order, batch_dims=1)
    first = tf.searchsorted(ordered, ids, side="left", out_type=tf.int32)
    return tf.gather(order, first, batch_dims=1)


def history_positions(item_ids: tf.Tensor, history_ids: tf.Tensor) -> tuple:
    """Which items ``[B, M]`` are in their row's history, and where.

    Args:
        item_ids: int32 ``[B, M]``.
        history_ids: int32 ``[B, L]``, padding 0 (never a history item).

    Returns:
        ``(found, position)``: bool ``[B, M]``, and int32 ``[B, M]`` the
        first position of the item in the history (meaningless where not
        found). ``O((L + M) log L)`` per row, no ``[B, M, L]`` comparison.
    """
    keyed = tf.where(tf.not_equal(history_ids, 0), history_ids, -1)
    order = tf.argsort(keyed, axis=1, stable=True)
    ordered = tf.gather(keyed, order, batch_dims=1)
    at = tf.searchsorted(ordered, item_ids, side="left", out_type=tf.int32)
    at = tf.minimum(at, tf.maximum(tf.shape(history_ids)[1] - 1, 0))
    found = tf.equal(tf.gather(ordered, at, batch_dims=1), item_ids)
    return found & tf.not_equal(item_ids, 0), tf.gather(order, at, batch_dims=1)


def item_logits(
    hidden: Any,
    item_embeddings: Any,
    item_bias: Any = None,
    candidate_ids: Any = None,
    training: Any = None,
    mask_padding: bool = True,
    dtype: Any = tf.float32,
) -> tf.Tensor:
    """Scores of items for hidden states: ``hidden E^T + b``, in ``dtype``.

    The tied softmax's logits (`TiedItemEmbedding.logits`,
    `TiedSoftmax`). A score at an id equals the full logits at that id;
    padding id 0 scores ``-1e9`` when ``mask_padding``.

    Args:
        hidden: float ``[..., d]``.
        item_embeddings: float ``[N, d]``, a tensor or the table variable.
        item_bias: float ``[N]`` or None. Defaults to ``None``.
        candidate_ids: int or None. ``None`` scores the whole catalogue;
            ``[M]``: the same ``M`` candidates for every row of ``hidden``;
            ``[B, M]``: per-example candidates (``B`` the first dimension
            of ``hidden``). Defaults to ``None``.
        training: bool or None. A training step reads the candidates' rows
            of a variable sparsely (sparse gradients); otherwise the table
            is read whole, as ``TiedItemEmbedding.lookup`` reads it (see
            ``heads.input_contract.as_item_table`` for why). Defaults to
            ``None`` (inference).
        mask_padding: bool. Defaults to ``True``.
        dtype: the dtype of the math and the result. Defaults to float32.

    Returns:
        ``hidden.shape[:-1] + [N]`` or ``[..., M]`` scores.
    """
    hidden = tf.cast(hidden, dtype)
    table = item_embeddings
    bias = item_bias
    if candidate_ids is None or not is_training(training):
        # A cast to the same dtype would return the variable itself.
        table = tf.convert_to_tensor(table)
        bias = None if bias is None else tf.convert_to_tensor(bias)
    table = tf.cast(table, dtype)
    if candidate_ids is None:
        scores = tf.matmul(hidden, table, transpose_b=True)
        if bias is not None:
            scores += tf.cast(bias, dtype)
        if mask_padding:
            is_padding = tf.equal(tf.range(num_rows(item_embeddings)), 0)
            scores = tf.where(
                is_padding, tf.constant(PADDING_LOGIT, dtype), scores
            )
        return scores
    return _candidate_item_logits(
        hidden, table, bias, candidate_ids, mask_padding, dtype
    )


def _candidate_item_logits(
    hidden: tf.Tensor,
    table: Any,
    bias: Any,
    candidate_ids: Any,
    mask_padding: bool,
    dtype: Any,
) -> tf.Tensor:
    """`item_logits` at ``[M]`` or ``[B, M]`` candidate ids."""
    candidate_ids = tf.convert_to_tensor(candidate_ids)
    if not candidate_ids.dtype.is_integer:
        candidate_ids = tf.cast(candidate_ids, tf.int64)
    vectors = tf.gather(table, candidate_ids)
    if candidate_ids.shape.rank == 1:
        scores = tf.matmul(hidden, vectors, transpose_b=True)
    elif candidate_ids.shape.rank == 2:
        # Per-example candidates: flatten any middle axes of hidden
        # ([B, ..., d] -> [B, K, d]) to use one batched matmul.
        batch_shape = tf.shape(hidden)[:-1]
        flat = tf.reshape(hidden, [tf.shape(hidden)[0], -1, table.shape[-1]])
        scores = tf.matmul(flat, vectors, transpose_b=True)
        scores = tf.reshape(
            scores,
            tf.concat([batch_shape, tf.shape(candidate_ids)[-1:]], 0),
        )
        # The reshape loses the static shape; restore what is known.
        scores.set_shape(
            hidden.shape[:-1].concatenate(candidate_ids.shape[-1:])
        )
    else:
        raise ValueError(
            "`candidate_ids` must have shape [M] or [B, M]. "
            f"Received: candidate_ids.shape={candidate_ids.shape}"
        )
    if bias is not None:
        bias = tf.gather(tf.cast(bias, dtype), candidate_ids)
        if candidate_ids.shape.rank == 2:
            # [B, M] -> [B, 1, ..., 1, M] to broadcast over middle axes.
            for _ in range(max(hidden.shape.rank - 2, 0)):
                bias = tf.expand_dims(bias, 1)
        scores += bias
    if mask_padding:
        is_padding = tf.equal(candidate_ids, 0)
        if candidate_ids.shape.rank == 2:
            for _ in range(max(hidden.shape.rank - 2, 0)):
                is_padding = tf.expand_dims(is_padding, 1)
        scores = tf.where(is_padding, tf.constant(PADDING_LOGIT, dtype), scores)
    return scores
