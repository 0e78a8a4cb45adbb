"""Candidate scoring of ``SoftmaxCPR``: the serving index's path.

``SoftmaxCPR.top_k_candidates`` retrieves, from one ``[B, N]`` product
of the base query with the table (an exact top-k index), a candidate set
that holds the head's top-k; ``SoftmaxCPR.score_candidates`` scores a set
exactly as ``call`` scores the catalogue, running the reranker cascade
over the candidates, with no ``[B, N]`` work; ``call`` with
``candidate_ids`` scores its candidates here too (`candidate_logits`).

`candidate_call` is ``call`` with ``candidate_ids``. The functions take
the layer's `CPRPartitions` as their first argument, ``partitions``, and
compose its methods (``read_inputs``, ``cpr_inputs``, ``history_logits``,
``reranker_stages``, ``select_stages``, ``rerank_scores``); the layer's
settings are read as ``partitions.head``'s public attributes. The tensors
of a call travel as one `CPRInputs`. The layer imports this module, never
the reverse (no import cycle).
"""

from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.heads.cpr.cpr_inputs import CPRInputs
from tfrec_tricks.heads.cpr.partitions import CPRPartitions
from tfrec_tricks.heads.input_contract import (
    candidate_ids_tensor,
    distinct_ids,
)
from tfrec_tricks.layers.common import (
    PADDING_LOGIT,
    first_occurrences,
    history_positions,
    is_training,
    num_rows,
)
from tfrec_tricks.layers.top_k import brute_force_top_k, sort_keys


def _check_unique(candidates: tf.Tensor, skip_padding: bool) -> None:
    """Eager only: no id (but padding 0, if skipped) repeats in a row."""
    if not tf.executing_eagerly() or not hasattr(candidates, "numpy"):
        return
    rows = np.atleast_2d(np.asarray(candidates.numpy()))
    for row, ids in enumerate(rows):
        ids = np.sort(ids[ids != 0] if skip_padding else ids)
        repeated = ids[1:][ids[1:] == ids[:-1]]
        if repeated.size:
            raise ValueError(
                "With assume_unique=True no item id may repeat within a "
                "row of `candidate_ids`. Received: candidate_ids whose row "
                f"{row} repeats {repeated[0]}"
            )


def top_k_candidates(
    partitions: CPRPartitions,
    inputs: Any,
    item_embeddings: Any,
    k: int,
    item_bias: Any = None,
    extra_ids: Any = None,
    exclude_ids: Any = None,
) -> tuple:
    """`SoftmaxCPR.top_k_candidates` of ``partitions.head``: see there.

    Args:
        partitions: the ``SoftmaxCPR`` layer's `CPRPartitions`.
        inputs, item_embeddings, k, item_bias, extra_ids, exclude_ids: as
            the method's.

    Returns:
        ``(candidate_ids, base_logits)``, as the method's.
    """
    head = partitions.head
    hidden, ids, layers, last, table, bias = partitions.read_inputs(
        inputs, item_embeddings, item_bias
    )
    k = head.check_k(k)
    extra = None
    if extra_ids is not None:
        extra = candidate_ids_tensor(extra_ids, num_rows(table), "extra_ids")
        if extra.shape.rank != 2:
            raise ValueError(
                "`extra_ids` must be per-row ids [B, E]. "
                f"Received: extra_ids.shape={extra.shape}"
            )
    count = sum(head.reranker_ks) + int(k)
    if table.shape[0] is not None:
        count = min(count, table.shape[0] - int(head.mask_padding))
    f_base = partitions.cpr_inputs(
        hidden, ids, layers, last, table, bias, False
    ).f_base
    if count == 0:
        if extra is None:
            extra = tf.zeros_like(ids[:, :0])
        base = tf.einsum("bd,bed->be", f_base, tf.gather(table, extra))
        if bias is not None:
            base += tf.gather(bias, extra)
        return extra, base
    # The history and `exclude_ids` (and padding, when masked) are left
    # out of the index; the cascade's picks among `exclude_ids` stay in
    # the set, since they are appended.
    left_out = ids
    if exclude_ids is not None:
        left_out = tf.concat([ids, tf.cast(exclude_ids, tf.int32)], axis=1)
    if head.mask_padding:
        exclude = tf.concat([tf.zeros_like(ids[:, :1]), left_out], axis=1)
    else:
        exclude = tf.where(left_out > 0, left_out, -1)
    top, top_logits, product = brute_force_top_k(
        f_base, table, count, bias, exclude_ids=exclude
    )
    # Fewer items outside the history than `count`: 0 fills the rest.
    top = tf.where(top_logits > float("-inf"), top, 0)
    parts = [top, distinct_ids(left_out)]
    if extra is not None:
        parts.append(extra)
    candidates = tf.concat(parts, axis=1)
    # The base logits from the index's own product, bitwise equal to
    # the one `call` ranks with: near-ties break as in `call`.
    return candidates, tf.gather(product, candidates, batch_dims=1)


