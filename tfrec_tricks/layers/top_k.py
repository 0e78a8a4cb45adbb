"""Exact top-k over item scores, ties to the lower item id.

One rule for every ranking in the package: the output heads' reranker
selections, the serving index and the served top-K all rank items by
score and, among equal scores, by lower item id, which is the order of
``tf.math.top_k`` over a whole-catalogue row. The entry points:

- `top_k_ids`: over whole-catalogue rows ``[B, N]`` (column = item id).
- `top_k_positions`: over candidate rows whose item ids are given
  (any order), e.g. a re-scored candidate set.
- `brute_force_top_k`: an exact in-graph index, ``query E^T + b`` then
  `top_k_ids`, with per-row exclusions.
- `served_top_k`: what a head serves, by either path, through
  `top_k_ids_history_last` and `top_k_positions_history_last`: padding
  never, and the history (when the head excludes it) ranked after every
  other item, never dropped.
"""

import tensorflow as tf

from tfrec_tricks.layers.common import (
    PADDING_LOGIT,
    batch_indices,
    first_occurrences,
    history_positions,
)

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


def _ranked_positions(
    keys: tf.Tensor, rankable: tf.Tensor, k: int
) -> tf.Tensor:
    """Positions of the ``k`` largest ``keys`` among ``rankable`` entries.

    ``keys`` int64 ``[B, M]`` (`sort_keys`). Rows of fewer than ``k``
    rankable entries continue with any other positions, up to ``M + k - 1``
    (past the end: the caller pads what it gathers from by ``k``).
    """
    lowest = tf.int64.min
    keys = tf.where(rankable, keys, lowest)
    keys = tf.pad(keys, [[0, 0], [0, k]], constant_values=lowest)
    return tf.math.top_k(keys, k=k).indices


def _first_then_second(
    first: tf.Tensor, count: tf.Tensor, second: tf.Tensor, k: int
) -> tuple:
    """Row-wise ``first[:count] + second[:k - count]``, and which are second.

    ``first`` ``[B, k]``, ``count`` int32 ``[B]``, ``second`` ``[B, >= k]``.
    """
    column = tf.range(k)[None, :]
    is_second = column >= count[:, None]
    later = tf.gather(
        second, tf.maximum(column - count[:, None], 0), batch_dims=1
    )
    return tf.where(is_second, later, first), is_second


def top_k_positions_history_last(
    logits: tf.Tensor,
    item_ids: tf.Tensor,
    k: int,
    in_history: tf.Tensor | None = None,
) -> tuple:
    """The served top-``k`` of candidate rows: padding never, history last.

    Ranks the candidates of each row as `top_k_positions` does (larger
    logit first, ties to the lower id), except that id 0 (padding, or a
    filler of an index) is never ranked, and entries ``in_history`` come
    after every other entry, among themselves in the order of their own
    ``logits``: "history last" ranks the history's items last, it never
    drops them.

    Args:
        logits: float32 ``[B, M]``. For history entries, the logits that
            order them among themselves (before any exclusion).
        item_ids: int ``[B, M]``, the item of each column; no id but 0
            repeats within a row.
        k: int >= 1.
        in_history: bool ``[B, M]`` or None: the entries ranked last.
            Defaults to ``None`` (none).

    Returns:
        ``(positions, from_history, available)``: int32 ``[B, k]`` column
        positions, best first; bool ``[B, k]``, which come from
        ``in_history``; int32 ``[B]``, the number of rankable (non-zero)
        entries of each row. A row with ``available < k`` holds positions
        at or past ``M`` from column ``available`` on: check it first.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers.top_k import top_k_positions_history_last
    >>> logits = tf.constant([[5.0, 9.0, 2.0, 7.0]])
    >>> ids = tf.constant([[3, 0, 1, 2]])
    >>> last = tf.constant([[True, False, False, True]])
    >>> positions, from_history, _ = top_k_positions_history_last(
    ...     logits, ids, 3, in_history=last)
    >>> positions.numpy().tolist(), from_history.numpy().tolist()
    ([[2, 3, 0]], [[False, True, True]])
    """
    item_ids = tf.cast(item_ids, tf.int32)
    real = tf.not_equal(item_ids, 0)
    if in_history is None:
        in_history = tf.zeros_like(real)
    first = real & ~in_history
    second = real & in_history
    keys = sort_keys(tf.cast(logits, tf.float32), item_ids)
    count = tf.reduce_sum(tf.cast(first, tf.int32), axis=1)
    positions, from_history = _first_then_second(
        _ranked_positions(keys, first, k),
        count,
        _ranked_positions(keys, second, k),
        k,
    )
    available = count + tf.reduce_sum(tf.cast(second, tf.int32), axis=1)
    return positions, from_history, available


