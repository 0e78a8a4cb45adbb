"""Full softmax of a partitioned head, trained by the head's own loss."""

import tensorflow as tf

from tfrec_tricks.objectives.encoded_batch import EncodedBatch
from tfrec_tricks.objectives.full_softmax import FullSoftmax


class PartitionedSoftmax(FullSoftmax):
    """``FullSoftmax`` of a head with its own cross-entropy (Softmax-CPR).

    In training it asks the head (``has_cross_entropy``) for the values
    and gradients of the cross-entropy of its logits (plus
    ``base_loss_weight`` times that of its base logits) without writing
    its ``[B, N]`` logits out: ``cross_entropy``, or, for merged-prefix
    rows, ``position_cross_entropy`` at every target position in place
    (the values of ``FullSoftmax``'s one-row-per-position rows, without
    copying the states per target). Evaluation writes the logits out:
    ``FullSoftmax``, whose loss and ranks these equal.

    Args:
        base_loss_weight: float >= 0. Defaults to 0.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.layers import SoftmaxCPR
    >>> from tfrec_tricks.objectives import EncodedBatch, PartitionedSoftmax
    >>> head = SoftmaxCPR(reranker_ks=(2,), dropout=0.0)
    >>> batch = EncodedBatch(
    ...     head, lambda h, s, training: {
    ...         "hidden_states": s[-1], "history_ids": h,
    ...         "layer_hidden_states": s},
    ...     tf.constant([[1, 2]]), [tf.ones([1, 2, 4])], tf.constant([3]),
    ...     item_table=tf.ones([5, 4]), training=True)
    >>> losses, ranks = PartitionedSoftmax()(batch)
    >>> losses.shape, ranks.shape
    (TensorShape([1]), TensorShape([1]))
    """

    def __call__(self, batch: EncodedBatch) -> tuple:
        if not batch.training:
            return super().__call__(batch)
        inputs = batch.head_inputs()
        targets = batch.targets
        position_targets = batch.position_targets
        if position_targets is not None:
            width = tf.shape(batch.history)[1]
            position_targets = tf.cast(position_targets, tf.int32)[:, :width]
            targets = tf.gather_nd(
                position_targets, tf.where(position_targets > 0)
            )
        labels = batch.labels(targets)
        if position_targets is not None:
            losses = batch.head.position_cross_entropy(
                inputs,
                batch.item_table,
                position_targets,
                item_bias=batch.item_bias,
                training=True,
                labels=None if labels is targets else labels,
            )
        else:
            losses = batch.head.cross_entropy(
                inputs,
                batch.item_table,
                labels,
                item_bias=batch.item_bias,
                training=True,
                rank_labels=None if labels is targets else targets,
            )
        cross_entropy, base_cross_entropy, ranks = losses
        if self.with_base:
            cross_entropy += self.base_loss_weight * base_cross_entropy
        return cross_entropy, ranks
