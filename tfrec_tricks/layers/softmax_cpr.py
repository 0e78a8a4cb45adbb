"""Softmax-CPR: partitioned output logits for sequential recommenders."""

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.layers.common import (
    PADDING_LOGIT,
    check_head_arguments,
    dense_projection,
)
from tfrec_tricks.serialization import register

_MERGE_MODES = ("replace", "add")


def true_last_positions(history_ids: tf.Tensor) -> tf.Tensor:
    """Index of the last non-padding id of each row of ``history_ids``.

    Works for left- and right-padded rows. A row with no real id (all
    padding) gets the last index ``L - 1``, as a left-padded row would.

    Args:
        history_ids: int tensor ``[B, L]``, padding id 0.

    Returns:
        int32 tensor ``[B]``.
    """
    valid = tf.cast(tf.not_equal(history_ids, 0), tf.int32)
    length = tf.shape(history_ids)[1]
    from_end = tf.argmax(
        tf.reverse(valid, axis=[1]), axis=1, output_type=tf.int32
    )
    return length - 1 - from_end


def unpack_head_inputs(inputs: Any) -> tuple:
    """Checks the ``inputs`` dict of an output head; returns its parts.

    Returns:
        ``(hidden_states, history_ids, layer_hidden_states or None,
        last_positions)``, with ``history_ids`` cast to int32 and
        ``last_positions`` int32 [B]: the given ``"last_positions"`` or,
        when absent, ``true_last_positions(history_ids)``.
    """
    keys = {"hidden_states", "history_ids"}
    optional = {"layer_hidden_states", "last_positions"}
    if not isinstance(inputs, Mapping):
        raise ValueError(
            "`inputs` must be a dict with keys 'hidden_states' [B, L, d] and "
            "'history_ids' [B, L] (and optionally 'layer_hidden_states', "
            f"'last_positions'). Received: inputs={type(inputs).__name__}"
        )
    if not keys <= set(inputs) or not set(inputs) <= keys | optional:
        raise ValueError(
            "`inputs` needs keys 'hidden_states' and 'history_ids' and may "
            "have 'layer_hidden_states' and 'last_positions'. "
            f"Received: keys={sorted(inputs)}"
        )
    hidden = tf.convert_to_tensor(inputs["hidden_states"])
    ids = tf.convert_to_tensor(inputs["history_ids"])
    if hidden.shape.rank != 3 or ids.shape.rank != 2:
        raise ValueError(
            "`hidden_states` must be [B, L, d] and `history_ids` [B, L]. "
            f"Received: hidden_states.shape={hidden.shape}, "
            f"history_ids.shape={ids.shape}"
        )
    if not ids.dtype.is_integer:
        raise ValueError(
            "`history_ids` must be integers. "
            f"Received: history_ids.dtype={ids.dtype.name}"
        )
    layers = inputs.get("layer_hidden_states")
    if layers is not None:
        layers = [tf.convert_to_tensor(x) for x in layers]
    ids = tf.cast(ids, tf.int32)
    last = inputs.get("last_positions")
    if last is None:
        last = true_last_positions(ids)
    else:
        last = tf.convert_to_tensor(last)
        if last.shape.rank != 1 or not last.dtype.is_integer:
            raise ValueError(
                "`last_positions` must be integers [B]. Received: "
                f"shape={last.shape}, dtype={last.dtype.name}"
            )
        last = tf.cast(last, tf.int32)
    return hidden, ids, layers, last


def check_ids_in_range(name: str, ids: tf.Tensor, num_items: Any) -> None:
    """Raises ValueError (eager only) when an id is outside ``[0, N)``."""
    if not tf.executing_eagerly() or not hasattr(ids, "numpy"):
        return
    values = np.asarray(ids.numpy())
    n = int(num_items)
    bad = values[(values < 0) | (values >= n)]
    if bad.size:
        raise ValueError(
            f"`{name}` must be item ids in [0, {n}) (the item table has "
            f"{n} rows). Received: {name} containing {int(bad.flat[0])}"
        )


