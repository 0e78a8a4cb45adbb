"""The partition logits of Softmax-CPR, shared by its three scoring paths.

`CPRPartitions` holds the pieces every path of `SoftmaxCPR` scores with:
reading a call's inputs into one `CPRInputs`, the query (with Mi), the
history partition (context C and pointer P), the reranker cascade (R:k)
and how a partition's terms merge with the base logit, and the
full-catalogue logits ``call`` writes. The layer composes one (it is no
base class of the layer, so these methods are no part of the layer's
public surface); ``call`` (``softmax_cpr``), the training loss (``loss``)
and the candidate scoring (``candidates``) call its methods: no module
reaches into another's private members.

`product_and_rows`, the base product's gradient with the gathered table
rows' added in place, serves ``call`` and the loss.
"""

from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.heads.cpr.cpr_inputs import CPRInputs
from tfrec_tricks.heads.input_contract import (
    as_item_table,
    check_ids_in_range,
    unpack_head_inputs,
)
from tfrec_tricks.layers.common import (
    PADDING_LOGIT,
    batch_indices,
    is_training,
    num_rows,
)
from tfrec_tricks.layers.top_k import TWO_STAGE_MIN_RATIO, top_k_ids


def product_and_rows(
    query: tf.Tensor, table: tf.Tensor, row_ids: Any, product: tf.Tensor
) -> Any:
    """``query table^T`` (given as ``product``) and ``table[row_ids]``.

    Forward: returns ``product`` (computed by the caller without gradient)
    and the gathered rows. Backward: the matmul's gradients, with the rows'
    gradient added into the dense table gradient in place, instead of
    TensorFlow's separate sparse-to-dense conversion of the gather's
    gradient (an extra ``[N, d]`` zero-fill and sum).
    """

    @tf.custom_gradient
    def forward(query: tf.Tensor, table: tf.Tensor) -> Any:
        rows = None if row_ids is None else tf.gather(table, row_ids)

        def grad(d_product: tf.Tensor, d_rows: Any = None) -> tuple:
            d_query = tf.matmul(d_product, table)
            d_table = tf.matmul(d_product, query, transpose_a=True)
            if row_ids is not None and d_rows is not None:
                d_table = tf.tensor_scatter_nd_add(
                    d_table,
                    tf.reshape(row_ids, [-1, 1]),
                    tf.reshape(d_rows, [-1, tf.shape(table)[-1]]),
                )
            return d_query, d_table

        if rows is None:
            return tf.identity(product), grad
        return (tf.identity(product), rows), grad

    return forward(query, table)


def reranker_sizes(reranker_ks: Any) -> tuple:
    """The checked ``reranker_ks`` of `SoftmaxCPR`, a tuple of ints.

    Args:
        reranker_ks: int or sequence of int, each positive, none repeated.

    Returns:
        tuple of int.

    Raises:
        ValueError: anything else.
    """
    if isinstance(reranker_ks, (int, np.integer)):
        reranker_ks = (reranker_ks,)
    try:
        ks = tuple(reranker_ks)
    except TypeError:
        raise ValueError(
            "`reranker_ks` must be a sequence of positive ints. "
            f"Received: reranker_ks={reranker_ks!r}"
        ) from None
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise ValueError(
                "`reranker_ks` must hold ints. "
                f"Received: reranker_ks={reranker_ks!r}"
            )
        if k <= 0:
            raise ValueError(
                "Every k in `reranker_ks` must be positive. "
                f"Received: reranker_ks={reranker_ks!r}"
            )
    if len(set(ks)) != len(ks):
        raise ValueError(
            "`reranker_ks` must not repeat a k. "
            f"Received: reranker_ks={reranker_ks!r}"
        )
    return tuple(int(k) for k in ks)


def row_sources(item_embeddings: Any, item_bias: Any, units: Any) -> Any:
    """``(item_embeddings, item_bias)`` themselves when both are float32
    variables of the right shapes (or the bias None), to gather rows from;
    else None (`as_item_table` reads and checks them)."""

    def is_variable(value: Any, rank: int) -> bool:
        return (
            isinstance(value, tf.Variable)
            and value.dtype == tf.float32
            and value.shape.rank == rank
        )

    if not is_variable(item_embeddings, 2):
        return None
    if item_embeddings.shape[-1] not in (None, units):
        return None
    if item_bias is not None and not is_variable(item_bias, 1):
        return None
    return item_embeddings, item_bias


