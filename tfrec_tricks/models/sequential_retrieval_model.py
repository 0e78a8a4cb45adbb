"""The TFRS sequential retrieval model the techniques plug into."""

from typing import Any

import numpy as np
import tensorflow as tf
import tensorflow_recommenders as tfrs

from tfrec_tricks.data.prefix_merging import POSITION_TARGETS
from tfrec_tricks.data.statistics import LOG1P_FEATURES
from tfrec_tricks.evaluation.full_ranking import (
    METRIC_KINDS,
    RankingMetric,
    tf_target_ranks,
)
from tfrec_tricks.layers import (
    MixtureOfSoftmax,
    SoftmaxCPR,
    SoftOneHotEncoding,
    StochasticSharedEmbedding,
    TiedItemEmbedding,
    TiedSoftmax,
    common,
)
from tfrec_tricks.layers.top_k import served_top_k
from tfrec_tricks.models.config import ATTENTION_ENCODERS, ModelConfig
from tfrec_tricks.models.gru4rec_encoder import GRU4RecEncoder
from tfrec_tricks.models.hstu_encoder import HSTUEncoder
from tfrec_tricks.models.sasrec_encoder import SASRecEncoder


class SequentialRetrievalModel(tfrs.Model):
    """Next-item retrieval over the full catalogue, as a ``tfrs.Model``.

    Query tower, each stage a switch of ``ModelConfig``:

    1. SSE (``sse_item_probability``, training only): history ids are
       randomly replaced (SSE-SE, or SSE-Graph when ``item_graph`` is
       given) before the lookup; the identity at inference.
    2. Item embedding: ``TiedItemEmbedding`` (tied input/output table with
       an output bias, or untied). Each per-position feature of
       ``features`` is soft one-hot encoded (``SoftOneHotEncoding``,
       standardised, after a log1p for ``time_gap``, a learned vector
       for NaN) and added to the item embedding; padding positions get
       none of it.
    3. Causal encoder: ``GRU4RecEncoder`` or ``SASRecEncoder``, run over
       the batch cut to its longest history (histories are right-padded,
       so the cut columns are padding only).
    4. Output head over all N items, padding id 0 at ``-1e9``:
       ``"softmax"`` (``h E^T + b`` with the tied table, from the state at
       the true last position), ``"softmax_no_dup"`` (the same, history
       items at ``-1e9`` at inference), ``"cpr"`` (``SoftmaxCPR``) or
       ``"mos"`` (``MixtureOfSoftmax``, log-probabilities).

    Objectives: ``"full"``, softmax cross-entropy over the whole catalogue
    (the Softmax-CPR paper's); ``"sampled"``, in-batch sampled softmax with
    ``tfrs.tasks.Retrieval`` semantics built from ``tfrs.layers.loss``
    (logQ correction with ``item_frequencies``, accidental-hit removal,
    optional hard negatives). The candidates are the batch's targets,
    scored per query by the head, so for CPR a candidate's partition
    depends on that query's history. With the softmax heads and CPR, a
    sampled step's gradient of the item table and bias holds the batch's
    rows only (``tf.IndexedSlices``), so the model's part of a step does
    not grow with the catalogue, except for CPR's rerankers, which select
    their sets from a gradient-free ``[B, N]`` product (MoS normalises
    over all items: ``O(N)`` by design). Adam, though, decays its moments
    of the whole table every step, an ``O(N d)`` update that sparse
    optimizers (e.g. Adagrad) avoid. Label SSE (``sse_label_probability``)
    replaces the targets of the loss during training. The loss is averaged
    over the global batch (``tf.nn.compute_average_loss``), so gradients
    are right under ``tf.distribute`` strategies.

    A training batch may carry ``position_targets`` [B, L] (each session's
    prefixes merged into one row, ``make_dataset(..., every_position=True)``):
    the encoder then runs once per row and ``compute_loss`` scores every
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
        **kwargs: passed on to ``tfrs.Model``.

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
        **kwargs,
    ):
        """Builds the model's parts, one private method per step.

        The steps run in this order, which is the order in which layers
        and variables are created: seeded initial weights, the automatic
        layer names and the weight order of saved models depend on it, so
        a step must not be moved, nor a part moved to another step.

        1. ``_build_item_embedding``: the (tied) item table and its output
           bias.
        2. ``_build_sse_layers``: the SSE layers of the history items and
           the labels, and the size of their item graph.
        3. ``_checked_feature_statistics``: the feature statistics, checked
           against ``config.features``.
        4. ``_build_feature_encoders``: one soft one-hot encoder per
           feature.
        5. ``_build_encoder``: the GRU4Rec or SASRec encoder between the
           embedding and output dropouts.
        6. ``_build_output_head``: the CPR or MoS head, or none (then a
           projection when the encoder is wider than the item table).
        7. ``_build_sampled_objective``: for the sampled objective, the
           candidate probabilities and the logQ, accidental-hit and
           hard-negative layers.
        8. ``_build_metrics``: the ranking metrics and the loss tracker.

        The arguments are those of the class.
        """
        super().__init__(**kwargs)
        self.config = config
        # The encoder's width; the output side maps it back to embedding_dim.
        hidden = config.hidden_dim or config.embedding_dim
        self._build_item_embedding()
        self._build_sse_layers(item_graph, item_graph_num_edges)
        statistics = self._checked_feature_statistics(feature_statistics)
        self._build_feature_encoders(statistics)
        self._build_encoder(hidden)
        self._build_output_head(hidden)
        self._build_sampled_objective(item_frequencies)
        self._build_metrics()

    def _build_item_embedding(self) -> None:
        """Creates ``item_embedding`` and its weights.

        It is built here, not on the first call, because the SSE layers
        and the heads read its table before any call.
        """
        config = self.config
        self.item_embedding = TiedItemEmbedding(
            config.num_items,
            config.embedding_dim,
            use_bias=config.output_bias,
            tie=config.tie_embeddings,
            embeddings_initializer=tf.keras.initializers.RandomNormal(
                stddev=config.embedding_init_stddev
            ),
            output_embeddings_initializer=tf.keras.initializers.RandomNormal(
                stddev=config.embedding_init_stddev
            ),
            name="item_embedding",
        )
        self.item_embedding.build(None)

    def _build_sse_layers(
        self, item_graph: Any, item_graph_num_edges: int | None
    ) -> None:
        """Creates ``item_sse``, ``label_sse`` and ``item_graph_num_edges``.

        Each SSE layer is None when its probability is 0.
        ``item_graph_num_edges`` is the graph size of the layers that exist
        (None without SSE), which ``get_config`` saves so that
        ``from_config`` can create the graph weights before
        ``load_weights`` fills them.

        Args:
            item_graph: int array [E, 2] of contiguous item ids or None.
            item_graph_num_edges: int or None, the CSR size of the graph
                when ``item_graph`` is not given (``from_config``).
        """
        config = self.config
        sse_used = config.sse_item_probability or config.sse_label_probability
        self.item_sse = self._sse(
            config.sse_item_probability,
            item_graph,
            item_graph_num_edges,
            "item_sse",
            0,
        )
        self.label_sse = self._sse(
            config.sse_label_probability,
            item_graph,
            item_graph_num_edges,
            "label_sse",
            1,
        )
        self.item_graph_num_edges = None
        if sse_used:
            sse = self.item_sse or self.label_sse
            self.item_graph_num_edges = sse.num_edges

    def _checked_feature_statistics(self, feature_statistics: dict | None):
        """A copy of ``feature_statistics``, checked against the config.

        Args:
            feature_statistics: dict ``{name: (mean, variance)}`` or None.

        Returns:
            dict, empty for None.

        Raises:
            ValueError: if a name is not in ``config.features`` (a typo
                would otherwise leave that feature unstandardised).
        """
        statistics = dict(feature_statistics or {})
        unknown = sorted(set(statistics) - set(self.config.features))
        if unknown:
            raise ValueError(
                "feature_statistics names features the config does not "
                f"use. Received: {unknown}; config.features="
                f"{list(self.config.features)}"
            )
        return statistics

    def _build_feature_encoders(self, statistics: dict) -> None:
        """Creates ``feature_encoders``, a soft one-hot encoder per feature.

        Each feature is standardised (after a log1p for those of
        ``LOG1P_FEATURES``) with its statistics, or (0, 1) without them,
        and a missing (NaN) value gets a learned vector.

        Args:
            statistics: dict ``{name: (mean, variance)}``, checked.
        """
        config = self.config
        self.feature_encoders = {}
        for name in config.features:
            options = {"normalization": "standardize"}
            if name in LOG1P_FEATURES:
                options = {"normalization": "log1p_standardize"}
            if name in statistics:
                mean, variance = statistics[name]
                options.update(mean=float(mean), variance=float(variance))
            self.feature_encoders[name] = SoftOneHotEncoding(
                config.soft_one_hot_buckets,
                config.embedding_dim,
                missing="learned",
                name=f"feature_{name}",
                **options,
            )

    def _build_encoder(self, hidden: int) -> None:
        """Creates ``embedding_dropout``, ``encoder`` and ``output_dropout``.

        The dropouts are created around the encoder, in this order, since
        their automatic names depend on it.

        Args:
            hidden: int, the encoder's width.
        """
        config = self.config
        self.embedding_dropout = tf.keras.layers.Dropout(config.dropout)
        if config.encoder in ATTENTION_ENCODERS:
            blocks = {
                "num_layers": config.num_layers,
                "num_heads": config.num_heads,
                "dropout": config.dropout,
                "attention_dropout": config.attention_dropout,
                "name": "encoder",
            }
            if config.encoder == "sasrec":
                self.encoder = SASRecEncoder(
                    hidden,
                    config.max_len,
                    ffn_dim=config.ffn_dim,
                    norm=config.sasrec_norm,
                    **blocks,
                )
            else:
                self.encoder = HSTUEncoder(hidden, config.max_len, **blocks)
        else:
            self.encoder = GRU4RecEncoder(
                hidden, config.num_layers, dropout=0.0, name="encoder"
            )
        self.output_dropout = tf.keras.layers.Dropout(config.dropout)

    def _build_output_head(self, hidden: int) -> None:
        """Creates ``head``, ``projection`` and ``base_loss_weight``.

        ``head`` is the output head ``config.head`` names, each with the
        same interface (``call``, ``top_k_candidates``,
        ``score_candidates``, ``has_index``, ...): a ``SoftmaxCPR``
        (``"cpr"``), a ``MixtureOfSoftmax`` (``"mos"``) or a
        ``TiedSoftmax`` (``"softmax"``, and ``"softmax_no_dup"`` with
        ``exclude_history``). This is the one place that reads the head's
        name; the rest of the model asks the head. Each maps the encoder's
        width to ``embedding_dim`` itself (the tied softmax through a
        ``projection`` only when they differ).

        ``projection`` is the tied softmax's projection or None.
        ``base_loss_weight`` is ``cpr_base_loss`` for CPR (the weight of
        its base logits' own loss), else 0.

        Args:
            hidden: int, the encoder's width.
        """
        config = self.config
        d = config.embedding_dim
        self.projection = None
        self.base_loss_weight = 0.0
        if config.head == "cpr":
            self.head = SoftmaxCPR(
                use_context=config.cpr_context,
                use_pointer=config.cpr_pointer,
                reranker_ks=config.cpr_reranker_ks,
                use_mi=config.cpr_mi,
                mi_layers=min(2, config.num_layers),
                merge=config.cpr_merge,
                start_as_softmax=config.cpr_start_as_softmax,
                rerank_within_candidates=config.cpr_rerank_within_candidates,
                dropout=config.head_dropout_rate(),
                output_dim=d,
                name="cpr_head",
            )
            self.base_loss_weight = float(config.cpr_base_loss)
        elif config.head == "mos":
            self.head = MixtureOfSoftmax(
                config.mos_components,
                dropout=config.head_dropout_rate(),
                output_dim=d,
                name="mos_head",
            )
        else:
            self.head = TiedSoftmax(
                exclude_history=config.head == "softmax_no_dup",
                output_dim=d if hidden != d else None,
                cosine_temperature=config.cosine_temperature,
                name="softmax_head",
            )
            # The same layer under the model's own name too, so that
            # checkpoints keep the key "projection/..." they have always had.
            self.projection = self.head.projection

    def _build_sampled_objective(self, item_frequencies: Any) -> None:
        """Creates the parts of the sampled objective, if it is used.

        ``candidate_probability`` is None for the full objective, and the
        other attributes (``logq_correction``, ``accidental_hits``,
        ``hard_negatives``) then do not exist. ``hard_negatives`` is None
        without ``num_hard_negatives``.

        Args:
            item_frequencies: float array [N] of target counts or None.
        """
        config = self.config
        self.candidate_probability = None
        if config.objective == "sampled":
            probability = self._candidate_probabilities(item_frequencies)
            self.candidate_probability = self.add_weight(
                name="candidate_probability",
                shape=(config.num_items,),
                trainable=False,
                initializer=tf.keras.initializers.Constant(probability),
            )
            self.logq_correction = (
                tfrs.layers.loss.SamplingProbablityCorrection()
            )
            self.accidental_hits = tfrs.layers.loss.RemoveAccidentalHits()
            self.hard_negatives = None
            if config.num_hard_negatives is not None:
                self.hard_negatives = tfrs.layers.loss.HardNegativeMining(
                    config.num_hard_negatives
                )

    def _candidate_probabilities(self, item_frequencies: Any) -> np.ndarray:
        """The candidate sampling probabilities of the logQ correction.

        Args:
            item_frequencies: float array [N] of target counts or None.

        Returns:
            float32 array [N]: the normalised counts, or uniform over the
            N - 1 items for None (no correction until weights are loaded).

        Raises:
            ValueError: if the counts are not N non-negative values with a
                positive sum.
        """
        n = self.config.num_items
        if item_frequencies is None:
            return np.full([n], 1.0 / (n - 1), np.float32)
        counts = np.asarray(item_frequencies, np.float64).ravel()
        if counts.shape != (n,) or (counts < 0).any() or not (counts.sum() > 0):
            raise ValueError(
                f"item_frequencies must be {n} non-negative counts "
                "(one per item id, padding included) with a "
                f"positive sum. Received: shape={counts.shape}"
            )
        return (counts / counts.sum()).astype(np.float32)

    def _build_metrics(self) -> None:
        """Creates ``ranking_metrics`` and ``loss_tracker``."""
        self.ranking_metrics = [
            RankingMetric(kind, k)
            for k in self.config.metric_ks
            for kind in METRIC_KINDS
        ]
        # tfrs.Model reports the last batch's loss as "loss"; Keras users
        # read it (and "val_loss") as the mean over the epoch's examples.
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    def _sse(self, probability, graph, num_edges, name, offset):
        if not probability:
            return None
        seed = self.config.sse_seed
        layer = StochasticSharedEmbedding(
            self.config.num_items,
            probability,
            graph=graph,
            rho=self.config.sse_graph_rho,
            seed=None if seed is None else seed + offset,
            num_edges=None if graph is not None else num_edges,
            name=name,
        )
        layer.build(None)
        return layer

    # ---------------------------------------------------------------- tower

    def encode(self, inputs, training=False):
        """History ids cut to the longest history and the encoder states.

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
        x = self.item_embedding.lookup(ids, training=training)
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

    @staticmethod
    def last_positions(history: tf.Tensor) -> tf.Tensor:
        """Position of each row's last item, 0 when empty.

        ``tfrec_tricks.layers.common.last_positions``, the rule the output
        heads follow too: an empty history reads the state after one
        padding step, the same whatever the batch's width, so its answer
        never depends on the other rows (in the export too).
        """
        return common.last_positions(history)

    def _head_inputs(self, history, states, training):
        """The head's ``inputs``, after the output dropout.

        A head that reads only the last state gets one-position rows: the
        dropout then draws for ``[B, 1, d]``, not for a ``[B, L, d]`` that
        the head would mostly ignore.
        """
        if self.head.reads_last_state_only(training):
            history, states = self.last_position_rows(history, states)
        # The heads read the last position by the same rule as the model.
        hidden = self.output_dropout(states[-1], training=training)
        return {
            "hidden_states": hidden,
            "history_ids": history,
            "layer_hidden_states": [*states[:-1], hidden],
        }

    @classmethod
    def last_position_rows(cls, history: tf.Tensor, states: list) -> tuple:
        """Each row cut to its last position (``last_positions``).

        Returns:
            ``(history, states)``: int32 ``[B, 1]`` and ``[[B, 1, d]]``
            (the last layer's states only).
        """
        last = cls.last_positions(history)
        ids = tf.gather(history, last, batch_dims=1)[:, None]
        state = tf.gather(states[-1], last, batch_dims=1)[:, None, :]
        return ids, [state]

    def _scores(
        self,
        history,
        states,
        training,
        candidate_ids=None,
        exclude_history=None,
        return_base_logits=False,
    ):
        """The head's logits [B, N] (or [B, M] for candidate ids).

        ``return_base_logits`` (CPR): the pair ``(logits, base logits)``,
        see ``SoftmaxCPR``. ``exclude_history`` (the tied softmax):
        overrides the head's own setting, see ``TiedSoftmax``.
        """
        extra = {}
        if return_base_logits:
            extra["return_base_logits"] = True
        if exclude_history is not None:
            extra["exclude_history"] = exclude_history
        return self.head(
            self._head_inputs(history, states, training),
            self.item_embedding.output_embeddings,
            item_bias=self.item_embedding.output_bias,
            candidate_ids=candidate_ids,
            training=training,
            **extra,
        )

    def call(self, inputs, training=False):
        history, states = self.encode(inputs, training=training)
        return self._scores(history, states, training)

    # ------------------------------------------------------------ inference

    def logits(
        self, history: tf.Tensor, states: list, exclude_history: Any = None
    ) -> tf.Tensor:
        """Full-catalogue logits of encoded histories, at inference.

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            exclude_history: bool or None. ``False`` keeps the history's
                items in the ranking of a head that ranks them last
                (``--head softmax_no_dup``); None: the head's setting.
                Defaults to None.

        Returns:
            float32 ``[B, N]``: what ``call`` returns for those inputs.
        """
        return self._scores(
            history, states, False, exclude_history=exclude_history
        )

    @property
    def has_index(self) -> bool:
        """Whether ``top_k_candidates`` serves the exact top-k from an
        index: the head's own ``has_index`` (all heads but the mixture of
        softmaxes)."""
        return self.head.has_index

    def top_k_candidates(
        self,
        history: tf.Tensor,
        states: list,
        k: int,
        extra_ids: Any = None,
    ) -> tuple:
        """Candidates holding the top-``k`` of ``logits``, from an index.

        One ``[B, N]`` product of the head's base query with the item
        table and an exact top-k of it (ties to the lower id): for
        ``"softmax"`` the top-``k`` of ``h E^T + b`` (padding left out),
        for ``"softmax_no_dup"`` the same with the history left out of the
        index and appended after it (ranked last by ``top_k``), for
        ``"cpr"`` ``SoftmaxCPR.top_k_candidates`` (the top-``(sum k + k)``
        outside the history, then the history). ``extra_ids`` (per-row
        ids, e.g. to score) are appended. ``top_k`` ranks the result as
        served (id 0 fills and is never served).

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            k: int >= 0.
            extra_ids: int ``[B, E]`` or None. Defaults to ``None``.

        Returns:
            ``(candidate_ids, base_logits)``, int32 and float32 ``[B, C]``,
            to pass on to ``score_candidates``.

        Raises:
            ValueError: a head without an index (``head.has_index`` is
                False: a mixture of softmaxes does not factorise into one
                query vector).
        """
        return self.head.top_k_candidates(
            self._head_inputs(history, states, False),
            self.item_embedding.output_embeddings,
            k,
            item_bias=self.item_embedding.output_bias,
            extra_ids=extra_ids,
        )

    def score_candidates(
        self,
        history: tf.Tensor,
        states: list,
        candidate_ids: Any,
        base_logits: Any = None,
        assume_unique: bool = False,
    ) -> tf.Tensor:
        """The ``logits`` of candidate ids, at inference.

        For the ``"cpr"`` head the candidates must meet the precondition
        of ``SoftmaxCPR.score_candidates`` (``top_k_candidates`` gives
        such a set); the other heads take any ids.

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            candidate_ids: int ``[B, M]``, ids in ``[0, N)``.
            base_logits: float32 ``[B, M]`` or None. The base logits
                ``top_k_candidates`` returned with the ids (the softmax
                heads' logits, CPR's ``f_V`` logits), from the index's own
                product. Not for ``"mos"``. Defaults to ``None``.
            assume_unique: bool. No id but 0 repeats within a row (so for
                ``top_k_candidates``' set without ``extra_ids``): saves
                CPR's cascade a sort (``SoftmaxCPR.score_candidates``).
                Defaults to ``False``.

        Returns:
            float32 ``[B, M]``: ``logits`` at the candidates' ids.
        """
        return self.head.score_candidates(
            self._head_inputs(history, states, False),
            self.item_embedding.output_embeddings,
            tf.cast(candidate_ids, tf.int32),
            item_bias=self.item_embedding.output_bias,
            base_logits=base_logits,
            assume_unique=assume_unique,
        )

    def top_k(
        self,
        history: tf.Tensor,
        states: list,
        k: int,
        use_index: bool = False,
    ) -> tuple:
        """The top-``k`` the model serves, at inference.

        ``tfrec_tricks.layers.top_k.served_top_k`` of the head: ranked by
        ``logits`` (ties to the lower id), through the index
        (``use_index``, needs ``has_index``) or over the catalogue;
        padding never; with ``--head softmax_no_dup``, the history's items
        after every other item (in the order of their logits before the
        exclusion, scored ``-1e9``), so a ``k`` above the items outside the
        history is filled by the history's.

        Args:
            history: int32 ``[B, L]`` ids, as returned by ``encode``.
            states: the per-layer states ``encode`` returned.
            k: int, at most the catalogue's ``num_items - 1`` real items.
            use_index: bool. Defaults to ``False``.

        Returns:
            ``(ids, scores)``: int32 and float32 ``[B, k]``, best first.

        Raises:
            ValueError: ``k`` is not in ``[1, num_items - 1]``.
        """
        return served_top_k(
            self.head,
            self._head_inputs(history, states, False),
            self.item_embedding.output_embeddings,
            k,
            item_bias=self.item_embedding.output_bias,
            use_index=use_index,
        )

    # ----------------------------------------------------------------- loss

    def _per_example_loss(self, scores, targets):
        """The objective's loss per example: ``[B, N]`` logits (full),
        ``[B, B]`` in-batch candidate scores (sampled) or ``[B, 1 + K]``
        scores of the target and K sampled negatives."""
        if self.config.num_sampled_negatives is not None:
            return self.sampled_negatives_loss(scores)
        if self.config.objective == "sampled":
            return self.sampled_softmax_loss(scores, targets)
        return tf.nn.sparse_softmax_cross_entropy_with_logits(targets, scores)

    def sample_negatives(self) -> tf.Tensor:
        """``num_sampled_negatives`` item ids, uniform over the real items
        (1..N-1, with replacement), one draw for the whole batch."""
        return tf.random.uniform(
            [self.config.num_sampled_negatives],
            minval=1,
            maxval=self.config.num_items,
            dtype=tf.int32,
        )

    def with_negatives(self, positive, negatives, negative_ids, targets):
        """The ``[M, 1 + K]`` scores of ``sampled_negatives_loss``.

        Args:
            positive: float ``[M]``, each query's score of its target.
            negatives: float ``[M, K]``, its scores of the negatives.
            negative_ids: int ``[K]``, the negatives' item ids.
            targets: int ``[M]``, the targets' ids.

        Returns:
            float32 ``[M, 1 + K]``: the target first; with
            ``remove_accidental_hits``, a negative that is the query's
            target at ``-1e9`` (it is not a negative).
        """
        negatives = tf.cast(negatives, tf.float32)
        if self.config.remove_accidental_hits:
            hit = tf.equal(
                tf.cast(negative_ids, tf.int32)[None, :],
                tf.cast(targets, tf.int32)[:, None],
            )
            negatives = tf.where(
                hit, tf.constant(common.PADDING_LOGIT), negatives
            )
        return tf.concat([tf.cast(positive, tf.float32)[:, None], negatives], 1)

    def sampled_negatives_loss(self, scores):
        """Softmax cross-entropy of the target (column 0) against the
        sampled negatives, after hard-negative mining when configured.

        Uniform negatives need no logQ correction: every candidate's
        correction is the same constant.

        Args:
            scores: float ``[M, 1 + K]`` (``with_negatives``).

        Returns:
            float32 ``[M]`` losses.
        """
        scores = tf.cast(scores, tf.float32)
        labels = tf.one_hot(
            tf.zeros(tf.shape(scores)[:1], tf.int32), tf.shape(scores)[1]
        )
        if self.hard_negatives is not None:
            scores, labels = self.hard_negatives(scores, labels)
        return tf.keras.losses.categorical_crossentropy(
            labels, scores, from_logits=True
        )

    def sampled_softmax_loss(self, scores, candidate_ids):
        """Per-query in-batch sampled softmax loss (``tasks.Retrieval``).

        Query i's positive is candidate i. Applies, in the order of
        ``tfrs.tasks.Retrieval.call``, the logQ correction, the removal of
        accidental hits and hard-negative mining (each as configured),
        then softmax cross-entropy.

        Args:
            scores: float [B, B] logits of each query for each candidate.
            candidate_ids: int [B] the candidates' item ids.

        Returns:
            float32 [B] losses.
        """
        scores = tf.cast(scores, tf.float32)
        candidate_ids = tf.cast(candidate_ids, tf.int32)
        labels = tf.eye(tf.shape(scores)[0], tf.shape(scores)[1])
        if self.config.logq_correction:
            scores = self.logq_correction(
                scores, tf.gather(self.candidate_probability, candidate_ids)
            )
        if self.config.remove_accidental_hits:
            scores = self.accidental_hits(labels, scores, candidate_ids)
        if self.hard_negatives is not None:
            scores, labels = self.hard_negatives(scores, labels)
        return tf.keras.losses.categorical_crossentropy(
            labels, scores, from_logits=True
        )

    @staticmethod
    def expand_positions(
        history: tf.Tensor, states: list, position_targets: tf.Tensor
    ) -> tuple:
        """One row per target position of merged-prefix rows.

        Row ``(b, p)`` is row ``b`` with the history cut after position
        ``p`` (padding from ``p + 1`` on): a causal encoder's states up to
        ``p`` are those of that prefix alone, so every head (its last
        position, context, pointer, Mi window) sees exactly the prefix
        example.

        Args:
            history: int32 [B, L'] ids, as returned by ``encode``.
            states: list of [B, L', d] per-layer states.
            position_targets: int [B, L] targets, 0 where none (see
                ``tfrec_tricks.data.prefix_merging``).

        Returns:
            ``(history, states, targets)`` with M rows, the target
            positions in row-major order: [M, L'], list of [M, L', d], [M].
        """
        width = tf.shape(history)[1]
        targets = tf.cast(position_targets, tf.int32)[:, :width]
        index = tf.where(targets > 0)  # [M, 2]: (row, position)
        rows, positions = index[:, 0], tf.cast(index[:, 1], tf.int32)
        keep = tf.range(width)[None, :] <= positions[:, None]
        history = tf.where(keep, tf.gather(history, rows), 0)
        states = [tf.gather(s, rows) for s in states]
        return history, states, tf.gather_nd(targets, index)

    @staticmethod
    def target_positions(
        history: tf.Tensor, states: list, position_targets: tf.Tensor
    ) -> tuple:
        """``expand_positions`` for scores that read the last state only.

        Row ``(b, p)`` becomes a one-item history (the item at ``p``) with
        the last layer's state at ``p``: what such a head reads of the
        expanded row, without copying ``[M, L', d]`` states (training
        windows hold up to ``L`` targets per row).

        Returns:
            ``(history, states, targets)``: [M, 1], ``[[M, 1, d]]``, [M].
        """
        width = tf.shape(history)[1]
        targets = tf.cast(position_targets, tf.int32)[:, :width]
        index = tf.where(targets > 0)  # [M, 2]: (row, position)
        last = tf.gather_nd(history, index)[:, None]
        state = tf.gather_nd(states[-1], index)[:, None, :]
        return last, [state], tf.gather_nd(targets, index)

    def compute_loss(self, inputs, training=False):
        """The batch's loss; updates the loss tracker and ranking metrics.

        1. Encode the histories.
        2. In training, a head with its own cross-entropy (CPR,
           ``_partitioned_loss``) gives the loss without writing its
           ``[B, N]`` logits (nor expanding the rows of training windows);
           evaluation writes them.
        3. Otherwise, with every position a target, one row per target
           position (``_position_rows``).
        4. The loss of the head's logits and the targets' ranks
           (``_logits_loss``).
        """
        targets = tf.reshape(tf.cast(inputs["target"], tf.int32), [-1])
        history, states = self.encode(inputs, training=training)
        every_position = POSITION_TARGETS in inputs
        sampled = self.config.objective == "sampled"
        if training and not sampled and self.head.has_cross_entropy:
            per_example, ranks = self._partitioned_loss(
                history, states, training, targets, inputs.get(POSITION_TARGETS)
            )
            return self._record_loss(
                per_example, ranks, every_position, training
            )
        if every_position:
            history, states, targets = self._position_rows(
                history, states, inputs[POSITION_TARGETS], training
            )
        per_example, ranks = self._logits_loss(
            history, states, training, targets
        )
        return self._record_loss(per_example, ranks, every_position, training)

    def _position_rows(self, history, states, position_targets, training):
        """One row per target position: ``target_positions`` for a head
        that reads the last state only, else ``expand_positions``."""
        if self.head.reads_last_state_only(training):
            return self.target_positions(history, states, position_targets)
        return self.expand_positions(history, states, position_targets)

    def _logits_loss(self, history, states, training, targets):
        """Loss and ranks from the head's logits.

        The loss is that of the (label-SSE perturbed) targets, plus
        ``base_loss_weight`` times that of CPR's base logits; the ranks
        are the true targets', None when the logits were not written (the
        sampled objective in training).

        Returns:
            ``(per_example, ranks)``: float32 ``[M]`` and ``[M]`` or None.
        """
        loss_targets = targets
        if self.label_sse is not None:
            loss_targets = self.label_sse(targets, training=training)
        # A head that ranks the history last (at inference) is scored
        # without that rule for the loss: a target may repeat the history.
        excludes_history = self.head.excludes_history(training)
        logits, scores, base_scores = self._loss_scores(
            history, states, training, loss_targets, excludes_history
        )
        per_example = self._per_example_loss(scores, loss_targets)
        if base_scores is not None:
            per_example += self.base_loss_weight * self._per_example_loss(
                base_scores, loss_targets
            )
        ranks = None
        if logits is not None:
            if excludes_history:
                logits = self._scores(history, states, training)
            # One comparison pass over [B, N] for every metric: over a
            # large catalogue it costs as much as the logits themselves.
            ranks = tf_target_ranks(logits, targets)
        return per_example, ranks

    def _loss_scores(
        self, history, states, training, loss_targets, excludes_history
    ):
        """The scores the loss reads.

        Returns:
            ``(logits, scores, base_scores)``: the ``[B, N]`` logits (None
            for the sampled objective in training, which scores only its
            candidates), the loss's scores (the logits, ``[B, B]`` at the
            in-batch candidates, or ``[B, 1 + K]`` at the target and the
            sampled negatives) and CPR's base scores alike (None without
            a base loss).
        """
        sampled = self.config.objective == "sampled"
        negatives = self.config.num_sampled_negatives is not None
        # CPR's base logits, trained besides by a plain softmax loss.
        with_base = self.base_loss_weight > 0
        if negatives and training:
            return (
                None,
                self._negative_scores(history, states, training, loss_targets),
                None,
            )
        if sampled and training:
            scores = self._scores(
                history,
                states,
                training,
                candidate_ids=loss_targets,
                return_base_logits=with_base,
            )
            if with_base:
                return None, *scores
            return None, scores, None
        logits = self._scores(
            history,
            states,
            training,
            exclude_history=False if excludes_history else None,
            return_base_logits=with_base,
        )
        base_logits = None
        if with_base:
            logits, base_logits = logits
        if not sampled:
            return logits, logits, base_logits
        if negatives:
            # Evaluation's loss is the objective's, read off the logits.
            negative_ids = self.sample_negatives()
            scores = self.with_negatives(
                tf.gather(logits, loss_targets, batch_dims=1),
                tf.gather(logits, negative_ids, axis=1),
                negative_ids,
                loss_targets,
            )
            return logits, scores, None
        # Evaluation has the full logits already: the candidates' are a
        # gather, not a second pass over the catalogue (for CPR's
        # rerankers, a second top-k over [B, N]).
        scores = tf.gather(logits, loss_targets, axis=1)
        if with_base:
            base_logits = tf.gather(base_logits, loss_targets, axis=1)
        return logits, scores, base_logits

    def _negative_scores(self, history, states, training, targets):
        """Training scores of the targets and the shared negatives.

        The head scores the ``[M, 1]`` targets and the ``[K]`` negatives
        from one set of inputs (one output dropout draw), reading only
        those rows of the table: ``[M, 1 + K]`` (``with_negatives``)
        instead of the full ``[M, N]`` logits.
        """
        inputs = self._head_inputs(history, states, training)
        table = self.item_embedding.output_embeddings
        bias = self.item_embedding.output_bias
        negative_ids = self.sample_negatives()
        positive = self.head(
            inputs,
            table,
            item_bias=bias,
            candidate_ids=targets[:, None],
            training=training,
        )[:, 0]
        negatives = self.head(
            inputs,
            table,
            item_bias=bias,
            candidate_ids=negative_ids,
            training=training,
        )
        return self.with_negatives(positive, negatives, negative_ids, targets)

    def _partitioned_loss(
        self, history, states, training, targets, position_targets=None
    ):
        """CPR's training loss and target ranks, its logits never written.

        ``SoftmaxCPR.cross_entropy``: the values and gradients of the
        cross-entropy of the head's logits (plus ``cpr_base_loss`` times
        that of its base logits) without the ``[B, N]`` scatters. With
        ``position_targets`` (training windows), at every target position
        in place (``SoftmaxCPR.position_cross_entropy``): the values of
        ``expand_positions``' rows without copying the states per target.

        Returns:
            ``(per_example, ranks)``, float32 ``[M]`` each: the loss at
            the (label-SSE perturbed) targets and the true targets' ranks.
        """
        inputs = self._head_inputs(history, states, training)
        table = self.item_embedding.output_embeddings
        bias = self.item_embedding.output_bias
        if position_targets is not None:
            width = tf.shape(history)[1]
            position_targets = tf.cast(position_targets, tf.int32)[:, :width]
            targets = tf.gather_nd(
                position_targets, tf.where(position_targets > 0)
            )
        labels = targets
        if self.label_sse is not None:
            labels = self.label_sse(targets, training=training)
        if position_targets is not None:
            losses = self.head.position_cross_entropy(
                inputs,
                table,
                position_targets,
                item_bias=bias,
                training=training,
                labels=None if labels is targets else labels,
            )
        else:
            losses = self.head.cross_entropy(
                inputs,
                table,
                labels,
                item_bias=bias,
                training=training,
                rank_labels=None if labels is targets else targets,
            )
        cross_entropy, base_cross_entropy, ranks = losses
        if self.base_loss_weight > 0:
            cross_entropy += self.base_loss_weight * base_cross_entropy
        return cross_entropy, ranks

    def _record_loss(self, per_example, ranks, every_position, training):
        """The batch's loss; updates the loss tracker and the metrics.

        Without ``train_metrics`` a training batch's ranks are not read:
        ``tf.function`` prunes the ops that computed them.
        """
        if every_position:
            loss = self._mean_over_replicas(per_example)
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
        scores only its candidates."""
        return self.config.train_metrics and self.config.objective == "full"

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

    @staticmethod
    def _mean_over_replicas(per_example):
        """Sum over the replica's examples / the global example count.

        A merged-prefix batch has a different number of target positions on
        each replica, so ``compute_average_loss``'s global batch size (rows
        times replicas) would not be the example count.
        """
        count = tf.cast(tf.shape(per_example)[0], tf.float32)
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            count = context.all_reduce(tf.distribute.ReduceOp.SUM, count)
        return tf.reduce_sum(per_example) / tf.maximum(count, 1.0)

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

        Reads the training-target counts (logQ correction) and the
        statistics of the standardised features over the real positions of
        the training histories from ``data.statistics``, and maps a raw-id
        item graph to contiguous ids (edges with an item not in the
        vocabulary are dropped).

        Args:
            config: a ``ModelConfig``.
            data: a ``tfrec_tricks.data.InMemoryDataset`` (in memory) or a
                ``tfrec_tricks.data.OnDiskDataset`` (on disk).
            item_graph: array [E, 2] of raw item ids (e.g.
                ``Source.item_graph``) or None.
            **kwargs: passed on to the constructor.
        """
        statistics = data.statistics
        if len(statistics.item_counts) != config.num_items:
            raise ValueError(
                f"config.num_items is {config.num_items} but the data has "
                f"{len(statistics.item_counts)} items (padding included)."
            )
        available = statistics.feature_statistics
        for name in config.features:
            if name not in statistics.moments:
                raise ValueError(
                    f"config.features names {name!r} but the data has no "
                    f"such feature. Received: {sorted(statistics.moments)}"
                )
        feature_statistics = {
            name: available[name]
            for name in config.features
            if name in available
        }
        graph = None
        if item_graph is not None:
            index = {raw: i for i, raw in enumerate(data.vocabulary.items)}
            edges = [
                (index[str(a)], index[str(b)])
                for a, b in np.asarray(item_graph)
                if str(a) in index and str(b) in index
            ]
            graph = np.asarray(edges, np.int64).reshape(-1, 2)
            graph = graph[(graph > 0).all(axis=1)]
        return cls(
            config,
            item_graph=graph,
            item_frequencies=statistics.item_counts,
            feature_statistics=feature_statistics,
            **kwargs,
        )