def top_k_ids_history_last(
    logits: tf.Tensor, k: int, history_ids: tf.Tensor | None = None
) -> tuple:
    """The served top-``k`` of whole-catalogue rows: padding never,
    history last.

    `top_k_ids` of ``[B, N]`` rows (column = item id) without column 0
    (padding), whatever its logit; with ``history_ids``, the history's
    items come after every other item, among themselves by their own
    ``logits`` (ties to the lower id): ranked last, never dropped. Real
    items are ranked even at ``-inf``.

    Args:
        logits: float32 ``[B, N]``. At history ids, the logits that order
            the history among itself (before any exclusion).
        k: int, ``1 <= k <= N - 1``.
        history_ids: int ``[B, L]`` (padding 0, repeats allowed) or None.
            Defaults to ``None``.

    Returns:
        ``(ids, from_history)``: int32 ``[B, k]``, best first, and bool
        ``[B, k]``, which are history items.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers.top_k import top_k_ids_history_last
    >>> logits = tf.constant([[9.0, 1.0, 4.0, 3.0, 2.0]])
    >>> ids, from_history = top_k_ids_history_last(
    ...     logits, 4, history_ids=tf.constant([[2, 0, 3]]))
    >>> ids.numpy().tolist(), from_history.numpy().tolist()
    ([[4, 1, 2, 3]], [[False, False, True, True]])
    """
    logits = tf.cast(logits, tf.float32)
    # Real items (even at -inf) outrank every left-out one.
    ranked = tf.maximum(logits, tf.float32.min)
    left_out = tf.zeros_like(ranked[:, :1], dtype=tf.int32)  # padding
    if history_ids is not None:
        history_ids = tf.cast(history_ids, tf.int32)
        left_out = tf.concat([left_out, history_ids], axis=1)
    ranked = tf.tensor_scatter_nd_update(
        ranked,
        batch_indices(left_out),
        tf.fill(tf.shape(left_out), float("-inf")),
    )
    ids = top_k_ids(ranked, k)
    if history_ids is None:
        return ids, tf.zeros_like(ids, dtype=tf.bool)
    width = tf.shape(history_ids)[1]
    is_first = tf.equal(first_occurrences(history_ids), tf.range(width))
    rankable = is_first & tf.not_equal(history_ids, 0)
    keys = sort_keys(tf.gather(logits, history_ids, batch_dims=1), history_ids)
    padded = tf.pad(history_ids, [[0, 0], [0, k]])
    later = tf.gather(
        padded, _ranked_positions(keys, rankable, k), batch_dims=1
    )
    count = tf.shape(logits)[1] - 1
    count -= tf.reduce_sum(tf.cast(rankable, tf.int32), axis=1)
    return _first_then_second(ids, count, later, k)


def check_served_k(k: object, num_items: int | None) -> None:
    """Raises ValueError unless ``1 <= k <= num_items - 1``: a served list
    holds ``k`` distinct real items, never padding.

    Args:
        k: the number of items a list holds.
        num_items: int or None. The item table's rows, padding included;
            None (not known before run time) checks ``k >= 1`` only.

    >>> check_served_k(3, 4)
    >>> check_served_k(4, 4)
    Traceback (most recent call last):
    ...
    ValueError: `k` (--k) must be at most the catalogue's 3 items: the catalogue's 3 real items, without padding, each served once. Received: k=4
    """  # noqa: E501
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"`k` must be a positive int. Received: k={k!r}")
    if num_items is not None and k > num_items - 1:
        real = num_items - 1
        raise ValueError(
            f"`k` (--k) must be at most the catalogue's {real} items: the "
            f"catalogue's {real} real items, without padding, each served "
            f"once. Received: k={k}"
        )


