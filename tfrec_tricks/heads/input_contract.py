"""The heads' input contract: what every output head reads, and how.

The output heads (``TiedSoftmax``, ``SoftmaxCPR``, ``MixtureOfSoftmax``)
read the same inputs: a dict of the encoder's states and the history ids
(``unpack_head_inputs``), an item table and an optional bias
(``as_item_table``), candidate ids checked against the table
(``candidate_ids_tensor``), and one rule for the position whose state
scores the next item (``last_positions``), which
``SequentialRetrievalModel`` and the serving module follow too. The
generic helpers they share with the other layers stay in
``tfrec_tricks.layers.common``.
"""

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks.layers.common import first_occurrences


def dense_projection(
    owner: tf.keras.layers.Layer,
    name: str,
    units: int,
    input_dim: int,
    kernel_initializer: Any = None,
) -> tf.keras.layers.Dense:
    """A built Dense sublayer with ``owner``'s initializers and dtype policy.

    Each projection gets fresh initializer objects (seeded initializers
    would otherwise give every projection the same weights).
    ``kernel_initializer``, if given, replaces the owner's for this one.
    """
    layer = tf.keras.layers.Dense(
        units,
        kernel_initializer=tf.keras.initializers.get(
            kernel_initializer
            or tf.keras.initializers.serialize(owner.kernel_initializer)
        ),
        bias_initializer=tf.keras.initializers.get(
            tf.keras.initializers.serialize(owner.bias_initializer)
        ),
        dtype=owner.dtype_policy,
        name=name,
    )
    layer.build((None, input_dim))
    return layer


def check_head_arguments(dropout: Any, output_dim: Any) -> None:
    """The output heads' shared argument checks (ValueError on bad values)."""
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(
            f"`dropout` must be in [0, 1). Received: dropout={dropout!r}"
        )
    if output_dim is not None and (
        isinstance(output_dim, bool)
        or not isinstance(output_dim, int)
        or output_dim < 1
    ):
        raise ValueError(
            "`output_dim` must be a positive int or None. "
            f"Received: output_dim={output_dim!r}"
        )


def last_positions(history_ids: tf.Tensor) -> tf.Tensor:
    """Position of each row's last real id; 0 for a row without one.

    The one rule of the package for the position whose state ``h`` scores
    the next item: the output heads' default and
    ``SequentialRetrievalModel``'s. Rows may be left- or right-padded
    (padding id 0); the last non-padding id is found either way.

    An empty row (all padding) reads position 0: for a causal encoder the
    state after one padding step, which is the same whatever the width
    ``L`` of the batch. Position ``L - 1`` would hold the state after
    ``L`` padding steps, and ``L`` is set by the batch's longest history
    (or a request's width), so an empty row's answer would depend on the
    other rows it is batched with.

    Args:
        history_ids: int ``[B, L]``, padding 0.

    Returns:
        int32 ``[B]``.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.heads.input_contract import last_positions
    >>> ids = tf.constant([[3, 5, 0, 0], [0, 0, 2, 9], [0, 0, 0, 0]])
    >>> last_positions(ids).numpy().tolist()
    [1, 3, 0]
    """
    valid = tf.not_equal(history_ids, 0)
    length = tf.shape(history_ids)[1]
    from_end = tf.argmax(
        tf.reverse(tf.cast(valid, tf.int32), axis=[1]),
        axis=1,
        output_type=tf.int32,
    )
    return tf.where(tf.reduce_any(valid, axis=1), length - 1 - from_end, 0)


def unpack_head_inputs(inputs: Any) -> tuple:
    """Checks the ``inputs`` dict of an output head; returns its parts.

    Args:
        inputs: dict with ``"hidden_states"`` float ``[B, L, d]``,
            ``"history_ids"`` int ``[B, L]`` and optionally
            ``"layer_hidden_states"`` (list of ``[B, L, d]``) and
            ``"last_positions"`` (int ``[B]``).

    Returns:
        ``(hidden_states, history_ids, layer_hidden_states or None,
        last_positions)``, with ``history_ids`` cast to int32 and
        ``last_positions`` int32 ``[B]``: the given ``"last_positions"``
        or, when absent, `last_positions` of the history.

    Raises:
        ValueError: a key is missing or unknown, or a shape or dtype is
            wrong (the message says what was received).
    """
    keys = {"hidden_states", "history_ids"}
    optional = {"layer_hidden_states", "last_positions"}
    if not isinstance(inputs, Mapping):
        raise ValueError(
            "`inputs` must be a dict with keys 'hidden_states' [B, L, d] and "
            "'history_ids' [B, L] (and optionally 'layer_hidden_states', "
            f"'last_positions'). Received: inputs={type(inputs).__name__}"
        )
    if not keys <= set(inputs) or not set(inputs) <= keys | optional:
        raise ValueError(
            "`inputs` needs keys 'hidden_states' and 'history_ids' and may "
            "have 'layer_hidden_states' and 'last_positions'. "
            f"Received: keys={sorted(inputs)}"
        )
    hidden = tf.convert_to_tensor(inputs["hidden_states"])
    ids = tf.convert_to_tensor(inputs["history_ids"])
    if hidden.shape.rank != 3 or ids.shape.rank != 2:
        raise ValueError(
            "`hidden_states` must be [B, L, d] and `history_ids` [B, L]. "
            f"Received: hidden_states.shape={hidden.shape}, "
            f"history_ids.shape={ids.shape}"
        )
    if not ids.dtype.is_integer:
        raise ValueError(
            "`history_ids` must be integers. "
            f"Received: history_ids.dtype={ids.dtype.name}"
        )
    layers = inputs.get("layer_hidden_states")
    if layers is not None:
        layers = [tf.convert_to_tensor(x) for x in layers]
    ids = tf.cast(ids, tf.int32)
    last = inputs.get("last_positions")
    if last is None:
        last = last_positions(ids)
    else:
        last = tf.convert_to_tensor(last)
        if last.shape.rank != 1 or not last.dtype.is_integer:
            raise ValueError(
                "`last_positions` must be integers [B]. Received: "
                f"shape={last.shape}, dtype={last.dtype.name}"
            )
        last = tf.cast(last, tf.int32)
    return hidden, ids, layers, last


