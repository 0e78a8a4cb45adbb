"""Cross-entropy of partitioned logits without writing them out.

A partitioned head (Softmax-CPR) gives a few items per row a new logit
and leaves the rest of the catalogue at its base logit. Writing the new
logits into the ``[B, N]`` base logits costs a scatter forward and
another backward, and a cross-entropy over the result is a second pass
over ``[B, N]`` beside the base logits' own. The log-normaliser needs
neither:

    log sum_x exp(l_x) = log(sum_x exp(z_x) - sum_{p in P} exp(z_p)
                              + sum_{p in P} exp(l_p))

where ``z`` are the base logits, ``P`` the distinct re-scored items of a
row and ``l_p`` their merged logits. Only ``sum_x exp(z_x)`` reads
``[B, N]``; it is also the base softmax's normaliser, so a base loss
beside the partitioned one costs nothing more. The target's rank, for the
training metrics, is counted the same way.

Gradients stay off float ``[B, N]`` scatters too: the caller passes ``z``
at the entries (and at the labels) recomputed from gathered table rows, so
their gradient reaches the table as rows and the query as a small
product, while ``z``'s own gradient is the dense ``exp(z - m) / S`` of
the items outside ``P``.

Precision: ``sum_x exp(z_x) - sum_P exp(z_p)`` would cancel in float32
when the re-scored items hold nearly all of the base mass and their new
logits are far below their base ones (a top-k its reranker demotes). So the
rest of the catalogue is summed as it is, behind a boolean ``[B, N]`` mask
of the re-scored items (written once, forward only; its gradient is the
dense ``exp(z - m)`` with zeros at those items), and the base normaliser
is that sum plus the re-scored items' base terms. Nothing cancels: values
and gradients are float32 rounding away from the written-out logits'.
"""

import tensorflow as tf

from tfrec_tricks.layers.common import PADDING_LOGIT


def _sorted_by_id(ids: tf.Tensor, *columns: tf.Tensor) -> tuple:
    """Each row's entries grouped by id, priority order kept within."""
    order = tf.argsort(ids, axis=1, stable=True)
    return tuple(tf.gather(x, order, batch_dims=1) for x in (ids, *columns))


def merge_entries(
    entry_ids: tf.Tensor,
    entry_values: tf.Tensor,
    entry_replaces: tf.Tensor,
    entry_base_logits: tf.Tensor,
) -> tuple:
    """The merged logit of every distinct item a row's entries name.

    Entries are writes in priority order: the first is the last written.
    An item's merged logit starts at its base logit; its writes apply from
    the last entry to the first, each replacing the logit or adding to it.
    So it is the sum of the item's adding entries before its first
    replacing one, plus that entry's value or, if none, the base logit.

    Args:
        entry_ids: int32 ``[B, M]``; negative ids are no entry.
        entry_values: float32 ``[B, M]``.
        entry_replaces: bool ``[B, M]``, replace (else add).
        entry_base_logits: float32 ``[B, M]``, the base logit of each
            entry's id.

    Returns:
        ``(ids, merged, base, distinct)``, each ``[B, M]`` in an order of
        the row's own: at entries where ``distinct`` is True, one per
        distinct real id, the id, its merged logit and its base logit.
        Elsewhere, values to be ignored.
    """
    ids, values, replaces, base = _sorted_by_id(
        entry_ids, entry_values, entry_replaces, entry_base_logits
    )
    starts = tf.concat(
        [tf.ones_like(ids[:, :1], tf.bool), ids[:, 1:] != ids[:, :-1]], 1
    )
    shape = tf.shape(ids)
    size = shape[0] * shape[1]
    # One segment per (row, id) run, numbered over the flattened batch.
    segment = tf.cumsum(tf.cast(tf.reshape(starts, [-1]), tf.int32)) - 1
    replacing = tf.cast(tf.reshape(replaces, [-1]), tf.int32)
    before = tf.cumsum(replacing, exclusive=True)
    # An entry counts iff no replacing entry precedes it in its run.
    at_start = tf.math.unsorted_segment_min(before, segment, size)
    counts = tf.equal(before, tf.gather(at_start, segment))
    flat_values = tf.reshape(values, [-1])
    total = tf.math.unsorted_segment_sum(
        tf.where(counts, flat_values, tf.zeros_like(flat_values)),
        segment,
        size,
    )
    replaced = tf.math.unsorted_segment_max(replacing, segment, size) > 0
    total = tf.reshape(tf.gather(total, segment), shape)
    replaced = tf.reshape(tf.gather(replaced, segment), shape)
    merged = total + tf.where(replaced, tf.zeros_like(base), base)
    return ids, merged, base, starts & (ids >= 0)


