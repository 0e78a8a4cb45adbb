"""Training loss of ``SoftmaxCPR`` without writing out its logits.

``SoftmaxCPR.cross_entropy`` and ``SoftmaxCPR.position_cross_entropy``
(the loss API every `OutputHead` declares, which a training objective
calls when ``head.has_cross_entropy``) give the cross-entropy of
``call``'s logits and of its base logits, and the targets' ranks, from
the partitions' entries (`partitioned_cross_entropy`): the partitions'
logits are never written into a ``[B, N]`` tensor.

The functions take the layer's `CPRPartitions` as their first argument,
``partitions``, and compose its methods (``read_inputs``,
``cpr_inputs``, ``query``, ``project``, ``history_values``,
``select_stages``, ``reranker_stages``, ``rerank_scores``,
``uses_history``) and `product_and_rows`; the layer's settings are read
as ``partitions.head``'s public attributes. The tensors of a call travel
as one `CPRInputs`. The layer imports this module, never the reverse (no
import cycle)."""

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from tfrec_tricks.heads.cpr.cpr_inputs import CPRInputs
from tfrec_tricks.heads.cpr.partitioned_cross_entropy import (
    partitioned_cross_entropy,
)
from tfrec_tricks.heads.cpr.partitions import CPRPartitions, product_and_rows
from tfrec_tricks.layers.common import PADDING_LOGIT, is_training


def _base_logits_at(
    base_logits: tf.Tensor,
    item_ids: tf.Tensor,
    recomputed: tf.Tensor,
    bias: tf.Tensor | None,
) -> tf.Tensor:
    """``base_logits`` at ``item_ids`` (``[M, K]``), gradient kept sparse.

    Forward, the gather of ``base_logits`` (so that sums over both agree
    to the bit); backward, through ``recomputed`` (``f_V`` times the ids'
    gathered table rows, bias added here): a sparse gradient, no
    ``[M, N]`` scatter.
    """
    if bias is not None:
        recomputed += tf.gather(bias, item_ids)
    return tf.stop_gradient(tf.gather(base_logits, item_ids, batch_dims=1)) + (
        recomputed - tf.stop_gradient(recomputed)
    )


def cross_entropy(
    partitions: CPRPartitions,
    inputs: Any,
    item_embeddings: Any,
    labels: Any,
    item_bias: Any = None,
    training: Any = None,
    rank_labels: Any = None,
) -> tuple:
    """`SoftmaxCPR.cross_entropy` of ``partitions.head``: see there.

    Args:
        partitions: the ``SoftmaxCPR`` layer's `CPRPartitions`.
        inputs, item_embeddings, labels, item_bias, training,
            rank_labels: as the method's.

    Returns:
        ``(cross_entropy, base_cross_entropy, ranks)``, float32 ``[B]``
        each.
    """
    hidden, ids, layers, last, table, bias = partitions.read_inputs(
        inputs, item_embeddings, item_bias
    )
    labels = tf.cast(tf.reshape(labels, [-1]), tf.int32)
    cpr = partitions.cpr_inputs(
        hidden, ids, layers, last, table, bias, training
    )
    f_base = cpr.f_base
    product, selected = partitions.select_stages(cpr)
    uses_history = partitions.uses_history(training)
    # Rows to gather, in the entries' priority order (the history wins,
    # then the smallest k's reranker), then the labels.
    stages = selected[::-1]
    columns = [ids] if uses_history else []
    columns += [top for top, _ in stages]
    columns.append(labels[:, None])
    if rank_labels is not None:
        rank_labels = tf.cast(tf.reshape(rank_labels, [-1]), tf.int32)
        columns.append(rank_labels[:, None])
    row_ids = tf.concat(columns, axis=1)
    product, rows = product_and_rows(f_base, table, row_ids, product)
    base_logits = product if bias is None else product + bias
    at_ids = _base_logits_at(
        base_logits, row_ids, tf.einsum("bd,bmd->bm", f_base, rows), bias
    )
    sizes = [x.shape[1] or tf.shape(x)[1] for x in columns]
    row_parts = tf.split(rows, sizes, axis=1)
    base_parts = tf.split(at_ids, sizes, axis=1)

    history = None
    if uses_history:
        valid = tf.not_equal(ids, 0)
        values = partitions.history_values(cpr, valid, row_parts[0])
        history = (tf.where(valid, ids, -1), values, base_parts[0])
    offset = int(uses_history)
    scored = [
        (
            top,
            partitions.rerank_scores(
                f_rerank, table, bias, top, vectors=row_parts[offset + j]
            ),
            base_parts[offset + j],
        )
        for j, (top, f_rerank) in enumerate(stages)
    ]
    count = offset + len(stages)
    return _entries_loss(
        partitions.head,
        base_logits,
        history,
        scored,
        labels,
        base_parts[count][:, 0],
        rank_labels,
        None if rank_labels is None else base_parts[count + 1][:, 0],
    )


