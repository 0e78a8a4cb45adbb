"""What every scoring path of `SoftmaxCPR` reads from one call: `CPRInputs`."""

import dataclasses
from typing import Any

import tensorflow as tf


# eq=False: the fields are tensors, whose ``==`` is elementwise; two
# calls' inputs are never compared.
@dataclasses.dataclass(frozen=True, eq=False)
class CPRInputs:
    """The checked inputs of one `SoftmaxCPR` call and its base query.

    Built once where a scoring path reads its inputs (``call``,
    ``cross_entropy``, ``position_cross_entropy``, ``top_k_candidates``,
    ``score_candidates``: `CPRPartitions.cpr_inputs`) and passed whole to
    the partitions' computations, which read the fields they need.

    Attributes:
        query: float ``[B, q]``, the query ``q`` the partitions'
            projections read (``h`` of each row's true last position, with
            Mi ``[h ; gelu(W_M ...)]``, ``q = 2 d_h``). In
            ``position_cross_entropy``, ``[B, L, q]``: the query at every
            position.
        f_base: float32 ``[B, d]``, the base projection ``f_V`` of
            ``query`` (dropout applied in training); ``[B, L, d]`` where
            ``query`` is.
        hidden: float ``[B, L, d_h]``, the encoder's last layer at every
            position (the pointer partition's keys read it).
        ids: int32 ``[B, L]``, the history, padding 0, checked in
            ``[0, N)``.
        table: float32 ``[N, d]``, the item table, row 0 padding (the
            variable itself when only rows are gathered from it).
        bias: float32 ``[N]`` or None, the per-item output bias.
        training: bool or None, the call's ``training`` (dropout, never
            ``exclude_history``, the unsorted top-k of the rerankers).
    """

    query: tf.Tensor
    f_base: tf.Tensor
    hidden: tf.Tensor
    ids: tf.Tensor
    table: Any
    bias: Any
    training: Any