def _as_table(item_embeddings: Any, item_bias: Any) -> tuple:
    table = tf.cast(tf.convert_to_tensor(item_embeddings), tf.float32)
    if table.shape.rank != 2:
        raise ValueError(
            "`item_embeddings` must be the item table [N, d]. "
            f"Received: item_embeddings.shape={table.shape}"
        )
    bias = None
    if item_bias is not None:
        bias = tf.cast(tf.convert_to_tensor(item_bias), tf.float32)
        if bias.shape.rank != 1:
            raise ValueError(
                "`item_bias` must be a vector [N]. "
                f"Received: item_bias.shape={bias.shape}"
            )
    return table, bias


def _is_training(training: Any) -> bool:
    """Python bool of a ``training`` argument (None or unknown: inference)."""
    if training is None:
        return False
    value = tf.get_static_value(training)
    return bool(value) if value is not None else False


#: ``top_k_ids`` splits the selection in two stages from ``n / k`` on.
TWO_STAGE_MIN_RATIO = 200


def top_k_ids(logits: tf.Tensor, k: int) -> tf.Tensor:
    """``tf.math.top_k(logits, k).indices``, faster for long rows.

    Exact, ties included (lower index first). For rows of statically
    known length ``n >= TWO_STAGE_MIN_RATIO * k`` it splits each row into
    groups of ``c`` (about ``sqrt(n / k)``) items, keeps the ``k`` groups
    with the largest maxima (every top-``k`` item is in one of them), and
    runs the ``top_k`` kernel on those ``k c`` items only: ``O(n)`` cheap
    work plus two small ``top_k`` calls instead of one ``top_k`` over
    ``n``. Shorter rows use ``top_k`` directly: below that ratio the two
    small calls cost more than the one (measured on CPU at batch 256:
    1.5x slower at n=2,917, k=101; 0.87x at n=20,000, k=101).
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


def _product_and_rows(
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


def _batch_indices(ids: tf.Tensor) -> tf.Tensor:
    """``[B, K]`` column ids -> ``[B, K, 2]`` (row, column) scatter indices."""
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(ids))
    return tf.stack([rows, ids], axis=-1)


@register
class SoftmaxCPR(tf.keras.layers.Layer):
    """Softmax-CPR output layer: per-partition projections of the query.

    A plain softmax head scores every item ``x`` with one query vector,
    ``f_V . e_x`` where ``f_V = W_V h + b_V`` and ``e_x`` is row ``x`` of
    the item table. Softmax-CPR (Chang et al., 2024) splits the catalogue
    into partitions, each scored by its own projection of the query:

    - **C, context** (``use_context``): items of the history get
      ``f_C . e_x``.
    - **P, pointer** (``use_pointer``): items of the history also get
      ``f_P . mean_{t: history_t = x} (W_L H_t + b_L)``, a key per
      occurrence taken from the hidden state at that position (averaged
      over duplicates), so the model can learn when to copy. With
      ``use_context=False`` the item term of the history items is
      ``f_V . e_x``.
    - **R:k, rerankers** (``reranker_ks``): items among the top ``k`` of
      the running logits but not in the history get ``f_R_k . e_x``. The
      rerankers form a cascade, as in the authors' RecBole code: they run
      from the largest ``k`` to the smallest (whatever order is given);
      the largest takes the top ``k`` of the ``f_V`` logits, each next one
      the top ``k`` of the logits the previous reranker left. So with
      several ``k`` the smallest ``k``'s reranker scores the very top.
      The selection is ``tf.math.top_k`` without gradient (``stop_gradient``
      on its input); ties go to the lower item id. Padding is never
      selected (unless ``mask_padding=False``). History items can occupy
      top-``k`` slots; the history partition overrides them.
    - **O/W**: every other item keeps ``f_V . e_x``.
    - **Mi** (``use_mi``): the projections read
      ``q = [h ; gelu(W_M concat(H^l_t, H^l_{t-1}, ..., H^l_{t-w+1}))]``
      (size ``2 d_h``) over the last ``mi_layers`` encoder layers ``l``
      (last layer first) and ``w = mi_window`` positions ending at the
      true last position ``t`` (tanh-approximated GELU, as the reference).
      Positions before the start of the history (index < 0 or a padding
      id) contribute zeros. Without Mi, ``q = h``.

    ``merge="replace"`` (the reference) makes a partition's logit replace
    the base logit: history items get ``C (+P)`` whatever the top-k sets
    say, then rerankers, then ``f_V``. ``merge="add"`` adds the partition
    terms to the base logit: history items get ``f_V.e_x + f_C.e_x + P``,
    top-k items ``f_V.e_x`` plus the reranker term of every cascade stage
    that selected them.

    The item bias ``b_x`` (if given) is part of the item's output
    representation, so it is added exactly once to every item's logit,
    whichever partition scores it (the reference has no bias).

    ``h`` is the hidden state at the *true* last position of each row,
    the last non-padding id of ``history_ids`` (rows may be left- or
    right-padded), or the given ``last_positions``. A row with no real id
    reads position ``L - 1`` (pass ``last_positions`` to choose another,
    e.g. 0 for right-padded rows, so that the answer does not depend on
    ``L``), has an empty history (no C/P items) and gets finite ``f_V`` /
    reranker logits. Padding id 0 never enters a partition and, with
    ``mask_padding``, its logit is ``-1e9``.

    ``exclude_history`` is "softmax without duplication": when ``training``
    is false the history items' logits are ``-1e9`` (after everything
    else); training is unaffected.

    Cost beyond a plain softmax: one ``[B, L, L]`` duplicate comparison,
    ``O(L d)`` work for C and P (the pointer scores are computed as
    ``H_t . (W_L^T f_P)``, without materialising keys), one scatter of the
    ``<= L`` history logits (which also masks padding), and per reranker
    an exact top-``k`` selection over the ``[B, N]`` logits (see
    `top_k_ids`) plus ``O(k d)`` work and one scatter. No ``[B, N, d]`` or
    ``[B, L, N]`` tensor is built, and the gradient of the gathered table
    rows is added in place into the matmul's dense table gradient.

    All logits are computed in float32, also under ``mixed_float16``; the
    projections run in the layer's compute dtype.

    The pointer keys are ``W_L H_t + b_L`` of the last layer's hidden
    states (the reference projects the Mi input at each position
    instead). ``W_L`` maps ``d_h`` to ``output_dim``.

    Args:
        use_context: bool. Context partition C. Defaults to ``True``.
        use_pointer: bool. Pointer term P. Defaults to ``True``.
        reranker_ks: sequence of int. Sizes ``k`` of the reranker
            partitions, e.g. ``(100,)`` or ``(20, 100, 500)``; empty for
            none. Each ``k`` must be positive and less than the number of
            items ``N`` (checked at call). Defaults to ``(100,)``.
        use_mi: bool. Multiple input hidden states. Defaults to ``False``.
        mi_layers: int. With Mi, how many of the last encoder layers to
            read (``inputs["layer_hidden_states"]`` must hold at least that
            many). Defaults to ``2``.
        mi_window: int. With Mi, how many positions ending at the last one
            to read per layer. Defaults to ``3``.
        merge: str. ``"replace"`` or ``"add"``, see above. Defaults to
            ``"replace"``.
        dropout: float. Dropout rate on the query projections' outputs
            ``f_V, f_C, f_P, f_R`` (training only; the pointer keys and
            ``W_M`` are not dropped). Defaults to ``0.0``.
        exclude_history: bool. At inference, give history items the logit
            ``-1e9``. Defaults to ``False``.
        mask_padding: bool. Give padding id 0 the logit ``-1e9`` and keep
            it out of the top-k sets. Defaults to ``True``.
        output_dim: int or None. Size of the item table's rows; ``None``
            means the hidden size ``d_h``. Defaults to ``None``.
        start_as_softmax: bool. Initialise the layer as the tied softmax
            ``h E^T + b`` it extends: the base projection's kernel is the
            identity on ``h`` (zeros on the Mi half of ``q``), the context
            and reranker kernels equal it (``merge="replace"``) or are zero
            (``"add"``), and the pointer kernel is zero. With bias
            initializer ``"zeros"`` and ``output_dim`` equal to ``d_h``,
            the first logits are exactly ``h E^T + b``: training starts
            from the softmax's inductive bias (its state already points at
            the items just seen) instead of random projections of ``h``.
            The Mi and key projections keep ``kernel_initializer``.
            Defaults to ``False``.
        kernel_initializer: str or initializer. Kernels of the
            projections (see ``start_as_softmax``). Defaults to
            ``"glorot_uniform"``.
        bias_initializer: str or initializer. Biases of the projections.
            Defaults to ``"zeros"``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``.

    Call arguments:
        inputs: dict with
            ``"hidden_states"``: float ``[B, L, d_h]``, the encoder's last
            layer at every position;
            ``"history_ids"``: int ``[B, L]``, the history, padding 0;
            ``"layer_hidden_states"`` (optional, Mi only): list of float
            ``[B, L, d_h]``, the output of every encoder layer, first to
            last (the last is normally ``hidden_states``). Without it, Mi
            reads ``[hidden_states]`` only, so ``mi_layers`` must be 1.
            ``"last_positions"`` (optional): int ``[B]``, the position
            whose state is ``h`` (Mi reads the window ending there);
            defaults to each row's last non-padding position.
        item_embeddings: float ``[N, output_dim]``, the item table (e.g.
            ``TiedItemEmbedding.output_embeddings``); row 0 is padding.
        item_bias: float ``[N]`` or None. Per-item output bias (e.g.
            ``TiedItemEmbedding.output_bias``). Defaults to ``None``.
        candidate_ids: int ``[M]`` (shared by the batch) or ``[B, M]`` or
            None. Score only these items; the scores equal the full logits
            at those ids (a candidate is in the context partition iff it
            is in that example's history). Without rerankers this costs
            ``O(M d + M L)`` per example and never touches the rest of the
            catalogue; with rerankers the top-k sets depend on the whole
            catalogue, so the full ``[B, N]`` logits are computed and
            gathered (``O(N d)`` per example). Defaults to ``None``.
        training: bool. Enables dropout; disables ``exclude_history``.

    Returns:
        float32 logits ``[B, N]``, or ``[B, M]`` with ``candidate_ids``.
        History ids outside ``[0, N)`` raise ValueError in eager mode.

    Example:

    >>> import tensorflow as tf
    >>> import tfrec_tricks.layers
    >>> head = tfrec_tricks.layers.SoftmaxCPR(reranker_ks=(3,))
    >>> inputs = {
    ...     "hidden_states": tf.random.normal((2, 4, 8)),
    ...     "history_ids": tf.constant([[0, 5, 2, 5], [7, 1, 0, 0]]),
    ... }
    >>> table = tf.random.normal((10, 8))
    >>> logits = head(inputs, table, item_bias=tf.zeros(10))
    >>> print(logits.shape, logits.dtype.name, float(logits[0, 0]))
    (2, 10) float32 -1000000000.0
    >>> print(head(inputs, table, candidate_ids=tf.constant([2, 5, 9])).shape)
    (2, 3)
    >>> mi = tfrec_tricks.layers.SoftmaxCPR(
    ...     reranker_ks=(3,), use_mi=True, mi_layers=2)
    >>> layers = [tf.random.normal((2, 4, 8)), inputs["hidden_states"]]
    >>> print(mi({**inputs, "layer_hidden_states": layers}, table).shape)
    (2, 10)

    References:
        - [Chang, Agarwal and McCallum, WSDM 2024](
          https://arxiv.org/abs/2310.14079): To Copy, or not to Copy; That
          is a Critical Issue of the Output Softmax Layer in Neural
          Sequential Recommenders.
        - [Chang and McCallum, ACL 2022](https://arxiv.org/abs/2204.07244):
          Softmax bottleneck makes language models unable to represent
          multi-mode word distributions (Mi).
    """

    def __init__(
        self,
        use_context: bool = True,
        use_pointer: bool = True,
        reranker_ks: Sequence[int] = (100,),
        use_mi: bool = False,
        mi_layers: int = 2,
        mi_window: int = 3,
        merge: str = "replace",
        dropout: float = 0.0,
        exclude_history: bool = False,
        mask_padding: bool = True,
        output_dim: int | None = None,
        start_as_softmax: bool = False,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        **kwargs: Any,
    ) -> None:
        # The item table arrives as a call argument: keep it float32 (Keras
        # 3 would otherwise cast every float argument to float16 under
        # mixed precision). The projections cast their own inputs.
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
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
        if merge not in _MERGE_MODES:
            raise ValueError(
                f"`merge` must be one of {_MERGE_MODES}. "
                f"Received: merge={merge!r}"
            )
        for name, value in (("mi_layers", mi_layers), ("mi_window", mi_window)):
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < 1
            ):
                raise ValueError(
                    f"`{name}` must be an int >= 1. Received: {name}={value!r}"
                )
        check_head_arguments(dropout, output_dim)
        self.use_context = bool(use_context)
        self.use_pointer = bool(use_pointer)
        self.reranker_ks = tuple(int(k) for k in ks)
        self.use_mi = bool(use_mi)
        self.mi_layers = mi_layers
        self.mi_window = mi_window
        self.merge = merge
        self.dropout = float(dropout)
        self.exclude_history = bool(exclude_history)
        self.mask_padding = bool(mask_padding)
        self.output_dim = output_dim
        self.start_as_softmax = bool(start_as_softmax)
        self.kernel_initializer = tf.keras.initializers.get(kernel_initializer)
        self.bias_initializer = tf.keras.initializers.get(bias_initializer)

    # ------------------------------------------------------------------ build

    def build(self, input_shape: Any) -> None:
        if not isinstance(input_shape, Mapping) or (
            "hidden_states" not in input_shape
        ):
            raise ValueError(
                "`inputs` must be a dict with 'hidden_states' and "
                f"'history_ids'. Received: input_shape={input_shape}"
            )
        hidden_dim = tf.TensorShape(input_shape["hidden_states"])[-1]
        if hidden_dim is None:
            raise ValueError(
                "The last axis of `hidden_states` must be known. "
                f"Received: hidden_states shape={input_shape['hidden_states']}"
            )
        hidden_dim = int(hidden_dim)
        units = self.output_dim or hidden_dim
        query_dim = hidden_dim
        self.mi_projection = None
        if self.use_mi:
            layers = input_shape.get("layer_hidden_states")
            num_layers = 1 if layers is None else len(layers)
            if num_layers < self.mi_layers:
                raise ValueError(
                    f"Mi reads the last {self.mi_layers} encoder layers but "
                    f"inputs['layer_hidden_states'] gives {num_layers} "
                    "(without it, only 'hidden_states'); pass every layer's "
                    "output or set mi_layers=1. "
                    f"Received: mi_layers={self.mi_layers}"
                )
            self.mi_projection = dense_projection(
                self,
                "mi_projection",
                hidden_dim,
                hidden_dim * self.mi_layers * self.mi_window,
            )
            query_dim = 2 * hidden_dim
        # start_as_softmax: f_V = h exactly (identity on h, zeros on the Mi
        # half); every partition term starts equal to it ("replace") or at
        # zero ("add"), so the layer's first logits are the tied softmax's.
        identity = "identity" if self.start_as_softmax else None
        zeros = "zeros" if self.start_as_softmax else None
        partition = identity if self.merge == "replace" else zeros
        self.base_projection = dense_projection(
            self, "base_projection", units, query_dim, identity
        )
        self.context_projection = None
        if self.use_context:
            self.context_projection = dense_projection(
                self, "context_projection", units, query_dim, partition
            )
        self.pointer_projection = None
        self.key_projection = None
        if self.use_pointer:
            self.pointer_projection = dense_projection(
                self, "pointer_projection", units, query_dim, zeros
            )
            self.key_projection = dense_projection(
                self, "key_projection", units, hidden_dim
            )
        self.reranker_projections = [
            dense_projection(
                self, f"reranker_projection_{k}", units, query_dim, partition
            )
            for k in self.reranker_ks
        ]
        self.dropout_layer = None
        if self.dropout > 0:
            self.dropout_layer = tf.keras.layers.Dropout(
                self.dropout, dtype=self.dtype_policy
            )
        super().build(input_shape)

    # ------------------------------------------------------------------ call

    def _project(self, layer: Any, x: tf.Tensor, training: Any) -> tf.Tensor:
        y = layer(x)
        if self.dropout_layer is not None:
            y = self.dropout_layer(y, training=training)
        return tf.cast(y, tf.float32)

    def query(
        self,
        hidden: tf.Tensor,
        ids: tf.Tensor,
        layers: list | None,
        last: tf.Tensor,
    ) -> tf.Tensor:
        """The query q the partitions' projections read.

        Public so that a serving path that scores a candidate set (see
        ``tfrec_tricks.export``) computes exactly the layer's query.

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
        h = tf.gather(hidden, last, batch_dims=1)
        if not self.use_mi:
            return h
        sources = layers if layers else [hidden]
        # The window's positions, last first: [B, w]; one gather per layer.
        position = last[:, None] - tf.range(self.mi_window)[None, :]
        inside = position >= 0
        position = tf.maximum(position, 0)
        real = tf.gather(ids, position, batch_dims=1) != 0
        parts = []
        for states in sources[::-1][: self.mi_layers]:
            vectors = tf.gather(
                tf.cast(states, hidden.dtype), position, batch_dims=1
            )  # [B, w, d_h]
            vectors *= tf.cast(inside & real, vectors.dtype)[:, :, None]
            parts.append(
                tf.reshape(vectors, [-1, vectors.shape[-1] * self.mi_window])
            )
        mixed = self.mi_projection(tf.concat(parts, axis=-1))
        mixed = tf.nn.gelu(mixed, approximate=True)
        return tf.concat([h, tf.cast(mixed, h.dtype)], axis=-1)

    def history_logits(
        self,
        query: tf.Tensor,
        f_base: tf.Tensor,
        hidden: tf.Tensor,
        ids: tf.Tensor,
        valid: tf.Tensor,
        equal: tf.Tensor,
        table: tf.Tensor,
        bias: tf.Tensor | None,
        training: Any,
        vectors: tf.Tensor | None = None,
    ) -> tf.Tensor:
        """Logit of the history item at each position, ``[B, L]`` (C, P).

        Identical for every occurrence of an item up to float rounding;
        callers read the first occurrence. Public so that a serving path
        that re-scores a candidate set (``tfrec_tricks.export``) uses the
        layer's own computation.

        Args:
            query: ``[B, q]``, from ``query``.
            f_base: float32 ``[B, d]``, the base projection of ``query``.
            hidden: ``[B, L, d_h]``, the last layer's states (pointer keys).
            ids: int ``[B, L]``, the history (padding 0).
            valid: bool ``[B, L]``, ``ids != 0``.
            equal: bool ``[B, L, L]``, ``ids[:, :, None] == ids[:, None]``.
            table: float32 ``[N, d]``; bias: float32 ``[N]`` or None.
            training: enables the projections' dropout.
            vectors: ``table[ids]`` if already gathered.
        """
        if vectors is None:
            vectors = tf.gather(table, ids)  # [B, L, d]
        if self.merge == "replace":
            f_item = f_base
            if self.use_context:
                f_item = self._project(self.context_projection, query, training)
            values = tf.einsum("bd,bld->bl", f_item, vectors)
            if bias is not None:
                values += tf.gather(bias, ids)
        else:
            values = tf.einsum("bd,bld->bl", f_base, vectors)
            if bias is not None:
                values += tf.gather(bias, ids)
            if self.use_context:
                f_context = self._project(
                    self.context_projection, query, training
                )
                values += tf.einsum("bd,bld->bl", f_context, vectors)
        if self.use_pointer:
            f_pointer = self._project(self.pointer_projection, query, training)
            # f_P . (W_L H_t + b_L) = H_t . (W_L^T f_P) + f_P . b_L: no
            # [B, L, d] keys are materialised.
            kernel = tf.cast(self.key_projection.kernel, tf.float32)
            key_bias = tf.cast(self.key_projection.bias, tf.float32)
            reader = tf.matmul(f_pointer, kernel, transpose_b=True)
            scores = (
                tf.einsum("bd,bld->bl", reader, tf.cast(hidden, tf.float32))
                + tf.linalg.matvec(f_pointer, key_bias)[:, None]
            )  # [B, L]
            same = tf.cast(equal & valid[:, None, :], tf.float32)
            count = tf.maximum(tf.reduce_sum(same, axis=-1), 1.0)
            values += tf.reduce_sum(same * scores[:, None, :], axis=-1) / count
        return values

    def _select(
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
        unsorted = _is_training(training) and (
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

    def _rerank_scores(
        self,
        f_rerank: tf.Tensor,
        table: tf.Tensor,
        bias: tf.Tensor | None,
        top: tf.Tensor,
        vectors: tf.Tensor | None = None,
    ) -> tf.Tensor:
        if vectors is None:
            vectors = tf.gather(table, top)
        scores = tf.einsum("bd,bkd->bk", f_rerank, vectors)
        if self.merge == "replace" and bias is not None:
            scores += tf.gather(bias, top)
        return scores

    def _merge_scores(
        self, logits: tf.Tensor, top: tf.Tensor, scores: tf.Tensor
    ) -> tf.Tensor:
        index = _batch_indices(top)
        if self.merge == "replace":
            return tf.tensor_scatter_nd_update(logits, index, scores)
        return tf.tensor_scatter_nd_add(logits, index, scores)

    def _uses_history(self, training: Any) -> bool:
        return (
            self.use_context
            or self.use_pointer
            or (self.exclude_history and not _is_training(training))
        )

    def _check_ks(self, num_items: tf.Tensor, static_n: int | None) -> list:
        checks = []
        if not self.reranker_ks:
            return checks
        largest = max(self.reranker_ks)
        if static_n is not None:
            if largest >= static_n:
                raise ValueError(
                    "Every k in `reranker_ks` must be less than the number "
                    f"of items N={static_n} (rows of the item table, "
                    f"padding included). Received: reranker_ks="
                    f"{self.reranker_ks}"
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

    def call(
        self,
        inputs: Any,
        item_embeddings: Any,
        item_bias: Any = None,
        candidate_ids: Any = None,
        training: Any = None,
    ) -> tf.Tensor:
        hidden, ids, layers, last = unpack_head_inputs(inputs)
        table, bias = _as_table(item_embeddings, item_bias)
        static_n = table.shape[0]
        num_items = tf.shape(table)[0]
        units = self.output_dim or hidden.shape[-1]
        if table.shape[-1] is not None and table.shape[-1] != units:
            raise ValueError(
                f"The item table rows must have size {units} (output_dim, "
                "or the hidden size when output_dim is None). "
                f"Received: item_embeddings.shape={table.shape}"
            )
        checks = self._check_ks(num_items, static_n)
        check_ids_in_range("history_ids", ids, num_items)
        if candidate_ids is not None:
            candidate_ids = tf.cast(
                tf.convert_to_tensor(candidate_ids), tf.int32
            )
            if candidate_ids.shape.rank not in (1, 2):
                raise ValueError(
                    "`candidate_ids` must have shape [M] or [B, M]. "
                    f"Received: candidate_ids.shape={candidate_ids.shape}"
                )
            check_ids_in_range("candidate_ids", candidate_ids, num_items)
        with tf.control_dependencies(checks):
            ids = tf.identity(ids)

        valid = tf.not_equal(ids, 0)
        query = self.query(hidden, ids, layers, last)
        f_base = self._project(self.base_projection, query, training)

        if candidate_ids is not None and not self.reranker_ks:
            return self._candidate_scores(
                query,
                f_base,
                hidden,
                ids,
                valid,
                table,
                bias,
                candidate_ids,
                training,
            )

        uses_history = self._uses_history(training)
        # With a history scatter, padding is masked by that same scatter
        # (one [B, N] pass fewer).
        pad_in_scatter = self.mask_padding and uses_history
        # The product f_V E^T is computed once, without gradient; the
        # selections below read it, and `_product_and_rows` gives it back
        # with the matmul's gradient plus that of the gathered table rows,
        # added in place (no separate sparse-to-dense table gradient).
        frozen_table = tf.stop_gradient(table)
        frozen_bias = None if bias is None else tf.stop_gradient(bias)
        product = tf.matmul(
            tf.stop_gradient(f_base), frozen_table, transpose_b=True
        )  # [B, N]
        running = product if bias is None else product + frozen_bias

        # Rerankers: a cascade from the largest k to the smallest, selected
        # on gradient-free logits (padding skipped when masked).
        stages = sorted(
            zip(self.reranker_ks, self.reranker_projections),
            key=lambda pair: -pair[0],
        )
        selected = []
        for j, (k, projection) in enumerate(stages):
            top = self._select(running, k, self.mask_padding, training)
            f_rerank = self._project(projection, query, training)
            selected.append((top, f_rerank))
            if j + 1 < len(stages):
                scores = self._rerank_scores(
                    tf.stop_gradient(f_rerank), frozen_table, frozen_bias, top
                )
                running = self._merge_scores(running, top, scores)
        gathered = [top for top, _ in selected]
        if uses_history:
            gathered = [ids] + gathered
        history_vectors, stage_vectors = None, [None] * len(selected)
        if gathered:
            sizes = [x.shape[1] or tf.shape(x)[1] for x in gathered]
            product, rows = _product_and_rows(
                f_base, table, tf.concat(gathered, axis=1), product
            )
            parts = tf.split(rows, sizes, axis=1)
            if uses_history:
                history_vectors, parts = parts[0], parts[1:]
            stage_vectors = parts
        else:
            product = _product_and_rows(f_base, table, None, product)
        logits = product if bias is None else product + bias
        if self.mask_padding and not pad_in_scatter:
            is_padding = tf.equal(tf.range(num_items), 0)
            logits = tf.where(is_padding, tf.constant(PADDING_LOGIT), logits)

        for (top, f_rerank), vectors in zip(selected, stage_vectors):
            scores = self._rerank_scores(
                f_rerank, table, bias, top, vectors=vectors
            )
            logits = self._merge_scores(logits, top, scores)

        if uses_history:
            equal = tf.equal(ids[:, :, None], ids[:, None, :])  # [B, L, L]
            if self.exclude_history and not _is_training(training):
                values = tf.fill(tf.shape(ids), PADDING_LOGIT)
            else:
                values = self.history_logits(
                    query,
                    f_base,
                    hidden,
                    ids,
                    valid,
                    equal,
                    table,
                    bias,
                    training,
                    vectors=history_vectors,
                )
            # Padding positions write the padding logit.
            if self.mask_padding:
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
            logits = tf.tensor_scatter_nd_update(
                logits, _batch_indices(columns), values
            )

        if candidate_ids is None:
            return logits
        if candidate_ids.shape.rank == 1:
            return tf.gather(logits, candidate_ids, axis=1)
        return tf.gather(logits, candidate_ids, batch_dims=1)

    def _candidate_scores(
        self,
        query: tf.Tensor,
        f_base: tf.Tensor,
        hidden: tf.Tensor,
        ids: tf.Tensor,
        valid: tf.Tensor,
        table: tf.Tensor,
        bias: tf.Tensor | None,
        candidate_ids: tf.Tensor,
        training: Any,
    ) -> tf.Tensor:
        """Scores ``[B, M]`` of candidates, without rerankers."""
        vectors = tf.gather(table, candidate_ids)
        if candidate_ids.shape.rank == 1:
            scores = tf.matmul(f_base, vectors, transpose_b=True)
            candidates = tf.broadcast_to(
                candidate_ids[None, :],
                [tf.shape(ids)[0], tf.shape(candidate_ids)[0]],
            )
        else:
            scores = tf.einsum("bd,bmd->bm", f_base, vectors)
            candidates = candidate_ids
        if bias is not None:
            scores += tf.gather(bias, candidates)
        if self.mask_padding:
            scores = tf.where(
                tf.equal(candidates, 0), tf.constant(PADDING_LOGIT), scores
            )
        if not self._uses_history(training):
            return scores
        matches = (
            tf.equal(candidates[:, :, None], ids[:, None, :])
            & valid[:, None, :]
        )  # [B, M, L]
        in_history = tf.reduce_any(matches, axis=-1)
        if self.exclude_history and not _is_training(training):
            return tf.where(in_history, tf.constant(PADDING_LOGIT), scores)
        equal = tf.equal(ids[:, :, None], ids[:, None, :])
        values = self.history_logits(
            query, f_base, hidden, ids, valid, equal, table, bias, training
        )
        position = tf.argmax(
            tf.cast(matches, tf.int32), axis=2, output_type=tf.int32
        )
        return tf.where(
            in_history, tf.gather(values, position, batch_dims=1), scores
        )

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "use_context": self.use_context,
                "use_pointer": self.use_pointer,
                "reranker_ks": list(self.reranker_ks),
                "use_mi": self.use_mi,
                "mi_layers": self.mi_layers,
                "mi_window": self.mi_window,
                "merge": self.merge,
                "dropout": self.dropout,
                "exclude_history": self.exclude_history,
                "mask_padding": self.mask_padding,
                "output_dim": self.output_dim,
                "start_as_softmax": self.start_as_softmax,
                "kernel_initializer": tf.keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": tf.keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