def _entries_loss(
    head: Any,
    base_logits: tf.Tensor,
    history: tuple | None,
    stages: list,
    labels: tf.Tensor,
    label_base: tf.Tensor,
    rank_labels: tf.Tensor | None,
    rank_base: tf.Tensor | None,
) -> tuple:
    """`partitioned_cross_entropy` of the partitions' entries.

    Args:
        head: the ``SoftmaxCPR`` layer (its ``merge`` and
            ``mask_padding``).
        base_logits: float32 ``[M, N]``, ``f_V E^T + b`` with gradient.
        history: ``(ids, values, base)``, each ``[M, L]`` (ids -1
            where no entry), or None.
        stages: ``(top, scores, base)`` per reranker, ``[M, k]`` each,
            smallest ``k`` first (the last written first).
        labels, label_base: ``[M]``; rank_labels, rank_base: ``[M]``
            or None.
        The bases are the base logits at those ids, forward-equal to
        a gather of ``base_logits``, with a sparse gradient.
    """
    entries = ([history] if history is not None else []) + [
        (top, scores, base) for top, scores, base in stages
    ]
    replaces = [tf.ones_like(history[0], tf.bool)] if history else []
    replaces += [
        tf.fill(tf.shape(top), head.merge == "replace") for top, _, _ in stages
    ]
    if not entries:  # no partition: one entry that names no item
        none = tf.fill(tf.shape(labels[:, None]), -1)
        zeros = tf.zeros(tf.shape(none), tf.float32)
        entries, replaces = [(none, zeros, zeros)], [tf.equal(none, -1)]
    entry_ids, values, bases = zip(*entries)
    return partitioned_cross_entropy(
        base_logits,
        tf.concat(entry_ids, axis=1),
        tf.concat(values, axis=1),
        tf.concat(replaces, axis=1),
        tf.concat(bases, axis=1),
        labels,
        label_base,
        mask_padding=head.mask_padding,
        rank_labels=rank_labels,
        rank_label_base_logits=rank_base,
    )


def position_cross_entropy(
    partitions: CPRPartitions,
    inputs: Any,
    item_embeddings: Any,
    position_targets: Any,
    item_bias: Any = None,
    training: Any = None,
    labels: Any = None,
) -> tuple:
    """`SoftmaxCPR.position_cross_entropy` of ``partitions.head``: see
    there.

    Args:
        partitions: the ``SoftmaxCPR`` layer's `CPRPartitions`.
        inputs, item_embeddings, position_targets, item_bias, training,
            labels: as the method's.

    Returns:
        ``(cross_entropy, base_cross_entropy, ranks)``, float32 ``[M]``
        each, in row-major order of the targets.
    """
    hidden, ids, layers, last, table, bias = partitions.read_inputs(
        inputs, item_embeddings, item_bias
    )
    _check_no_last_positions(inputs)
    width = tf.shape(ids)[1]
    index, labels, rank_labels = _target_labels(position_targets, width, labels)
    query = _position_query(partitions, hidden, ids, layers)  # [B, L, q]
    # The CPRInputs of every position: query and f_base [B, L, ...].
    cpr = CPRInputs(
        query,
        partitions.project(partitions.head.base_projection, query, training),
        hidden,
        ids,
        table,
        bias,
        training,
    )
    f_base, product, stages = _position_stages(partitions, cpr, index)
    base_logits, vectors, parts = _position_rows(
        cpr, f_base, stages, labels, rank_labels, product
    )
    history = _position_history(
        partitions, cpr, vectors, index, width, base_logits
    )
    scored = _position_stage_entries(
        partitions, cpr, stages, parts[1:], f_base, base_logits
    )
    label_base, rank_base = _label_bases(
        base_logits, f_base, labels, rank_labels, parts[1 + len(stages) :], bias
    )
    return _entries_loss(
        partitions.head,
        base_logits,
        history,
        scored,
        labels,
        label_base,
        rank_labels,
        rank_base,
    )