def as_item_table(
    item_embeddings: Any,
    item_bias: Any,
    units: Any = None,
) -> tuple:
    """The item table ``[N, d]`` and bias ``[N]`` (or None) as float32.

    A variable is read whole, as a tensor: gathering rows from the
    variable itself (``ResourceGather``) would switch it to copy-on-read,
    after which every dense read copies the table (see
    ``TiedItemEmbedding.lookup`` and docs/decisions.md#dense-table-reads).

    Args:
        item_embeddings: float ``[N, d]``.
        item_bias: float ``[N]`` or None.
        units: int or None. The row size the head needs, checked when
            both it and ``d`` are known.

    Raises:
        ValueError: a rank or the row size is wrong.
    """
    table = tf.cast(tf.convert_to_tensor(item_embeddings), tf.float32)
    if table.shape.rank != 2:
        raise ValueError(
            "`item_embeddings` must be the item table [N, d]. "
            f"Received: item_embeddings.shape={table.shape}"
        )
    if units is not None and table.shape[-1] not in (None, units):
        raise ValueError(
            f"The item table rows must have size {units} (output_dim, "
            "or the hidden size when output_dim is None). "
            f"Received: item_embeddings.shape={table.shape}"
        )
    bias = None
    if item_bias is not None:
        bias = tf.cast(tf.convert_to_tensor(item_bias), tf.float32)
        if bias.shape.rank != 1:
            raise ValueError(
                "`item_bias` must be a vector [N]. "
                f"Received: item_bias.shape={bias.shape}"
            )
    return table, bias


def check_ids_in_range(name: str, ids: tf.Tensor, num_items: Any) -> None:
    """Raises ValueError (eager only) when an id is outside ``[0, N)``."""
    if not tf.executing_eagerly() or not hasattr(ids, "numpy"):
        return
    values = np.asarray(ids.numpy())
    n = int(num_items)
    bad = values[(values < 0) | (values >= n)]
    if bad.size:
        raise ValueError(
            f"`{name}` must be item ids in [0, {n}) (the item table has "
            f"{n} rows). Received: {name} containing {int(bad.flat[0])}"
        )


def candidate_ids_tensor(
    candidate_ids: Any, num_items: Any, name: str = "candidate_ids"
) -> tf.Tensor:
    """``candidate_ids`` as int32 ``[M]`` or ``[B, M]``, checked.

    Raises:
        ValueError: another rank, or (eager) an id outside ``[0, N)``; the
            message names the argument ``name``.
    """
    candidate_ids = tf.cast(tf.convert_to_tensor(candidate_ids), tf.int32)
    if candidate_ids.shape.rank not in (1, 2):
        raise ValueError(
            f"`{name}` must have shape [M] or [B, M]. "
            f"Received: {name}.shape={candidate_ids.shape}"
        )
    check_ids_in_range(name, candidate_ids, num_items)
    return candidate_ids


def distinct_ids(ids: tf.Tensor) -> tf.Tensor:
    """``ids`` ``[B, M]`` with 0 in place of repeats and of ids ``<= 0``.

    Each id keeps its first occurrence in the row (``first_occurrences``);
    padding (0) and fillers (negative) become 0, so that a candidate set
    built from it holds no id twice but 0.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.heads.input_contract import distinct_ids
    >>> distinct_ids(tf.constant([[3, 0, 3, -1, 2]])).numpy().tolist()
    [[3, 0, 0, 0, 2]]
    """
    ids = tf.cast(ids, tf.int32)
    is_first = tf.equal(
        first_occurrences(ids), tf.range(tf.shape(ids)[1])[None, :]
    )
    return tf.where(is_first & (ids > 0), ids, 0)
