"""What an objective reads: an encoded batch and the head that scores it."""

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from tfrec_tricks.objectives.item_rows import ItemRows
from tfrec_tricks.objectives.position_rows import (
    expand_positions,
    target_positions,
)


class EncodedBatch:
    """A batch the encoder has read, and the head that scores it.

    The objectives' counterpart of the query and candidate embeddings a
    ``tfrs.tasks.Retrieval`` receives: the model encodes the histories and
    hands this over; the objective decides what to score (the catalogue,
    candidates, the head's own cross-entropy) and how to turn it into a
    loss. The head is asked only through its public methods, so an
    objective never needs to know which head it is.

    Random ops run in the order the objective calls these methods:
    ``head_inputs`` draws the output dropout, ``labels`` the label SSE.
    Each call draws again, so an objective that scores one draw several
    times calls ``head_inputs`` once and passes its result on.

    Args:
        head: the output head (``tfrec_tricks.layers.TiedSoftmax``,
            ``SoftmaxCPR``, ``MixtureOfSoftmax`` or any head with their
            methods).
        head_inputs: callable ``(history, states, training)`` -> the head's
            ``inputs`` dict (the model's output dropout and row cut).
        history: int32 ``[B, L]`` ids, as the model's ``encode`` returns.
        states: list of ``[B, L, d]`` per-layer states.
        targets: int32 ``[B]``, the true next items.
        item_table: float ``[N, d]``, the output item table, or an
            ``ItemRows``: a table whose rows are computed for the ids
            scored (``logits`` of candidates; it then holds the bias too).
        item_bias: float ``[N]`` or None (None with an ``ItemRows``).
            Defaults to None.
        position_targets: int ``[B, L]`` or None: every position's target
            (0 where none) of merged-prefix rows. Defaults to None.
        label_noise: callable ``(targets, training=...)`` or None: the
            label SSE layer, which perturbs the loss's labels in training.
            Defaults to None.
        candidate_probability: float ``[N]`` or None: each item's sampling
            probability (the logQ correction). Defaults to None.
        training: bool. Defaults to False.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers import TiedSoftmax
    >>> from tfrec_tricks.objectives import EncodedBatch
    >>> history = tf.constant([[1, 2, 0], [3, 0, 0]])
    >>> states = [tf.ones([2, 3, 4])]
    >>> batch = EncodedBatch(
    ...     TiedSoftmax(), lambda h, s, training: {
    ...         "hidden_states": s[-1], "history_ids": h},
    ...     history, states, tf.constant([3, 1]),
    ...     item_table=tf.ones([5, 4]))
    >>> batch.logits().shape
    TensorShape([2, 5])
    """

    def __init__(
        self,
        head: Any,
        head_inputs: Callable,
        history: tf.Tensor,
        states: list,
        targets: tf.Tensor,
        *,
        item_table: Any,
        item_bias: Any = None,
        position_targets: Any = None,
        label_noise: Callable | None = None,
        candidate_probability: Any = None,
        training: bool = False,
    ):
        self.head = head
        self._head_inputs = head_inputs
        self.history = history
        self.states = states
        self.targets = targets
        self.item_table = item_table
        self.item_bias = item_bias
        self.position_targets = position_targets
        self.label_noise = label_noise
        self.candidate_probability = candidate_probability
        self.training = training

    def head_inputs(self) -> dict:
        """The head's ``inputs`` (draws the output dropout in training)."""
        return self._head_inputs(self.history, self.states, self.training)

    def labels(self, targets: tf.Tensor) -> tf.Tensor:
        """The loss's labels: ``targets`` through the label SSE, if any
        (the identity outside training)."""
        if self.label_noise is None:
            return targets
        return self.label_noise(targets, training=self.training)

    @property
    def excludes_history(self) -> bool:
        """Whether the head ranks the history last (``softmax_no_dup`` at
        inference): a loss scores without that rule, since a target may
        repeat the history."""
        return self.head.excludes_history(self.training)

    def logits(
        self,
        inputs: dict | None = None,
        candidate_ids: Any = None,
        exclude_history: bool | None = None,
        return_base_logits: bool = False,
    ) -> Any:
        """The head's logits ``[B, N]``, or ``[B, M]`` / ``[B, K]`` of
        candidate ids.

        Args:
            inputs: the head's inputs (``head_inputs``); None draws new
                ones. Defaults to None.
            candidate_ids: int ``[B, M]`` per row, ``[K]`` shared, or None
                for the catalogue. Defaults to None.
            exclude_history: bool or None, overrides the head's setting
                (``TiedSoftmax``). Defaults to None.
            return_base_logits: bool. The pair ``(logits, base logits)``
                (``SoftmaxCPR``). Defaults to False.

        Returns:
            float32 logits, or the pair with ``return_base_logits``.
        """
        extra = {}
        if return_base_logits:
            extra["return_base_logits"] = True
        if exclude_history is not None:
            extra["exclude_history"] = exclude_history
        if inputs is None:
            inputs = self.head_inputs()
        table, bias = self.item_table, self.item_bias
        if isinstance(table, ItemRows):
            inputs, table, bias, candidate_ids = table.scoring_table(
                inputs, candidate_ids
            )
        return self.head(
            inputs,
            table,
            item_bias=bias,
            candidate_ids=candidate_ids,
            training=self.training,
            **extra,
        )

    def position_rows(self) -> "EncodedBatch":
        """One row per target position of merged-prefix rows, or ``self``
        without ``position_targets``.

        ``target_positions`` for a head that reads the last state only
        (no copy of ``[M, L, d]`` states), else ``expand_positions``.
        """
        if self.position_targets is None:
            return self
        rows = expand_positions
        if self.head.reads_last_state_only(self.training):
            rows = target_positions
        history, states, targets = rows(
            self.history, self.states, self.position_targets
        )
        return EncodedBatch(
            self.head,
            self._head_inputs,
            history,
            states,
            targets,
            item_table=self.item_table,
            item_bias=self.item_bias,
            label_noise=self.label_noise,
            candidate_probability=self.candidate_probability,
            training=self.training,
        )
