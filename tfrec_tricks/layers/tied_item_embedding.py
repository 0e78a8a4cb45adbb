"""Item embedding shared by the input lookup and the output logits."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.layers.common import (
    is_integer,
    is_training,
    item_logits,
    softmax_dtype,
)
from tfrec_tricks.serialization import register


@register
class TiedItemEmbedding(tf.keras.layers.Layer):
    """Item table used both to embed input ids and to score all items.

    The layer owns the item table ``U`` of shape ``[num_items, output_dim]``
    and, with ``use_bias``, an output bias ``b`` of shape ``[num_items]``.
    ``layer(ids)`` looks up ``U[ids]`` for the model's inputs;
    ``layer(hidden, reverse=True)`` returns the logits ``hidden U^T + b``
    over the whole catalogue. Tying (``tie=True``) shares ``U`` between
    both directions, which saves ``num_items * output_dim`` parameters and
    lets rare items learn from the output layer too; ``tie=False`` adds a
    separate output table ``V`` (logits ``hidden V^T + b``) so the saving
    can be measured with the same model code (what it measured:
    docs/decisions.md#tied-embeddings).

    Item id 0 is padding: with ``mask_padding`` its logit is set to
    ``-1e9`` so it can never be predicted (it still has a row in ``U``).

    The hidden state must have size ``output_dim``. When the encoder's
    output size differs from the embedding size, project it first, e.g.
    with ``tf.keras.layers.Dense(output_dim)``.

    Logits are computed and returned in float32 under mixed precision
    (``mixed_float16`` or ``mixed_bfloat16``), as keras advises for the
    last layer before a softmax; lookups return the compute dtype.

    Weights the model can use directly: ``embeddings`` (``U``),
    ``output_embeddings`` (``U`` when tied, else ``V``) and
    ``output_bias`` (``b``, or ``None`` without ``use_bias``).

    Args:
        num_items: int. Catalogue size ``N``, including padding id 0 (real
            items are ``1 .. N-1``); at least 2.
        output_dim: int. Embedding size ``d``.
        use_bias: bool. Add a per-item output bias. Defaults to ``True``.
        tie: bool. Share the input table with the output layer. Defaults
            to ``True``.
        mask_padding: bool. Give padding id 0 the logit ``-1e9``.
            Defaults to ``True``.
        embeddings_initializer: str or initializer. Initializer of ``U``.
            Defaults to ``"uniform"``.
        output_embeddings_initializer: str or initializer. Initializer of
            ``V`` (untied only). Defaults to ``"uniform"``.
        bias_initializer: str or initializer. Initializer of ``b``.
            Defaults to ``"zeros"``.
        embeddings_regularizer: str or regularizer or None. Regularizer of
            ``U`` (and of ``V`` when untied). Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``.

    Call arguments:
        inputs: int tensor of item ids (any shape) when ``reverse`` is
            false; float tensor ``[..., output_dim]`` of hidden states when
            ``reverse`` is true.
        reverse: bool. Look up embeddings (false) or compute logits
            (true). Defaults to ``False``.
        candidate_ids: int tensor or None. Only with ``reverse``: score
            only these items, see ``logits``. Defaults to ``None``.

    Returns:
        ``inputs.shape + [output_dim]`` embeddings, or logits of shape
        ``inputs.shape[:-1] + [num_items]`` (or ``[..., M]`` for ``M``
        candidates).

    Example:

    >>> import numpy as np
    >>> import tfrec_tricks.layers
    >>> items = tfrec_tricks.layers.TiedItemEmbedding(
    ...     num_items=100, output_dim=16)
    >>> history = np.array([[5, 7, 0], [1, 2, 3]])
    >>> vectors = items(history)
    >>> print(vectors.shape)
    (2, 3, 16)
    >>> hidden = tf.reduce_mean(vectors, axis=1)
    >>> logits = items(hidden, reverse=True)
    >>> print(logits.shape, float(logits[0, 0]))
    (2, 100) -1000000000.0
    >>> print(items.logits(hidden, candidate_ids=np.array([3, 4])).shape)
    (2, 2)
    >>> print(items.count_params())
    1700

    References:
        - [Inan et al., 2016](https://arxiv.org/abs/1611.01462): Tying word
          vectors and word classifiers.
        - [Press and Wolf, 2016](https://arxiv.org/abs/1608.05859): Using
          the output embedding to improve language models.
        - [Moreira et al., 2021](https://dl.acm.org/doi/10.1145/3460231.3474255):
          Transformers4Rec, appendix A (tying with an output bias).
    """

    def __init__(
        self,
        num_items: int,
        output_dim: int,
        use_bias: bool = True,
        tie: bool = True,
        mask_padding: bool = True,
        embeddings_initializer: Any = "uniform",
        output_embeddings_initializer: Any = "uniform",
        bias_initializer: Any = "zeros",
        embeddings_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not is_integer(num_items) or num_items < 2:
            raise ValueError(
                "`num_items` must be an int >= 2 (id 0 is padding). "
                f"Received: num_items={num_items}"
            )
        if not is_integer(output_dim) or output_dim <= 0:
            raise ValueError(
                "`output_dim` must be a positive int. "
                f"Received: output_dim={output_dim}"
            )
        self.num_items = int(num_items)
        self.output_dim = int(output_dim)
        self.use_bias = bool(use_bias)
        self.tie = bool(tie)
        self.mask_padding = bool(mask_padding)
        self.embeddings_initializer = tf.keras.initializers.get(
            embeddings_initializer
        )
        self.output_embeddings_initializer = tf.keras.initializers.get(
            output_embeddings_initializer
        )
        self.bias_initializer = tf.keras.initializers.get(bias_initializer)
        self.embeddings_regularizer = tf.keras.regularizers.get(
            embeddings_regularizer
        )

    def build(self, input_shape: Any = None) -> None:
        # autocast=False: the logits need the float32 table even when the
        # layer is called from inside a mixed-precision model; the lookup
        # casts explicitly.
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.num_items, self.output_dim),
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            autocast=False,
        )
        self.untied_output_embeddings = None
        if not self.tie:
            self.untied_output_embeddings = self.add_weight(
                name="output_embeddings",
                shape=(self.num_items, self.output_dim),
                initializer=self.output_embeddings_initializer,
                regularizer=self.embeddings_regularizer,
                autocast=False,
            )
        self.output_bias = None
        if self.use_bias:
            self.output_bias = self.add_weight(
                name="output_bias",
                shape=(self.num_items,),
                initializer=self.bias_initializer,
                autocast=False,
            )
        self.built = True

    @property
    def output_embeddings(self) -> Any:
        """The output table: ``embeddings`` when tied, else ``V``."""
        if self.tie:
            return self.embeddings
        return self.untied_output_embeddings

    def call(
        self,
        inputs: Any,
        reverse: bool = False,
        candidate_ids: Any = None,
    ) -> tf.Tensor:
        if reverse:
            return self.logits(inputs, candidate_ids=candidate_ids)
        if candidate_ids is not None:
            raise ValueError(
                "`candidate_ids` is only used with reverse=True. "
                f"Received: reverse={reverse}"
            )
        return self.lookup(inputs)

    def lookup(self, ids: Any, training: Any = None) -> tf.Tensor:
        """Returns ``embeddings[ids]`` in the compute dtype.

        At inference the rows are gathered from a dense read of the table,
        never by a sparse read of the variable (``ResourceGather``): that
        switches the variable to copy-on-read for the rest of the process,
        after which every dense read of it (the output product over the
        catalogue) copies the whole table, 256 MB at a million items of
        64 floats. In training, sparse optimizer updates of the table
        (untied, or the sampled objective) make that switch anyway, so the
        sparse read stays, which reads only the rows. Measured:
        docs/decisions.md#dense-table-reads.

        Args:
            ids: int tensor of item ids, any shape.
            training: bool or None. Whether this is a training step; None
                is inference. Defaults to ``None``.

        Returns:
            Tensor of shape ``ids.shape + [output_dim]``.
        """
        self._ensure_built()
        ids = tf.convert_to_tensor(ids)
        if not ids.dtype.is_integer:
            ids = tf.cast(ids, tf.int64)
        table = self.embeddings
        if not is_training(training):
            table = tf.convert_to_tensor(table)
        outputs = tf.gather(table, ids)
        return tf.cast(outputs, self.compute_dtype)

    def logits(
        self, hidden: Any, candidate_ids: Any = None, training: Any = None
    ) -> tf.Tensor:
        """Scores items for hidden states: ``hidden W^T + b``.

        ``W`` is ``output_embeddings``. Scores of padding id 0 are
        ``-1e9`` when ``mask_padding``. A score at an id equals the full
        logits at that id.

        Args:
            hidden: float tensor ``[..., output_dim]``.
            candidate_ids: int tensor or None. ``None`` scores the whole
                catalogue. ``[M]``: the same ``M`` candidates for every
                row of ``hidden``. ``[B, M]``: per-example candidates,
                where ``B`` is the first dimension of ``hidden``.
                Defaults to ``None``.
            training: bool or None. Whether this is a training step: the
                candidates' rows are then read sparsely, as ``lookup``
                reads them. Defaults to ``None`` (inference).

        Returns:
            Float32 (under mixed precision) logits of shape
            ``hidden.shape[:-1] + [num_items]`` or ``[..., M]``.
        """
        self._ensure_built()
        return item_logits(
            hidden,
            self.output_embeddings,
            self.output_bias,
            candidate_ids=candidate_ids,
            training=training,
            mask_padding=self.mask_padding,
            dtype=softmax_dtype(self.compute_dtype),
        )

    def _ensure_built(self) -> None:
        # `lookup` and `logits` may be called directly, before __call__.
        if not self.built:
            self.build(None)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "num_items": self.num_items,
                "output_dim": self.output_dim,
                "use_bias": self.use_bias,
                "tie": self.tie,
                "mask_padding": self.mask_padding,
                "embeddings_initializer": tf.keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "output_embeddings_initializer": (
                    tf.keras.initializers.serialize(
                        self.output_embeddings_initializer
                    )
                ),
                "bias_initializer": tf.keras.initializers.serialize(
                    self.bias_initializer
                ),
                "embeddings_regularizer": tf.keras.regularizers.serialize(
                    self.embeddings_regularizer
                ),
            }
        )
        return config
