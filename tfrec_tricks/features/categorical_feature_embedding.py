"""Mean embedding of the ids of a categorical (or multi-valued) column."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.layers.common import is_integer, softmax_dtype
from tfrec_tricks.serialization import register

# The item table's initializer (ModelConfig.embedding_init_stddev).
_DEFAULT_STDDEV = 0.02


@register
class CategoricalFeatureEmbedding(tf.keras.layers.Layer):
    """Embeds the ids of a categorical column; averages multi-valued rows.

    The last axis of the input holds the ``V`` values of one row (a
    single-valued column has ``V = 1``; a multi-valued one, such as an
    item's genres, is padded to ``V`` with id 0). With the table ``T`` of
    shape ``[vocabulary_size, output_dim]`` and the ids ``x_1 .. x_V`` of a
    row, the output is the mean over the non-padding ids::

        e = sum_{v : x_v != 0} T[x_v] / max(1, |{v : x_v != 0}|)

    so a row of padding only gives zeros (never a NaN), and padding never
    trains row 0 of ``T``. Id 1 is the out-of-vocabulary token (it has a
    row and is trained like any token); the tokens are ``2 ..
    vocabulary_size - 1``.

    The rows may also be ragged (a ``tf.RaggedTensor`` ``[N, None]`` of
    ids, padding 0 masked too): the mean is then a segment mean over the
    flat ids (``tf.sparse.segment_mean``), whose cost is the number of
    ids, not ``N`` times the longest row.

    The table is read whole (a dense read) and the math is done in
    float32; the output has the layer's compute dtype.

    Args:
        vocabulary_size: int. Rows of the table, padding id 0 and the
            out-of-vocabulary id 1 included; at least 2.
        output_dim: int. Size of the embeddings.
        embeddings_initializer: str or initializer or None. Initializer of
            the table; ``None`` is ``RandomNormal(stddev=0.02)``, as the
            item table's. Defaults to ``None``.
        embeddings_regularizer: str or regularizer or None. Regularizer of
            the table. Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``
            (``name``, ``dtype``, ``trainable``).

    Call arguments:
        inputs: int tensor ``[..., V]`` of ids in ``[0, vocabulary_size)``,
            0 being padding; or an int ``tf.RaggedTensor`` ``[N, None]``.

    Returns:
        A tensor ``[..., output_dim]`` in the layer's compute dtype.

    Example:

    >>> import numpy as np
    >>> import tfrec_tricks.features
    >>> genres = tfrec_tricks.features.CategoricalFeatureEmbedding(
    ...     vocabulary_size=6, output_dim=4)
    >>> ids = np.array([[2, 5, 0], [3, 0, 0], [0, 0, 0]], "int32")
    >>> vectors = genres(ids)
    >>> print(vectors.shape)
    (3, 4)
    >>> table = genres.embeddings.numpy()
    >>> print(np.allclose(vectors[0], (table[2] + table[5]) / 2))
    True
    >>> print(np.abs(vectors[2].numpy()).max())
    0.0
    >>> import tensorflow as tf
    >>> ragged = tf.ragged.constant([[2, 5], [3], []])
    >>> print(np.allclose(genres(ragged), vectors))
    True

    References:
        - [Moreira et al., 2021](https://dl.acm.org/doi/10.1145/3460231.3474255):
          Transformers4Rec (categorical item features embedded and
          merged with the item id embedding).
    """

    def __init__(
        self,
        vocabulary_size: int,
        output_dim: int,
        embeddings_initializer: Any = None,
        embeddings_regularizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if not is_integer(vocabulary_size) or vocabulary_size < 2:
            raise ValueError(
                "`vocabulary_size` must be an int >= 2 (id 0 is padding, "
                f"1 out-of-vocabulary). Received: "
                f"vocabulary_size={vocabulary_size!r}"
            )
        if not is_integer(output_dim) or output_dim <= 0:
            raise ValueError(
                "`output_dim` must be a positive int. "
                f"Received: output_dim={output_dim!r}"
            )
        self.vocabulary_size = int(vocabulary_size)
        self.output_dim = int(output_dim)
        if embeddings_initializer is None:
            embeddings_initializer = tf.keras.initializers.RandomNormal(
                stddev=_DEFAULT_STDDEV
            )
        self.embeddings_initializer = tf.keras.initializers.get(
            embeddings_initializer
        )
        self.embeddings_regularizer = tf.keras.regularizers.get(
            embeddings_regularizer
        )

    def build(self, input_shape: Any = None) -> None:
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, self.output_dim),
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            autocast=False,
        )
        self.built = True

    def call(self, inputs: Any) -> tf.Tensor:
        dtype = softmax_dtype(self.compute_dtype)
        table = tf.cast(tf.convert_to_tensor(self.embeddings), dtype)
        if isinstance(inputs, tf.RaggedTensor):
            return tf.cast(_ragged_mean(table, inputs), self.compute_dtype)
        ids = tf.convert_to_tensor(inputs)
        if not ids.dtype.is_integer:
            ids = tf.cast(ids, tf.int64)
        vectors = tf.gather(table, ids)
        valid = tf.cast(tf.not_equal(ids, 0), dtype)[..., tf.newaxis]
        total = tf.reduce_sum(vectors * valid, axis=-2)
        count = tf.reduce_sum(valid, axis=-2)
        outputs = total / tf.maximum(count, 1.0)
        return tf.cast(outputs, self.compute_dtype)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shape = tuple(tf.TensorShape(input_shape).as_list())
        return shape[:-1] + (self.output_dim,)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "output_dim": self.output_dim,
                "embeddings_initializer": tf.keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "embeddings_regularizer": tf.keras.regularizers.serialize(
                    self.embeddings_regularizer
                ),
            }
        )
        return config


def _ragged_mean(table: tf.Tensor, rows: tf.RaggedTensor) -> tf.Tensor:
    """``[N, d]``: each row's mean of ``table``'s rows at its non-padding
    ids, zeros for a row without any: a segment mean over the flat ids."""
    if rows.shape.rank != 2 or rows.ragged_rank != 1:
        raise ValueError(
            "Ragged ids must be rows [N, None]. "
            f"Received: a RaggedTensor of shape {rows.shape}"
        )
    ids = rows.values
    if not ids.dtype.is_integer:
        ids = tf.cast(ids, tf.int64)
    row_ids = rows.value_rowids()
    real = tf.not_equal(ids, 0)
    return tf.sparse.segment_mean(
        table,
        tf.boolean_mask(ids, real),
        tf.boolean_mask(row_ids, real),
        num_segments=rows.nrows(),
    )
