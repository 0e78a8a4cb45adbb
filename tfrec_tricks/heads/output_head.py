"""The base class of the output heads: the API a model calls them by."""

import abc
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.heads.input_contract import (
    check_head_arguments,
)


class OutputHead(tf.keras.layers.Layer, abc.ABC):
    """A layer that scores the item catalogue from an encoder's states.

    The model and the serving module call every head the same way and never
    ask which head it is: ``call`` for the logits of the catalogue (or of
    ``candidate_ids``), `top_k_candidates` and `score_candidates` for the
    serving index, and the properties `has_index`, `has_cross_entropy`,
    `excludes_history` and `reads_last_state_only` to choose a path. A
    head is one subclass: it fills in the abstract members and states its
    own arguments; this class owns the shared ones (``mask_padding``,
    ``output_dim``), their validation and their config, and the shared
    documentation below.

    The shared inputs: ``inputs`` is a dict with ``"hidden_states"`` float
    ``[B, L, d_h]`` and ``"history_ids"`` int ``[B, L]`` (padding 0),
    optionally ``"last_positions"`` int ``[B]`` and
    ``"layer_hidden_states"`` (a list of ``[B, L, d_h]``); a head reads
    ``h``, the state at each row's true last position
    (``tfrec_tricks.heads.input_contract.last_positions``). ``item_embeddings``
    is the item table ``[N, d]`` (row 0 is padding) and ``item_bias`` an
    optional ``[N]`` bias. Logits are float32, padding at ``-1e9`` with
    ``mask_padding``.

    The item table arrives as a call argument, so a head keeps it float32
    (``autocast=False`` unless given: Keras 3 would otherwise cast every
    float argument to float16 under mixed precision).

    Args:
        mask_padding: bool. Give padding id 0 the logit ``-1e9``. Defaults
            to ``True``.
        output_dim: int or None. Size of the item table's rows when it
            differs from the hidden size; ``None``: the hidden size.
            Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``.

    Example:

    >>> import tfrec_tricks.heads
    >>> heads = [
    ...     tfrec_tricks.heads.TiedSoftmax(),
    ...     tfrec_tricks.heads.SoftmaxCPR(reranker_ks=(2,)),
    ...     tfrec_tricks.heads.MixtureOfSoftmax(num_components=2),
    ... ]
    >>> [isinstance(head, tfrec_tricks.heads.OutputHead) for head in heads]
    [True, True, True]
    >>> [head.has_index for head in heads]
    [True, True, False]
    >>> [head.has_cross_entropy for head in heads]
    [False, True, False]

    References:
        - keras-rs ``layers/retrieval/retrieval.py``: the ``Retrieval``
          base class whose subclasses a model calls the same way.
    """

    def __init__(
        self,
        mask_padding: bool = True,
        output_dim: int | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        check_head_arguments(0.0, output_dim)
        self.mask_padding = bool(mask_padding)
        self.output_dim = output_dim

    # ------------------------------------------------------------ properties

    @property
    @abc.abstractmethod
    def has_index(self) -> bool:
        """Whether `top_k_candidates` serves the exact top-k from an index.

        An index: one ``[B, N]`` product of a query vector with the table
        and an exact top-k of it. The serving module asks this; a head
        without one (the mixture of softmaxes) is served by scoring the
        whole catalogue with ``call``.
        """

    @property
    def has_cross_entropy(self) -> bool:
        """Whether the head computes its own training loss.

        A head that does gives `cross_entropy` and
        `position_cross_entropy`, cheaper than the cross-entropy of
        ``call``'s logits; a training objective then calls them instead.
        Defaults to ``False``: the cross-entropy of the logits is the loss.
        """
        return False

    @abc.abstractmethod
    def excludes_history(self, training: Any) -> bool:
        """Whether ``call`` ranks the history's items last.

        Args:
            training: bool or None. Never in training.
        """

    @abc.abstractmethod
    def reads_last_state_only(self, training: Any) -> bool:
        """Whether the head reads only each row's last state (and id).

        Such a head lets a caller pass one-position rows.

        Args:
            training: bool or None.
        """

    # --------------------------------------------------------------- scoring

    @abc.abstractmethod
    def call(
        self,
        inputs: Any,
        item_embeddings: Any,
        item_bias: Any = None,
        candidate_ids: Any = None,
        training: Any = None,
    ) -> Any:
        """The logits of the catalogue, or of ``candidate_ids``.

        Args:
            inputs: dict of the states and the history ids (see the class).
            item_embeddings: float ``[N, d]``, the item table.
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            candidate_ids: int ``[M]`` (shared by the batch), ``[B, M]`` or
                None. Score only these ids: the logits of the catalogue
                at those ids. Defaults to ``None``.
            training: bool or None.

        Returns:
            float32 ``[B, N]``, or ``[B, M]`` with ``candidate_ids``.
        """

    @abc.abstractmethod
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

        Rank `score_candidates` of the set (with the returned base logits)
        with ``tfrec_tricks.layers.top_k.top_k_positions``, entries with
        id 0 left out, for ``call``'s exact top-``k`` (ties to the lower
        id). A head without an index (`has_index` False) raises.

        Args:
            inputs: dict, as for ``call``.
            item_embeddings: float ``[N, d]``, the item table.
            k: int >= 0.
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            extra_ids: int ``[B, E]`` or None. Ids to append to the set.
                Defaults to ``None``.
            exclude_ids: int ``[B, X]`` or None. Ids to leave out of the
                index and append (a request's filter: they are ranked
                last, never dropped). Defaults to ``None``.

        Returns:
            ``(candidate_ids, base_logits)``: int32 and float32 ``[B, C]``,
            the ids (0 for fillers) and their base logits, to pass on to
            `score_candidates`.

        Raises:
            ValueError: ``k`` is not an int >= 0, or the head has no index.
        """

    @abc.abstractmethod
    def score_candidates(
        self,
        inputs: Any,
        item_embeddings: Any,
        candidate_ids: Any,
        item_bias: Any = None,
        base_logits: Any = None,
        assume_unique: bool = False,
    ) -> tf.Tensor:
        """``call``'s logits at candidate ids, at inference.

        Args:
            inputs: dict, as for ``call``.
            item_embeddings: float ``[N, d]``, the item table.
            candidate_ids: int ``[B, M]`` (or ``[M]`` where the head says
                so), ids in ``[0, N)``; repeats allowed.
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            base_logits: float ``[B, M]`` or None. The base logits
                `top_k_candidates` returned with the ids. Defaults to
                ``None``.
            assume_unique: bool. No id but padding repeats within a row
                (as in `top_k_candidates`' set without ``extra_ids``).
                Defaults to ``False``.

        Returns:
            float32 ``[B, M]``: ``call(...)`` at the candidates' ids.
        """

    # ------------------------------------------------------------------ loss

    def cross_entropy(
        self,
        inputs: Any,
        item_embeddings: Any,
        labels: Any,
        item_bias: Any = None,
        training: Any = None,
        rank_labels: Any = None,
    ) -> tuple:
        """The training loss of ``call``'s logits, without writing them.

        Only a head with `has_cross_entropy` computes it; the others
        raise: take the cross-entropy of ``call``'s logits instead.

        Args:
            inputs, item_embeddings, item_bias, training: as ``call``'s.
            labels: int ``[B]``, the items whose cross-entropy is taken.
            rank_labels: int ``[B]`` or None. The items to rank (e.g. the
                true targets when ``labels`` are perturbed); None ranks
                ``labels``.

        Returns:
            ``(cross_entropy, base_cross_entropy, ranks)``, float32 ``[B]``
            each: the cross-entropy of ``call``'s logits at ``labels``,
            that of the head's base logits (its plain softmax inside), and
            ``tfrec_tricks.evaluation.full_ranking.tf_target_ranks`` of
            ``rank_labels`` (or ``labels``) by ``call``'s logits.

        Raises:
            NotImplementedError: the head has no cross-entropy of its own.
        """
        raise NotImplementedError(self._no_cross_entropy("cross_entropy"))

    def position_cross_entropy(
        self,
        inputs: Any,
        item_embeddings: Any,
        position_targets: Any,
        item_bias: Any = None,
        training: Any = None,
        labels: Any = None,
    ) -> tuple:
        """`cross_entropy` at every target position of every row.

        Position ``p`` of row ``b`` counts as its own example: the history
        cut after ``p`` and read at ``p``, as
        ``SequentialRetrievalModel.expand_positions`` would give it (the
        states of a causal encoder up to ``p`` are those of the cut
        history). Only a head with `has_cross_entropy` computes it.

        Args:
            inputs, item_embeddings, item_bias, training: as ``call``'s.
                ``inputs`` must not hold ``"last_positions"``.
            position_targets: int ``[B, L']``, the target after each
                position, 0 where none (``L' >= L``; columns past ``L``
                are ignored).
            labels: int ``[M]`` or None. The items whose cross-entropy is
                taken, one per target in row-major order (e.g. the targets
                perturbed); None takes the targets.

        Returns:
            ``(cross_entropy, base_cross_entropy, ranks)``, float32 ``[M]``
            each, in row-major order of the targets; ranks are the true
            targets'.

        Raises:
            NotImplementedError: the head has no cross-entropy of its own.
        """
        raise NotImplementedError(
            self._no_cross_entropy("position_cross_entropy")
        )

    def _no_cross_entropy(self, method: str) -> str:
        return (
            f"{type(self).__name__} computes no {method} of its own "
            "(has_cross_entropy is False): take the cross-entropy of "
            f"`call`'s logits. Received: head={type(self).__name__}"
        )

    # --------------------------------------------------------------- helpers

    @staticmethod
    def check_k(k: Any) -> int:
        """``k`` of `top_k_candidates` as an int; ValueError unless >= 0."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
            raise ValueError(f"`k` must be an int >= 0. Received: k={k!r}")
        return int(k)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {"mask_padding": self.mask_padding, "output_dim": self.output_dim}
        )
        return config