def _check_no_last_positions(inputs: Any) -> None:
    """Refuses ``"last_positions"``: every target position is read."""
    if isinstance(inputs, Mapping) and "last_positions" in inputs:
        raise ValueError(
            "position_cross_entropy reads every target position; it "
            "takes no `last_positions`. Received: inputs with keys "
            f"{sorted(inputs)}"
        )


def _target_labels(
    position_targets: Any, width: tf.Tensor, labels: Any
) -> tuple:
    """The targets' positions and the labels to score and to rank.

    Args:
        position_targets: int ``[B, L']``, 0 where no target.
        width: int32 scalar, the history's length ``L``.
        labels: int ``[M]`` or None, as `position_cross_entropy`'s.

    Returns:
        ``(index, labels, rank_labels)``: int32 ``[M, 2]``, the
        ``(row, position)`` of each target in row-major order; int32
        ``[M]``, the items whose cross-entropy is taken; and int32
        ``[M]``, the true targets to rank when ``labels`` are given
        (else None: the labels are the targets).
    """
    targets = tf.cast(position_targets, tf.int32)[:, :width]
    index = tf.cast(tf.where(targets > 0), tf.int32)  # [M, 2]
    true_labels = tf.gather_nd(targets, index)
    if labels is None:
        return index, true_labels, None
    return index, tf.cast(tf.reshape(labels, [-1]), tf.int32), true_labels


def _position_stages(
    partitions: CPRPartitions, cpr: CPRInputs, index: tf.Tensor
) -> tuple:
    """The base projection and the rerankers' sets at the targets.

    The projections run on the ``[B, L, q]`` grid (one dropout mask per
    position, as the expanded rows would get) and are then read at the
    targets. Their dropouts are drawn in this order, base first (in
    ``cpr``), then the rerankers' in cascade order: inside a
    ``tf.function`` a dropout's seed depends on the ops built before it,
    so the order is kept.

    Args:
        partitions: the layer's `CPRPartitions`.
        cpr: `CPRInputs` of every position (``[B, L, q]`` query).
        index: int32 ``[M, 2]``, the targets' ``(row, position)``.

    Returns:
        ``(f_base, product, stages)``: float32 ``[M, d]``, the base
        projection at the targets; the gradient-free ``[M, N]`` base
        product; and ``(top, f_rerank)`` per reranker, smallest ``k``
        first (the entries' priority order).
    """
    f_base = tf.gather_nd(cpr.f_base, index)  # [M, d]
    product, selected = partitions.select_stages(
        cpr,
        query=tf.gather_nd(cpr.query, index),
        f_base=f_base,
        f_reranks=[
            tf.gather_nd(
                partitions.project(projection, cpr.query, cpr.training), index
            )
            for _, projection in partitions.reranker_stages()
        ],
    )
    return f_base, product, selected[::-1]