def score_candidates(
    partitions: CPRPartitions,
    inputs: Any,
    item_embeddings: Any,
    candidate_ids: Any,
    item_bias: Any = None,
    training: Any = False,
    base_logits: Any = None,
    assume_unique: bool = False,
    exclude_history: Any = None,
) -> tf.Tensor:
    """`SoftmaxCPR.score_candidates` of ``partitions.head``: see there.

    Args:
        partitions: the ``SoftmaxCPR`` layer's `CPRPartitions`.
        inputs, item_embeddings, candidate_ids, item_bias, training,
            base_logits, assume_unique, exclude_history: as the method's.

    Returns:
        float32 ``[B, M]``: ``head(...)`` at the candidates' ids.
    """
    head = partitions.head
    hidden, ids, layers, last, table, bias = partitions.read_inputs(
        inputs, item_embeddings, item_bias
    )
    candidates = candidate_ids_tensor(candidate_ids, num_rows(table))
    if base_logits is not None:
        base_logits = tf.cast(tf.convert_to_tensor(base_logits), tf.float32)
        expected = tf.TensorShape([None, candidates.shape[-1]])
        if candidates.shape.rank == 2:
            expected = candidates.shape
        if not base_logits.shape.is_compatible_with(expected):
            raise ValueError(
                "`base_logits` must give one logit per candidate "
                f"{expected}. Received: base_logits.shape="
                f"{base_logits.shape}, candidate_ids.shape="
                f"{candidates.shape}"
            )
    if head.reranker_ks:
        _check_history_in_candidates(head.reranker_ks, ids, candidates)
    if assume_unique:
        _check_unique(candidates, head.mask_padding)
    cpr = partitions.cpr_inputs(
        hidden, ids, layers, last, table, bias, training
    )
    return candidate_logits(
        partitions,
        cpr,
        candidates,
        base_logits,
        assume_unique,
        exclude_history=exclude_history,
    )


def candidate_call(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidate_ids: tf.Tensor,
    return_base_logits: bool,
    exclude_history: Any = None,
) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
    """``call`` with ``candidate_ids``: the logits at the candidates.

    With rerankers the cascade's sets are chosen over the whole
    catalogue first (`select_stages`); the candidates are then scored
    by `candidate_logits`. In training with
    ``rerank_within_candidates``, they are chosen among the candidates
    and the history instead (`within_candidates_call`).
    """
    head = partitions.head
    if head.rerank_within_candidates and is_training(cpr.training):
        return within_candidates_call(
            partitions, cpr, candidate_ids, return_base_logits
        )
    selected = None
    if head.reranker_ks:
        _, selected = partitions.select_stages(cpr)
    # The sets are chosen: score only the candidates, from their
    # gathered rows. The gradient then reaches the table as
    # sparse rows, not as a dense [N, d] product gradient that
    # would make every optimizer step O(N).
    return candidate_logits(
        partitions,
        cpr,
        candidate_ids,
        None,
        stages=selected,
        return_base_logits=return_base_logits,
        exclude_history=exclude_history,
    )


def within_candidates_call(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidate_ids: tf.Tensor,
    return_base_logits: bool,
) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
    """Candidate logits, the cascade run over candidates and history.

    Each row's pool is its candidates followed by its history; the
    cascade ranks the pool (first occurrences, padding left out) as
    ``call`` ranks the catalogue, and only the candidates' columns
    are returned. No row of the table outside the pool is read.
    """
    count = tf.shape(candidate_ids)[-1]
    if candidate_ids.shape.rank == 1:
        candidate_ids = per_row(candidate_ids, cpr.ids)
    pool = tf.concat([candidate_ids, cpr.ids], axis=1)
    logits = candidate_logits(
        partitions,
        cpr,
        pool,
        None,
        return_base_logits=return_base_logits,
    )
    if return_base_logits:
        return tuple(x[:, :count] for x in logits)
    return logits[:, :count]


def _check_history_in_candidates(
    reranker_ks: tuple, ids: tf.Tensor, candidates: tf.Tensor
) -> None:
    """Eager only: every history id is among its row's candidates."""
    if not tf.executing_eagerly() or not hasattr(candidates, "numpy"):
        return
    history = np.asarray(ids.numpy())
    pool = np.asarray(candidates.numpy())
    if pool.ndim == 1:
        pool = np.broadcast_to(pool, (history.shape[0], pool.size))
    found = (history[:, :, None] == pool[:, None, :]).any(axis=-1)
    missing = np.argwhere((history != 0) & ~found)
    if missing.size:
        row, position = missing[0]
        raise ValueError(
            "With rerankers, each row of `candidate_ids` must hold the "
            "row's history and the top sum(reranker_ks)="
            f"{sum(reranker_ks)} items by base logit outside it "
            "(see `top_k_candidates`): the cascade's top-k sets can "
            "take any of them. Received: candidate_ids whose row "
            f"{row} lacks its history item {history[row, position]}"
        )


