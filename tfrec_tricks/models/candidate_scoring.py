"""The head side of ``SequentialRetrievalModel``: scores and candidates."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.heads.input_contract import last_positions
from tfrec_tricks.heads.registry import head_spec
from tfrec_tricks.layers.top_k import served_top_k
from tfrec_tricks.models.item_tables import ItemTables, item_tables


class CandidateScoringMixin:
    """How ``SequentialRetrievalModel`` asks its head for scores.

    The encoded histories (``encode``) go through the output dropout to the
    head (``_head_inputs``); at inference ``logits``, ``top_k_candidates``,
    ``score_candidates`` and ``top_k`` are what
    ``tfrec_tricks.export.ServingModule`` serves, without reading the
    head's internals. The model that mixes this in has ``head``,
    ``item_embedding``, ``item_features``, ``output_dropout``, ``config`` and
    ``objective``.
    """

    def item_tables(
        self, training: Any = False, by_row: bool = False
    ) -> ItemTables:
        """The item tables of one step (``models.item_tables``): the id
        embedding's, or with item features the fused table of every item
        (``by_row``: the fused rows of the ids read, in training)."""
        return item_tables(
            self.item_embedding, self.item_features, training, by_row
        )

    @property
    def scores_by_row(self) -> bool:
        """Whether a training step scores each candidate from its own row
        and bias alone: a tied softmax head (``HeadSpec.tied_softmax``) under an
        objective that scores only candidates (``--objective sampled``),
        so item features are fused for the ids the step reads only."""
        return (
            not self.objective.ranks_in_training
            and head_spec(self.config.head).tied_softmax
        )

    @staticmethod
    def last_positions(history: tf.Tensor) -> tf.Tensor:
        """Position of each row's last item, 0 when empty.

        ``heads.input_contract.last_positions``, the rule the output
        heads follow too: an empty history reads the state after one
        padding step, the same whatever the batch's width, so its answer
        never depends on the other rows (in the export too).
        """
        return last_positions(history)

    def _head_inputs(self, history, states, training):
        """The head's ``inputs``, after the output dropout.

        A head that reads only the last state gets one-position rows: the
        dropout then draws for ``[B, 1, d]``, not for a ``[B, L, d]`` that
        the head would mostly ignore.
        """
        if self.head.reads_last_state_only(training):
            history, states = self.last_position_rows(history, states)
        # The heads read the last position by the same rule as the model.
        hidden = self.output_dropout(states[-1], training=training)
        return {
            "hidden_states": hidden,
            "history_ids": history,
            "layer_hidden_states": [*states[:-1], hidden],
        }

    @classmethod
    def last_position_rows(cls, history: tf.Tensor, states: list) -> tuple:
        """Each row cut to its last position (``last_positions``).

        Returns:
            ``(history, states)``: int32 ``[B, 1]`` and ``[[B, 1, d]]``
            (the last layer's states only).
        """
        last = cls.last_positions(history)
        ids = tf.gather(history, last, batch_dims=1)[:, None]
        state = tf.gather(states[-1], last, batch_dims=1)[:, None, :]
        return ids, [state]

    def _scores(
        self,
        history,
        states,
        training,
        candidate_ids=None,
        exclude_history=None,
        return_base_logits=False,
    ):
        """The head's logits [B, N] (or [B, M] for candidate ids).

        ``return_base_logits`` (CPR): the pair ``(logits, base logits)``,
        see ``SoftmaxCPR``. ``exclude_history`` (the tied softmax):
        overrides the head's own setting, see ``TiedSoftmax``.
        """
        extra = {}
        if return_base_logits:
            extra["return_base_logits"] = True
        if exclude_history is not None:
            extra["exclude_history"] = exclude_history
        tables = self.item_tables(training)
        return self.head(
            self._head_inputs(history, states, training),
            tables.output_table,
            item_bias=tables.output_bias,
            candidate_ids=candidate_ids,
            training=training,
            **extra,
        )

    # ------------------------------------------------------------ inference

    def logits(
        self, history: tf.Tensor, states: list, exclude_history: Any = None
    ) -> tf.Tensor:
        """Full-catalogue logits of encoded histories, at inference.

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            exclude_history: bool or None. ``False`` keeps the history's
                items in the ranking of a head that ranks them last
                (``--head softmax_no_dup``); None: the head's setting.
                Defaults to None.

        Returns:
            float32 ``[B, N]``: what ``call`` returns for those inputs.
        """
        return self._scores(
            history, states, False, exclude_history=exclude_history
        )

    @property
    def ranks_history_last(self) -> bool:
        """Whether the served lists rank the history's items last: the
        head's setting at inference (``--head softmax_no_dup``)."""
        return bool(self.head.excludes_history(False))

    @property
    def has_index(self) -> bool:
        """Whether ``top_k_candidates`` serves the exact top-k from an
        index: the head's own ``has_index`` (all heads but the mixture of
        softmaxes)."""
        return self.head.has_index

    def top_k_candidates(
        self,
        history: tf.Tensor,
        states: list,
        k: int,
        extra_ids: Any = None,
    ) -> tuple:
        """Candidates holding the top-``k`` of ``logits``, from an index.

        One ``[B, N]`` product of the head's base query with the item
        table and an exact top-k of it (ties to the lower id): for
        ``"softmax"`` the top-``k`` of ``h E^T + b`` (padding left out),
        for ``"softmax_no_dup"`` the same with the history left out of the
        index and appended after it (ranked last by ``top_k``), for
        ``"cpr"`` ``SoftmaxCPR.top_k_candidates`` (the top-``(sum k + k)``
        outside the history, then the history). ``extra_ids`` (per-row
        ids, e.g. to score) are appended. ``top_k`` ranks the result as
        served (id 0 fills and is never served).

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            k: int >= 0.
            extra_ids: int ``[B, E]`` or None. Defaults to ``None``.

        Returns:
            ``(candidate_ids, base_logits)``, int32 and float32 ``[B, C]``,
            to pass on to ``score_candidates``.

        Raises:
            ValueError: a head without an index (``head.has_index`` is
                False: a mixture of softmaxes does not factorise into one
                query vector).
        """
        tables = self.item_tables(False)
        return self.head.top_k_candidates(
            self._head_inputs(history, states, False),
            tables.output_table,
            k,
            item_bias=tables.output_bias,
            extra_ids=extra_ids,
        )

    def score_candidates(
        self,
        history: tf.Tensor,
        states: list,
        candidate_ids: Any,
        base_logits: Any = None,
        assume_unique: bool = False,
    ) -> tf.Tensor:
        """The ``logits`` of candidate ids, at inference.

        For the ``"cpr"`` head the candidates must meet the precondition
        of ``SoftmaxCPR.score_candidates`` (``top_k_candidates`` gives
        such a set); the other heads take any ids.

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            candidate_ids: int ``[B, M]``, ids in ``[0, N)``.
            base_logits: float32 ``[B, M]`` or None. The base logits
                ``top_k_candidates`` returned with the ids (the softmax
                heads' logits, CPR's ``f_V`` logits), from the index's own
                product. Not for ``"mos"``. Defaults to ``None``.
            assume_unique: bool. No id but 0 repeats within a row (so for
                ``top_k_candidates``' set without ``extra_ids``): saves
                CPR's cascade a sort (``SoftmaxCPR.score_candidates``).
                Defaults to ``False``.

        Returns:
            float32 ``[B, M]``: ``logits`` at the candidates' ids.
        """
        tables = self.item_tables(False)
        return self.head.score_candidates(
            self._head_inputs(history, states, False),
            tables.output_table,
            tf.cast(candidate_ids, tf.int32),
            item_bias=tables.output_bias,
            base_logits=base_logits,
            assume_unique=assume_unique,
        )

    def top_k(
        self,
        history: tf.Tensor,
        states: list,
        k: int,
        use_index: bool = False,
        exclude_ids: Any = None,
        history_last: bool | None = None,
    ) -> tuple:
        """The top-``k`` the model serves, at inference.

        ``tfrec_tricks.layers.top_k.served_top_k`` of the head: ranked by
        ``logits`` (ties to the lower id), through the index
        (``use_index``, needs ``has_index``) or over the catalogue;
        padding never; with ``--head softmax_no_dup``, the history's items
        after every other item (in the order of their logits before the
        exclusion, scored ``-1e9``), so a ``k`` above the items outside the
        history is filled by the history's. ``exclude_ids`` (a request's
        filter) are ranked last the same way, and ``history_last``
        overrides the head's setting.

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            k: int, at most the catalogue's ``num_items - 1`` real items.
            use_index: bool. Defaults to ``False``.
            exclude_ids: int ``[B, X]`` or None. Ids to rank last (0 is a
                filler). Defaults to ``None``.
            history_last: bool or None. Rank the history's items last;
                None: the head's setting. Defaults to ``None``.

        Returns:
            ``(ids, scores)``: int32 and float32 ``[B, k]``, best first.

        Raises:
            ValueError: ``k`` is not in ``[1, num_items - 1]``.
        """
        if history_last and not self.head.excludes_history(False):
            # This head reads the last position only: the history joins
            # the filter instead.
            exclude_ids = (
                history
                if exclude_ids is None
                else tf.concat([history, tf.cast(exclude_ids, tf.int32)], 1)
            )
            history_last = None
        tables = self.item_tables(False)
        return served_top_k(
            self.head,
            self._head_inputs(history, states, False),
            tables.output_table,
            k,
            item_bias=tables.output_bias,
            use_index=use_index,
            exclude_ids=exclude_ids,
            history_last=history_last,
        )