def _position_rows(
    cpr: CPRInputs,
    f_base: tf.Tensor,
    stages: list,
    labels: tf.Tensor,
    rank_labels: tf.Tensor | None,
    product: tf.Tensor,
) -> tuple:
    """The base logits with gradient, and every table row the loss reads.

    One gather of table rows for everything, flat: the history's
    ``[B, L]`` (not ``[M, L]``: a row's targets share it), the sets and
    the labels (and rank labels), so that their gradients reach the
    table in place (`product_and_rows`).

    Returns:
        ``(base_logits, vectors, parts)``: float32 ``[M, N]``,
        ``f_V E^T + b`` with gradient; the history's rows ``[B, L, d]``;
        and the rows of each of those, flat ``[size, d]`` each, in that
        order (the history's first).
    """
    ids, table, bias = cpr.ids, cpr.table, cpr.bias
    columns = [tf.reshape(ids, [-1])]
    columns += [tf.reshape(top, [-1]) for top, _ in stages]
    columns.append(labels)
    if rank_labels is not None:
        columns.append(rank_labels)
    product, rows = product_and_rows(
        f_base, table, tf.concat(columns, axis=0), product
    )
    parts = tf.split(rows, [tf.size(x) for x in columns], axis=0)
    base_logits = product if bias is None else product + bias
    vectors = tf.reshape(parts[0], tf.concat([tf.shape(ids), [-1]], 0))
    return base_logits, vectors, parts


def _position_history(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    vectors: tf.Tensor,
    index: tf.Tensor,
    width: tf.Tensor,
    base_logits: tf.Tensor,
) -> tuple | None:
    """The history partition's entries of every target, ``[M, L]`` each.

    A target at position ``p`` has its row's history items up to ``p``
    as entries. Their values and base logits come from ``[B, L, L]``
    products of the projections at every position with the history's
    rows (``vectors``, ``[B, L, d]``), read at the targets.

    Returns:
        ``(ids, values, base)`` as `_entries_loss` takes them (ids -1
        where no entry), or None when the head has no history partition.
    """
    training, bias = cpr.training, cpr.bias
    if not partitions.uses_history(training):
        return None
    history_ids = tf.gather(cpr.ids, index[:, 0])  # [M, L]
    entry = tf.not_equal(history_ids, 0) & (
        tf.range(width)[None, :] <= index[:, 1:]
    )
    base_grid = tf.einsum("bpd,btd->bpt", cpr.f_base, vectors)
    if partitions.head.exclude_history and not is_training(training):
        values = tf.fill(tf.shape(history_ids), PADDING_LOGIT)
    else:
        values = tf.gather_nd(
            _position_history_logits(partitions, cpr, base_grid, vectors),
            index,
        )
    return (
        tf.where(entry, history_ids, -1),
        values,
        _base_logits_at(
            base_logits, history_ids, tf.gather_nd(base_grid, index), bias
        ),
    )


def _position_stage_entries(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    stages: list,
    parts: list,
    f_base: tf.Tensor,
    base_logits: tf.Tensor,
) -> list:
    """``(top, scores, base)`` per reranker, ``[M, k]`` each.

    ``parts``: the sets' flat gathered rows, one per stage in ``stages``
    order (further parts are ignored); the scores and base logits are
    computed from them, not from new gathers. ``f_base``: ``[M, d]``,
    the base projection at the targets.
    """
    table, bias = cpr.table, cpr.bias
    scored = []
    for (top, f_rerank), flat_rows in zip(stages, parts):
        top_rows = tf.reshape(flat_rows, tf.concat([tf.shape(top), [-1]], 0))
        scored.append(
            (
                top,
                partitions.rerank_scores(
                    f_rerank, table, bias, top, vectors=top_rows
                ),
                _base_logits_at(
                    base_logits,
                    top,
                    tf.einsum("md,mkd->mk", f_base, top_rows),
                    bias,
                ),
            )
        )
    return scored


def _label_bases(
    base_logits: tf.Tensor,
    f_base: tf.Tensor,
    labels: tf.Tensor,
    rank_labels: tf.Tensor | None,
    parts: list,
    bias: tf.Tensor | None,
) -> tuple:
    """``(label_base, rank_base)``: the labels' base logits, ``[M]`` each.

    ``parts``: the labels' flat gathered rows, then the rank labels'.
    ``rank_base`` is None without rank labels. The rank labels' ops are
    built first, as they always were, so that a graph calling this keeps
    its op count and order (random ops built later keep their seeds).
    """
    rank_base = None
    if rank_labels is not None:
        rank_base = _label_base(
            base_logits, f_base, rank_labels, parts[1], bias
        )
    return _label_base(base_logits, f_base, labels, parts[0], bias), rank_base


