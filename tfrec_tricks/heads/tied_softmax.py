"""The tied softmax output head: ``h E^T + b`` over the item table."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.heads.input_contract import (
    as_item_table,
    candidate_ids_tensor,
    check_ids_in_range,
    distinct_ids,
    unpack_head_inputs,
)
from tfrec_tricks.heads.output_head import OutputHead
from tfrec_tricks.layers.common import (
    PADDING_LOGIT,
    batch_indices,
    history_positions,
    is_training,
    item_logits,
    num_rows,
    softmax_dtype,
)
from tfrec_tricks.layers.top_k import brute_force_top_k
from tfrec_tricks.serialization import register


@register
class TiedSoftmax(OutputHead):
    """Softmax over the item table, optionally ranking the history last.

    With ``h`` the hidden state at the true last position of each history
    (``tfrec_tricks.heads.input_contract.last_positions``, the rule of every
    head), mapped to the table's row size by a ``projection`` when
    ``output_dim`` is given, the logits over the item table ``E`` (the
    input table when tied, see `TiedItemEmbedding`) and bias ``b`` are

    ``logits = h E^T + b``

    with padding id 0 at ``-1e9``. With a ``cosine_temperature`` ``t`` the
    scores are cosine similarities instead, sharpened by ``t``:

    ``logits = (h / |h|) (E / |E|)^T / t + b``

    (rows normalised; HSTU's L2-normalised embeddings with temperature
    0.05). The table itself is unchanged, so a tied table still feeds the
    encoder its raw rows. With ``exclude_history``, at inference
    only, the history's items get ``-1e9`` too ("softmax without
    duplication"): the right ranking for data where an item is never
    repeated. Training keeps them, so that the loss of a target that does
    repeat stays finite.

    The call API is that of `SoftmaxCPR` and `MixtureOfSoftmax`, so a
    model swaps heads freely; the methods `top_k_candidates` (an exact
    index: one ``[B, N]`` product and a top-k) and `score_candidates`
    serve the top-K without writing ``[B, N]`` logits twice.

    Args:
        exclude_history: bool. Rank the history's items last at inference.
            Defaults to ``False``.
        output_dim: int or None. Size of the item table's rows when it
            differs from the hidden size: a Dense ``projection`` maps ``h``
            to it. ``None``: ``h`` is used as it is. Defaults to ``None``.
        mask_padding: bool. Give padding id 0 ``-1e9``. Defaults to
            ``True``.
        cosine_temperature: float or None. Score by cosine similarity
            divided by this temperature (> 0). ``None``: the dot product.
            Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``.

    Call arguments:
        inputs: dict with ``"hidden_states"`` float ``[B, L, d_h]`` and
            ``"history_ids"`` int ``[B, L]`` (padding 0); optionally
            ``"last_positions"`` int ``[B]``; an optional
            ``"layer_hidden_states"`` is accepted and ignored.
        item_embeddings: float ``[N, d]``, the item table (a variable is
            read whole, see ``input_contract.as_item_table``).
        item_bias: float ``[N]`` or None. Defaults to ``None``.
        candidate_ids: int ``[M]`` or ``[B, M]`` or None. Score only these
            ids (in training, their rows are read sparsely). Defaults to
            ``None``.
        training: bool. Training keeps the history's items.
        exclude_history: bool or None. Overrides the layer's
            ``exclude_history`` for this call (still never in training):
            a caller that needs the logits before the exclusion, e.g. for
            an evaluation loss, passes ``False``. Defaults to ``None``.

    Returns:
        float32 logits ``[B, N]`` (or ``[B, M]``, ``[M]`` candidates
        broadcast over the batch).

    Example:

    >>> import tensorflow as tf
    >>> import tfrec_tricks.heads
    >>> head = tfrec_tricks.heads.TiedSoftmax(exclude_history=True)
    >>> inputs = {
    ...     "hidden_states": tf.random.normal((2, 3, 4)),
    ...     "history_ids": tf.constant([[0, 5, 2], [7, 1, 0]]),
    ... }
    >>> logits = head(inputs, tf.random.normal((10, 4)))
    >>> print(logits.shape, logits.numpy()[0, [0, 2, 5]].tolist())
    (2, 10) [-1000000000.0, -1000000000.0, -1000000000.0]

    References:
        - [Press and Wolf, 2016](https://arxiv.org/abs/1608.05859): Using
          the output embedding to improve language models.
        - [Chang, Agarwal and McCallum, WSDM 2024](
          https://arxiv.org/abs/2310.14079): softmax without duplication,
          a baseline of Softmax-CPR in sequential recommendation.
        - [Zhai et al., ICML 2024](https://arxiv.org/abs/2402.17152):
          HSTU, whose retrieval scores L2-normalised embeddings with
          temperature 0.05.
    """

    def __init__(
        self,
        exclude_history: bool = False,
        output_dim: int | None = None,
        mask_padding: bool = True,
        cosine_temperature: float | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            mask_padding=mask_padding, output_dim=output_dim, **kwargs
        )
        if cosine_temperature is not None and not (
            isinstance(cosine_temperature, (int, float))
            and not isinstance(cosine_temperature, bool)
            and cosine_temperature > 0
        ):
            raise ValueError(
                "`cosine_temperature` must be a positive number or None. "
                f"Received: cosine_temperature={cosine_temperature!r}"
            )
        self.exclude_history = bool(exclude_history)
        self.cosine_temperature = (
            None if cosine_temperature is None else float(cosine_temperature)
        )
        # Created here, built on its first call (Keras builds it out of any
        # tf.function): a model can then refer to it before any call.
        self.projection = None
        if output_dim is not None:
            self.projection = tf.keras.layers.Dense(
                output_dim, dtype=self.dtype_policy, name="projection"
            )

    @property
    def has_index(self) -> bool:
        """Whether `top_k_candidates` is an exact index: it is (one query)."""
        return True

    def excludes_history(self, training: Any) -> bool:
        """Whether ``call`` ranks the history's items last: with
        ``exclude_history``, at inference."""
        return self._excludes(training, None)

    def reads_last_state_only(self, training: Any) -> bool:
        """Whether only each row's last state (and id) is read.

        So a caller may pass one-position rows. Not when the history is
        excluded (`excludes_history`): that reads every history id.
        """
        return not self.excludes_history(training)

    def _excludes(self, training: Any, exclude_history: Any) -> bool:
        if exclude_history is None:
            exclude_history = self.exclude_history
        return bool(exclude_history) and not is_training(training)

    def _read_inputs(self, inputs: Any, item_embeddings: Any) -> tuple:
        """``(h, history_ids)``: the (projected) last states and the ids."""
        hidden, ids, _, last = unpack_head_inputs(inputs)
        check_ids_in_range("history_ids", ids, num_rows(item_embeddings))
        h = tf.gather(hidden, last, batch_dims=1)
        if self.projection is not None:
            h = self.projection(h)
        if self.cosine_temperature is not None:
            h = tf.math.l2_normalize(h, axis=-1) / self.cosine_temperature
        return h, ids

    def _scored_table(self, item_embeddings: Any) -> Any:
        """The table the logits read: its rows normalised for cosine
        scores (read whole, a tensor), else the table as given."""
        if self.cosine_temperature is None:
            return item_embeddings
        table = tf.convert_to_tensor(item_embeddings)
        return tf.math.l2_normalize(table, axis=-1)

    def _logits(self, h, item_embeddings, item_bias, candidate_ids, training):
        item_embeddings = self._scored_table(item_embeddings)
        return tf.cast(
            item_logits(
                h,
                item_embeddings,
                item_bias,
                candidate_ids=candidate_ids,
                training=training,
                mask_padding=self.mask_padding,
                dtype=softmax_dtype(self.compute_dtype),
            ),
            tf.float32,
        )

    def call(
        self,
        inputs: Any,
        item_embeddings: Any,
        item_bias: Any = None,
        candidate_ids: Any = None,
        training: Any = None,
        exclude_history: Any = None,
    ) -> tf.Tensor:
        h, ids = self._read_inputs(inputs, item_embeddings)
        if candidate_ids is not None:
            candidate_ids = candidate_ids_tensor(
                candidate_ids, num_rows(item_embeddings)
            )
        logits = self._logits(
            h, item_embeddings, item_bias, candidate_ids, training
        )
        if not self._excludes(training, exclude_history):
            return logits
        if candidate_ids is None:
            return tf.tensor_scatter_nd_update(
                logits,
                batch_indices(ids),
                tf.fill(tf.shape(ids), PADDING_LOGIT),
            )
        return self._without_history(logits, candidate_ids, ids)

    @staticmethod
    def _without_history(scores, candidate_ids, history_ids):
        """``scores`` ``[B, M]`` with the history's candidates at -1e9."""
        candidate_ids = tf.broadcast_to(candidate_ids, tf.shape(scores))
        found, _ = history_positions(candidate_ids, history_ids)
        return tf.where(found, tf.constant(PADDING_LOGIT), scores)

    def top_k_candidates(
        self,
        inputs: Any,
        item_embeddings: Any,
        k: int,
        item_bias: Any = None,
        extra_ids: Any = None,
        exclude_ids: Any = None,
    ) -> tuple:
        """Candidates holding the top-``k`` of ``call``'s logits (inference).

        One ``[B, N]`` product of ``h`` with the table and an exact top-k
        of it, ties to the lower id (`brute_force_top_k`): the top-``k``
        of ``h E^T + b``, padding left out. With ``exclude_history`` the
        history is left out of the index and appended after it (first
        occurrences; 0 for padding and repeats), so that a ``k`` above
        the items outside the history is filled by the history's items,
        ranked last (``tfrec_tricks.layers.top_k.served_top_k``). So are
        ``exclude_ids`` (a request's filter): left out of the index and
        appended, so the set holds the top-``k`` outside them. Rows with
        fewer items left hold id 0 (a filler). ``extra_ids`` (per-row
        ids, e.g. to score) are appended last.

        Args:
            inputs: dict, as for ``call``.
            item_embeddings: float ``[N, d]``, the item table.
            k: int >= 0.
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            extra_ids: int ``[B, E]`` or None. Defaults to ``None``.
            exclude_ids: int ``[B, X]`` or None. Ids left out of the index
                and appended once each (0 and negative entries are
                fillers). Defaults to ``None``.

        Returns:
            ``(candidate_ids, base_logits)``, int32 and float32 ``[B, C]``:
            the ids and their ``h E^T + b`` (before any exclusion), from
            the index's own product, to pass on to `score_candidates`.

        Example:

        >>> import tensorflow as tf
        >>> import tfrec_tricks.heads
        >>> head = tfrec_tricks.heads.TiedSoftmax()
        >>> inputs = {"hidden_states": tf.ones((1, 1, 1)),
        ...           "history_ids": tf.constant([[2]])}
        >>> table = tf.constant([[0.0], [3.0], [1.0], [2.0]])
        >>> ids, base = head.top_k_candidates(inputs, table, 2)
        >>> ids.numpy().tolist(), base.numpy().tolist()
        ([[1, 3]], [[3.0, 2.0]])
        """
        h, ids = self._read_inputs(inputs, item_embeddings)
        query = tf.cast(h, tf.float32)
        table, bias = as_item_table(
            self._scored_table(item_embeddings), item_bias
        )
        count = min(self.check_k(k), num_rows(item_embeddings) - 1)
        if count == 0:
            if extra_ids is None:
                extra_ids = tf.zeros_like(ids[:, :0])
            extra_ids = tf.cast(extra_ids, tf.int32)
            base = self._logits(
                query, item_embeddings, item_bias, extra_ids, False
            )
            return extra_ids, base
        # Left out of the index, then appended: ranked last, not dropped.
        left_out = []
        if self._excludes(False, None):
            left_out.append(ids)
        if exclude_ids is not None:
            left_out.append(tf.cast(exclude_ids, tf.int32))
        exclude = tf.concat([tf.zeros_like(ids[:, :1]), *left_out], axis=1)
        top, top_logits, product = brute_force_top_k(
            query, table, count, bias, exclude_ids=exclude
        )
        # Fewer items left than `count`: 0 fills the rest.
        candidates = tf.where(top_logits > float("-inf"), top, 0)
        if left_out:
            appended = distinct_ids(tf.concat(left_out, axis=1))
            candidates = tf.concat([candidates, appended], axis=1)
        if extra_ids is not None:
            extra_ids = tf.cast(extra_ids, tf.int32)
            candidates = tf.concat([candidates, extra_ids], axis=1)
        return candidates, tf.gather(product, candidates, batch_dims=1)

    def score_candidates(
        self,
        inputs: Any,
        item_embeddings: Any,
        candidate_ids: Any,
        item_bias: Any = None,
        base_logits: Any = None,
        assume_unique: bool = False,
        exclude_history: Any = None,
    ) -> tf.Tensor:
        """``call``'s logits at candidate ids, at inference.

        Any ids (repeats allowed). With ``base_logits`` (from
        `top_k_candidates`) the table is not read again: the scores are
        those logits, with padding and (``exclude_history``) the history
        at ``-1e9``.

        Args:
            inputs: dict, as for ``call``.
            item_embeddings: float ``[N, d]``, the item table.
            candidate_ids: int ``[B, M]``, ids in ``[0, N)``.
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            base_logits: float32 ``[B, M]`` or None. Defaults to ``None``.
            assume_unique: bool. Accepted for the heads' common API; the
                tied softmax needs no deduplication. Defaults to ``False``.
            exclude_history: bool or None. Overrides the layer's
                ``exclude_history``, as in ``call``. Defaults to ``None``.

        Returns:
            float32 ``[B, M]``.
        """
        del assume_unique  # no cascade to deduplicate
        candidate_ids = tf.cast(candidate_ids, tf.int32)
        if base_logits is None:
            return self.call(
                inputs,
                item_embeddings,
                item_bias,
                candidate_ids=candidate_ids,
                training=False,
                exclude_history=exclude_history,
            )
        scores = tf.where(
            tf.equal(candidate_ids, 0),
            tf.constant(PADDING_LOGIT),
            tf.cast(base_logits, tf.float32),
        )
        if not self._excludes(False, exclude_history):
            return scores
        _, ids, _, _ = unpack_head_inputs(inputs)
        return self._without_history(scores, candidate_ids, ids)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "exclude_history": self.exclude_history,
                "cosine_temperature": self.cosine_temperature,
            }
        )
        return config
