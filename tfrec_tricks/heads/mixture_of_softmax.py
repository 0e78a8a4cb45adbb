"""Mixture of Softmaxes (MoS) output layer, a Softmax-CPR baseline."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.heads.input_contract import (
    as_item_table,
    candidate_ids_tensor,
    check_head_arguments,
    check_ids_in_range,
    dense_projection,
    unpack_head_inputs,
)
from tfrec_tricks.heads.output_head import OutputHead
from tfrec_tricks.layers.common import PADDING_LOGIT
from tfrec_tricks.serialization import register


@register
class MixtureOfSoftmax(OutputHead):
    """Mixture of ``K`` softmaxes over the item catalogue (Yang et al., 2018).

    With ``h`` the hidden state at the true last position of each history
    (``tfrec_tricks.heads.input_contract.last_positions``, as `SoftmaxCPR`: an
    empty history reads position 0), a prior ``pi = softmax(W_pi h + b_pi)``
    over ``K`` components and component queries
    ``h_k = tanh(W_k h + b_k)``, the layer returns

    ``log p(x) = log sum_k pi_k softmax(h_k E^T + b)_x``

    for every item ``x``. The output is **log-probabilities**: their
    ``logsumexp`` over the catalogue is 0, so they can be fed as logits to
    ``sparse_categorical_crossentropy(from_logits=True)`` (the extra
    log-softmax is then the identity) or ranked directly. Padding id 0 is
    left out of every component's softmax and gets ``-1e9``.

    The call API matches `SoftmaxCPR`, so a model can swap the heads; the
    history ids serve only to find the last position (unless
    ``last_positions`` gives it). So does `score_candidates`, though the
    mixture does not factorise into one query vector: it has no top-k
    index, and scoring candidates costs as much as the catalogue.

    Cost: ``K`` full ``[B, N]`` logit matrices (``O(K N d)`` per example and
    a ``[B, K, N]`` float32 intermediate), against one for a plain softmax.
    Everything after the projections is computed in float32.

    Args:
        num_components: int. Number ``K`` of mixture components, >= 1.
        dropout: float. Dropout rate on the component queries (training
            only). Defaults to ``0.0``.
        mask_padding: bool. Keep padding id 0 out of the softmaxes and give
            it ``-1e9``. Defaults to ``True``.
        output_dim: int or None. Size of the item table's rows; ``None``
            means the hidden size. Defaults to ``None``.
        kernel_initializer: str or initializer. Kernels of the prior and
            component projections. Defaults to ``"glorot_uniform"``.
        bias_initializer: str or initializer. Their biases. Defaults to
            ``"zeros"``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``.

    Call arguments:
        inputs: dict with ``"hidden_states"`` float ``[B, L, d_h]`` and
            ``"history_ids"`` int ``[B, L]`` (padding 0); optionally
            ``"last_positions"`` int ``[B]`` (see `SoftmaxCPR`); an
            optional ``"layer_hidden_states"`` is accepted and ignored.
        item_embeddings: float ``[N, output_dim]``, the item table.
        item_bias: float ``[N]`` or None. Per-item output bias. Defaults
            to ``None``.
        candidate_ids: int ``[M]`` or ``[B, M]`` or None. Return the
            log-probabilities of these items only (the normalisation still
            needs the full catalogue: same cost as without). Defaults to
            ``None``.
        training: bool. Enables dropout.

    Returns:
        float32 log-probabilities ``[B, N]`` (or ``[B, M]``).

    Example:

    >>> import tensorflow as tf
    >>> import tfrec_tricks.heads
    >>> head = tfrec_tricks.heads.MixtureOfSoftmax(num_components=3)
    >>> inputs = {
    ...     "hidden_states": tf.random.normal((2, 4, 8)),
    ...     "history_ids": tf.constant([[0, 5, 2, 5], [7, 1, 0, 0]]),
    ... }
    >>> log_probs = head(inputs, tf.random.normal((10, 8)))
    >>> print(log_probs.shape, log_probs.dtype.name)
    (2, 10) float32
    >>> total = tf.reduce_sum(tf.exp(log_probs), axis=-1).numpy()
    >>> print(total.round(4).tolist())
    [1.0, 1.0]

    References:
        - [Yang, Dai, Salakhutdinov and Cohen, ICLR 2018](
          https://arxiv.org/abs/1711.03953): Breaking the Softmax
          Bottleneck: A High-Rank RNN Language Model.
        - [Chang, Agarwal and McCallum, WSDM 2024](
          https://arxiv.org/abs/2310.14079): MoS as a baseline of
          Softmax-CPR in sequential recommendation.
    """

    def __init__(
        self,
        num_components: int,
        dropout: float = 0.0,
        mask_padding: bool = True,
        output_dim: int | None = None,
        kernel_initializer: Any = "glorot_uniform",
        bias_initializer: Any = "zeros",
        **kwargs: Any,
    ) -> None:
        super().__init__(
            mask_padding=mask_padding, output_dim=output_dim, **kwargs
        )
        if (
            isinstance(num_components, bool)
            or not isinstance(num_components, int)
            or num_components < 1
        ):
            raise ValueError(
                "`num_components` must be an int >= 1. "
                f"Received: num_components={num_components!r}"
            )
        check_head_arguments(dropout, None)
        self.num_components = num_components
        self.dropout = float(dropout)
        self.kernel_initializer = tf.keras.initializers.get(kernel_initializer)
        self.bias_initializer = tf.keras.initializers.get(bias_initializer)

    def build(self, input_shape: Any) -> None:
        try:
            hidden_dim = tf.TensorShape(input_shape["hidden_states"])[-1]
        except (TypeError, KeyError):
            raise ValueError(
                "`inputs` must be a dict with 'hidden_states' and "
                f"'history_ids'. Received: input_shape={input_shape}"
            ) from None
        if hidden_dim is None:
            raise ValueError(
                "The last axis of `hidden_states` must be known. "
                f"Received: hidden_states shape={input_shape['hidden_states']}"
            )
        hidden_dim = int(hidden_dim)
        units = self.output_dim or hidden_dim
        self.prior_projection = dense_projection(
            self, "prior_projection", self.num_components, hidden_dim
        )
        self.component_projection = dense_projection(
            self,
            "component_projection",
            self.num_components * units,
            hidden_dim,
        )
        self.dropout_layer = None
        if self.dropout > 0:
            self.dropout_layer = tf.keras.layers.Dropout(
                self.dropout, dtype=self.dtype_policy
            )
        super().build(input_shape)

    @property
    def has_index(self) -> bool:
        """Whether `top_k_candidates` is an exact index: never for a
        mixture, which does not factorise into one query vector."""
        return False

    def excludes_history(self, training: Any) -> bool:
        """Whether ``call`` ranks the history's items last: never."""
        del training  # the same in training and at inference
        return False

    def reads_last_state_only(self, training: Any) -> bool:
        """Whether a caller should pass one-position rows: no.

        The mixture reads only the last state, so such rows would give the
        same log-probabilities; but a model's output dropout before the
        head would then draw other masks, and every seeded MoS result
        would change. The full rows keep them.
        """
        del training  # the same in training and at inference
        return False

    def _read_inputs(
        self, inputs: Any, item_embeddings: Any, item_bias: Any
    ) -> tuple:
        """Checked ``(hidden, last, table, bias)``; builds on a first use."""
        hidden, ids, _, last = unpack_head_inputs(inputs)
        if not self.built:
            self.build({"hidden_states": hidden.shape})
        units = self.output_dim or hidden.shape[-1]
        table, bias = as_item_table(item_embeddings, item_bias, units)
        check_ids_in_range("history_ids", ids, tf.shape(table)[0])
        return hidden, last, table, bias

    def call(
        self,
        inputs: Any,
        item_embeddings: Any,
        item_bias: Any = None,
        candidate_ids: Any = None,
        training: Any = None,
    ) -> tf.Tensor:
        hidden, last, table, bias = self._read_inputs(
            inputs, item_embeddings, item_bias
        )
        if candidate_ids is not None:
            candidate_ids = candidate_ids_tensor(
                candidate_ids, tf.shape(table)[0]
            )
        return self._log_probs(
            hidden, last, table, bias, candidate_ids, training
        )

    def score_candidates(
        self,
        inputs: Any,
        item_embeddings: Any,
        candidate_ids: Any,
        item_bias: Any = None,
        base_logits: Any = None,
        assume_unique: bool = False,
        training: Any = False,
    ) -> tf.Tensor:
        """Log-probabilities of candidates, exactly as ``call`` gives them.

        The same method as `SoftmaxCPR.score_candidates`, so a model scores
        candidates with either head. The mixture's normalisation needs
        every item, so this costs as much as ``call`` (``O(K N d)`` per
        row); there is no precondition on the candidates.

        Args:
            inputs: dict, as for ``call``.
            item_embeddings: float ``[N, output_dim]``, the item table.
            candidate_ids: int ``[M]`` (shared by the batch) or ``[B, M]``,
                ids in ``[0, N)`` (repeats allowed).
            item_bias: float ``[N]`` or None. Defaults to ``None``.
            base_logits: None. A mixture has no base logits; the argument
                exists for the heads' common API. Defaults to ``None``.
            assume_unique: bool. Accepted for the heads' common API;
                nothing to deduplicate. Defaults to ``False``.
            training: bool. Enables dropout. Defaults to ``False``.

        Returns:
            float32 ``[B, M]``: ``call(...)`` at the candidates' ids.

        Raises:
            ValueError: ``base_logits`` is given.

        Example:

        >>> import tensorflow as tf
        >>> import tfrec_tricks.heads
        >>> head = tfrec_tricks.heads.MixtureOfSoftmax(num_components=2)
        >>> inputs = {
        ...     "hidden_states": tf.random.normal((2, 4, 8)),
        ...     "history_ids": tf.constant([[0, 5, 2, 5], [7, 1, 0, 0]]),
        ... }
        >>> table = tf.random.normal((10, 8))
        >>> candidates = tf.constant([[5, 9], [0, 3]])
        >>> scores = head.score_candidates(inputs, table, candidates)
        >>> full = tf.gather(head(inputs, table), candidates, batch_dims=1)
        >>> print(scores.shape, bool(tf.reduce_all(scores == full)))
        (2, 2) True
        """
        del assume_unique  # every candidate is scored on its own
        if base_logits is not None:
            raise ValueError(
                "A mixture of softmaxes has no base logits. Received: "
                "base_logits with head='mos'"
            )
        hidden, last, table, bias = self._read_inputs(
            inputs, item_embeddings, item_bias
        )
        candidate_ids = candidate_ids_tensor(candidate_ids, tf.shape(table)[0])
        return self._log_probs(
            hidden, last, table, bias, candidate_ids, training
        )

    def top_k_candidates(
        self,
        inputs: Any,
        item_embeddings: Any,
        k: int,
        item_bias: Any = None,
        extra_ids: Any = None,
        exclude_ids: Any = None,
    ) -> tuple:
        """The heads' index method; a mixture has no index (``has_index``).

        Raises:
            ValueError: always. The mixture does not factorise into one
                query vector, so no ``[B, N]`` product of one query with
                the table holds its top-k; score the catalogue instead.
        """
        raise ValueError(
            "A top-k index needs a head with one query vector; a mixture "
            "of softmaxes has none. Score the catalogue with `logits` "
            "instead. Received: head='mos'"
        )

    def _log_probs(
        self,
        hidden: tf.Tensor,
        last: tf.Tensor,
        table: tf.Tensor,
        bias: tf.Tensor | None,
        candidate_ids: tf.Tensor | None,
        training: Any,
    ) -> tf.Tensor:
        """Log-probabilities ``[B, N]``, or ``[B, M]`` at the candidates."""
        units = self.output_dim or hidden.shape[-1]
        num_items = tf.shape(table)[0]
        h = tf.gather(hidden, last, batch_dims=1)
        log_prior = tf.nn.log_softmax(
            tf.cast(self.prior_projection(h), tf.float32), axis=-1
        )  # [B, K]
        queries = tf.tanh(self.component_projection(h))
        if self.dropout_layer is not None:
            queries = self.dropout_layer(queries, training=training)
        queries = tf.reshape(
            tf.cast(queries, tf.float32), [-1, self.num_components, units]
        )
        logits = tf.einsum("bkd,nd->bkn", queries, table)  # [B, K, N]
        if bias is not None:
            logits += bias
        is_padding = tf.equal(tf.range(num_items), 0)
        if self.mask_padding:
            logits = tf.where(is_padding, tf.constant(PADDING_LOGIT), logits)
        log_probs = tf.nn.log_softmax(logits, axis=-1) + log_prior[:, :, None]
        outputs = tf.reduce_logsumexp(log_probs, axis=1)  # [B, N]
        if self.mask_padding:
            outputs = tf.where(is_padding, tf.constant(PADDING_LOGIT), outputs)
        if candidate_ids is None:
            return outputs
        if candidate_ids.shape.rank == 1:
            return tf.gather(outputs, candidate_ids, axis=1)
        return tf.gather(outputs, candidate_ids, batch_dims=1)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "num_components": self.num_components,
                "dropout": self.dropout,
                "kernel_initializer": tf.keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": tf.keras.initializers.serialize(
                    self.bias_initializer
                ),
            }
        )
        return config