def _label_logit(
    ids: tf.Tensor,
    merged: tf.Tensor,
    distinct: tf.Tensor,
    labels: tf.Tensor,
    label_base_logits: tf.Tensor,
    mask_padding: bool,
) -> tf.Tensor:
    """The merged logit of each row's label, ``[B]``."""
    found = distinct & tf.equal(ids, labels[:, None])
    logit = tf.where(
        tf.reduce_any(found, axis=1),
        tf.reduce_sum(tf.where(found, merged, tf.zeros_like(merged)), 1),
        label_base_logits,
    )
    if mask_padding:
        logit = tf.where(tf.equal(labels, 0), PADDING_LOGIT, logit)
    return logit


def _ranks(
    base_logits: tf.Tensor,
    ids: tf.Tensor,
    merged: tf.Tensor,
    base: tf.Tensor,
    distinct: tf.Tensor,
    label_logit: tf.Tensor,
    mask_padding: bool,
) -> tf.Tensor:
    """``evaluation.full_ranking.tf_target_ranks`` of the merged logits."""
    z = tf.stop_gradient(base_logits)
    label_logit = tf.stop_gradient(label_logit)[:, None]

    def count(values: tf.Tensor, where: tf.Tensor) -> tf.Tensor:
        return tf.reduce_sum(
            tf.cast((values >= label_logit) & where, tf.float32), 1
        )

    everywhere = tf.ones_like(z, tf.bool)
    at_least = (
        count(z, everywhere)
        - count(tf.stop_gradient(base), distinct)
        + count(tf.stop_gradient(merged), distinct)
    )
    # Item 0 (padding) is not ranked: drop it from the count. With
    # mask_padding it is no entry, and what was counted is its base logit.
    padding = z[:, 0]
    if not mask_padding:
        entry = distinct & tf.equal(ids, 0)
        padding = tf.where(
            tf.reduce_any(entry, 1),
            tf.reduce_sum(tf.where(entry, merged, tf.zeros_like(merged)), 1),
            padding,
        )
    at_least -= tf.cast(
        tf.stop_gradient(padding) >= label_logit[:, 0], tf.float32
    )
    last = tf.cast(tf.shape(z)[1] - 1, tf.float32)
    return tf.where(tf.math.is_nan(label_logit[:, 0]), last, at_least)


def partitioned_cross_entropy(
    base_logits: tf.Tensor,
    entry_ids: tf.Tensor,
    entry_values: tf.Tensor,
    entry_replaces: tf.Tensor,
    entry_base_logits: tf.Tensor,
    labels: tf.Tensor,
    label_base_logits: tf.Tensor,
    mask_padding: bool = True,
    rank_labels: tf.Tensor | None = None,
    rank_label_base_logits: tf.Tensor | None = None,
) -> tuple:
    """Cross-entropies of merged and base logits, and the label's rank.

    The merged logits are the base logits ``z`` with each row's entries
    written over them (see `merge_entries`); with ``mask_padding``, item
    0 then gets ``-1e9`` in both. This returns what
    ``tf.nn.sparse_softmax_cross_entropy_with_logits`` and
    ``tfrec_tricks.evaluation.full_ranking.tf_target_ranks`` give on the
    written-out logits, with one pass over ``[B, N]`` for the normaliser
    and one for the rank.

    Args:
        base_logits: float32 ``[B, N]``, ``z``.
        entry_ids: int32 ``[B, M]``, writes in priority order (the first
            wins); negative: none. With ``mask_padding``, never 0.
        entry_values: float32 ``[B, M]``.
        entry_replaces: bool ``[B, M]``: the entry replaces (else adds
            to) the logit.
        entry_base_logits: float32 ``[B, M]``, ``z`` at the entries' ids.
            Pass them recomputed from gathered rows, forward-equal to a
            gather of ``base_logits``, so that their gradient is sparse.
        labels: int ``[B]``.
        label_base_logits: float32 ``[B]``, ``z`` at the labels, as the
            entries'.
        mask_padding: bool. Item 0 gets ``-1e9``.
        rank_labels: int ``[B]`` or None. Rank these instead of
            ``labels`` (for example the true targets when the loss reads
            perturbed ones); with ``rank_label_base_logits``.
        rank_label_base_logits: float32 ``[B]`` or None.

    Returns:
        ``(cross_entropy, base_cross_entropy, ranks)``, float32 ``[B]``
        each: the merged logits' and the base logits' cross-entropy at
        ``labels``, and the 1-based rank of the label among the real
        items by the merged logits (ties pessimistic).
    """
    labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
    ids, merged, base, distinct = merge_entries(
        entry_ids, entry_values, entry_replaces, entry_base_logits
    )
    shift = _shift(base_logits, merged, distinct)  # [B, 1]
    exp_base = tf.exp(base_logits - shift)
    rescored = _rescored_mask(base_logits, ids, distinct, labels, mask_padding)
    # The rest of the catalogue summed as it is (see `_rescored_mask`).
    outside = tf.cast(
        tf.reduce_sum(tf.where(rescored, 0.0, exp_base), 1), tf.float64
    )
    base_sum, merged_sum = _normalisers(
        exp_base, outside, shift, ids, merged, base, distinct
    )
    label_logit = _label_logit(
        ids, merged, distinct, labels, label_base_logits, mask_padding
    )
    label_base = label_base_logits
    if mask_padding:
        label_base = tf.where(tf.equal(labels, 0), PADDING_LOGIT, label_base)
    shift = shift[:, 0]
    cross_entropy = _cross_entropy(merged_sum, shift, label_logit)
    base_cross_entropy = _cross_entropy(base_sum, shift, label_base)
    if rank_labels is not None:
        rank_labels = tf.cast(tf.reshape(rank_labels, [-1]), tf.int32)
        label_logit = _label_logit(
            ids,
            merged,
            distinct,
            rank_labels,
            rank_label_base_logits,
            mask_padding,
        )
    ranks = _ranks(
        base_logits, ids, merged, base, distinct, label_logit, mask_padding
    )
    return cross_entropy, base_cross_entropy, ranks


