"""One row per target position of merged-prefix training rows.

A merged-prefix row (``tfrec_tricks.data.prefix_merging``) carries every
position's target; the objectives that score logits turn it back into one
row per prefix example, here.
"""

import tensorflow as tf


def expand_positions(
    history: tf.Tensor, states: list, position_targets: tf.Tensor
) -> tuple:
    """One row per target position of merged-prefix rows.

    Row ``(b, p)`` is row ``b`` with the history cut after position
    ``p`` (padding from ``p + 1`` on): a causal encoder's states up to
    ``p`` are those of that prefix alone, so every head (its last
    position, context, pointer, Mi window) sees exactly the prefix
    example.

    Args:
        history: int32 [B, L'] ids, as returned by ``encode``.
        states: list of [B, L', d] per-layer states.
        position_targets: int [B, L] targets, 0 where none (see
            ``tfrec_tricks.data.prefix_merging``).

    Returns:
        ``(history, states, targets)`` with M rows, the target
        positions in row-major order: [M, L'], list of [M, L', d], [M].

    Example:

    >>> import tensorflow as tf
    >>> history = tf.constant([[4, 5, 6]])
    >>> rows, _, targets = expand_positions(
    ...     history, [tf.zeros([1, 3, 2])], tf.constant([[5, 0, 7]]))
    >>> rows.numpy().tolist(), targets.numpy().tolist()
    ([[4, 0, 0], [4, 5, 6]], [5, 7])
    """
    width = tf.shape(history)[1]
    targets = tf.cast(position_targets, tf.int32)[:, :width]
    index = tf.where(targets > 0)  # [M, 2]: (row, position)
    rows, positions = index[:, 0], tf.cast(index[:, 1], tf.int32)
    keep = tf.range(width)[None, :] <= positions[:, None]
    history = tf.where(keep, tf.gather(history, rows), 0)
    states = [tf.gather(s, rows) for s in states]
    return history, states, tf.gather_nd(targets, index)


def target_positions(
    history: tf.Tensor, states: list, position_targets: tf.Tensor
) -> tuple:
    """``expand_positions`` for scores that read the last state only.

    Row ``(b, p)`` becomes a one-item history (the item at ``p``) with
    the last layer's state at ``p``: what such a head reads of the
    expanded row, without copying ``[M, L', d]`` states (training
    windows hold up to ``L`` targets per row).

    Args:
        history: int32 [B, L'] ids, as returned by ``encode``.
        states: list of [B, L', d] per-layer states.
        position_targets: int [B, L] targets, 0 where none.

    Returns:
        ``(history, states, targets)``: [M, 1], ``[[M, 1, d]]``, [M].

    Example:

    >>> import tensorflow as tf
    >>> rows, states, targets = target_positions(
    ...     tf.constant([[4, 5, 6]]), [tf.zeros([1, 3, 2])],
    ...     tf.constant([[5, 0, 7]]))
    >>> rows.numpy().tolist(), states[0].shape, targets.numpy().tolist()
    ([[4], [6]], TensorShape([2, 1, 2]), [5, 7])
    """
    width = tf.shape(history)[1]
    targets = tf.cast(position_targets, tf.int32)[:, :width]
    index = tf.where(targets > 0)  # [M, 2]: (row, position)
    last = tf.gather_nd(history, index)[:, None]
    state = tf.gather_nd(states[-1], index)[:, None, :]
    return last, [state], tf.gather_nd(targets, index)


def mean_over_replicas(per_example: tf.Tensor) -> tf.Tensor:
    """Sum over the replica's examples / the global example count.

    A merged-prefix batch has a different number of target positions on
    each replica, so ``compute_average_loss``'s global batch size (rows
    times replicas) would not be the example count.

    >>> float(mean_over_replicas(tf.constant([1.0, 2.0, 6.0])))
    3.0
    """
    count = tf.cast(tf.shape(per_example)[0], tf.float32)
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
        count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
    return tf.reduce_sum(per_example) / tf.maximum(count, 1.0)
