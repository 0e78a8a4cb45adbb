"""The TFRS sequential retrieval model the techniques plug into."""

import tensorflow as tf
import tensorflow_recommenders as tfrs

from tfrec_tricks.metrics import METRIC_KINDS, RankingMetric
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder

# Logit given to the padding id so that it never wins and carries no
# probability mass (finite, so 0 * logit stays 0 in the loss).
PADDING_LOGIT = -1e9


class SequentialRetrievalModel(tfrs.Model):
    """Next-item retrieval over the full catalogue, as a ``tfrs.Model``.

    Query tower: item embedding -> causal sequence encoder -> the state at
    the last real item of each right-padded history ->
    logits ``h E^T`` against the item table over all N items, the padding
    id masked. Objective: softmax cross-entropy over the full catalogue.
    The model tracks NDCG@K / HR@K / MRR@K (``tfrec_tricks.metrics``), so
    ``model.evaluate`` and ``EarlyStopping(monitor="val_ndcg@10")`` see them.

    Args:
        config: a ``ModelConfig``.

    Call arguments:
        inputs: dict with ``history`` [B, L] int item ids in time order,
            right-padded with 0; ``target`` is ignored by ``call``. An empty
            history (all padding) reads the state after one padding step.
        training: bool.

    Returns:
        float32 logits [B, N].

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
    >>> model = SequentialRetrievalModel(ModelConfig(num_items=6, max_len=4))
    >>> model.compile(optimizer="adam")
    >>> batch = {"history": tf.constant([[1, 2, 0, 0], [3, 4, 5, 1]]),
    ...          "target": tf.constant([3, 2])}
    >>> model(batch).shape
    TensorShape([2, 6])
    >>> sorted(model.evaluate(tf.data.Dataset.from_tensors(batch),
    ...                       return_dict=True, verbose=0))[:3]
    ['hr@10', 'loss', 'mrr@10']
    """

    def __init__(self, config: ModelConfig, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        d = config.embedding_dim
        hidden = config.hidden_dim or d
        self.item_embedding = tf.keras.layers.Embedding(
            config.num_items, d, name="item_embedding"
        )
        self.embedding_dropout = tf.keras.layers.Dropout(config.dropout)
        self.encoder = GRU4RecEncoder(
            hidden, config.num_layers, dropout=0.0, name="encoder"
        )
        self.output_dropout = tf.keras.layers.Dropout(config.dropout)
        self.projection = (
            tf.keras.layers.Dense(d, name="projection") if hidden != d else None
        )
        self.ranking_metrics = [
            RankingMetric(kind, k)
            for k in config.metric_ks
            for kind in METRIC_KINDS
        ]

    def call(self, inputs, training=False):
        history = tf.cast(inputs["history"], tf.int32)
        lengths = tf.reduce_sum(tf.cast(history > 0, tf.int32), axis=1)
        # Columns past the batch's longest history are padding only: a
        # causal encoder need not run over them.
        history = history[:, : tf.maximum(tf.reduce_max(lengths), 1)]
        x = self.embedding_dropout(
            self.item_embedding(history), training=training
        )
        states = self.encoder(x, training=training)
        last = tf.maximum(lengths - 1, 0)
        h = tf.gather(states[-1], last, batch_dims=1)
        h = self.output_dropout(h, training=training)
        if self.projection is not None:
            h = self.projection(h)
        table = self.item_embedding.embeddings
        logits = tf.matmul(
            tf.cast(h, tf.float32), tf.cast(table, tf.float32), transpose_b=True
        )
        padding = tf.one_hot(
            0, self.config.num_items, on_value=True, off_value=False
        )
        return tf.where(padding[None, :], PADDING_LOGIT, logits)

    def compute_loss(self, inputs, training=False):
        logits = self(inputs, training=training)
        targets = tf.cast(inputs["target"], tf.int32)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)
        )
        # One comparison pass over [B, N]: cheap next to the logits.
        for metric in self.ranking_metrics:
            metric.update_state(targets, logits)
        return loss

    def get_config(self) -> dict:
        return {"config": self.config.to_dict()}

    @classmethod
    def from_config(cls, config: dict) -> "SequentialRetrievalModel":
        return cls(ModelConfig.from_dict(config["config"]))
