"""The ``tf.Module`` whose signatures a TF Serving SavedModel exposes."""

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow as tf

from tfrec_tricks.layers.softmax_cpr import top_k_ids

# Score of padding, unknown and other never-recommended ids: the model's
# padding logit.
PADDING_LOGIT = -1e9

SCORING_MODES = ("auto", "index", "full")
HEADS_WITH_INDEX = ("softmax", "softmax_no_dup", "cpr")


def load_item_vocabulary(vocabulary: Any) -> list:
    """Raw item ids by contiguous id from the forms ``export`` accepts.

    Args:
        vocabulary: a ``tfrec_tricks.data.Vocabulary``, a dict with an
            ``"items"`` list (the run's ``vocabulary.json``), the path of
            such a JSON file, or the list of raw item ids itself (index =
            contiguous id, index 0 the padding token).

    Returns:
        list of str.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        with open(vocabulary) as handle:
            vocabulary = json.load(handle)
    if isinstance(vocabulary, Mapping):
        items = vocabulary.get("items")
    else:
        items = getattr(vocabulary, "items", vocabulary)
    if (
        isinstance(items, (str, bytes))
        or not isinstance(items, Sequence)
        or len(items) < 2
    ):
        raise ValueError(
            "`vocabulary` must give at least 2 raw item ids (padding first). "
            f"Received: vocabulary={str(vocabulary)[:80]}"
        )
    return [str(item) for item in items]


class ServingModule(tf.Module):
    """Raw-id recommendation signatures around a trained model.

    Wraps a ``tfrec_tricks.models.SequentialRetrievalModel`` so that plain
    TensorFlow (and TF Serving) can call it with raw item ids, without
    importing ``tfrec_tricks``:

    - The vocabulary is a ``tf.lookup.StaticHashTable`` (raw id ->
      contiguous id) plus a string variable (contiguous id -> raw id),
      both inside the SavedModel. Feature normalisation is part of the
      model's soft one-hot encoders, so clients send raw values (e.g.
      ``time_gap`` in seconds, NaN where unknown).
    - History preparation: ids not in the vocabulary (and ``""``, the
      padding of a dense request, and the padding token) are dropped and
      the remaining items compacted to the left, keeping their features;
      only the last ``max_len`` items are kept (right padding, as the
      model was trained).
    - An empty history (nothing left after dropping) reads the encoder's
      state after one padding step, as the model does for an empty history
      in any batch (``SequentialRetrievalModel.last_positions``): every
      empty request gets the same ranking, the model's learned "cold
      start" ranking. Every scoring path reads that last position, so a
      row's answer never depends on the other rows of the request.
    - Request shapes are checked in the graph (``check_request``): a
      ``history`` that is not ``[B, L]``, a feature not of its shape, or
      ``candidate_ids`` not ``[B, M]`` fails with
      ``tf.errors.InvalidArgumentError`` (TF Serving's INVALID_ARGUMENT)
      naming the inputs and their shapes.
    - SSE and dropout are training-only, so the served model is
      deterministic: the same request gives the same answer.

    Scoring (``scoring``):

    - ``"index"``: a top-k index over the item table (an exact in-graph
      index: ``f_V E^T + b`` over the model's own table variable with an
      exact top-k, the computation of TFRS ``BruteForce`` without a copy
      of the table), then per head: ``softmax``: its top-K;
      ``softmax_no_dup``: the top-K with the history's ids masked in the
      index; ``cpr``: the ``f_V`` top-(sum(reranker_ks) + K) outside the
      history, united with the history, re-scored with the partitions
      (rerankers, context, pointer). The re-scored top-K equals the
      full-catalogue CPR top-K (see ``cpr_candidates``; items with exactly
      equal logits may come in another order).
    - ``"full"``: the model's logits over the whole catalogue, then top-K.
    - ``"auto"``: ``"index"`` when the head supports it (all but
      ``"mos"``), else ``"full"``.

    Args:
        model: a trained ``SequentialRetrievalModel`` (built).
        vocabulary: the run's item vocabulary, see ``load_item_vocabulary``.
        k: int. Number of items ``serving_default`` returns. Defaults to 10.
        scoring: str. ``"auto"``, ``"index"`` or ``"full"``, see above.
            Defaults to ``"auto"``.
        name: str or None. Module name. Defaults to None.

    Example:

    >>> import tensorflow as tf
    >>> from tfrec_tricks.export.serving_module import ServingModule
    >>> from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
    >>> model = SequentialRetrievalModel(ModelConfig(num_items=6, max_len=4))
    >>> module = ServingModule(
    ...     model, ["[PAD]", "a", "b", "c", "d", "e"], k=2)
    >>> out = module.recommend(tf.constant([["a", "zzz", "b"]]))
    >>> out["item_ids"].shape, out["scores"].dtype.name
    (TensorShape([1, 2]), 'float32')
    """

    def __init__(
        self,
        model: Any,
        vocabulary: Any,
        k: int = 10,
        scoring: str = "auto",
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        config = model.config
        items = load_item_vocabulary(vocabulary)
        if len(items) != config.num_items:
            raise ValueError(
                "The vocabulary must have one raw id per item id of the "
                f"model (num_items={config.num_items}, padding included). "
                f"Received: {len(items)} raw ids"
            )
        if len(set(items)) != len(items):
            raise ValueError(
                "The vocabulary's raw ids must be distinct. Received: "
                f"{len(items) - len(set(items))} duplicates"
            )
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"`k` must be a positive int. Received: k={k!r}")
        if k > config.num_items - 1:
            raise ValueError(
                f"`k` must be at most the number of real items "
                f"{config.num_items - 1}. Received: k={k}"
            )
        if scoring not in SCORING_MODES:
            raise ValueError(
                f"`scoring` must be one of {SCORING_MODES}. "
                f"Received: scoring={scoring!r}"
            )
        if scoring == "auto":
            scoring = "index" if config.head in HEADS_WITH_INDEX else "full"
        if scoring == "index" and config.head not in HEADS_WITH_INDEX:
            raise ValueError(
                f"scoring='index' needs a head in {HEADS_WITH_INDEX} (a "
                "mixture of softmaxes does not factorise into one query "
                f"vector). Received: head={config.head!r}; use "
                "scoring='full'"
            )
        # A model rebuilt by `load_model` creates (and restores) its head
        # weights on its first call.
        model(
            {
                "history": tf.ones([1, 1], tf.int32),
                **{f: tf.zeros([1, 1]) for f in config.features},
            },
            training=False,
        )
        # The model is not a tracked child: saving it would trace and store
        # its Keras call functions (slow, and TF Serving never uses them).
        # Its variables are tracked so that the signatures can capture them.
        self.__dict__["model"] = model
        self.model_variables = list(model.variables)
        self.k = k
        self.scoring = scoring
        self.head_kind = config.head
        self.max_len = config.max_len
        self.num_items = config.num_items
        self.feature_names = tuple(config.features)
        self.reranker_ks = ()
        if config.head == "cpr":
            self.reranker_ks = tuple(sorted(model.head.reranker_ks)[::-1])
        self.item_lookup = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(items[1:], tf.string),
                tf.range(1, len(items), dtype=tf.int64),
            ),
            default_value=0,
        )
        self.raw_item_ids = tf.Variable(
            items, trainable=False, dtype=tf.string, name="raw_item_ids"
        )

    # ---------------------------------------------------------- signatures

    def input_signature(self, candidates: bool = False) -> dict:
        """Named ``tf.TensorSpec`` s of a signature's inputs."""
        specs = {"history": tf.TensorSpec([None, None], tf.string, "history")}
        for feature in self.feature_names:
            specs[feature] = tf.TensorSpec([None, None], tf.float32, feature)
        if candidates:
            specs["candidate_ids"] = tf.TensorSpec(
                [None, None], tf.string, "candidate_ids"
            )
        return specs

    def signatures(self) -> dict:
        """``{"serving_default": ..., "score_candidates": ...}`` functions."""
        recommend = tf.function(lambda **kw: self.recommend(**kw))
        score = tf.function(lambda **kw: self.score_candidates(**kw))
        return {
            "serving_default": recommend.get_concrete_function(
                **self.input_signature()
            ),
            "score_candidates": score.get_concrete_function(
                **self.input_signature(candidates=True)
            ),
        }

    def recommend(self, history: Any, **features: Any) -> dict:
        """Top-K recommendations for raw-id histories.

        Args:
            history: string ``[B, L]`` raw item ids in time order, padded
                with ``""``.
            **features: float ``[B, L]`` per feature of the model.

        Returns:
            dict with ``item_ids`` (string ``[B, K]``, best first) and
            ``scores`` (float32 ``[B, K]``, the model's logits).

        Raises:
            tf.errors.InvalidArgumentError: ``history`` is not ``[B, L]``
                or a feature's shape differs from it.
        """
        history, features, _ = self.check_request(history, features)
        ids, states = self._encode(history, features)
        if self.scoring == "full":
            logits = self._full_logits(ids, states)
            scores, top = tf.math.top_k(logits, k=self.k)
        else:
            candidates, logits = self._index_candidates(ids, states, self.k)
            position = top_k_positions(logits, candidates, self.k)
            scores = tf.gather(logits, position, batch_dims=1)
            top = tf.gather(candidates, position, batch_dims=1)
        return {
            "item_ids": tf.gather(self.raw_item_ids, top),
            "scores": scores,
        }

    def score_candidates(
        self, history: Any, candidate_ids: Any, **features: Any
    ) -> dict:
        """Scores of given raw candidate ids for raw-id histories.

        Args:
            history: string ``[B, L]`` raw item ids, padded with ``""``.
            candidate_ids: string ``[B, M]`` raw item ids to score; ids
                not in the vocabulary (and ``""``) get ``-1e9``.
            **features: float ``[B, L]`` per feature of the model.

        Returns:
            dict with ``scores``: float32 ``[B, M]``, each the logit the
            full-catalogue model gives that item.

        Raises:
            tf.errors.InvalidArgumentError: ``history`` is not ``[B, L]``,
                a feature's shape differs from it, or ``candidate_ids`` is
                not ``[B, M]`` with the batch size of ``history``.
        """
        history, features, candidate_ids = self.check_request(
            history, features, candidate_ids
        )
        ids, states = self._encode(history, features)
        wanted = tf.cast(self.item_lookup.lookup(candidate_ids), tf.int32)
        if self.scoring == "full":
            logits = self._full_logits(ids, states)
            scores = tf.gather(logits, wanted, batch_dims=1)
        elif self.head_kind == "cpr":
            parts = self._cpr_parts(ids, states)
            candidates, logits = self.cpr_candidates(ids, states, 0, parts)
            scores = self._base_logits(parts["f_base"], wanted)
            # Re-scored items (history, reranked) take their re-scored
            # logit; the others keep f_V . e_x + b_x.
            same = tf.equal(wanted[:, :, None], candidates[:, None, :]) & (
                candidates[:, None, :] > 0
            )
            found = tf.reduce_any(same, axis=-1)
            where = tf.argmax(tf.cast(same, tf.int32), -1, tf.int32)
            scores = tf.where(
                found, tf.gather(logits, where, batch_dims=1), scores
            )
        else:
            scores = self._base_logits(self._softmax_query(ids, states), wanted)
            if self.head_kind == "softmax_no_dup":
                scores = tf.where(_in_rows(wanted, ids), PADDING_LOGIT, scores)
        scores = tf.where(wanted > 0, scores, PADDING_LOGIT)
        return {"scores": scores}

    # ------------------------------------------------------------ history

    def check_request(
        self, history: Any, features: Mapping, candidate_ids: Any = None
    ) -> tuple:
        """A request's tensors, checked at run time against each other.

        The signatures' inputs are declared ``[None, None]``, but a loaded
        SavedModel (and TF Serving) does not enforce that: without these
        checks a wrong request would fail deep in the graph with a raw
        gather or pad error, or (a feature longer than ``history``) be
        answered with misaligned features.

        Args:
            history: string ``[B, L]`` raw item ids.
            features: dict of float ``[B, L]``, one per feature of the
                model.
            candidate_ids: string ``[B, M]`` or None.

        Returns:
            ``(history, features, candidate_ids)`` as tensors (string,
            dict of float32, string or None) that depend on the checks.

        Raises:
            ValueError: the feature names differ from the model's.
            tf.errors.InvalidArgumentError: (when the checks run)
                ``history`` is not rank 2, a feature's shape is not
                ``history``'s, or ``candidate_ids`` is not rank 2 with
                ``history``'s batch size. The message names the inputs
                and their shapes.
        """
        missing = [n for n in self.feature_names if n not in features]
        unknown = sorted(set(features) - set(self.feature_names))
        if missing or unknown:
            raise ValueError(
                f"The model reads the features {list(self.feature_names)}. "
                f"Received: {sorted(features)}"
            )
        history = tf.convert_to_tensor(history, tf.string)
        values = {
            name: tf.cast(features[name], tf.float32)
            for name in self.feature_names
        }
        inputs = {"history": history, **values}
        if candidate_ids is not None:
            candidate_ids = tf.convert_to_tensor(candidate_ids, tf.string)
            inputs["candidate_ids"] = candidate_ids
        # Ranks first: the shape comparisons below need rank-2 shapes.
        ranks = [
            _check(
                tf.equal(_runtime_rank(tensor), 2),
                f"input `{name}` must have rank 2 "
                f"({'[B, M]' if name == 'candidate_ids' else '[B, L]'}). "
                f"Received: {name}.shape={{}}",
                tf.shape(tensor),
            )
            for name, tensor in inputs.items()
        ]
        with tf.control_dependencies(ranks):
            history_shape = tf.shape(history)
            checks = [
                _check(
                    tf.reduce_all(tf.equal(tf.shape(value), history_shape)),
                    f"feature `{name}` must have the shape of `history` "
                    f"[B, L]. Received: {name}.shape={{}}, "
                    "history.shape={}",
                    tf.shape(value),
                    history_shape,
                )
                for name, value in values.items()
            ]
            if candidate_ids is not None:
                checks.append(
                    _check(
                        tf.equal(tf.shape(candidate_ids)[0], history_shape[0]),
                        "`candidate_ids` [B, M] must have the batch size B "
                        "of `history` [B, L]. Received: "
                        "candidate_ids.shape={}, history.shape={}",
                        tf.shape(candidate_ids),
                        history_shape,
                    )
                )
        with tf.control_dependencies(ranks + checks):
            history = tf.identity(history)
            values = {name: tf.identity(v) for name, v in values.items()}
            if candidate_ids is not None:
                candidate_ids = tf.identity(candidate_ids)
        return history, values, candidate_ids

    def prepare_history(self, history: Any, features: Mapping) -> tuple:
        """Raw ids -> the model's right-padded ``[B, max_len]`` inputs.

        Unknown ids are dropped and the rest compacted to the left with
        their features; the last ``max_len`` items are kept.

        Returns:
            ``(ids, features)``: int32 ``[B, max_len]`` and a dict of
            float32 ``[B, max_len]`` (0 at padding positions).

        Raises:
            ValueError, tf.errors.InvalidArgumentError: see
                ``check_request``.
        """
        history, values, _ = self.check_request(history, features)
        return self._prepare(history, values)

    def _prepare(self, history: tf.Tensor, values: Mapping) -> tuple:
        """``prepare_history`` of checked tensors."""
        # One "" column so that even a [B, 0] request can be gathered.
        history = tf.pad(history, [[0, 0], [0, 1]], constant_values="")
        ids = tf.cast(self.item_lookup.lookup(history), tf.int32)
        values = {
            name: tf.pad(values[name], [[0, 0], [0, 1]])
            for name in self.feature_names
        }
        real = ids > 0
        order = tf.argsort(tf.cast(~real, tf.int32), axis=1, stable=True)
        lengths = tf.reduce_sum(tf.cast(real, tf.int32), axis=1)
        start = tf.maximum(lengths - self.max_len, 0)
        position = start[:, None] + tf.range(self.max_len)[None, :]
        keep = position < lengths[:, None]
        position = tf.minimum(position, tf.shape(ids)[1] - 1)
        source = tf.gather(order, position, batch_dims=1)
        ids = tf.where(keep, tf.gather(ids, source, batch_dims=1), 0)
        values = {
            name: tf.where(keep, tf.gather(value, source, batch_dims=1), 0.0)
            for name, value in values.items()
        }
        return ids, values

    def _encode(self, history: tf.Tensor, features: Mapping) -> tuple:
        """Checked raw inputs -> ``(ids, states)`` of the model's encoder."""
        ids, values = self._prepare(history, features)
        return self.model.encode({"history": ids, **values}, training=False)

    # ------------------------------------------------------------- scoring

    def _table(self) -> tuple:
        embedding = self.model.item_embedding
        table = tf.cast(embedding.output_embeddings, tf.float32)
        bias = embedding.output_bias
        if bias is not None:
            bias = tf.cast(bias, tf.float32)
        return table, bias

    def _full_logits(self, ids: tf.Tensor, states: list) -> tf.Tensor:
        """The model's own full-catalogue logits ``[B, N]``."""
        model = self.model
        if model.head is not None:
            # The model's own last position (0 for an empty history): the
            # head's default (L - 1 when empty) depends on the batch's
            # width, i.e. on the other rows of the request.
            return model.head(
                {
                    "hidden_states": states[-1],
                    "history_ids": ids,
                    "layer_hidden_states": list(states),
                    "last_positions": model.last_positions(ids),
                },
                model.item_embedding.output_embeddings,
                item_bias=model.item_embedding.output_bias,
                training=False,
            )
        logits = model.item_embedding.logits(self._softmax_query(ids, states))
        logits = tf.cast(logits, tf.float32)
        if self.head_kind == "softmax_no_dup":
            logits = tf.tensor_scatter_nd_update(
                logits,
                _batch_indices(ids),
                tf.fill(tf.shape(ids), PADDING_LOGIT),
            )
        return logits

    def _softmax_query(self, ids: tf.Tensor, states: list) -> tf.Tensor:
        h = tf.gather(states[-1], self.model.last_positions(ids), batch_dims=1)
        if self.model.projection is not None:
            h = self.model.projection(h)
        return tf.cast(h, tf.float32)

    def _base_logits(self, query: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
        """``query . e_x + b_x`` for per-row ids ``[B, M]``."""
        table, bias = self._table()
        logits = tf.einsum("bd,bmd->bm", query, tf.gather(table, ids))
        if bias is not None:
            logits += tf.gather(bias, ids)
        return logits

    def _retrieve(
        self, query: tf.Tensor, count: int, exclude: tf.Tensor | None = None
    ) -> tuple:
        """The index: exact top-``count`` of ``query E^T + b``.

        Padding and the ids of ``exclude`` (int ``[B, M]``, per row)
        excluded: they get -inf, and come last if fewer than ``count``
        items are left. Ties go to the lower id. The logits come from
        the same ``[B, N]`` product as the full-catalogue computation's,
        so they are bitwise equal to it and near-ties at the edge of a
        reranker's top-k break the same way.

        Returns:
            ``(ids, logits, excluded)``: int32 and float32 ``[B, count]``,
            and float32 ``[B, M]``, the logits of the ``exclude`` ids
            before they were masked (None without ``exclude``).
        """
        table, bias = self._table()
        logits = tf.matmul(query, table, transpose_b=True)
        if bias is not None:
            logits += bias
        excluded = None
        # Padding (id 0) and the excluded ids in one scatter.
        masked = tf.zeros([tf.shape(logits)[0], 1], tf.int32)
        if exclude is not None:
            exclude = tf.cast(exclude, tf.int32)
            excluded = tf.gather(logits, exclude, batch_dims=1)
            masked = tf.concat([masked, exclude], 1)
        logits = tf.tensor_scatter_nd_update(
            logits,
            _batch_indices(masked),
            tf.fill(tf.shape(masked), float("-inf")),
        )
        top = top_k_ids(logits, count)
        return top, tf.gather(logits, top, batch_dims=1), excluded

    def _index_candidates(self, ids: tf.Tensor, states: list, k: int) -> tuple:
        """Candidate ids ``[B, C]`` and their exact logits ``[B, C]``.

        The candidates contain the model's full-catalogue top-``k``;
        entries that must not be recommended have logit -inf.
        """
        if self.head_kind == "cpr":
            return self.cpr_candidates(ids, states, k)
        query = self._softmax_query(ids, states)
        exclude = ids if self.head_kind == "softmax_no_dup" else None
        top, logits, _ = self._retrieve(
            query, min(k, self.num_items - 1), exclude
        )
        return top, logits

    # ----------------------------------------------------------------- CPR

    def _cpr_parts(self, ids: tf.Tensor, states: list) -> dict:
        """The CPR head's query ``q``, ``f_V`` and hidden states."""
        head = self.model.head
        hidden = states[-1]
        last = self.model.last_positions(ids)
        query = head.query(hidden, ids, [*states[:-1], hidden], last)
        return {
            "query": query,
            "hidden": hidden,
            "f_base": self._project(head.base_projection, query),
        }

    @staticmethod
    def _project(layer: Any, query: tf.Tensor) -> tf.Tensor:
        return tf.cast(layer(query), tf.float32)

    def cpr_candidates(
        self,
        ids: tf.Tensor,
        states: list,
        k: int,
        parts: dict | None = None,
    ) -> tuple:
        """Softmax-CPR re-scoring of the index's candidates.

        An item outside the history and outside every reranker set keeps
        its ``f_V`` logit (both merge modes). The index retrieves the
        ``f_V`` top-(``sum(reranker_ks) + K``) among the items *outside*
        the history (the history's ids are masked first), and the history
        joins them: ``U``, with no item twice. ``U`` holds every re-scored
        item and the full-catalogue top-``K``: the reranker cascade
        (largest ``k`` first) selects at stage ``j`` the best items left by
        the running logits, so the non-history items it selects are the
        best ``sum(reranker_ks)`` non-history ``f_V`` items at most, and
        the rest of the top-``K`` are the next ``K`` of them. (Retrieving
        over the whole catalogue would need ``max_len`` more, for history
        items sitting just below the reranked ones.)

        The first stage merges the index's ranking with the history's by
        binary search (``_first_stage``), later stages run ``top_k`` over
        ``U``; both break ties to the lower item id (``sort_keys``), as
        the layer's ``top_k`` over the whole catalogue does.

        Args:
            ids: int32 ``[B, L]`` prepared history.
            states: the encoder's per-layer states.
            k: int. Number of top items the candidates must contain; 0
                for the re-scored items only.
            parts: dict or None. ``_cpr_parts(ids, states)`` if computed.

        Returns:
            ``(candidates, logits)``: int32 ``[B, C]`` ids, the retrieved
            ones (best ``f_V`` first) then the history (0 for padding and
            repeated history items), and float32 ``[B, C]`` exact CPR
            logits (-inf at those 0 ids).
        """
        head = self.model.head
        table, bias = self._table()
        if parts is None:
            parts = self._cpr_parts(ids, states)
        f_base = parts["f_base"]
        history_vectors = tf.gather(table, ids)  # shared with C and P
        equal = tf.equal(ids[:, :, None], ids[:, None, :])
        first = tf.argmax(tf.cast(equal, tf.int32), -1, tf.int32)
        history_usable = (ids > 0) & tf.equal(first, tf.range(tf.shape(ids)[1]))
        count = min(sum(self.reranker_ks) + k, self.num_items - 1)
        if count > 0:
            # The history's f_V logits come from the index's own [B, N]
            # product, bitwise equal to the layer's, so near-ties between
            # history and retrieved items rank as in the layer.
            top, top_logits, history_logits = self._retrieve(
                f_base, count, exclude=ids
            )
            # Fewer non-history items than `count`: -inf fills the rest.
            top_usable = top_logits > float("-inf")
            candidates = tf.concat([top, ids], axis=1)
            running = tf.concat([top_logits, history_logits], axis=1)
            usable = tf.concat([top_usable, history_usable], axis=1)
        else:
            history_logits = self._base_logits(f_base, ids)
            candidates, running, usable = ids, history_logits, history_usable
        candidates = tf.where(usable, candidates, 0)
        running = tf.where(usable, running, float("-inf"))
        # (Unusable entries are never selected: their rows do not matter.)
        vectors = history_vectors
        if count > 0:
            vectors = tf.concat([tf.gather(table, top), vectors], axis=1)
        candidate_bias = 0.0 if bias is None else tf.gather(bias, candidates)
        projections = dict(zip(head.reranker_ks, head.reranker_projections))
        for stage, size in enumerate(self.reranker_ks):
            # The cascade's stage: the top-k of the running logits over
            # the whole catalogue (ties to the lower id, as the layer).
            if stage == 0:
                selected = usable & _first_stage(
                    sort_keys(running, candidates), count, size
                )
            else:
                position = top_k_positions(running, candidates, size)
                selected = usable & (
                    tf.scatter_nd(
                        _batch_indices(position),
                        tf.ones(tf.shape(position), tf.int32),
                        tf.shape(running),
                    )
                    > 0
                )
            f_rerank = self._project(projections[size], parts["query"])
            scores = tf.einsum("bd,bcd->bc", f_rerank, vectors)
            if head.merge == "replace":
                running = tf.where(selected, scores + candidate_bias, running)
            else:
                running = tf.where(selected, running + scores, running)
        values = self.model.head.history_logits(
            parts["query"],
            f_base,
            parts["hidden"],
            ids,
            ids > 0,
            equal,
            table,
            bias,
            training=False,
            vectors=history_vectors,
        )
        # The history is U's last L columns (the index excluded it).
        values = tf.where(history_usable, values, float("-inf"))
        logits = tf.concat([running[:, : -tf.shape(ids)[1]], values], axis=1)
        return candidates, logits


def sort_keys(logits: tf.Tensor, item_ids: tf.Tensor) -> tf.Tensor:
    """int64 keys ordered as ``logits``, ties ordered by lower item id.

    The float's order-preserving bits above the complemented id: a larger
    key is a larger logit or, for equal logits, a lower id, which is how
    ``tf.math.top_k`` over a whole-catalogue row ranks items.
    """
    bits = tf.bitcast(logits + 0.0, tf.int32)  # + 0.0: -0.0 becomes 0.0
    ordered = tf.where(bits < 0, tf.bitwise.bitwise_xor(bits, 0x7FFFFFFF), bits)
    return tf.bitwise.left_shift(tf.cast(ordered, tf.int64), 32) + (
        0xFFFFFFFF - tf.cast(item_ids, tf.int64)
    )


def top_k_positions(
    logits: tf.Tensor, item_ids: tf.Tensor, k: int
) -> tf.Tensor:
    """Positions ``[B, k]`` of the ``k`` largest ``logits`` per row.

    Ties go to the lower item id (``item_ids``, same shape as
    ``logits``), as ``tf.math.top_k`` over a whole-catalogue row does, in
    whatever order the candidates come (see ``sort_keys``).
    """
    return tf.math.top_k(sort_keys(logits, item_ids), k=k).indices


def _first_stage(keys: tf.Tensor, count: int, size: int) -> tf.Tensor:
    """Whether each of ``U``'s items is in the whole-catalogue top-``size``.

    ``keys``: ``sort_keys`` of ``U`` = the index's ``count`` items, in
    descending order, then the history (unsorted). A merge of the two
    rankings by binary search instead of a ``top_k`` over ``U``: the
    ``r``-th retrieved item's rank is ``r`` plus the history items above
    it; a history item's rank counts the items of both parts above it.
    """
    retrieved, history = keys[:, :count], keys[:, count:]
    length = tf.shape(history)[1]
    history_ascending = tf.reverse(tf.math.top_k(history, length).values, [1])
    retrieved_ascending = tf.reverse(retrieved, [1])

    def above(ascending: tf.Tensor, values: tf.Tensor) -> tf.Tensor:
        # How many keys of `ascending` exceed each value.
        below = tf.searchsorted(ascending, values, side="right")
        return tf.shape(ascending)[1] - below

    retrieved_rank = tf.range(count) + above(history_ascending, retrieved)
    history_rank = above(retrieved_ascending, history) + above(
        history_ascending, history
    )
    return tf.concat([retrieved_rank < size, history_rank < size], axis=1)


def _check(condition: tf.Tensor, template: str, *shapes: tf.Tensor) -> Any:
    """An ``Assert`` op whose message is ``template`` with the ``shapes``.

    It fails with ``tf.errors.InvalidArgumentError`` (TF Serving's
    INVALID_ARGUMENT) and the message as one sentence. (String data of an
    ``Assert`` is C-escaped, hence backticks rather than quotes.)
    """
    message = tf.strings.format(template, list(shapes), summarize=-1)
    return tf.debugging.Assert(condition, [message])


def _runtime_rank(tensor: tf.Tensor) -> tf.Tensor:
    """The rank of ``tensor`` as fed at run time, int32 scalar.

    A loaded SavedModel's signature does not enforce the declared
    ``[None, None]`` of its inputs, while ``tf.rank`` (and grappler, for
    ``Rank`` and ``Size`` of a shape) fold to that declared rank: the
    masked shape's length is known only at run time.
    """
    shape = tf.shape(tensor)
    return tf.size(tf.boolean_mask(shape, shape >= 0))


def _batch_indices(ids: tf.Tensor) -> tf.Tensor:
    """``[B, K]`` column ids -> ``[B, K, 2]`` (row, column) indices."""
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(ids))
    return tf.stack([rows, ids], axis=-1)


def _in_rows(ids: tf.Tensor, history: tf.Tensor) -> tf.Tensor:
    """``[B, M]``: whether each id is a real item of its row's history."""
    same = tf.equal(ids[:, :, None], history[:, None, :])
    return tf.reduce_any(same & (history > 0)[:, None, :], axis=-1)
