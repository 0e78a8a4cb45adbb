"""The item tables a ``SequentialRetrievalModel`` reads in one step.

Without item features the model reads its ``TiedItemEmbedding`` as it
always did: history ids through ``lookup`` (sparse rows in training), the
output table and bias as variables. With item features
(``ModelConfig.item_features``) every item's representation is the
fusion of its id embedding with its attributes (``ItemFeatureEncoder``),
computed once per step for the whole catalogue: the encoder's input
rows are gathered from it, and, when the tables are tied, the logits are
scored against it too, so an item never trained (a cold-start item)
ranks by its attributes. A training step that scores only candidates
(``by_row``: the sampled objective with a softmax head) reads the fused
rows by id instead (``ItemRows``): only the histories' and the
candidates' items are fused.
"""

import dataclasses
from typing import Any

import tensorflow as tf

from tfrec_tricks.layers import TiedItemEmbedding
from tfrec_tricks.layers.common import is_training
from tfrec_tricks.objectives.item_rows import ItemRows


@dataclasses.dataclass(frozen=True)
class ItemTables:
    """What one step reads of the items.

    Attributes:
        input_table: float [N, d] the history ids are gathered from, an
            ``ItemRows`` (the rows fused for the ids read), or None: the
            id embedding's own ``lookup``.
        output_table: float [N, d], the table the heads score against, or
            the ``ItemRows`` (which hold the bias).
        output_bias: float [N] or None, the heads' item bias (None with
            ``ItemRows``).
    """

    input_table: Any
    output_table: Any
    output_bias: Any


def item_tables(
    item_embedding: TiedItemEmbedding,
    item_features: Any,
    training: Any = None,
    by_row: bool = False,
) -> ItemTables:
    """The step's item tables.

    Args:
        item_embedding: the model's ``TiedItemEmbedding``.
        item_features: its ``ItemFeatureEncoder``, or None without item
            features.
        training: bool or None.
        by_row: bool. The step reads the output table only at the ids it
            scores, each row alone (a softmax head under the sampled
            objective): in training, tied item features are then fused
            for the ids read only (``ItemRows``), with the same numbers.
            Defaults to False.

    Returns:
        An ``ItemTables``. With item features the fused table is the input
        table, and the output table when the embeddings are tied (an
        untied output table ``V`` stays the id-only one); the bias of
        never-trained items is the trained items' mean
        (``ItemFeatureEncoder.fuse``; an item whose id the training's id
        dropout drops loses its bias too).
    """
    bias = item_embedding.output_bias
    if item_features is None:
        return ItemTables(None, item_embedding.output_embeddings, bias)
    if by_row and item_embedding.tie and is_training(training):
        # One draw of the id dropout for every read of the step.
        fusion = item_features.fusion_step(
            item_embedding.embeddings, bias, training=training
        )
        rows = ItemRows(fusion.rows, item_features.num_items)
        return ItemTables(rows, rows, None)
    # One draw of the id dropout for the table and the bias.
    fused, bias = item_features.fuse(
        item_embedding.embeddings, bias, training=training
    )
    output = fused if item_embedding.tie else item_embedding.output_embeddings
    return ItemTables(fused, output, bias)


def embed_items(
    item_embedding: TiedItemEmbedding,
    tables: ItemTables,
    ids: tf.Tensor,
    training: Any = None,
) -> tf.Tensor:
    """The input embeddings of ``ids`` [B, L] -> [B, L, d]: the id
    embedding's ``lookup`` without item features, else rows of the fused
    table (padding's row is 0 in both)."""
    if tables.input_table is None:
        return item_embedding.lookup(ids, training=training)
    if isinstance(tables.input_table, ItemRows):
        rows = tables.input_table.rows(ids)
    else:
        rows = tf.gather(tables.input_table, ids)
    return tf.cast(rows, item_embedding.compute_dtype)