class CPRPartitions:
    """The partition logits of a `SoftmaxCPR` layer, composed by it.

    The layer creates one in its ``__init__`` and hands it to its loss
    (``loss``) and candidate scoring (``candidates``): they compose these
    methods, so the layer's own public surface stays what a user calls.
    It is a plain object, no Keras layer: it owns no weights and is no
    checkpoint dependency. It reads the layer's settings
    (``use_context``, ``use_pointer``, ``reranker_ks``, ``use_mi``,
    ``mi_layers``, ``mi_window``, ``merge``, ``exclude_history``,
    ``mask_padding``) and the sublayers the layer's ``build`` creates
    (``base_projection``, ``context_projection``, ``pointer_projection``,
    ``key_projection``, ``reranker_projections``, ``mi_projection``,
    ``dropout_layer``), which stay attributes of the layer itself, so its
    weights, their names and its checkpoints are those of one layer.

    The tensors of one call travel as one `CPRInputs` (`cpr_inputs`).
    See `SoftmaxCPR` for the partitions themselves.

    Args:
        head: the ``SoftmaxCPR`` layer whose partitions these are.

    Example:

    >>> import tensorflow as tf
    >>> import tfrec_tricks.heads
    >>> from tfrec_tricks.heads.cpr.partitions import CPRPartitions
    >>> head = tfrec_tricks.heads.SoftmaxCPR(reranker_ks=(2, 5))
    >>> inputs = {
    ...     "hidden_states": tf.random.normal((2, 4, 8)),
    ...     "history_ids": tf.constant([[0, 5, 2, 5], [7, 1, 0, 0]]),
    ... }
    >>> logits = head(inputs, tf.random.normal((10, 8)))  # builds it
    >>> [k for k, _ in CPRPartitions(head).reranker_stages()]  # largest first
    [5, 2]
    """

    def __init__(self, head: Any) -> None:
        self.head = head

    # ---------------------------------------------------------------- inputs

    def read_inputs(
        self,
        inputs: Any,
        item_embeddings: Any,
        item_bias: Any,
        rows_only: bool = False,
    ) -> tuple:
        """Checked ``(hidden, ids, layers, last, table, bias)`` of a call.

        Builds the layer first when a public method is its first call.
        ``rows_only``: float32 variables are returned as they are (to
        gather rows from, never read whole).
        """
        head = self.head
        hidden, ids, layers, last = unpack_head_inputs(inputs)
        if not head.built:
            shapes = {"hidden_states": hidden.shape}
            if layers is not None:
                shapes["layer_hidden_states"] = [x.shape for x in layers]
            # Out of any tf.function, as Keras' own first __call__ builds:
            # weights created inside a traced step (a method such as
            # `cross_entropy` called first, in a tf.distribute replica)
            # would belong to that step's graph.
            with tf.init_scope():
                head.build(shapes)
        units = head.output_dim or hidden.shape[-1]
        sources = None
        if rows_only:
            sources = row_sources(item_embeddings, item_bias, units)
        if sources is not None:
            table, bias = sources
        else:
            table, bias = as_item_table(item_embeddings, item_bias, units)
        num_items = num_rows(table)
        checks = self.check_ks(num_items, table.shape[0])
        check_ids_in_range("history_ids", ids, num_items)
        with tf.control_dependencies(checks):
            ids = tf.identity(ids)
        return hidden, ids, layers, last, table, bias

    def cpr_inputs(
        self,
        hidden: tf.Tensor,
        ids: tf.Tensor,
        layers: list | None,
        last: tf.Tensor,
        table: Any,
        bias: Any,
        training: Any,
    ) -> CPRInputs:
        """The `CPRInputs` of a call: `read_inputs`' parts, with the query
        (`query`) and its base projection (dropout if ``training``)."""
        query = self.query(hidden, ids, layers, last)
        f_base = self.project(self.head.base_projection, query, training)
        return CPRInputs(query, f_base, hidden, ids, table, bias, training)

    # ------------------------------------------------------------- settings

    def excluding(self, training: Any, exclude_history: Any = None) -> bool:
        """Whether the history is excluded: ``exclude_history`` (None: the
        layer's setting), never in training."""
        if exclude_history is None:
            exclude_history = self.head.exclude_history
        return bool(exclude_history) and not is_training(training)

    def uses_history(self, training: Any, exclude_history: Any = None) -> bool:
        """Whether the history partition writes anything (C, P or the
        exclusion)."""
        head = self.head
        return (
            head.use_context
            or head.use_pointer
            or self.excluding(training, exclude_history)
        )

    def check_ks(self, num_items: tf.Tensor, static_n: int | None) -> list:
        """Every reranker ``k`` below ``N``: ValueError if ``N`` is static,
        else the assertions to run."""
        checks = []
        reranker_ks = self.head.reranker_ks
        if not reranker_ks:
            return checks
        largest = max(reranker_ks)
        if static_n is not None:
            if largest >= static_n:
                raise ValueError(
                    "Every k in `reranker_ks` must be less than the number "
                    f"of items N={static_n} (rows of the item table, "
                    f"padding included). Received: reranker_ks="
                    f"{reranker_ks}"
                )
        else:
            checks.append(
                tf.debugging.assert_less(
                    tf.constant(largest),
                    num_items,
                    message="every k in reranker_ks must be < number of items",
                )
            )
        return checks

    def reranker_stages(self) -> list:
        """``(k, projection)`` of the rerankers in cascade order (largest
        ``k`` first)."""
        return sorted(
            zip(self.head.reranker_ks, self.head.reranker_projections),
            key=lambda pair: -pair[0],
        )

    # ----------------------------------------------------------- the query

    def project(self, layer: Any, x: tf.Tensor, training: Any) -> tf.Tensor:
        """``layer(x)`` with the layer's dropout, in float32."""
        y = layer(x)
        dropout_layer = self.head.dropout_layer
        if dropout_layer is not None:
            y = dropout_layer(y, training=training)
        return tf.cast(y, tf.float32)

    def query(
        self,
        hidden: tf.Tensor,
        ids: tf.Tensor,
        layers: list | None,
        last: tf.Tensor,
    ) -> tf.Tensor:
        """The query q the partitions' projections read.

        Args:
            hidden: float ``[B, L, d_h]``, the last layer's states.
            ids: int ``[B, L]``, the history ids (padding 0).
            layers: list of ``[B, L, d_h]`` per encoder layer (first to
                last) or None for ``[hidden]``.
            last: int ``[B]``, the true last position of each row.

        Returns:
            ``h`` (``[B, d_h]``) without Mi; ``[h ; gelu(W_M ...)]``
            (``[B, 2 d_h]``) with Mi.
        """
        head = self.head
        h = tf.gather(hidden, last, batch_dims=1)
        if not head.use_mi:
            return h
        sources = layers if layers else [hidden]
        # The window's positions, last first: [B, w]; one gather per layer.
        position = last[:, None] - tf.range(head.mi_window)[None, :]
        inside = position >= 0
        position = tf.maximum(position, 0)
        real = tf.gather(ids, position, batch_dims=1) != 0
        parts = []
        for states in sources[::-1][: head.mi_layers]:
            vectors = tf.gather(
                tf.cast(states, hidden.dtype), position, batch_dims=1
            )  # [B, w, d_h]
            vectors *= tf.cast(inside & real, vectors.dtype)[:, :, None]
            parts.append(
                tf.reshape(vectors, [-1, vectors.shape[-1] * head.mi_window])
            )
        mixed = head.mi_projection(tf.concat(parts, axis=-1))
        mixed = tf.nn.gelu(mixed, approximate=True)
        return tf.concat([h, tf.cast(mixed, h.dtype)], axis=-1)

    # ------------------------------------------------- the history partition

    def history_logits(
        self,
        inputs: CPRInputs,
        valid: tf.Tensor,
        equal: tf.Tensor | None,
        vectors: tf.Tensor | None = None,
    ) -> tf.Tensor:
        """Logit of the history item at each position, ``[B, L]`` (C, P).

        Identical for every occurrence of an item up to float rounding;
        callers read the first occurrence.

        Args:
            inputs: the call's `CPRInputs` (``[B, q]`` query).
            valid: bool ``[B, L]``, ``ids != 0``.
            equal: bool ``[B, L, L]``, ``ids[:, :, None] == ids[:, None]``
                (read by the pointer only; None without it).
            vectors: ``table[ids]`` if already gathered.
        """
        head = self.head
        query, f_base, ids = inputs.query, inputs.f_base, inputs.ids
        bias, training = inputs.bias, inputs.training
        if vectors is None:
            vectors = tf.gather(inputs.table, ids)  # [B, L, d]
        if head.merge == "replace":
            f_item = f_base
            if head.use_context:
                f_item = self.project(head.context_projection, query, training)
            values = tf.einsum("bd,bld->bl", f_item, vectors)
            if bias is not None:
                values += tf.gather(bias, ids)
        else:
            values = tf.einsum("bd,bld->bl", f_base, vectors)
            if bias is not None:
                values += tf.gather(bias, ids)
            if head.use_context:
                f_context = self.project(
                    head.context_projection, query, training
                )
                values += tf.einsum("bd,bld->bl", f_context, vectors)
        if head.use_pointer:
            f_pointer = self.project(head.pointer_projection, query, training)
            # f_P . (W_L H_t + b_L) = H_t . (W_L^T f_P) + f_P . b_L: no
            # [B, L, d] keys are materialised.
            kernel = tf.cast(head.key_projection.kernel, tf.float32)
            key_bias = tf.cast(head.key_projection.bias, tf.float32)
            reader = tf.matmul(f_pointer, kernel, transpose_b=True)
            scores = (
                tf.einsum(
                    "bd,bld->bl", reader, tf.cast(inputs.hidden, tf.float32)
                )
                + tf.linalg.matvec(f_pointer, key_bias)[:, None]
            )  # [B, L]
            same = tf.cast(equal & valid[:, None, :], tf.float32)
            count = tf.maximum(tf.reduce_sum(same, axis=-1), 1.0)
            values += tf.reduce_sum(same * scores[:, None, :], axis=-1) / count
        return values

    def history_values(
        self,
        inputs: CPRInputs,
        valid: tf.Tensor,
        vectors: tf.Tensor | None,
        equal: tf.Tensor | None = None,
        exclude_history: Any = None,
    ) -> tf.Tensor:
        """What the history partition writes, ``[B, L]``: ``-1e9`` when
        excluded at inference (``exclude_history``: None, the layer's
        setting), else `history_logits` (``equal`` computed here if the
        pointer needs it and none is given)."""
        ids = inputs.ids
        if self.excluding(inputs.training, exclude_history):
            return tf.fill(tf.shape(ids), PADDING_LOGIT)
        if equal is None and self.head.use_pointer:
            equal = tf.equal(ids[:, :, None], ids[:, None, :])
        return self.history_logits(inputs, valid, equal, vectors=vectors)

    # ------------------------------------------------------- the rerankers

    def select_top_k(
        self, logits: tf.Tensor, k: int, skip_padding: bool, training: Any
    ) -> tf.Tensor:
        """Top-``k`` ids of gradient-free ``logits``, id 0 excluded if asked.

        ``skip_padding``: the padding logit is not masked yet; take ``k+1``
        and drop id 0 (or, if absent, the smallest): the same set as
        ``top_k`` over logits with padding masked. Training needs only the
        set (the rerankers score it in any order), so it runs the unsorted
        ``top_k`` kernel (10-15% faster than the sorted one at k=101 over
        2,917 items, about 1% of a CPR training step); inference keeps the
        sorted selection whose ties go to the lower id, as the serving
        index's.
        """
        count = k + 1 if skip_padding else k
        n = logits.shape[-1]
        unsorted = is_training(training) and (
            n is None or n < TWO_STAGE_MIN_RATIO * count
        )
        if unsorted:
            values, top = tf.math.top_k(logits, count, sorted=False)
        else:
            top = top_k_ids(logits, count)
        if not skip_padding:
            return top
        is_padding = tf.equal(top, 0)
        if unsorted:
            smallest = tf.argmin(values, axis=1, output_type=tf.int32)
        else:
            smallest = tf.fill(tf.shape(top)[:1], k)
        drop = tf.where(
            tf.reduce_any(is_padding, axis=1),
            tf.argmax(tf.cast(is_padding, tf.int32), 1, output_type=tf.int32),
            smallest,
        )
        # Drop column `drop` of each row: the columns after it move left
        # (cheaper than a boolean mask, and the shape stays static).
        return tf.where(
            tf.range(k)[None, :] < drop[:, None], top[:, :k], top[:, 1:]
        )

    def rerank_scores(
        self,
        f_rerank: tf.Tensor,
        table: tf.Tensor,
        bias: tf.Tensor | None,
        top: tf.Tensor,
        vectors: tf.Tensor | None = None,
    ) -> tf.Tensor:
        """A reranker's term of the items ``top`` (``[B, k]``), bias
        included under ``merge="replace"``. ``table`` and ``bias`` are
        explicit: the cascade's selection passes them without gradient."""
        if vectors is None:
            vectors = tf.gather(table, top)
        scores = tf.einsum("bd,bkd->bk", f_rerank, vectors)
        if self.head.merge == "replace" and bias is not None:
            scores += tf.gather(bias, top)
        return scores

    def merge_scores(
        self, logits: tf.Tensor, top: tf.Tensor, scores: tf.Tensor
    ) -> tf.Tensor:
        """``logits`` with ``scores`` written at ``top`` (``merge``)."""
        index = batch_indices(top)
        if self.head.merge == "replace":
            return tf.tensor_scatter_nd_update(logits, index, scores)
        return tf.tensor_scatter_nd_add(logits, index, scores)

    def select_stages(
        self,
        inputs: CPRInputs,
        query: tf.Tensor | None = None,
        f_base: tf.Tensor | None = None,
        f_reranks: list | None = None,
    ) -> tuple:
        """The gradient-free base product and the rerankers' sets.

        Args:
            inputs: the call's `CPRInputs` (its table, bias, training and,
                unless given, query and base projection).
            query, f_base: the rows to select for when they are not
                ``inputs``' own (``position_cross_entropy``'s targets,
                ``[M, q]`` and ``[M, d]``). Defaults to ``None``.
            f_reranks: the rerankers' projections of the query in cascade
                order, if already taken (else they are taken here).
                Defaults to ``None``.

        Returns:
            ``(product, selected)``: float32 ``[B, N]``, ``f_V E^T``
            without gradient (no bias), and ``(top, f_rerank)`` per stage
            in cascade order (largest ``k`` first), each ``top`` a
            ``[B, k]`` set chosen on the gradient-free running logits
            (padding skipped when masked).
        """
        if query is None:
            query = inputs.query
        if f_base is None:
            f_base = inputs.f_base
        training, bias = inputs.training, inputs.bias
        frozen_table = tf.stop_gradient(inputs.table)
        frozen_bias = None if bias is None else tf.stop_gradient(bias)
        product = tf.matmul(
            tf.stop_gradient(f_base), frozen_table, transpose_b=True
        )  # [B, N]
        running = product if bias is None else product + frozen_bias
        stages = self.reranker_stages()
        selected = []
        for j, (k, projection) in enumerate(stages):
            top = self.select_top_k(
                running, k, self.head.mask_padding, training
            )
            if f_reranks is None:
                f_rerank = self.project(projection, query, training)
            else:
                f_rerank = f_reranks[j]
            selected.append((top, f_rerank))
            if j + 1 < len(stages):
                scores = self.rerank_scores(
                    tf.stop_gradient(f_rerank), frozen_table, frozen_bias, top
                )
                running = self.merge_scores(running, top, scores)
        return product, selected

    # -------------------------------------------------- the whole catalogue

    def product_with_rows(
        self,
        inputs: CPRInputs,
        product: tf.Tensor,
        selected: list,
        uses_history: bool,
    ) -> tuple:
        """The base product with its gradient, and the rows ``call`` reads.

        One gather of table rows for the history (if ``uses_history``)
        and every stage's set, through `product_and_rows`.

        Returns:
            ``(product, history_vectors, stage_vectors)``: float32
            ``[B, N]``, ``f_V E^T`` with gradient; ``table[ids]`` or None;
            ``table[top]`` per stage of ``selected`` (None each if none is
            gathered).
        """
        f_base, table = inputs.f_base, inputs.table
        gathered = [top for top, _ in selected]
        if uses_history:
            gathered = [inputs.ids] + gathered
        history_vectors, stage_vectors = None, [None] * len(selected)
        if gathered:
            sizes = [x.shape[1] or tf.shape(x)[1] for x in gathered]
            product, rows = product_and_rows(
                f_base, table, tf.concat(gathered, axis=1), product
            )
            parts = tf.split(rows, sizes, axis=1)
            if uses_history:
                history_vectors, parts = parts[0], parts[1:]
            stage_vectors = parts
        else:
            product = product_and_rows(f_base, table, None, product)
        return product, history_vectors, stage_vectors

    def reranked_logits(
        self,
        inputs: CPRInputs,
        product: tf.Tensor,
        num_items: tf.Tensor,
        selected: list,
        stage_vectors: list,
        pad_in_scatter: bool,
    ) -> tuple:
        """The base logits, and the logits with the rerankers' terms merged.

        Returns:
            ``(logits, base_logits)``, float32 ``[B, N]``: padding masked
            in ``base_logits`` (with ``mask_padding``) and in ``logits``
            unless the history scatter masks it (``pad_in_scatter``).
        """
        table, bias = inputs.table, inputs.bias
        logits = product if bias is None else product + bias
        base_logits = logits
        if self.head.mask_padding:
            is_padding = tf.equal(tf.range(num_items), 0)
            base_logits = tf.where(
                is_padding, tf.constant(PADDING_LOGIT), logits
            )
            if not pad_in_scatter:
                logits = base_logits

        for (top, f_rerank), vectors in zip(selected, stage_vectors):
            scores = self.rerank_scores(
                f_rerank, table, bias, top, vectors=vectors
            )
            logits = self.merge_scores(logits, top, scores)
        return logits, base_logits

    def scatter_history(
        self,
        inputs: CPRInputs,
        logits: tf.Tensor,
        valid: tf.Tensor,
        history_vectors: tf.Tensor | None,
        pad_in_scatter: bool,
        exclude_history: Any = None,
    ) -> tf.Tensor:
        """``logits`` with the history partition's values written in (C, P).

        One scatter of the ``<= L`` history logits (`history_values`),
        which also masks padding when ``pad_in_scatter``.
        """
        ids = inputs.ids
        equal = tf.equal(ids[:, :, None], ids[:, None, :])  # [B, L, L]
        values = self.history_values(
            inputs,
            valid,
            history_vectors,
            equal,
            exclude_history=exclude_history,
        )
        # Padding positions write the padding logit.
        if self.head.mask_padding:
            values = tf.where(valid, values, PADDING_LOGIT)
        else:
            values = tf.where(valid, values, logits[:, :1])
        # Every occurrence of an item writes the first occurrence's
        # value; only that one carries the gradient (a scatter with
        # duplicate indices would count it once per occurrence).
        first = tf.argmax(
            tf.cast(equal, tf.int32), axis=2, output_type=tf.int32
        )
        is_first = tf.equal(first, tf.range(tf.shape(ids)[1])[None, :])
        copies = tf.stop_gradient(tf.gather(values, first, batch_dims=1))
        values = tf.where(is_first, values, copies)
        columns = ids
        if pad_in_scatter:  # also rows without padding positions
            zeros = tf.zeros_like(ids[:, :1])
            columns = tf.concat([ids, zeros], axis=1)
            values = tf.concat(
                [values, tf.cast(zeros, tf.float32) + PADDING_LOGIT], 1
            )
        return tf.tensor_scatter_nd_update(
            logits, batch_indices(columns), values
        )

    def catalogue_logits(
        self,
        inputs: CPRInputs,
        valid: tf.Tensor,
        num_items: Any,
        exclude_history: Any = None,
    ) -> tuple:
        """``call``'s logits of the whole catalogue, and its base logits.

        The reranker cascade's sets (`select_stages`), one gather of the
        rows they and the history read (`product_with_rows`), the
        rerankers' terms merged (`reranked_logits`) and the history
        partition written in (`scatter_history`).

        Args:
            inputs: the call's `CPRInputs`.
            valid: bool ``[B, L]``, ``ids != 0``.
            num_items: ``N``.
            exclude_history: bool or None (the layer's).

        Returns:
            ``(logits, base_logits)``, float32 ``[B, N]`` each.
        """
        uses_history = self.uses_history(inputs.training, exclude_history)
        # With a history scatter, padding is masked by that same scatter
        # (one [B, N] pass fewer).
        pad_in_scatter = self.head.mask_padding and uses_history
        # The product f_V E^T is computed once, without gradient; the
        # selections read it, and `product_and_rows` gives it back
        # with the matmul's gradient plus that of the gathered table rows,
        # added in place (no separate sparse-to-dense table gradient).
        product, selected = self.select_stages(inputs)
        product, history_vectors, stage_vectors = self.product_with_rows(
            inputs, product, selected, uses_history
        )
        logits, base_logits = self.reranked_logits(
            inputs,
            product,
            num_items,
            selected,
            stage_vectors,
            pad_in_scatter,
        )
        if uses_history:
            logits = self.scatter_history(
                inputs,
                logits,
                valid,
                history_vectors,
                pad_in_scatter,
                exclude_history,
            )
        return logits, base_logits