def candidate_logits(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidates: tf.Tensor,
    base_logits: tf.Tensor | None,
    assume_unique: bool = False,
    stages: list | None = None,
    return_base_logits: bool = False,
    exclude_history: Any = None,
) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
    """Logits ``[B, M]`` of candidates ``[M]`` or ``[B, M]``.

    ``stages``: the ``(top, f_rerank)`` pairs of the cascade ``call``
    ran over the catalogue (sets ``[B, k]``, largest ``k`` first):
    a candidate gets a stage's term iff that stage selected it, as
    ``call``'s scatter gives it. None runs the cascade over the
    candidates (`_candidate_cascade`). ``return_base_logits``: also
    the candidates' base logits (``call``'s argument).
    ``exclude_history``: overrides the head's (None: its setting).
    """
    head = partitions.head
    candidates, vectors, scores = _candidate_base_logits(
        head.reranker_ks, cpr, candidates, base_logits
    )
    base = scores
    scores, first = _cascade_logits(
        partitions, cpr, candidates, vectors, scores, assume_unique, stages
    )
    if head.mask_padding:
        scores = _padding_masked(candidates, scores)
    if partitions.uses_history(cpr.training, exclude_history):
        scores = _with_history_logits(
            partitions, cpr, candidates, scores, exclude_history
        )
    if first is not None:
        # Every copy of a repeated id takes its first occurrence's
        # logit (the one the cascade ranked).
        scores = tf.gather(scores, first, batch_dims=1)
    if not return_base_logits:
        return scores
    if head.mask_padding:
        base = _padding_masked(candidates, base)
    return scores, base


def _candidate_base_logits(
    reranker_ks: tuple,
    cpr: CPRInputs,
    candidates: tf.Tensor,
    base_logits: tf.Tensor | None,
) -> tuple:
    """The candidates' base logits, ``base_logits`` if given.

    Returns:
        ``(candidates, vectors, logits)``: int32 ``[B, M]``, the
        candidates per row; float32 ``[B, M, d]``, their table rows,
        when the cascade or the base logits need them (else None); and
        float32 ``[B, M]``, ``f_V e_x + b_x`` at the candidates.
    """
    f_base, ids, table, bias = cpr.f_base, cpr.ids, cpr.table, cpr.bias
    if candidates.shape.rank == 1 and (reranker_ks or base_logits is not None):
        # The cascade and given logits are per row.
        candidates = per_row(candidates, ids)
    vectors = None
    if candidates.shape.rank == 1:
        # A set shared by the batch: one [B, d] x [d, M] product.
        scores = tf.matmul(
            f_base, tf.gather(table, candidates), transpose_b=True
        )
        candidates = per_row(candidates, ids)
    else:
        if reranker_ks or base_logits is None:
            vectors = tf.gather(table, candidates)  # [B, M, d]
        if base_logits is None:
            scores = tf.einsum("bd,bmd->bm", f_base, vectors)
    if base_logits is not None:
        scores = base_logits
    elif bias is not None:
        scores += tf.gather(bias, candidates)
    return candidates, vectors, scores