def served_top_k(
    head: tf.keras.layers.Layer,
    inputs: dict,
    item_embeddings: tf.Tensor,
    k: int,
    item_bias: tf.Tensor | None = None,
    use_index: bool = False,
    exclude_ids: tf.Tensor | None = None,
    history_last: bool | None = None,
) -> tuple:
    """The top-``k`` items an output head serves, and their logits.

    Every head (`TiedSoftmax`, `SoftmaxCPR`, `MixtureOfSoftmax`), either
    path: the head's full-catalogue logits (``use_index=False``) or its
    index (``top_k_candidates``, then ``score_candidates``). Padding
    (id 0) is never served. Items "ranked last" come after every other
    item, in the order of their logits without any exclusion, with the
    score ``-1e9``: when ``k`` exceeds the other items, they fill the
    remaining places, so the list always holds ``k`` real items. Ranked
    last are ``exclude_ids`` (a request's filter) and, with
    ``history_last``, the history's items.

    Args:
        head: an output head of this package.
        inputs: dict, the head's inputs (``"history_ids"`` included).
        item_embeddings: float ``[N, d]``, the item table.
        k: int, ``1 <= k <= N - 1`` (the real items).
        item_bias: float ``[N]`` or None. Defaults to ``None``.
        use_index: bool. Rank the index's candidate set instead of the
            catalogue (``head.has_index`` must be True). Defaults to
            ``False``.
        exclude_ids: int ``[B, X]`` or None. Ids each row ranks last; 0
            (padding, an unknown id) is a filler. Defaults to ``None``.
        history_last: bool or None. Rank the history's items last; None
            takes the head's setting (``head.excludes_history(False)``,
            ``--head softmax_no_dup``). Defaults to ``None``.

    Returns:
        ``(ids, scores)``: int32 ``[B, k]`` item ids, best first, and
        float32 ``[B, k]`` their logits in ``call`` (``-1e9`` for the
        items ranked last).

    Raises:
        ValueError: ``k`` is not in ``[1, N - 1]`` (``N`` static).
        tf.errors.InvalidArgumentError: (``N`` known at run time only) a
            row has fewer than ``k`` real items to rank.
    """
    catalogue = item_embeddings.shape[0]
    check_served_k(k, catalogue)
    history = tf.cast(inputs["history_ids"], tf.int32)
    excludes = bool(head.excludes_history(False))
    if history_last is None:
        history_last = excludes
    # The head's logits without its own exclusion: the ranking below puts
    # the items ranked last after the others.
    keep = {"exclude_history": False} if excludes else {}
    last = [history] if history_last else []
    if exclude_ids is not None:
        last.append(tf.maximum(tf.cast(exclude_ids, tf.int32), 0))
    last_ids = tf.concat(last, axis=1) if last else None
    if use_index:
        # The head's index leaves out the history by itself when it
        # excludes it; anything else ranked last is left out as a filter.
        index_exclusions = None
        if exclude_ids is not None or history_last != excludes:
            index_exclusions = last_ids
        candidates, base = head.top_k_candidates(
            inputs,
            item_embeddings,
            k,
            item_bias=item_bias,
            exclude_ids=index_exclusions,
        )
        logits = head.score_candidates(
            inputs,
            item_embeddings,
            candidates,
            item_bias=item_bias,
            base_logits=base,
            assume_unique=True,
            **keep,
        )
        in_last = None
        if last_ids is not None:
            in_last, _ = history_positions(candidates, last_ids)
        positions, from_last, available = top_k_positions_history_last(
            logits, candidates, k, in_last
        )
        size = "" if catalogue is None else f" ({catalogue - 1})"
        # A set from `top_k_candidates` always holds k real items when k
        # is within the catalogue: never serve padding in their place.
        check = tf.debugging.assert_greater_equal(
            available,
            k,
            message=f"k={k} is above the catalogue's real items{size}",
        )
        with tf.control_dependencies([check]):
            positions = tf.identity(positions)
        ids = tf.gather(candidates, positions, batch_dims=1)
        scores = tf.gather(logits, positions, batch_dims=1)
    else:
        logits = head(
            inputs, item_embeddings, item_bias=item_bias, training=False, **keep
        )
        if catalogue is None:
            check = tf.debugging.assert_less_equal(
                k,
                tf.shape(logits)[1] - 1,
                message=f"k={k} is above the catalogue's real items",
            )
            with tf.control_dependencies([check]):
                logits = tf.identity(logits)
        ids, from_last = top_k_ids_history_last(logits, k, last_ids)
        scores = tf.gather(logits, ids, batch_dims=1)
    if last_ids is not None:
        scores = tf.where(from_last, tf.constant(PADDING_LOGIT), scores)
    return ids, tf.cast(scores, tf.float32)
