"""The ``tf.Module`` that ``export --format onnx`` converts to ONNX."""

from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from tfrec_tricks.export.serving_module import ServingModule

#: What an ONNX export answers: the top-K (``item_ids``, ``scores``), or
#: the logits over the catalogue (``logits``) where the top-K cannot be
#: expressed in ops the converter knows.
OUTPUT_KINDS = ("top_k", "logits")


class OnnxScoringModule(ServingModule):
    """``serving_default``'s scoring path, in ops that tf2onnx converts.

    The computation of ``ServingModule.recommend`` with ``scoring="full"``
    (the model's logits over the whole catalogue, then an exact top-K,
    ties to the lower id, which ONNX's ``TopK`` keeps), written so that
    tf2onnx 1.17 converts it: raw ids are looked up *before* the history
    is padded (tf2onnx converts a string ``Pad`` through a cast to float,
    which fails at run time), and each lookup keeps its keys' shape
    (tf2onnx infers no shape for a table lookup, and the ops after it
    need their rank). The served top-K is the same as the SavedModel's
    through its index (``ServingModule``: the index serves the
    full-catalogue top-K).

    A model that ranks the history's items last (``--head
    softmax_no_dup``) answers its logits over the catalogue instead
    (``output_kind == "logits"``): its ranking orders the history's items
    among themselves by sort keys made with bit casts
    (``tfrec_tricks.layers.top_k.sort_keys``), which neither tf2onnx nor
    ONNX has ops for.

    Inputs (``input_signature``), as ``serving_default``'s: ``history``
    (string ``[B, L]``, raw ids padded with ``""``), one float ``[B, L]``
    per feature of the model, one string ``[B, L]`` per token feature.
    Outputs: ``item_ids`` (string ``[B, K]``) and ``scores`` (float32
    ``[B, K]``); or ``logits`` (float32 ``[B, N]``, column ``j`` the item
    of contiguous id ``j``, padding and, for ``softmax_no_dup``, the
    history's items at ``-1e9``).

    ONNX has no assertions: the request checks of ``check_request`` are
    dropped by the conversion, so a feature of another shape than
    ``history`` is not refused by the ONNX model.

    Args:
        model: a trained ``SequentialRetrievalModel`` (built).
        vocabulary: the run's item vocabulary, see
            ``tfrec_tricks.export.serving_module.load_item_vocabulary``.
        k: int. Number of items per row (``"top_k"``). Defaults to 10.
        name: str or None. Module name. Defaults to None.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.export.onnx_scoring_module import (
    ...     OnnxScoringModule)
    >>> from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
    >>> model = SequentialRetrievalModel(ModelConfig(num_items=6, max_len=4))
    >>> module = OnnxScoringModule(
    ...     model, ["[PAD]", "a", "b", "c", "d", "e"], k=2)
    >>> module.output_kind, list(module.input_signature())
    ('top_k', ['history'])
    >>> out = module(tf.constant([["a", "zzz", "b"]]))
    >>> sorted(out), out["item_ids"].shape
    (['item_ids', 'scores'], TensorShape([1, 2]))
    """

    def __init__(
        self,
        model: Any,
        vocabulary: Any,
        k: int = 10,
        name: str | None = None,
    ) -> None:
        super().__init__(model, vocabulary, k=k, scoring="full", name=name)
        self.output_kind = "logits" if model.ranks_history_last else "top_k"

    def __call__(self, *inputs: Any, training: bool = False) -> dict:
        """The scoring path of the inputs in ``input_signature``'s order,
        given one by one or as one list (tf2onnx's ``from_keras`` traces
        ``module(*inputs, training=False)``, or ``module([...])`` first)."""
        if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
            inputs = tuple(inputs[0])
        names = list(self.input_signature())
        if len(inputs) != len(names):
            raise ValueError(
                f"The model reads the inputs {names}. "
                f"Received: {len(inputs)} inputs"
            )
        return self.score(**dict(zip(names, inputs)))

    def score(self, history: Any, **features: Any) -> dict:
        """``recommend`` (``"top_k"``) or the logits (``"logits"``).

        Args:
            history: string ``[B, L]`` raw item ids, padded with ``""``.
            **features: float ``[B, L]`` per feature of the model, string
                ``[B, L]`` per token feature.

        Returns:
            dict: ``item_ids`` and ``scores`` (``[B, K]``), or ``logits``
            (float32 ``[B, N]``).
        """
        if self.output_kind == "top_k":
            return self.recommend(history, **features)
        history, features, _ = self.check_request(history, features)
        ids, states = self._encode(history, features)
        return {"logits": self.model.logits(ids, states)}

    def _prepare(self, history: tf.Tensor, checked: Mapping) -> tuple:
        """``ServingModule._prepare``, strings looked up before padding:
        the same ids and features."""
        pad = [[0, 0], [0, 1]]
        ids = tf.pad(tf.cast(_lookup(self.item_lookup, history), tf.int32), pad)
        values = {
            name: tf.pad(checked[name], pad) for name in self.feature_names
        }
        for name, table in self.token_tables.items():
            # Padding is id 0, the id of "" (no value), as ServingModule's
            # padding with "" gives.
            looked_up = tf.cast(_lookup(table, checked[name]), tf.float32)
            values[name] = tf.pad(looked_up, pad)
        return self._compact(ids, values)


def _lookup(table: Any, keys: tf.Tensor) -> tf.Tensor:
    """``table.lookup(keys)`` with the static rank of ``keys``: tf2onnx
    infers no shape for ``LookupTableFindV2``."""
    return tf.reshape(table.lookup(keys), tf.shape(keys))
