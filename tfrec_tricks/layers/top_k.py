"""Exact top-k over item scores, ties to the lower item id.

One rule for every ranking in the package: the output heads' reranker
selections, the serving index and the served top-K all rank items by
score and, among equal scores, by lower item id, which is the order of
``tf.math.top_k`` over a whole-catalogue row. Three entry points:

- `top_k_ids`: over whole-catalogue rows ``[B, N]`` (column = item id).
- `top_k_positions`: over candidate rows whose item ids are given
  (any order), e.g. a re-scored candidate set.
- `brute_force_top_k`: an exact in-graph index, ``query E^T + b`` then
  `top_k_ids`, with per-row exclusions.
"""

import tensorflow as tf

from tfrec_tricks.layers.common import batch_indices

#: `top_k_ids` splits the selection in two stages from ``n / k`` on.
TWO_STAGE_MIN_RATIO = 200


def top_k_ids(logits: tf.Tensor, k: int) -> tf.Tensor:
    """Ids (columns) of the ``k`` largest logits per row, ties to the lower.

    Equal to ``tf.math.top_k(logits, k).indices``, faster for long rows.
    For rows of statically known length ``n >= TWO_STAGE_MIN_RATIO * k``
    it splits each row into groups of ``c`` (about ``sqrt(n / k)``) items,
    keeps the ``k`` groups with the largest maxima (every top-``k`` item is
    in one of them), and runs the ``top_k`` kernel on those ``k c`` items
    only: ``O(n)`` cheap work plus two small ``top_k`` calls instead of one
    ``top_k`` over ``n``. Shorter rows use ``top_k`` directly: below that
    ratio the two small calls cost more than the one (measured on CPU at
    batch 256: 1.5x slower at n=2,917, k=101; 0.87x at n=20,000, k=101;
    docs/decisions.md#two-stage-top-k).

    Args:
        logits: float ``[B, n]``; column ``j`` is item ``j``.
        k: int. How many ids per row, ``<= n``.

    Returns:
        int32 ``[B, k]``, best first.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers.top_k import top_k_ids
    >>> logits = tf.constant([[0.5, 2.0, 1.0, 2.0, -1.0]])
    >>> top_k_ids(logits, 3).numpy().tolist()
    [[1, 3, 2]]
    """
    n = logits.shape[-1]
    if n is None or n < TWO_STAGE_MIN_RATIO * k:
        return tf.math.top_k(logits, k=k).indices
    group = max(4, int(round((n / k) ** 0.5)))
    groups = -(-n // group)
    if groups * group != n:
        logits = tf.pad(
            logits,
            [[0, 0], [0, groups * group - n]],
            constant_values=float("-inf"),
        )
    grouped = tf.reshape(logits, [-1, groups, group])
    _, best = tf.math.top_k(tf.reduce_max(grouped, axis=-1), k=k)
    best = tf.sort(best, axis=-1)  # candidates in increasing item id
    values = tf.reshape(tf.gather(grouped, best, batch_dims=1), [-1, k * group])
    _, position = tf.math.top_k(values, k=k)
    ids = best[:, :, None] * group + tf.range(group)[None, None, :]
    return tf.gather(tf.reshape(ids, [-1, k * group]), position, batch_dims=1)


def sort_keys(logits: tf.Tensor, item_ids: tf.Tensor) -> tf.Tensor:
    """int64 keys ordered as ``logits``, ties ordered by lower item id.

    The float32 logit's order-preserving bits above the complemented id:
    a larger key is a larger logit or, for equal logits, a lower id, which
    is how ``tf.math.top_k`` over a whole-catalogue row ranks items.
    ``-0.0`` and ``0.0`` are equal, as in ``top_k``.

    Args:
        logits: float32 tensor.
        item_ids: int tensor of the same shape, ids in ``[0, 2**32)``.

    Returns:
        int64 tensor of that shape.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers.top_k import sort_keys
    >>> keys = sort_keys(tf.constant([1.0, 1.0, -2.0]), tf.constant([7, 3, 1]))
    >>> tf.argsort(keys, direction="DESCENDING").numpy().tolist()
    [1, 0, 2]
    """
    bits = tf.bitcast(logits + 0.0, tf.int32)  # + 0.0: -0.0 becomes 0.0
    ordered = tf.where(bits < 0, tf.bitwise.bitwise_xor(bits, 0x7FFFFFFF), bits)
    return tf.bitwise.left_shift(tf.cast(ordered, tf.int64), 32) + (
        0xFFFFFFFF - tf.cast(item_ids, tf.int64)
    )


def top_k_positions(
    logits: tf.Tensor, item_ids: tf.Tensor, k: int
) -> tf.Tensor:
    """Positions of the ``k`` largest ``logits`` per row, ties to lower id.

    The candidates of a row may come in any order: ``item_ids`` names the
    item of each column, and equal logits rank by lower item id, as
    `top_k_ids` over a whole-catalogue row does (see `sort_keys`).

    Args:
        logits: float32 ``[B, M]``.
        item_ids: int ``[B, M]``, the item of each column.
        k: int. ``<= M``.

    Returns:
        int32 ``[B, k]`` column positions, best first.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers.top_k import top_k_positions
    >>> logits = tf.constant([[2.0, 5.0, 2.0, 1.0]])
    >>> ids = tf.constant([[9, 4, 3, 1]])
    >>> top_k_positions(logits, ids, 3).numpy().tolist()  # 4, then 3 < 9
    [[1, 2, 0]]
    """
    return tf.math.top_k(sort_keys(logits, item_ids), k=k).indices


def brute_force_top_k(
    query: tf.Tensor,
    item_embeddings: tf.Tensor,
    k: int,
    item_bias: tf.Tensor | None = None,
    exclude_ids: tf.Tensor | None = None,
) -> tuple:
    """Exact in-graph index: the ``k`` items of largest ``query . e_x + b_x``.

    The computation of TFRS ``BruteForce`` on the table itself (no copy):
    one ``[B, N]`` product, the ids of ``exclude_ids`` set to ``-inf`` (one
    scatter), `top_k_ids`. Ties go to the lower id. The product is also
    returned, so that a caller takes any other item's logit from the very
    values the ranking used.

    Args:
        query: float32 ``[B, d]``.
        item_embeddings: float32 ``[N, d]``.
        k: int. Number of ids per row, ``<= N``.
        item_bias: float32 ``[N]`` or None. Defaults to ``None``.
        exclude_ids: int ``[B, E]`` or None. Ids to leave out of each row;
            negative entries are ignored (fillers). Excluded ids come last
            (with ``-inf``) when fewer than ``k`` items are left. Defaults
            to ``None``.

    Returns:
        ``(ids, scores, logits)``: int32 ``[B, k]`` ids, best first;
        float32 ``[B, k]`` their logits (``-inf`` for excluded ids);
        float32 ``[B, N]`` the product ``query E^T + b`` before exclusion.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers.top_k import brute_force_top_k
    >>> table = tf.constant([[0.0], [3.0], [1.0], [2.0]])
    >>> ids, scores, _ = brute_force_top_k(
    ...     tf.constant([[1.0]]), table, 2, exclude_ids=tf.constant([[0, 1]]))
    >>> ids.numpy().tolist(), scores.numpy().tolist()
    ([[3, 2]], [[2.0, 1.0]])
    """
    logits = tf.matmul(query, item_embeddings, transpose_b=True)
    if item_bias is not None:
        logits += item_bias
    masked = logits
    if exclude_ids is not None:
        exclude_ids = tf.cast(exclude_ids, tf.int32)
        ignored = exclude_ids < 0
        # A minimum is order-independent: fillers (+inf) never undo an
        # exclusion (-inf) that another entry writes at the same id.
        masked = tf.tensor_scatter_nd_min(
            logits,
            batch_indices(tf.where(ignored, 0, exclude_ids)),
            tf.where(ignored, float("inf"), float("-inf")),
        )
    ids = top_k_ids(masked, k)
    return ids, tf.gather(masked, ids, batch_dims=1), logits
