"""Softmax-CPR: partitioned output logits for sequential recommenders.

The layer: its arguments, weights and ``call``. Its pieces live by
responsibility: the partition logits (query, Mi, context, pointer,
rerankers, the full-catalogue logits) in ``partitions``, an object the
layer composes (`CPRPartitions`, no base class: the layer's public
surface is what a user calls); the training loss without written-out
logits in ``loss``; the candidate scoring of the serving index (and
``call`` with ``candidate_ids``) in ``candidates``. The methods delegate
to them, passing the layer's `CPRPartitions`; the tensors of one call
travel as one `CPRInputs` (``cpr_inputs``).
"""

from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow as tf

from tfrec_tricks.heads.cpr import candidates as cpr_candidates
from tfrec_tricks.heads.cpr import loss as cpr_loss
from tfrec_tricks.heads.cpr.partitions import CPRPartitions, reranker_sizes
from tfrec_tricks.heads.input_contract import (
    candidate_ids_tensor,
    check_head_arguments,
    dense_projection,
)
from tfrec_tricks.heads.output_head import OutputHead
from tfrec_tricks.layers.common import is_training, num_rows
from tfrec_tricks.serialization import register

_MERGE_MODES = ("replace", "add")


@register
class SoftmaxCPR(OutputHead):
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

    ``merge`` says how a partition's terms meet the base logit: they
    replace it (``"replace"``, the reference's default) or are added to it
    (``"add"``); see the argument.

    The item bias ``b_x`` (if given) is part of the item's output
    representation, so it is added exactly once to every item's logit,
    whichever partition scores it (the reference has no bias).

    ``h`` is the hidden state at the *true* last position of each row,
    the last non-padding id of ``history_ids`` (rows may be left- or
    right-padded), or the given ``last_positions``. A row with no real id
    reads position 0 (``tfrec_tricks.heads.input_contract.last_positions``: the
    state after one padding step, the same whatever the batch's width
    ``L``, so an empty row's logits never depend on the other rows), has
    an empty history (no C/P items) and gets finite ``f_V`` / reranker
    logits. Padding id 0 never enters a partition and, with
    ``mask_padding``, its logit is ``-1e9``.

    Scoring a candidate set instead of the catalogue (e.g. at serving):
    `top_k_candidates` gives a set that holds the top-``K`` (one ``[B, N]``
    product and an exact top-k index) and `score_candidates` scores a set
    exactly as ``call`` scores the catalogue, with no ``[B, N]`` work.

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
        merge: str. How a partition's terms meet the base logit
            ``f_V . e_x``. ``"replace"`` (the reference): history items
            get ``f_C . e_x + P``, the other items a reranker selected
            ``f_R . e_x`` (the last stage's), the rest ``f_V . e_x``.
            ``"add"``: the terms are added to the base logit: history
            items get ``f_V . e_x + f_C . e_x + P``, the other reranked
            items ``f_V . e_x`` plus the term of every cascade stage that
            selected them. In both modes the history partition is
            exclusive: a history item inside a reranker's top-k gets no
            reranker term (it still takes a slot of that top-k and, in a
            cascade, feeds the next stage). So each item gets the terms of
            exactly one partition, and with one reranker ``"add"`` differs
            from ``"replace"`` only by the base logit, added to the logit
            of every C/P and R item. This is a deliberate, named
            difference from the authors' RecBole code in add mode
            (``SASRecCPR`` / ``GRU4RecCPR`` with
            ``partition_merging_mode="add"``, which ``--cpr-merge add``
            stands for): it adds C and P on top of logits that already
            hold the reranker terms, so there a history item inside a
            reranker set gets ``f_V . e_x + f_R . e_x + f_C . e_x + P``.
            ``"replace"`` agrees with the authors' code. The bias ``b_x``
            is added once in every case. Defaults to ``"replace"``.
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
            ``ModelConfig`` turns it on (why:
            docs/decisions.md#cpr-start-as-softmax). Defaults to ``False``.
        rerank_within_candidates: bool. In training with ``candidate_ids``
            (a sampled objective), the rerankers choose their top-``k``
            sets among the candidates and the row's history instead of
            the catalogue: each row is scored as ``call`` would score it
            over a catalogue of just those items, and the step costs
            ``O(B (M + L) d)`` with no ``[B, N]`` product (which the top-k
            over the catalogue needs). At inference the sets are the
            catalogue's, as without. Defaults to ``False``.
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
            ``O(M d + M log L)`` per example and never touches the rest of
            the catalogue; with rerankers the top-k sets depend on the
            whole catalogue, so the ``[B, N]`` base product is computed,
            without gradient, to select them (``O(N d)`` per example;
            `score_candidates` scores a set that holds the cascade's items
            without it); the candidates are then scored from their own
            table rows, so the table's gradient is the candidates' rows
            (``tf.IndexedSlices``), never a dense ``[N, d]`` one, and the
            optimizer's update stays sparse (the sampled objective).
            Defaults to ``None``.
        training: bool. Enables dropout; disables ``exclude_history``.
        return_base_logits: bool. Also return the base partition's logits
            ``f_V . e_x + b_x`` of every item (padding masked), the plain
            softmax inside the head, from the same product (no extra
            ``[B, N]`` work; with ``candidate_ids``, from the candidates'
            rows). Under ``merge="replace"`` the CPR loss never trains
            them on history items or inside the reranker sets, so they
            drift away from ranking new items well; a plain softmax loss
            on them beside the CPR loss keeps that skill
            (``ModelConfig.cpr_base_loss``, docs/decisions.md#cpr-base-loss).
            Defaults to ``False``.
        exclude_history: bool or None. Overrides the layer's
            ``exclude_history`` for this call (still never in training):
            ``False`` gives the history's items their logits, e.g. to rank
            them among themselves after the other items. Defaults to
            ``None``.

    Returns:
        float32 logits ``[B, N]``, or ``[B, M]`` with ``candidate_ids``;
        with ``return_base_logits``, the pair ``(logits, base_logits)``.
        History ids outside ``[0, N)`` raise ValueError in eager mode.

    Example:

    >>> import tensorflow as tf
    >>> import tfrec_tricks.heads
    >>> head = tfrec_tricks.heads.SoftmaxCPR(reranker_ks=(3,))
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
    >>> mi = tfrec_tricks.heads.SoftmaxCPR(
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
        rerank_within_candidates: bool = False,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        **kwargs: Any,
    ) -> None:
        # The projections cast their own inputs (autocast off: OutputHead).
        super().__init__(
            mask_padding=mask_padding, output_dim=output_dim, **kwargs
        )
        ks = reranker_sizes(reranker_ks)
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
        check_head_arguments(dropout, None)
        self.use_context = bool(use_context)
        self.use_pointer = bool(use_pointer)
        self.reranker_ks = ks
        self.use_mi = bool(use_mi)
        self.mi_layers = mi_layers
        self.mi_window = mi_window
        self.merge = merge
        self.dropout = float(dropout)
        self.exclude_history = bool(exclude_history)
        self.start_as_softmax = bool(start_as_softmax)
        self.rerank_within_candidates = bool(rerank_within_candidates)
        self.kernel_initializer = tf.keras.initializers.get(kernel_initializer)
        self.bias_initializer = tf.keras.initializers.get(bias_initializer)
        # The partition logic, a plain object (no Trackable): no checkpoint
        # dependency, so the weights and their keys stay the layer's own.
        self._partitions = CPRPartitions(self)

    # ------------------------------------------------------- head interface

    @property
    def has_index(self) -> bool:
        """Yes: the base query's product holds the set that
        `score_candidates` ranks exactly (`top_k_candidates`)."""
        return True

    @property
    def has_cross_entropy(self) -> bool:
        """Yes: `cross_entropy` and `position_cross_entropy` give the loss
        of ``call``'s logits without writing them out."""
        return True

    def excludes_history(self, training: Any) -> bool:
        """With ``exclude_history``, at inference."""
        return self._partitions.excluding(training)

    def reads_last_state_only(self, training: Any) -> bool:
        """No: the context and pointer partitions, the Mi window and
        ``exclude_history`` read the history's states and ids."""
        del training  # the same in training and at inference
        return False

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

    def call(
        self,
        inputs: Any,
        item_embeddings: Any,
        item_bias: Any = None,
        candidate_ids: Any = None,
        training: Any = None,
        return_base_logits: bool = False,
        exclude_history: Any = None,
    ) -> tf.Tensor | tuple[tf.Tensor, tf.Tensor]:
        # Rows only: the within-candidates step gathers from the variables
        # themselves. A whole read of a table that the model's lookup
        # gathers from copies it on every step (copy-on-read, see
        # `as_item_table`): 256 MB at a million items.
        rows_only = (
            candidate_ids is not None
            and self.rerank_within_candidates
            and is_training(training)
        )
        partitions = self._partitions
        hidden, ids, layers, last, table, bias = partitions.read_inputs(
            inputs, item_embeddings, item_bias, rows_only=rows_only
        )
        # (`tf.shape` of a variable would read it whole.)
        num_items = num_rows(table) if rows_only else tf.shape(table)[0]
        if candidate_ids is not None:
            candidate_ids = candidate_ids_tensor(candidate_ids, num_items)

        valid = tf.not_equal(ids, 0)
        cpr = partitions.cpr_inputs(
            hidden, ids, layers, last, table, bias, training
        )
        if candidate_ids is not None:
            return cpr_candidates.candidate_call(
                partitions,
                cpr,
                candidate_ids,
                return_base_logits,
                exclude_history,
            )

        logits, base_logits = partitions.catalogue_logits(
            cpr, valid, num_items, exclude_history
        )
        if return_base_logits:
            return logits, base_logits
        return logits

    # ---------------------------------------------------------- training loss

    def cross_entropy(
        self,
        inputs: Any,
        item_embeddings: Any,
        labels: Any,
        item_bias: Any = None,
        training: Any = None,
        rank_labels: Any = None,
    ) -> tuple:
        """`OutputHead.cross_entropy`: the loss without writing the logits.

        What ``tf.nn.sparse_softmax_cross_entropy_with_logits`` gives on
        ``call``'s logits and on its base logits (``return_base_logits``),
        and the ranks, with the partitions' logits never written into a
        ``[B, N]`` tensor (``loss``, `partitioned_cross_entropy`): one
        pass over ``[B, N]`` for both normalisers instead of two scatters
        forward, two backward and two cross-entropies. Arguments and
        returns: see `OutputHead.cross_entropy`.
        """
        return cpr_loss.cross_entropy(
            self._partitions,
            inputs,
            item_embeddings,
            labels,
            item_bias=item_bias,
            training=training,
            rank_labels=rank_labels,
        )

    def position_cross_entropy(
        self,
        inputs: Any,
        item_embeddings: Any,
        position_targets: Any,
        item_bias: Any = None,
        training: Any = None,
        labels: Any = None,
    ) -> tuple:
        """`OutputHead.position_cross_entropy`, without expanding the rows.

        The values are those of `cross_entropy` on the rows expanded per
        target position (``h``, the Mi window, the context and pointer
        over positions ``<= p``), without expanding them: the context,
        pointer and base logits of the history come from ``[B, L, L]``
        products of the projections at every position with the history's
        table rows, not from a ``[M, L, d]`` copy of the states per
        target. Arguments and returns: see
        `OutputHead.position_cross_entropy`.
        """
        return cpr_loss.position_cross_entropy(
            self._partitions,
            inputs,
            item_embeddings,
            position_targets,
            item_bias=item_bias,
            training=training,
            labels=labels,
        )

    # ------------------------------------------------------ candidate sets

    def top_k_candidates(
        self,
        inputs: Any,
        item_embeddings: Any,
        k: int,
        item_bias: Any = None,
        extra_ids: Any = None,
        exclude_ids: Any = None,
    ) -> tuple:
        """A candidate set that holds ``call``'s top-``k``, from an index.

        The serving index path: one ``[B, N]`` product of the base query
        with the table (``f_V E^T + b``, the very product ``call`` ranks
        the catalogue with), its exact top-``(sum(reranker_ks) + k)``
        among the items *outside* the history (ties to the lower id, see
        ``tfrec_tricks.layers.top_k``), then the history, then
        ``extra_ids``. This set meets the precondition of
        `score_candidates` and holds ``call``'s top-``k``: the cascade's
        non-history selections are the best ``sum(reranker_ks)`` items
        outside the history by base logit at most, every other item
        outside the history keeps its base logit, so the rest of the
        top-``k`` are the next ``k`` of them. (Retrieving over the whole
        catalogue instead would need ``L`` more, for history items just
        below the reranked ones.)

        Rank ``score_candidates(..., candidates, base_logits=base)`` with
        ``tfrec_tricks.layers.top_k.top_k_positions`` (ties to the lower
        id) for ``call``'s exact top-``k``, entries with id 0 left out.
        Cost: the product and one top-k over ``N``; everything else is
        ``O(C d)`` per row. Without rerankers and with ``k=0`` there is
        nothing to retrieve: no product, and the set is ``extra_ids``.

        Args:
            inputs: dict, as for ``call``.
            item_embeddings: float ``[N, output_dim]``, the item table.
            k: int >= 0. The top-``k`` the set must hold (0: only what the
                cascade needs, e.g. to score ``extra_ids``). With ``N``
                known statically, at most the ``N - 1`` real items are
                retrieved (``N`` with ``mask_padding=False``); otherwise
                ``sum(reranker_ks) + k`` must be at most ``N``.
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            extra_ids: int ``[B, E]`` or None. Ids to append to the set
                (repeats allowed), with their base logits from the same
                product. Defaults to ``None``.
            exclude_ids: int ``[B, X]`` or None. A request's filter,
                treated as the history is (0 and negatives: fillers).
                Defaults to ``None``.

        Returns:
            ``(candidate_ids, base_logits)``: int32 ``[B, C]``, the
            retrieved ids (best first), the history and ``exclude_ids``
            (first occurrences; 0 for padding and repeats), then
            ``extra_ids``; no id twice
            before ``extra_ids`` except 0, which also fills the retrieved
            part when fewer items are left (so, with ``mask_padding`` and
            without ``extra_ids``, `score_candidates` may take
            ``assume_unique=True``). And float32 ``[B, C]``, their base
            logits ``f_V . e_x + b_x``, to pass to `score_candidates`.

        Example:

        >>> import tensorflow as tf
        >>> import tfrec_tricks.heads
        >>> from tfrec_tricks.layers.top_k import top_k_positions
        >>> head = tfrec_tricks.heads.SoftmaxCPR(reranker_ks=(3,))
        >>> inputs = {
        ...     "hidden_states": tf.random.normal((2, 4, 8)),
        ...     "history_ids": tf.constant([[0, 5, 2, 5], [7, 1, 0, 0]]),
        ... }
        >>> table = tf.random.normal((50, 8))
        >>> candidates, base = head.top_k_candidates(inputs, table, k=5)
        >>> print(candidates.shape)  # 3 + 5 retrieved, 4 history slots
        (2, 12)
        >>> scores = head.score_candidates(
        ...     inputs, table, candidates, base_logits=base, assume_unique=True)
        >>> scores = tf.where(candidates > 0, scores, float("-inf"))
        >>> best = tf.gather(candidates, top_k_positions(
        ...     scores, candidates, 5), batch_dims=1)
        >>> expected = tf.math.top_k(head(inputs, table), 5).indices
        >>> bool(tf.reduce_all(best == expected))
        True
        """
        return cpr_candidates.top_k_candidates(
            self._partitions,
            inputs,
            item_embeddings,
            k,
            item_bias=item_bias,
            extra_ids=extra_ids,
            exclude_ids=exclude_ids,
        )

    def score_candidates(
        self,
        inputs: Any,
        item_embeddings: Any,
        candidate_ids: Any,
        item_bias: Any = None,
        training: Any = False,
        base_logits: Any = None,
        assume_unique: bool = False,
        exclude_history: Any = None,
    ) -> tf.Tensor:
        """Logits of a candidate set, exactly as ``call`` scores the catalogue.

        Every candidate gets the logit ``call`` gives it (its partition,
        padding masked, ``exclude_history``), without touching the rest of
        the catalogue: ``O(M d + M log M + L^2)`` per row, no ``[B, N]``
        tensor. The reranker cascade runs over the candidates: each stage
        takes the top-``k`` items of the running logits among them (ties
        to the lower id; padding skipped unless ``mask_padding=False``; a
        repeated id counts once), as ``call`` takes it over the catalogue.

        Precondition (with rerankers): each row's candidates must hold
        everything the cascade can select, so that its top-``k`` sets over
        the candidates are those over the catalogue: the row's history and
        the top ``sum(reranker_ks)`` items by base logit ``f_V . e_x +
        b_x`` among the items outside the history (as `top_k_candidates`
        gives; more candidates are fine). Otherwise the reranked sets, and
        so the logits, can differ from ``call``'s. In eager mode a row
        whose history is not among its candidates raises ValueError; the
        top-``sum(reranker_ks)`` part cannot be checked without the
        ``[B, N]`` product. Without rerankers there is no precondition.

        Args:
            inputs: dict, as for ``call``.
            item_embeddings: float ``[N, output_dim]``, the item table.
            candidate_ids: int ``[M]`` (shared by the batch) or ``[B, M]``.
                Ids in ``[0, N)``; repeats and padding 0 are allowed.
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            training: bool. Enables dropout; disables
                ``exclude_history``. Defaults to ``False``.
            base_logits: float ``[B, M]`` or None. The candidates' base
                logits if an index computed them (`top_k_candidates`
                does): the cascade then ranks the candidates with the very
                values ``call`` ranks the catalogue with. Recomputed from
                the gathered rows they can differ in the last bit, enough
                to swap two nearly tied items at a reranker's boundary in
                a large catalogue. None: computed from the gathered rows.
                Defaults to ``None``.
            assume_unique: bool. As in ``numpy.isin``: if True, no id
                repeats within a row (padding 0 may, with ``mask_padding``:
                it is never selected), as in `top_k_candidates`' set
                without ``extra_ids``. That saves the cascade the
                ``O(M log M)`` sort that finds repeats. Checked in eager
                mode; with rerankers and a repeated id the logits are
                otherwise undefined. Defaults to ``False``.
            exclude_history: bool or None. Overrides the layer's
                ``exclude_history``, as in ``call``. Defaults to ``None``.

        Returns:
            float32 ``[B, M]``: ``call(...)`` at the candidates' ids.

        Raises:
            ValueError: ids outside ``[0, N)`` or, with rerankers, a
                history item missing from its row's candidates, or a
                repeated id with ``assume_unique`` (eager mode);
                ``base_logits`` not of the candidates' shape.

        Example:

        >>> import tensorflow as tf
        >>> import tfrec_tricks.heads
        >>> head = tfrec_tricks.heads.SoftmaxCPR(reranker_ks=())
        >>> inputs = {
        ...     "hidden_states": tf.random.normal((2, 4, 8)),
        ...     "history_ids": tf.constant([[0, 5, 2, 5], [7, 1, 0, 0]]),
        ... }
        >>> table = tf.random.normal((10, 8))
        >>> candidates = tf.constant([[5, 9, 0], [3, 7, 7]])
        >>> scores = head.score_candidates(inputs, table, candidates)
        >>> full = tf.gather(head(inputs, table), candidates, batch_dims=1)
        >>> print(scores.shape, bool(tf.reduce_all(
        ...     tf.abs(scores - full) < 1e-5)))
        (2, 3) True
        """
        return cpr_candidates.score_candidates(
            self._partitions,
            inputs,
            item_embeddings,
            candidate_ids,
            item_bias=item_bias,
            training=training,
            base_logits=base_logits,
            assume_unique=assume_unique,
            exclude_history=exclude_history,
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
                "start_as_softmax": self.start_as_softmax,
                "rerank_within_candidates": self.rerank_within_candidates,
                "kernel_initializer": tf.keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": tf.keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