def _label_base(
    base_logits: tf.Tensor,
    f_base: tf.Tensor,
    item_ids: tf.Tensor,
    item_rows: tf.Tensor,
    bias: tf.Tensor | None,
) -> tf.Tensor:
    """The base logit of one item per target, ``[M]``, from its row."""
    recomputed = tf.reduce_sum(f_base * item_rows, -1)
    return _base_logits_at(
        base_logits, item_ids[:, None], recomputed[:, None], bias
    )[:, 0]


def _position_query(
    partitions: CPRPartitions,
    hidden: tf.Tensor,
    ids: tf.Tensor,
    layers: list | None,
) -> tf.Tensor:
    """`CPRPartitions.query` at every position: ``[B, L, d_h]`` or
    ``[B, L, 2 d_h]``.

    ``CPRPartitions.query`` reads the last position only; this reads
    every position.
    """
    head = partitions.head
    if not head.use_mi:
        return hidden
    width = tf.shape(ids)[1]
    sources = layers if layers else [hidden]
    parts = []
    for states in sources[::-1][: head.mi_layers]:
        states = tf.cast(states, hidden.dtype)
        window = []
        for j in range(head.mi_window):
            # The state j steps back: zeros before the history starts
            # and at padding, as ``CPRPartitions.query`` gives them.
            back = tf.pad(states, [[0, 0], [j, 0], [0, 0]])[:, :width]
            real = tf.pad(ids, [[0, 0], [j, 0]])[:, :width] != 0
            window.append(back * tf.cast(real, back.dtype)[:, :, None])
        parts.append(tf.concat(window, axis=-1))
    mixed = head.mi_projection(tf.concat(parts, axis=-1))
    mixed = tf.nn.gelu(mixed, approximate=True)
    return tf.concat([hidden, tf.cast(mixed, hidden.dtype)], axis=-1)


def _position_history_logits(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    base_grid: tf.Tensor,
    vectors: tf.Tensor,
) -> tf.Tensor:
    """`CPRPartitions.history_logits` at every position:
    ``[B, L(p), L(t)]``.

    ``CPRPartitions.history_logits`` reads the last position only; this
    reads every position of ``cpr.query`` (``[B, L, q]``), projected with
    ``partitions.project``.

    Entry ``[b, p, t]`` is the logit of history item ``ids[b, t]`` read
    at position ``p`` (its pointer term averages the keys of its
    occurrences at positions ``<= p``); only ``t <= p`` is meaningful.
    """
    head = partitions.head
    query, training = cpr.query, cpr.training
    hidden, ids, bias = cpr.hidden, cpr.ids, cpr.bias
    values = base_grid
    if head.use_context:
        context = tf.einsum(
            "bpd,btd->bpt",
            partitions.project(head.context_projection, query, training),
            vectors,
        )
        values = context if head.merge == "replace" else values + context
    if bias is not None:
        values += tf.gather(bias, ids)[:, None, :]
    if head.use_pointer:
        f_pointer = partitions.project(head.pointer_projection, query, training)
        kernel = tf.cast(head.key_projection.kernel, tf.float32)
        key_bias = tf.cast(head.key_projection.bias, tf.float32)
        reader = tf.einsum("bpd,hd->bph", f_pointer, kernel)
        scores = (
            tf.einsum("bph,buh->bpu", reader, tf.cast(hidden, tf.float32))
            + tf.einsum("bpd,d->bp", f_pointer, key_bias)[:, :, None]
        )
        width = tf.shape(ids)[1]
        causal = tf.cast(
            tf.range(width)[None, :] <= tf.range(width)[:, None],
            tf.float32,
        )  # [p, u]
        valid = tf.not_equal(ids, 0)
        same = tf.cast(
            tf.equal(ids[:, :, None], ids[:, None, :]) & valid[:, None],
            tf.float32,
        )  # [b, t, u]
        total = tf.einsum("btu,bpu->bpt", same, scores * causal)
        count = tf.einsum("btu,pu->bpt", same, causal)
        values += total / tf.maximum(count, 1.0)
    return values
