"""Fusion of an item's id embedding with the embeddings of its features."""

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from tfrec_tricks.layers.common import is_integer
from tfrec_tricks.serialization import register

FUSION_MODES = ("concat", "sum")
"""The fusions `FeatureFusion` knows: ``"concat"`` and ``"sum"``."""


def _shapes(input_shape: Any) -> list:
    """A list of ``tf.TensorShape`` from the shapes of a list of inputs."""
    if isinstance(input_shape, tf.TensorShape) or not isinstance(
        input_shape, Sequence
    ):
        single = True
    else:
        # A list of dimensions is the shape of one tensor, not a list.
        single = all(d is None or is_integer(d) for d in input_shape)
    if single:
        raise ValueError(
            "`FeatureFusion` is called on a list of tensors [..., d_i]. "
            f"Received: input_shape={input_shape}"
        )
    return [tf.TensorShape(shape) for shape in input_shape]


@register
class FeatureFusion(tf.keras.layers.Layer):
    """Fuses a list of vectors (an item's id embedding, then its features).

    Given ``x_0`` (the id embedding, size ``d_0``) and ``x_1 .. x_k`` (one
    embedding per feature, sizes ``d_i``), with the same leading shape:

    - ``"concat"``: ``y = [x_0; x_1; ...; x_k] W + b``, a Dense projection
      (``W`` of shape ``[d_0 + ... + d_k, output_dim]``) of the
      concatenation: the fusion that won in Transformers4Rec's
      experiments, which can weigh every feature differently;
    - ``"sum"``: ``y = x_0 + x_1 + ... + x_k`` (all ``d_i`` equal), as in
      RecTools' item nets: no parameter, and the fused vector stays in the
      id embeddings' space, so it can be tied to an output layer.

    Args:
        mode: str. One of ``FUSION_MODES``: ``"concat"`` or ``"sum"``.
            Defaults to ``"concat"``.
        output_dim: int or None. ``"concat"``: the size of the projection
            (``None``: ``d_0``, the id embedding's size). ``"sum"``:
            ``None`` or ``d``. Defaults to ``None``.
        **kwargs: other keyword arguments of ``tf.keras.layers.Layer``
            (``name``, ``dtype``, ``trainable``).

    Call arguments:
        inputs: list of float tensors ``[..., d_i]`` with the same leading
            shape, the id embedding first.

    Returns:
        A tensor ``[..., output_dim]`` (``"concat"``) or ``[..., d]``
        (``"sum"``) in the layer's compute dtype.

    Example:

    >>> import numpy as np
    >>> import tfrec_tricks.features
    >>> ids = np.ones((5, 4), "float32")
    >>> genre = np.full((5, 4), 0.5, "float32")
    >>> price = np.zeros((5, 2), "float32")
    >>> concat = tfrec_tricks.features.FeatureFusion("concat", output_dim=4)
    >>> print(concat([ids, genre, price]).shape)
    (5, 4)
    >>> print(concat.projection.kernel.shape)
    (10, 4)
    >>> total = tfrec_tricks.features.FeatureFusion("sum")
    >>> print(total([ids, genre]).numpy()[0])
    [1.5 1.5 1.5 1.5]

    References:
        - [Moreira et al., 2021](https://dl.acm.org/doi/10.1145/3460231.3474255):
          Transformers4Rec (concatenation and projection of the item id
          and feature embeddings).
        - [RecTools](https://github.com/MobileTeleSystems/RecTools):
          ``rectools.models.nn.item_net.SumOfEmbeddingsConstructor`` (sum
          of the id and feature embeddings, tied to the output).
    """

    def __init__(
        self,
        mode: str = "concat",
        output_dim: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if mode not in FUSION_MODES:
            raise ValueError(
                f"`mode` must be one of {FUSION_MODES}. Received: mode={mode!r}"
            )
        if output_dim is not None and (
            not is_integer(output_dim) or output_dim <= 0
        ):
            raise ValueError(
                "`output_dim` must be a positive int or None. "
                f"Received: output_dim={output_dim!r}"
            )
        self.mode = mode
        self.output_dim = None if output_dim is None else int(output_dim)
        self.projection = None

    def build(self, input_shape: Any) -> None:
        shapes = _shapes(input_shape)
        sizes = [shape[-1] if shape.rank else None for shape in shapes]
        if not shapes or None in sizes:
            raise ValueError(
                "`FeatureFusion` needs a non-empty list of inputs with a "
                "known last dimension. "
                f"Received: input_shape={[s.as_list() for s in shapes]}"
            )
        if self.mode == "sum":
            expected = self.output_dim or sizes[0]
            if any(size != expected for size in sizes):
                raise ValueError(
                    "mode='sum' adds vectors of one size (output_dim, if "
                    f"given): {expected}. Received: sizes={sizes}, "
                    f"output_dim={self.output_dim}"
                )
        else:
            self.projection = tf.keras.layers.Dense(
                self.output_dim or sizes[0],
                dtype=self.dtype_policy,
                name="projection",
            )
            with tf.name_scope(self.projection.name):
                self.projection.build(
                    tf.TensorShape(shapes[0][:-1]).concatenate([sum(sizes)])
                )
        self.built = True

    def call(self, inputs: Any) -> tf.Tensor:
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise ValueError(
                "`FeatureFusion` is called on a list of tensors [..., d_i]. "
                f"Received: inputs of type {type(inputs).__name__}"
            )
        tensors = [tf.cast(x, self.compute_dtype) for x in inputs]
        if self.mode == "sum":
            return tf.add_n(tensors)
        return self.projection(tf.concat(tensors, axis=-1))

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = _shapes(input_shape)
        size = self.output_dim or shapes[0][-1]
        return tuple(shapes[0][:-1].as_list()) + (size,)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"mode": self.mode, "output_dim": self.output_dim})
        return config
