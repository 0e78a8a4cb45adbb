"""The ``tf.Module`` whose signatures a TF Serving SavedModel exposes."""

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow as tf

# PADDING_LOGIT: the score of padding, unknown and other never-recommended
# ids (the model's padding logit).
from tfrec_tricks.layers.common import PADDING_LOGIT
from tfrec_tricks.layers.top_k import check_served_k

SCORING_MODES = ("auto", "index", "full")


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


def _checked_vocabulary(vocabulary: Any, num_items: int) -> list:
    """``load_item_vocabulary``, checked: one distinct raw id per item."""
    items = load_item_vocabulary(vocabulary)
    if len(items) != num_items:
        raise ValueError(
            "The vocabulary must have one raw id per item id of the "
            f"model (num_items={num_items}, padding included). "
            f"Received: {len(items)} raw ids"
        )
    if len(set(items)) != len(items):
        raise ValueError(
            "The vocabulary's raw ids must be distinct. Received: "
            f"{len(items) - len(set(items))} duplicates"
        )
    return items


def check_k(k: Any, num_items: int) -> None:
    """Raises ValueError unless ``1 <= k <= num_items - 1``.

    A served list holds ``k`` distinct real items, never padding: ``k``
    may not exceed the catalogue (``num_items`` counts the padding id).

    Args:
        k: the number of items a request gets.
        num_items: int. The model's ``num_items``, padding included.

    Raises:
        ValueError: naming ``k`` and the catalogue's size.
    """
    check_served_k(k, num_items)


def _resolved_scoring(scoring: str, has_index: bool, head: str) -> str:
    """``"index"`` or ``"full"``: ``"auto"`` takes the index if the model
    has one; ``"index"`` without one is a ValueError."""
    if scoring not in SCORING_MODES:
        raise ValueError(
            f"`scoring` must be one of {SCORING_MODES}. "
            f"Received: scoring={scoring!r}"
        )
    if scoring == "auto":
        return "index" if has_index else "full"
    if scoring == "index" and not has_index:
        raise ValueError(
            "scoring='index' needs a head with an index (a mixture of "
            "softmaxes does not factorise into one query vector). "
            f"Received: head={head!r}; use scoring='full'"
        )
    return scoring