def per_row(candidates: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
    """A shared candidate set ``[M]`` repeated for each row: ``[B, M]``."""
    return tf.broadcast_to(
        candidates[None, :],
        [tf.shape(ids)[0], tf.shape(candidates)[0]],
    )


def _padding_masked(candidates: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """``logits`` with the padding logit where a candidate is item 0."""
    return tf.where(tf.equal(candidates, 0), tf.constant(PADDING_LOGIT), logits)


def _with_history_logits(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidates: tf.Tensor,
    logits: tf.Tensor,
    exclude_history: Any = None,
) -> tf.Tensor:
    """``logits`` with the history partition's written over them.

    Candidates in the row's history get ``partitions.history_logits``
    (as ``call`` computes them), or the padding logit when the history is
    excluded at inference; the others keep theirs.
    """
    ids = cpr.ids
    found, position = history_positions(candidates, ids)
    if partitions.excluding(cpr.training, exclude_history):
        return tf.where(found, tf.constant(PADDING_LOGIT), logits)
    equal = None
    if partitions.head.use_pointer:
        equal = tf.equal(ids[:, :, None], ids[:, None, :])
    values = partitions.history_logits(cpr, tf.not_equal(ids, 0), equal)
    return tf.where(found, tf.gather(values, position, batch_dims=1), logits)


def _cascade_logits(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidates: tf.Tensor,
    vectors: tf.Tensor | None,
    logits: tf.Tensor,
    assume_unique: bool,
    stages: list | None,
) -> tuple:
    """``logits`` with the reranker cascade's terms.

    With ``stages`` (the sets ``call`` chose over the catalogue), each
    stage's term goes to the candidates it selected (`_merge_stages`);
    without, the cascade runs over the candidates themselves
    (`_candidate_cascade`); without rerankers, ``logits`` stay as given.

    Returns:
        ``(logits, first)``: float32 ``[B, M]``, and int32 ``[B, M]``,
        each entry's first occurrence, when the cascade ran over the
        candidates and they may repeat (else None).
    """
    if stages is not None:
        return _merge_stages(
            partitions, cpr, candidates, vectors, logits, stages
        ), None
    if not partitions.head.reranker_ks:
        return logits, None
    return _candidate_cascade(
        partitions, cpr, candidates, vectors, logits, assume_unique
    )


def _candidate_cascade(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidates: tf.Tensor,
    vectors: tf.Tensor,
    logits: tf.Tensor,
    assume_unique: bool,
) -> tuple:
    """The reranker cascade over candidate sets ``[B, M]``.

    Stage by stage (largest ``k`` first), the top-``k`` of the
    gradient-free running logits among the selectable candidates
    (first occurrences; not padding when masked), ranked by
    `sort_keys`: larger logit first, ties to the lower id, as ``call``
    ranks the catalogue (``CPRPartitions.select_top_k``). The
    selected get the stage's reranker term, merged as in ``call``.

    A repeated id enters at its first occurrence only, and its copies
    take that occurrence's logit at the end: copies' logits computed
    from rows gathered at different columns can differ in the last
    bit, and counted twice they would take two slots of a top-k.

    Returns:
        ``(logits, first)``: float32 ``[B, M]`` (valid at first
        occurrences) and int32 ``[B, M]``, each entry's first
        occurrence (None with ``assume_unique``).
    """
    first = None
    selectable = None
    if not assume_unique:
        first = first_occurrences(candidates)
        selectable = tf.equal(first, tf.range(tf.shape(candidates)[1])[None])
    if partitions.head.mask_padding:
        real = tf.not_equal(candidates, 0)
        selectable = real if selectable is None else selectable & real
    lowest = tf.int64.min
    for k, projection in partitions.reranker_stages():
        keys = sort_keys(tf.stop_gradient(logits), candidates)
        if selectable is not None:
            keys = tf.where(selectable, keys, lowest)
        # The k-th largest key (keys of selectable entries are
        # distinct; the padding columns cover rows of fewer than k).
        padded = tf.pad(keys, [[0, 0], [0, k]], constant_values=lowest)
        kth = tf.reduce_min(
            tf.math.top_k(padded, k=k, sorted=False).values, axis=1
        )
        selected = keys >= kth[:, None]
        if selectable is not None:
            selected &= selectable
        f_rerank = partitions.project(projection, cpr.query, cpr.training)
        logits = _merge_stage(
            partitions, cpr, candidates, vectors, logits, selected, f_rerank
        )
    return logits, first


def _merge_stages(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidates: tf.Tensor,
    vectors: tf.Tensor | None,
    logits: tf.Tensor,
    stages: list,
) -> tf.Tensor:
    """The cascade's terms of candidates ``[B, M]``, sets given.

    ``stages``: ``(top, f_rerank)`` per stage in cascade order, each
    ``top`` a ``[B, k]`` set of distinct ids. Membership is found by a
    sort and a binary search: ``O((k + M) log k)`` per row.
    """
    for top, f_rerank in stages:
        ordered = tf.sort(top, axis=1)
        at = tf.searchsorted(
            ordered, candidates, side="left", out_type=tf.int32
        )
        at = tf.minimum(at, tf.shape(ordered)[1] - 1)
        selected = tf.equal(tf.gather(ordered, at, batch_dims=1), candidates)
        logits = _merge_stage(
            partitions, cpr, candidates, vectors, logits, selected, f_rerank
        )
    return logits


def _merge_stage(
    partitions: CPRPartitions,
    cpr: CPRInputs,
    candidates: tf.Tensor,
    vectors: tf.Tensor | None,
    logits: tf.Tensor,
    selected: tf.Tensor,
    f_rerank: tf.Tensor,
) -> tf.Tensor:
    """One stage's term on its ``selected`` candidates (bool ``[B, M]``)."""
    scores = partitions.rerank_scores(
        f_rerank, cpr.table, cpr.bias, candidates, vectors=vectors
    )
    if partitions.head.merge == "replace":
        return tf.where(selected, scores, logits)
    return tf.where(selected, logits + scores, logits)
