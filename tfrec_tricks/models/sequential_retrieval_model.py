"""The sequential retrieval model the techniques plug into, on either Keras."""

from typing import Any

import tensorflow as tf

from tfrec_tricks.data.prefix_merging import POSITION_TARGETS
from tfrec_tricks.evaluation.full_ranking import METRIC_KINDS, RankingMetric
from tfrec_tricks.models import model_parts
from tfrec_tricks.models.candidate_scoring import CandidateScoringMixin
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.models.item_tables import embed_items
from tfrec_tricks.models.retrieval_base import RetrievalBase
from tfrec_tricks.objectives import EncodedBatch, objective_for
from tfrec_tricks.objectives.position_rows import (
    expand_positions,
    mean_over_replicas,
    target_positions,
)


class SequentialRetrievalModel(CandidateScoringMixin, RetrievalBase):
    """Next-item retrieval over the full catalogue, as a ``tfrs.Model`` (under
    Keras 3 a ``keras.Model`` with its steps: ``retrieval_base``).

    Query tower, each stage a switch of ``ModelConfig``:

    1. SSE (``sse_item_probability``, training only): history ids are
       randomly replaced (SSE-SE, or SSE-Graph when ``item_graph`` is
       given) before the lookup; the identity at inference.
    2. Item embedding: ``TiedItemEmbedding`` (tied input/output table with
       an output bias, or untied). Each per-position feature of
       ``features`` is soft one-hot encoded (``SoftOneHotEncoding``,
       standardised, after a log1p for ``time_gap``, a learned vector
       for NaN) and added to the item embedding; padding positions get
       none of it. With ``item_features``, the rows come from each item's
       id embedding fused with its attributes (``item_tables``).
    3. Causal encoder: ``GRU4RecEncoder`` or ``SASRecEncoder``, run over
       the batch cut to its longest history (histories are right-padded,
       so the cut columns are padding only).
    4. Output head over all N items, padding id 0 at ``-1e9``:
       ``"softmax"`` (``h E^T + b`` with the tied table, from the state at
       the true last position), ``"softmax_no_dup"`` (the same, history
       items at ``-1e9`` at inference), ``"cpr"`` (``SoftmaxCPR``) or
       ``"mos"`` (``MixtureOfSoftmax``, log-probabilities).

    Objective (``tfrec_tricks.objectives``, ``objective_for`` picks it from
    the config and the head): ``FullSoftmax`` (``--objective full``),
    ``PartitionedSoftmax`` (CPR's own cross-entropy, no ``[B, N]`` logits
    written), ``InBatchSampledSoftmax`` (``--objective sampled``,
    ``tfrs.tasks.Retrieval`` semantics with the logQ correction of
    ``item_frequencies``) or ``SampledNegatives``
    (``num_sampled_negatives``); each class documents its cost. Label SSE
    (``sse_label_probability``) replaces the targets of the loss during
    training. The loss is averaged over the global batch, so gradients are
    right under ``tf.distribute`` strategies.

    A training batch may carry ``position_targets`` [B, L] (each session's
    prefixes merged into one row, ``make_dataset(..., every_position=True)``):
    the encoder then runs once per row and the objective scores every
    target position (``expand_positions``), with the loss averaged over the
    positions; losses and gradients equal those of the prefix examples.

    At inference, ``logits``, ``top_k_candidates`` and ``score_candidates``
    score the histories ``encode`` returns: the full catalogue, or an
    exact top-k through an index plus the re-scoring of its candidates
    (what ``tfrec_tricks.export.ServingModule`` serves, without reading
    the head's internals).

    The model tracks NDCG@K / HR@K / MRR@K
    (``tfrec_tricks.evaluation.full_ranking``) of the
    full-catalogue logits, so ``model.evaluate`` and
    ``EarlyStopping(monitor="val_ndcg@10")`` see them. With the sampled
    objective (or ``train_metrics=False``) they are computed in evaluation
    only, and training's logs leave them out.
    Its ``loss`` (so also ``val_loss`` and the progress bar's) is the mean
    over the examples (target positions) seen so far in the epoch, as for
    a compiled Keras model; ``tfrs.Model`` itself reports the last batch's.

    Args:
        config: a ``ModelConfig``.
        item_graph: int array [E, 2] or None. Undirected edges between
            contiguous item ids 1..N-1 for SSE-Graph (used by the SSE
            layers that are switched on). Kept in the weights, not in the
            config. Defaults to None.
        item_frequencies: float array [N] or None. Counts of each item as a
            training target; their normalised values are the candidate
            sampling probabilities of the logQ correction (sampled
            objective). Kept in a non-trainable weight. None: uniform,
            i.e. no correction until weights are loaded. Defaults to None.
        feature_statistics: dict or None. ``{name: (mean, variance)}`` of
            the standardised features (of the log1p values for
            ``time_gap``); missing
            names use (0, 1). Kept in the encoders' weights. Defaults to
            None.
        item_graph_num_edges: int or None. CSR size of the item graph,
            set by ``from_config`` so that the graph weights exist before
            ``load_weights`` fills them. Defaults to None.
        item_feature_values: dict or None. ``{"values": {name: [N, width]
            array}, "id_known": [N] array}`` for the item features
            (``ItemFeatureEncoder.set_item_values``); kept in weights.
            Defaults to None.
        **kwargs: passed on to the base (``tfrs.Model``, ``keras.Model``).

    Call arguments:
        inputs: dict with ``history`` [B, L] int item ids in time order,
            right-padded with 0, and one float [B, L] entry per name of
            ``config.features``; ``target`` and other keys are ignored by
            ``call``. An empty history (all padding) reads the state after
            one padding step.
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

    A SASRec encoder with a Softmax-CPR head, a time-gap feature and an
    in-batch sampled objective:

    >>> config = ModelConfig(num_items=6, max_len=4, embedding_dim=8,
    ...                      encoder="sasrec", head="cpr",
    ...                      cpr_reranker_ks=(2,), features=("time_gap",),
    ...                      objective="sampled")
    >>> model = SequentialRetrievalModel(config)
    >>> gaps = tf.constant([[float("nan"), 60.0, 0, 0],
    ...                     [float("nan"), 5.0, 9e4, 30.0]])
    >>> model({**batch, "time_gap": gaps}).shape
    TensorShape([2, 6])
    """

    def __init__(
        self,
        config: ModelConfig,
        item_graph: Any = None,
        item_frequencies: Any = None,
        feature_statistics: dict | None = None,
        item_graph_num_edges: int | None = None,
        item_feature_values: dict | None = None,
        **kwargs,
    ):
        """Builds the model's parts (``model_parts``), one step each.

        The steps run in this order, which is the order in which layers
        and variables are created: seeded initial weights, the automatic
        layer names and the weight order of saved models depend on it, so
        a step must not be moved, nor a part moved to another step.

        1. ``item_embedding``: the (tied) item table and its output bias.
        2. ``item_sse``, ``label_sse`` and the size of their item graph.
        3. The feature statistics, checked against ``config.features``.
        4. ``feature_encoders``: one soft one-hot encoder per feature, and
           ``item_features``, the ``ItemFeatureEncoder`` of
           ``config.item_features`` (None without).
        5. ``encoder`` (``ENCODER_CLASSES``) between the embedding and
           output dropouts.
        6. ``head``, ``projection`` (the tied softmax's, under the model's
           name too: checkpoints keep the key "projection/...") and
           ``base_loss_weight``.
        7. ``objective`` (``objective_for``), and the candidate sampling
           probabilities (``candidate_probability``, None unless the
           objective samples candidates).
        8. The ranking metrics and the loss tracker.

        The arguments are those of the class.
        """
        super().__init__(**kwargs)
        self.config = config
        # The encoder's width; the output side maps it back to embedding_dim.
        hidden = config.hidden_dim or config.embedding_dim
        self.item_embedding = model_parts.item_embedding(config)
        self.item_sse, self.label_sse, self.item_graph_num_edges = (
            model_parts.sse_layers(config, item_graph, item_graph_num_edges)
        )
        statistics = model_parts.checked_feature_statistics(
            config, feature_statistics
        )
        self.feature_encoders = model_parts.feature_encoders(config, statistics)
        self.item_features = model_parts.item_feature_encoder(
            config, item_feature_values
        )
        self.embedding_dropout, self.encoder, self.output_dropout = (
            model_parts.encoder_layers(config, hidden)
        )
        self.head, self.projection, self.base_loss_weight = (
            model_parts.output_head(config, hidden)
        )
        self.objective = objective_for(config, self.head, self.base_loss_weight)
        self.candidate_probability = None
        if self.objective.samples_candidates:
            self.candidate_probability = self.add_weight(
                name="candidate_probability",
                shape=(config.num_items,),
                trainable=False,
                initializer=tf.keras.initializers.Constant(
                    model_parts.candidate_probabilities(
                        config.num_items, item_frequencies
                    )
                ),
            )
        self.ranking_metrics = [
            RankingMetric(kind, k)
            for k in config.metric_ks
            for kind in METRIC_KINDS
        ]
        # tfrs.Model reports the last batch's loss as "loss"; Keras users
        # read it (and "val_loss") as the mean over the epoch's examples.
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    # ---------------------------------------------------------------- tower

    def encode(self, inputs, training=False, tables=None):
        """History ids cut to the longest history and the encoder states.

        ``tables``: the step's ``ItemTables`` (``item_tables``), when the
        caller already has them.

        Returns:
            ``(history, states)``: int32 [B, L'] ids (L' the batch's
            longest history, at least 1) and the list of per-layer states
            [B, L', hidden_dim], before the output dropout.
        """
        history = tf.cast(inputs["history"], tf.int32)
        lengths = tf.reduce_sum(tf.cast(history > 0, tf.int32), axis=1)
        # Columns past the batch's longest history are padding only: a
        # causal encoder need not run over them.
        width = tf.maximum(tf.reduce_max(lengths), 1)
        history = history[:, :width]
        ids = history
        if self.item_sse is not None:
            ids = self.item_sse(history, training=training)
        if tables is None:
            tables = self.item_tables(training)
        x = embed_items(self.item_embedding, tables, ids, training)
        if self.feature_encoders:
            real = tf.cast(history > 0, x.dtype)[:, :, None]
            for name, encoder in self.feature_encoders.items():
                if name not in inputs:
                    raise ValueError(
                        f"The model reads the feature {name!r} but the batch "
                        f"has no such key. Received: keys={sorted(inputs)}"
                    )
                values = tf.cast(inputs[name], tf.float32)[:, :width]
                # [B, L, 1]: the encoder drops a trailing 1 as the scalar
                # axis, so a [B, 1] batch (one-item histories) would lose
                # its position axis and broadcast into [B, B, d].
                encoded = encoder(values[:, :, None])
                x += tf.cast(encoded, x.dtype) * real
        x = self.embedding_dropout(x, training=training)
        return history, self.encoder(x, training=training)

    def call(self, inputs, training=False):
        history, states = self.encode(inputs, training=training)
        return self._scores(history, states, training)

    # ----------------------------------------------------------------- loss

    # One row per target position of merged-prefix rows (the objectives'
    # ``EncodedBatch.position_rows``).
    expand_positions = staticmethod(expand_positions)
    target_positions = staticmethod(target_positions)

    def compute_loss(self, inputs, training=False):
        """The batch's loss; updates the loss tracker and ranking metrics.

        The histories are encoded, and the objective turns them into
        per-example losses and the targets' ranks (``tfrec_tricks.
        objectives``): what to score and how is the objective's.
        """
        targets = tf.reshape(tf.cast(inputs["target"], tf.int32), [-1])
        # Once per step: with item features, the fused table of every
        # item, or only the rows the step reads (``scores_by_row``).
        tables = self.item_tables(training, self.scores_by_row)
        history, states = self.encode(inputs, training, tables)
        batch = EncodedBatch(
            self.head,
            self._head_inputs,
            history,
            states,
            targets,
            item_table=tables.output_table,
            item_bias=tables.output_bias,
            position_targets=inputs.get(POSITION_TARGETS),
            label_noise=self.label_sse,
            candidate_probability=self.candidate_probability,
            training=training,
        )
        per_example, ranks = self.objective(batch)
        every_position = POSITION_TARGETS in inputs
        return self._record_loss(per_example, ranks, every_position, training)

    def _record_loss(self, per_example, ranks, every_position, training):
        """The batch's loss; updates the loss tracker and the metrics.

        Without ``train_metrics`` a training batch's ranks are not read:
        ``tf.function`` prunes the ops that computed them.
        """
        if every_position:
            loss = mean_over_replicas(per_example)
        else:
            loss = tf.nn.compute_average_loss(per_example)
        # Per example, so the epoch's mean weighs a short last batch (and,
        # under tf.distribute, each replica's share) by its examples.
        self.loss_tracker.update_state(per_example)
        if ranks is not None and (self.ranks_in_training or not training):
            for metric in self.ranking_metrics:
                metric.update_from_ranks(ranks)
        return loss

    def train_step(self, inputs):
        logs = self._with_mean_loss(super().train_step(inputs))
        if not self.ranks_in_training:
            # Never updated in training: a 0 would read as a score.
            for metric in self.ranking_metrics:
                logs.pop(metric.name, None)
        return logs

    @property
    def ranks_in_training(self) -> bool:
        """Whether a training step ranks its targets for the metrics: not
        without ``train_metrics``, nor with the sampled objective, which
        scores only its candidates (the objective's
        ``ranks_in_training``)."""
        return self.config.train_metrics and self.objective.ranks_in_training

    def test_step(self, inputs):
        return self._with_mean_loss(super().test_step(inputs))

    def _with_mean_loss(self, logs: dict) -> dict:
        """``logs`` with "loss" as the epoch's mean.

        ``tfrs.Model`` also reports "regularization_loss" and "total_loss";
        without regularization losses they are 0 and "loss" again and only
        crowd every epoch line, so they are kept only when there are some.
        """
        logs["loss"] = self.loss_tracker.result()
        if self.losses:
            logs["total_loss"] = logs["loss"] + logs["regularization_loss"]
        else:
            logs.pop("regularization_loss", None)
            logs.pop("total_loss", None)
        return logs

    # -------------------------------------------------------- serialisation

    def get_config(self) -> dict:
        return {
            "config": self.config.to_dict(),
            "item_graph_num_edges": self.item_graph_num_edges,
        }

    @classmethod
    def from_config(cls, config: dict) -> "SequentialRetrievalModel":
        return cls(
            ModelConfig.from_dict(config["config"]),
            item_graph_num_edges=config.get("item_graph_num_edges"),
        )

    # ------------------------------------------------------------- from data

    @classmethod
    def from_data(
        cls,
        config: ModelConfig,
        data: Any,
        item_graph: Any = None,
        **kwargs,
    ) -> "SequentialRetrievalModel":
        """Builds the model with the arrays it needs from prepared data.

        ``model_parts.arrays_from_data``: the training-target counts (logQ
        correction) and the statistics of the standardised features over
        the real positions of the training histories, from
        ``data.training_statistics``; a raw-id item graph mapped to
        contiguous ids (edges with an item not in the vocabulary are
        dropped).

        Args:
            config: a ``ModelConfig``.
            data: a ``tfrec_tricks.data.InMemoryDataset`` (in memory) or an
                ``OnDiskDataset`` (on disk, ``data.prepared.on_disk_dataset``).
            item_graph: array [E, 2] of raw item ids (e.g.
                ``Source.item_graph``) or None.
            **kwargs: passed on to the constructor.
        """
        arrays = model_parts.arrays_from_data(config, data, item_graph)
        return cls(config, **arrays, **kwargs)