def _shift(
    base_logits: tf.Tensor, merged: tf.Tensor, distinct: tf.Tensor
) -> tf.Tensor:
    """Each row's largest logit, base or merged, ``[B, 1]``, no gradient.

    Subtracted before ``exp`` so that no term overflows; a constant to
    the gradient, as in any log-sum-exp.
    """
    lowest = tf.fill(tf.shape(merged), tf.float32.min)
    return tf.stop_gradient(
        tf.maximum(
            tf.reduce_max(base_logits, 1),
            tf.reduce_max(tf.where(distinct, merged, lowest), 1),
        )
    )[:, None]


def _rescored_mask(
    base_logits: tf.Tensor,
    ids: tf.Tensor,
    distinct: tf.Tensor,
    labels: tf.Tensor,
    mask_padding: bool,
) -> tf.Tensor:
    """bool ``[B, N]``: the re-scored items (and padding, when masked).

    The rest of the catalogue, every other item, is summed as it is
    rather than as the whole sum minus the re-scored terms, which would
    cancel in float32 when those hold nearly all of the mass. A boolean
    mask, no gradient: the sum's gradient is the dense exp itself, zero
    at the re-scored items.
    """
    coordinates = tf.where(distinct)
    index = tf.stack(
        [tf.cast(coordinates[:, 0], tf.int32), tf.gather_nd(ids, coordinates)],
        axis=1,
    )
    if mask_padding:
        rows = tf.range(tf.shape(labels)[0])
        index = tf.concat(
            [index, tf.stack([rows, tf.zeros_like(rows)], axis=1)], axis=0
        )
    return tf.tensor_scatter_nd_update(
        tf.zeros(tf.shape(base_logits), tf.bool),
        index,
        tf.ones(tf.shape(index)[:1], tf.bool),
    )


def _normalisers(
    exp_base: tf.Tensor,
    outside: tf.Tensor,
    shift: tf.Tensor,
    ids: tf.Tensor,
    merged: tf.Tensor,
    base: tf.Tensor,
    distinct: tf.Tensor,
) -> tuple:
    """``(base_sum, merged_sum)``: float64 ``[B]``, the shifted softmax sums.

    Both are ``outside`` plus the distinct entries' terms: their base
    logits' (forward, the very terms ``exp_base`` holds, gradient
    through ``base``, the sparse path) or their merged logits'.
    """
    frozen = tf.stop_gradient(exp_base)
    base_sum = outside + _entry_sum(
        base,
        shift,
        distinct,
        tf.gather(frozen, tf.maximum(ids, 0), batch_dims=1),
    )
    merged_sum = outside + _entry_sum(merged, shift, distinct)
    return base_sum, merged_sum


def _entry_sum(
    logits: tf.Tensor,
    shift: tf.Tensor,
    distinct: tf.Tensor,
    dense: tf.Tensor | None = None,
) -> tf.Tensor:
    """Sum over the distinct entries of ``exp(logits - shift)``, float64.

    ``dense``: the same terms as ``exp_base`` holds them, taken forward
    (the gradient still flows through ``logits``).
    """
    exps = tf.exp(tf.where(distinct, logits - shift, tf.zeros_like(logits)))
    if dense is not None:
        exps = dense + (exps - tf.stop_gradient(exps))
    exps = tf.cast(exps, tf.float64)
    return tf.reduce_sum(tf.where(distinct, exps, tf.zeros_like(exps)), 1)


def _cross_entropy(
    total: tf.Tensor, shift: tf.Tensor, label_logit: tf.Tensor
) -> tf.Tensor:
    """``log sum exp - label logit``, float32 ``[B]``, from a shifted sum."""
    return tf.cast(tf.math.log(total), tf.float32) + shift - label_logit