class ServingModule(tf.Module):
    """Raw-id recommendation signatures around a trained model.

    Wraps a ``tfrec_tricks.models.SequentialRetrievalModel`` so that plain
    TensorFlow (and TF Serving) can call it with raw item ids, without
    importing ``tfrec_tricks``:

    - The vocabulary is a ``tf.lookup.StaticHashTable`` (raw id ->
      contiguous id) plus a string variable (contiguous id -> raw id),
      both inside the SavedModel. Feature normalisation is part of the
      model's soft one-hot encoders, so clients send raw values (e.g.
      ``time_gap`` in seconds, NaN where unknown). Categorical
      per-interaction features (``ModelConfig.token_features``) are string
      ``[B, L]`` inputs of raw values, looked up in a
      ``tf.lookup.StaticHashTable`` of the run's vocabulary each: ``""``
      is no value (id 0, as padding), an unknown value out-of-vocabulary.
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

    - ``"index"``: the model's own index path
      (``SequentialRetrievalModel.top_k_candidates``): one ``[B, N]``
      product of the head's base query with the model's table variable
      and an exact in-graph top-k (the computation of TFRS ``BruteForce``
      without a copy of the table), then per head: ``softmax``: its
      top-K; ``softmax_no_dup``: the top-K with the history's ids masked
      in the index, then the history; ``cpr``: the ``f_V``
      top-(sum(reranker_ks) + K) outside the history, united with the
      history, re-scored by ``SoftmaxCPR.score_candidates`` (rerankers,
      context, pointer). The candidates' exact logits
      (``score_candidates``) are ranked with ties to the lower id
      (``SequentialRetrievalModel.top_k``), so the served top-K equals
      the full-catalogue top-K.
    - ``"full"``: the model's logits over the whole catalogue, then top-K.
    - ``"auto"``: ``"index"`` when the head supports it (all but
      ``"mos"``), else ``"full"`` (why: docs/decisions.md#serving-index).

    Either way a list holds K distinct real items, never padding (K is at
    most the catalogue, ``check_k``). ``softmax_no_dup`` ranks the
    history's items last, it never drops them: when K exceeds the items
    outside the history, the history's items fill the remaining places,
    in the order of their logits before the exclusion, with the score
    ``-1e9`` that ``score_candidates`` gives them too.

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
        items = _checked_vocabulary(vocabulary, config.num_items)
        check_k(k, config.num_items)
        scoring = _resolved_scoring(scoring, model.has_index, config.head)
        # A model rebuilt by `load_model` creates (and restores) its head
        # weights on its first call.
        model(
            {
                "history": tf.ones([1, 1], tf.int32),
                **{f: tf.zeros([1, 1]) for f in config.position_inputs},
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
        self.max_len = config.max_len
        self.num_items = config.num_items
        self.feature_names = tuple(config.features)
        # Raw value -> id of each token feature: "" (padding, no value) 0,
        # an unknown value 1 (out-of-vocabulary), the vocabulary 2, 3, ...
        self.token_tables = {
            feature["name"]: _token_table(feature["vocabulary"])
            for feature in config.token_features
        }
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
        for feature in self.token_tables:
            specs[feature] = tf.TensorSpec([None, None], tf.string, feature)
        if candidates:
            specs["candidate_ids"] = tf.TensorSpec(
                [None, None], tf.string, "candidate_ids"
            )
        return specs

    def filter_signature(self) -> dict:
        """Named ``tf.TensorSpec`` s of ``recommend_filtered``'s inputs."""
        return {
            **self.input_signature(),
            "exclude_item_ids": tf.TensorSpec(
                [None, None], tf.string, "exclude_item_ids"
            ),
            "k": tf.TensorSpec([None], tf.int32, "k"),
            "history_last": tf.TensorSpec([None], tf.bool, "history_last"),
        }

    def endpoints(self) -> dict:
        """Each signature's name -> ``(method, input specs)``: the method
        takes the specs' names as keyword arguments."""
        return {
            "serving_default": (self.recommend, self.input_signature()),
            "recommend_filtered": (
                self.recommend_filtered,
                self.filter_signature(),
            ),
            "score_candidates": (
                self.score_candidates,
                self.input_signature(candidates=True),
            ),
        }

    def signatures(self) -> dict:
        """``serving_default``, ``recommend_filtered`` and
        ``score_candidates`` functions (concrete, for
        ``tf.saved_model.save``)."""
        return {
            name: _keyword_function(method).get_concrete_function(**specs)
            for name, (method, specs) in self.endpoints().items()
        }

    def recommend(self, history: Any, **features: Any) -> dict:
        """Top-K recommendations for raw-id histories.

        Args:
            history: string ``[B, L]`` raw item ids in time order, padded
                with ``""``.
            **features: float ``[B, L]`` per feature of the model, string
                ``[B, L]`` per token feature.

        Returns:
            dict with ``item_ids`` (string ``[B, K]``, best first, K
            distinct real items) and ``scores`` (float32 ``[B, K]``, the
            model's logits; ``-1e9`` for history items that a
            ``softmax_no_dup`` model ranks last).

        Raises:
            tf.errors.InvalidArgumentError: ``history`` is not ``[B, L]``
                or a feature's shape differs from it.
        """
        history, features, _ = self.check_request(history, features)
        ids, states = self._encode(history, features)
        # Padding never; a head that excludes the history ranks its items
        # last (scored -1e9), never drops them: always k real items.
        top, scores = self.model.top_k(
            ids, states, self.k, use_index=self.scoring == "index"
        )
        return {
            "item_ids": tf.gather(self.raw_item_ids, top),
            "scores": scores,
        }

    def recommend_filtered(
        self,
        history: Any,
        exclude_item_ids: Any,
        k: Any,
        history_last: Any,
        **features: Any,
    ) -> dict:
        """Top-``k`` recommendations with a request's own filters.

        ``recommend`` with three options per row: items to rank last, the
        list's length, and whether the history's items are ranked last.
        Items ranked last come after every other item, scored ``-1e9``,
        in the order of their logits: never dropped, so a row always
        gets ``k`` real items.

        Args:
            history: string ``[B, L]`` raw item ids in time order, padded
                with ``""``.
            exclude_item_ids: string ``[B, E]`` raw ids to rank last
                (already bought, out of stock), padded with ``""``; ids
                not in the vocabulary are ignored. ``E`` may be 0.
            k: int32 ``[B]``. Each row's list length, from 1 to the
                exported ``k``.
            history_last: bool ``[B]``. Rank the items of the row's
                ``history`` (all of it, not only the last ``max_len``)
                last; False ranks them as any other item, whatever the
                head (a ``softmax_no_dup`` model's ``recommend`` ranks
                them last).
            **features: float ``[B, L]`` per feature of the model, string
                ``[B, L]`` per token feature.

        Returns:
            dict with ``item_ids`` (string ``[B, K]``, ``K = max(k)``) and
            ``scores`` (float32 ``[B, K]``). Row ``i`` holds its ``k[i]``
            items, best first, then ``""`` with the score ``-1e9``.

        Raises:
            tf.errors.InvalidArgumentError: a shape does not fit (see
                ``check_request``; ``exclude_item_ids`` must be ``[B, E]``,
                ``k`` and ``history_last`` ``[B]``) or a ``k`` is not in
                ``[1, self.k]``.
        """
        history, features, _ = self.check_request(history, features)
        exclude, k, history_last = self.check_filters(
            history, exclude_item_ids, k, history_last
        )
        ids, states = self._encode(history, features)
        ranked_last = tf.concat(
            [tf.where(history_last[:, None], history, ""), exclude], axis=1
        )
        top, scores = self.model.top_k(
            ids,
            states,
            self.k,
            use_index=self.scoring == "index",
            exclude_ids=tf.cast(self.item_lookup.lookup(ranked_last), tf.int32),
            history_last=False,
        )
        # A prefix of the top-K is the top-k: one ranking for any k.
        listed = tf.range(self.k)[None, :] < k[:, None]
        width = tf.reduce_max(tf.concat([k, [0]], axis=0))
        item_ids = tf.where(listed, tf.gather(self.raw_item_ids, top), "")
        scores = tf.where(listed, scores, PADDING_LOGIT)
        return {"item_ids": item_ids[:, :width], "scores": scores[:, :width]}

    def check_filters(
        self, history: tf.Tensor, exclude_item_ids: Any, k: Any, last: Any
    ) -> tuple:
        """``recommend_filtered``'s options, checked against ``history``.

        Returns:
            ``(exclude_item_ids, k, history_last)`` as string, int32 and
            bool tensors that depend on the checks.

        Raises:
            tf.errors.InvalidArgumentError: (when the checks run) a shape
                does not fit ``history``'s batch size or a ``k`` is not
                in ``[1, self.k]``; the message names the input.
        """
        exclude = tf.convert_to_tensor(exclude_item_ids, tf.string)
        k = tf.cast(k, tf.int32)
        last = tf.convert_to_tensor(last, tf.bool)
        batch = tf.shape(history)[0]
        ranks = [
            _check(
                tf.equal(_runtime_rank(exclude), 2),
                "input `exclude_item_ids` must have rank 2 ([B, E]). "
                "Received: exclude_item_ids.shape={}",
                tf.shape(exclude),
            ),
            *(
                _check(
                    tf.equal(_runtime_rank(value), 1),
                    f"input `{name}` must have rank 1 ([B]). "
                    f"Received: {name}.shape={{}}",
                    tf.shape(value),
                )
                for name, value in (("k", k), ("history_last", last))
            ),
        ]
        with tf.control_dependencies(ranks):
            checks = [
                _check(
                    tf.equal(tf.shape(value)[0], batch),
                    f"input `{name}` must have the batch size B of "
                    f"`history` [B, L]. Received: {name}.shape={{}}, "
                    "history.shape={}",
                    tf.shape(value),
                    tf.shape(history),
                )
                for name, value in (
                    ("exclude_item_ids", exclude),
                    ("k", k),
                    ("history_last", last),
                )
            ]
            checks.append(
                tf.debugging.Assert(
                    tf.reduce_all((k >= 1) & (k <= self.k)),
                    [
                        tf.strings.format(
                            "input `k` must be from 1 to the exported "
                            f"k={self.k}. Received: k={{}}",
                            [k],
                            summarize=-1,
                        )
                    ],
                )
            )
        with tf.control_dependencies(ranks + checks):
            return tf.identity(exclude), tf.identity(k), tf.identity(last)

    def score_candidates(
        self, history: Any, candidate_ids: Any, **features: Any
    ) -> dict:
        """Scores of given raw candidate ids for raw-id histories.

        Args:
            history: string ``[B, L]`` raw item ids, padded with ``""``.
            candidate_ids: string ``[B, M]`` raw item ids to score; ids
                not in the vocabulary (and ``""``) get ``-1e9``.
            **features: float ``[B, L]`` per feature of the model, string
                ``[B, L]`` per token feature.

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
            logits = self.model.logits(ids, states)
            scores = tf.gather(logits, wanted, batch_dims=1)
        else:
            # The wanted ids join the set CPR's cascade needs (the softmax
            # heads need none: no index runs for them with k=0).
            candidates, base = self.model.top_k_candidates(
                ids, states, 0, extra_ids=wanted
            )
            scores = self.model.score_candidates(
                ids, states, candidates, base_logits=base
            )
            scores = scores[:, tf.shape(candidates)[1] - tf.shape(wanted)[1] :]
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
        names = [*self.feature_names, *self.token_tables]
        if sorted(features) != sorted(names):
            raise ValueError(
                f"The model reads the features {names}. "
                f"Received: {sorted(features)}"
            )
        history = tf.convert_to_tensor(history, tf.string)
        values = {
            name: tf.cast(features[name], tf.float32)
            for name in self.feature_names
        }
        for name in self.token_tables:
            values[name] = tf.convert_to_tensor(features[name], tf.string)
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

    def _prepare(self, history: tf.Tensor, checked: Mapping) -> tuple:
        """``prepare_history`` of checked tensors."""
        # One "" column so that even a [B, 0] request can be gathered.
        history = tf.pad(history, [[0, 0], [0, 1]], constant_values="")
        ids = tf.cast(self.item_lookup.lookup(history), tf.int32)
        values = {
            name: tf.pad(checked[name], [[0, 0], [0, 1]])
            for name in self.feature_names
        }
        for name, table in self.token_tables.items():
            # The model reads ids as float32, as it reads float features.
            tokens = tf.pad(checked[name], [[0, 0], [0, 1]], constant_values="")
            values[name] = tf.cast(table.lookup(tokens), tf.float32)
        return self._compact(ids, values)

    def _compact(self, ids: tf.Tensor, values: Mapping) -> tuple:
        """Looked-up ``[B, L + 1]`` ids (0: unknown or padding, the last
        column padding) and their features -> ``_prepare``'s result: the
        real ids compacted to the left with their features, the last
        ``max_len`` kept. (Split from ``_prepare`` for the ONNX export,
        which looks its strings up before padding: ``OnnxScoringModule``.)
        """
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


def _keyword_function(method: Any) -> Any:
    """``method`` as a ``tf.function`` of keyword arguments: a signature's
    inputs are named after them."""
    return tf.function(lambda **kw: method(**kw))


def _token_table(vocabulary: Sequence[str]) -> tf.lookup.StaticHashTable:
    """Raw value -> id of a token feature: ``vocabulary[k]`` -> ``k + 2``,
    ``""`` -> 0 (padding, no value), any other value -> 1 (OOV)."""
    keys = ["", *vocabulary]
    ids = [0, *range(2, len(vocabulary) + 2)]
    return tf.lookup.StaticHashTable(
        tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.string), tf.constant(ids, tf.int64)
        ),
        default_value=1,
    )


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
