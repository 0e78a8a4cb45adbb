"""Top-k lists of raw ids, scored in-process by the served model's code.

There is one scoring path: the ``ServingModule`` a TF Serving export
holds, built here around the run's model and vocabulary and called
inside ``tf.function`` s with fixed input signatures (each traced once:
``LocalEngine``), or its exported SavedModel's signatures (the Beam
engine, ``beam_model_handler``); ``ServedLists`` builds the requests and
filters the answers for both. A user's list is what the exported
SavedModel answers for the same request:

- without an allow-list, ``ServingModule.recommend_filtered`` with the
  user's last ``max_len`` known items as the history, the excluded items
  (the user's whole history unless seen items are kept, and the
  deny-list) as ``exclude_item_ids`` and ``history_last`` as the model
  serves (on for ``--head softmax_no_dup``, which matters with
  ``--keep-seen`` only). It ranks
  the excluded items after every other item, scored ``-1e9``; those that
  still reach the list (a user with fewer eligible items than ``k``) are
  dropped, so a list may be shorter than ``k``, never holds an excluded
  item, and the ranks of the rest stay 1, 2, ...;
- with an allow-list, ``ServingModule.score_candidates`` of the allowed
  items (a chunk of ``CANDIDATE_CHUNK`` at a time), the excluded ones
  dropped, the rest ranked by score, ties to the lower contiguous item id
  (the model's rule), the first ``k`` kept.
"""

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import tensorflow as tf

from tfrec_tricks.export.serving_module import ServingModule
from tfrec_tricks.recommendation.new_item_boost import (
    row_spread,
    spread_sample,
    with_new_item_boost,
)
from tfrec_tricks.recommendation.new_item_slots import with_new_item_slots
from tfrec_tricks.recommendation.user_histories import HistoryBatch

# The columns of a recommendations table, in order.
COLUMNS = ("user_id", "rank", "item_id", "score")
# Scores at or below this are items the module ranked last (-1e9): only
# they can be excluded items, checked one by one.
RANKED_LAST = -5e8
# Allowed items scored per call: a request of [batch, CANDIDATE_CHUNK].
CANDIDATE_CHUNK = 4096


def empty_frame() -> pd.DataFrame:
    """A recommendations table without rows, of the columns' dtypes.

    >>> empty_frame().dtypes.astype(str).tolist()
    ['str', 'int32', 'str', 'float32']
    """
    return pd.DataFrame(
        {
            "user_id": pd.Series([], dtype=str),
            "rank": pd.Series([], dtype=np.int32),
            "item_id": pd.Series([], dtype=str),
            "score": pd.Series([], dtype=np.float32),
        }
    )


@dataclasses.dataclass
class ListFilters:
    """What may appear in a list, in the run's contiguous item ids.

    Attributes:
        keep_seen: bool. Let a user's own history's items appear.
        denied: int array. Items that never appear (the deny-list).
        allowed: int array, or None for every item. The only items that
            may appear (the allow-list), in the order given.
        new_items: int array: the items the model never trained on (no
            interaction in the run's training data: ranked by their
            attributes), the candidates of the reserved places.
        new_item_slots: int. The last places of each list reserved for
            the best new items (``new_item_slots.with_new_item_slots``);
            0 for none.
        new_item_boost: float. How many standard deviations of each
            user's scores raise the new items' scores
            (``new_item_boost.with_new_item_boost``); 0 for none.
    """

    keep_seen: bool = False
    denied: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int32)
    )
    allowed: np.ndarray | None = None
    new_items: np.ndarray = dataclasses.field(
        default_factory=lambda: np.zeros(0, np.int64)
    )
    new_item_slots: int = 0
    new_item_boost: float = 0.0

    @property
    def promotes_new_items(self) -> bool:
        """Whether new items are boosted or given places."""
        return bool(self.new_item_slots or self.new_item_boost)

    def eligible_new_items(self) -> np.ndarray:
        """The new items that may appear: all, or those allowed.

        >>> ListFilters(new_items=np.array([5, 7]), allowed=np.array([7, 1])
        ...             ).eligible_new_items()
        array([7])
        """
        new = np.asarray(self.new_items, np.int64)
        if self.allowed is None:
            return new
        return new[np.isin(new, self.allowed)]

    def excluded(self, history: np.ndarray) -> np.ndarray:
        """The sorted distinct items a user with ``history`` never gets.

        >>> ListFilters(denied=np.array([9])).excluded(np.array([4, 0, 4]))
        array([4, 9])
        """
        parts = [np.asarray(self.denied, np.int64)]
        if not self.keep_seen:
            parts.append(np.asarray(history, np.int64))
        ids = np.unique(np.concatenate(parts))
        return ids[ids > 0]

    def describe(self, k: int) -> str:
        """Lists of ``k`` with these filters, in words.

        >>> ListFilters(denied=np.array([3, 8])).describe(5)
        'top 5, seen items excluded, 2 items denied'
        >>> ListFilters(keep_seen=True, allowed=np.array([1])).describe(2)
        'top 2, among 1 allowed items'
        """
        parts = [f"top {k}"]
        if not self.keep_seen:
            parts.append("seen items excluded")
        if self.allowed is not None:
            parts.append(f"among {len(self.allowed):,} allowed items")
        if self.new_item_boost:
            parts.append(
                f"new items raised by {self.new_item_boost:g} standard "
                "deviations"
            )
        if self.new_item_slots:
            parts.append(
                f"the last {self.new_item_slots} for the best of "
                f"{len(self.eligible_new_items()):,} new items"
            )
        if len(self.denied):
            parts.append(f"{len(self.denied):,} items denied")
        return ", ".join(parts)


class ServedLists:
    """Filtered top-k lists from the two calls of the served signatures.

    What ``LocalEngine`` and the Beam engine
    (``beam_model_handler.SavedModelLists``) share: a batch's request
    arrays (``request``), the call of ``recommend_filtered`` or
    ``score_candidates``, and the filters applied to what they answer
    (the module docstring). A subclass gives the two calls: the
    ``ServingModule`` in ``tf.function`` s, or a loaded SavedModel's
    signatures.

    Args:
        items: raw item ids by contiguous id (index 0 the padding).
        k: int. The longest list, at most the catalogue's real items.
        max_len: int. The history length the model reads.
        feature_names: the per-interaction features the model reads, float
            and categorical.
        recommend: called as ``recommend(history, exclude_item_ids, k,
            history_last, features)`` with tensors (``features`` a dict
            of them); returns ``recommend_filtered``'s dict.
        score: called as ``score(history, candidate_ids, features)``;
            returns ``score_candidates``' dict.
        history_last: bool. The ``history_last`` of every request: the
            served model's own (``head.excludes_history``). Defaults to
            False.
        token_names: the categorical ones of ``feature_names`` (token
            features, ``ModelConfig.token_features``): sent as raw string
            values, ``""`` at padding. Defaults to none.

    Example:

    >>> import numpy as np
    >>> import tensorflow as tf
    >>> from tfrec_tricks.recommendation.user_histories import HistoryBatch
    >>> def recommend(history, exclude, k, last, features):
    ...     return {"item_ids": tf.constant([["b", "a"]]),
    ...             "scores": tf.constant([[2.0, 1.0]])}
    >>> lists = ServedLists(["[PAD]", "a", "b"], 2, 4, (), recommend, None)
    >>> batch = HistoryBatch(["ann"], [np.array([1], np.int32)])
    >>> lists.rank(batch, ListFilters(keep_seen=True))["item_id"].tolist()
    ['b', 'a']
    """

    def __init__(
        self,
        items: Sequence[str],
        k: int,
        max_len: int,
        feature_names: Sequence[str],
        recommend: Callable[..., dict],
        score: Callable[..., dict],
        history_last: bool = False,
        token_names: Sequence[str] = (),
    ) -> None:
        self.k = k
        self.items = np.asarray(list(items), dtype=object)
        self.index = {raw: i for i, raw in enumerate(items) if i}
        self.max_len = max_len
        self.feature_names = tuple(feature_names)
        self._recommend = recommend
        self._score = score
        self.history_last = bool(history_last)
        self.token_names = tuple(token_names)

    def rank(self, batch: HistoryBatch, filters: ListFilters) -> pd.DataFrame:
        """The lists of a batch of users.

        Args:
            batch: a ``HistoryBatch`` with the model's features.
            filters: a ``ListFilters``.

        Returns:
            ``pandas.DataFrame`` of ``COLUMNS``: a row per (user, rank),
            users in batch order, ranks from 1; at most ``k`` rows a
            user (fewer when fewer items are eligible).
        """
        raw, scores, keep = self.lists(batch, filters)
        rows, columns = np.nonzero(keep)
        ranks = np.cumsum(keep, axis=1)
        return pd.DataFrame(
            {
                "user_id": pd.Series(
                    np.asarray(batch.users, dtype=object)[rows], dtype=str
                ),
                "rank": ranks[rows, columns].astype(np.int32),
                "item_id": pd.Series(raw[rows, columns], dtype=str),
                "score": scores[rows, columns].astype(np.float32),
            }
        )

    def lists(self, batch: HistoryBatch, filters: ListFilters) -> tuple:
        """The lists of a batch of users, as arrays.

        Returns:
            ``(item_ids, scores, keep)``, each ``[B, W]``: raw ids (str),
            float32 scores, and whether each place is in the list. A
            row's kept places are its list, best first, the places
            reserved for new items last (``rank``'s rows).
        """
        history, features = self.request(batch)
        excluded = [filters.excluded(ids) for ids in batch.item_ids]
        if filters.allowed is None:
            ranked = self._top_k(history, features, excluded)
        else:
            ranked = self._top_allowed(
                history, features, excluded, filters.allowed
            )
        if not filters.promotes_new_items:
            return ranked
        best_new = self._top_allowed(
            history, features, excluded, filters.eligible_new_items()
        )
        if filters.new_item_boost:
            spread = self.spread(history, features, excluded)
            raise_by = filters.new_item_boost * spread
            ranked = with_new_item_boost(ranked, best_new, raise_by, self.k)
            ids, scores, keep = best_new
            best_new = (ids, scores + raise_by[:, None], keep)
        if not filters.new_item_slots:
            return ranked
        return with_new_item_slots(
            ranked, best_new, self.k, filters.new_item_slots
        )

    def spread(self, history, features, excluded) -> np.ndarray:
        """Each user's spread: the standard deviation of their scores over
        ``spread_sample``'s items, their excluded items left out
        (``new_item_boost``). One ``score_candidates`` call.

        Returns:
            float64 ``[B]``.
        """
        sample = spread_sample(len(self.items))
        candidates = np.broadcast_to(
            self.items[sample].astype(str), (len(history), len(sample))
        )
        scores = self._score(
            tf.constant(history.astype(str), tf.string),
            tf.constant(candidates),
            _feature_tensors(features),
        )["scores"].numpy()
        keep = np.stack([~np.isin(sample, ids) for ids in excluded])
        # Items a head ranks last for the user (scored -1e9) are no score.
        keep &= scores > RANKED_LAST
        return row_spread(scores, keep)

    def request(self, batch: HistoryBatch) -> tuple[np.ndarray, dict]:
        """The module's inputs: each user's last ``max_len`` known items.

        Items the run's catalogue does not hold are left out first (as
        the module would), so a history keeps ``max_len`` known items.

        Returns:
            ``(history, features)``: raw ids ``[B, L]`` padded with ``""``,
            float32 ``[B, L]`` per float feature (0 at padding) and str
            ``[B, L]`` per token feature (``""`` at padding).
        """
        kept = [
            np.flatnonzero(ids > 0)[-self.max_len :] for ids in batch.item_ids
        ]
        width = max((len(rows) for rows in kept), default=0)
        history = np.full((len(batch), width), "", dtype=object)
        features = {
            name: np.full((len(batch), width), "", dtype=object)
            if name in self.token_names
            else np.zeros((len(batch), width), np.float32)
            for name in self.feature_names
        }
        for row, rows in enumerate(kept):
            history[row, : len(rows)] = self.items[batch.item_ids[row][rows]]
            for name in self.feature_names:
                values = batch.features[name][row]
                features[name][row, : len(rows)] = values[rows]
        return history, features

    def _top_k(self, history, features, excluded):
        """``recommend_filtered``'s lists; the excluded items dropped."""
        exclude = _padded([self.items[ids] for ids in excluded])
        rows = len(history)
        out = self._recommend(
            tf.constant(history.astype(str), tf.string),
            tf.constant(exclude, tf.string),
            tf.fill([rows], self.k),
            tf.fill([rows], self.history_last),
            _feature_tensors(features),
        )
        raw = _decoded(out["item_ids"].numpy())
        scores = out["scores"].numpy()
        keep = raw != ""
        for row, column in zip(*np.nonzero(keep & (scores <= RANKED_LAST))):
            item = self.index.get(raw[row, column], 0)
            if np.isin(item, excluded[row]):
                keep[row, column] = False
        return raw, scores, keep

    def _top_allowed(self, history, features, excluded, allowed):
        """The allowed items' scores, ranked; the excluded items dropped."""
        rows = len(history)
        best_ids = np.zeros((rows, 0), np.int64)
        best = np.zeros((rows, 0), np.float32)
        inputs = (
            tf.constant(history.astype(str), tf.string),
            _feature_tensors(features),
        )
        allowed = np.asarray(allowed, np.int64)
        for start in range(0, len(allowed), CANDIDATE_CHUNK):
            chunk = allowed[start : start + CANDIDATE_CHUNK]
            candidates = np.broadcast_to(
                self.items[chunk].astype(str), (rows, len(chunk))
            )
            scores = self._score(inputs[0], tf.constant(candidates), inputs[1])
            scores = scores["scores"].numpy().astype(np.float32)
            for row in range(rows):
                scores[row, np.isin(chunk, excluded[row])] = -np.inf
            chunk_ids = np.broadcast_to(chunk, scores.shape)
            best_ids, best = _best(
                np.concatenate([best_ids, chunk_ids], 1),
                np.concatenate([best, scores], 1),
                self.k,
            )
        return self.items[best_ids].astype(str), best, np.isfinite(best)


class LocalEngine(ServedLists):
    """Ranks batches of users with a ``ServingModule`` in this process.

    Args:
        model: a trained ``SequentialRetrievalModel``
            (``tfrec_tricks.training.persistence.load_model``).
        items: the run's vocabulary: raw item ids by contiguous id.
        k: int. The longest list, at most the catalogue's real items.

    Example:

    >>> import numpy as np
    >>> from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
    >>> from tfrec_tricks.recommendation.user_histories import HistoryBatch
    >>> model = SequentialRetrievalModel(ModelConfig(num_items=6, max_len=4))
    >>> engine = LocalEngine(model, ["[PAD]", "a", "b", "c", "d", "e"], k=3)
    >>> batch = HistoryBatch(["ann"], [np.array([1, 2, 3, 4], np.int32)])
    >>> engine.rank(batch, ListFilters())[["user_id", "rank"]].values.tolist()
    [['ann', 1]]
    """

    def __init__(self, model: Any, items: Sequence[str], k: int) -> None:
        self.model = model
        self.module = ServingModule(model, list(items), k=k)
        token_names = tuple(self.module.token_tables)
        feature_names = (*self.module.feature_names, *token_names)
        ids = tf.TensorSpec([None, None], tf.string)
        features = {
            name: tf.TensorSpec(
                [None, None], tf.string if name in token_names else tf.float32
            )
            for name in feature_names
        }
        recommend = tf.function(
            self._recommend_filtered,
            input_signature=[
                ids,
                ids,
                tf.TensorSpec([None], tf.int32),
                tf.TensorSpec([None], tf.bool),
                features,
            ],
        )
        score = tf.function(
            self._score_candidates, input_signature=[ids, ids, features]
        )
        super().__init__(
            items,
            k,
            self.module.max_len,
            feature_names,
            recommend,
            score,
            # As served: a softmax_no_dup model ranks the history last
            # (what --keep-seen lets in), as score_candidates does.
            history_last=model.ranks_history_last,
            token_names=token_names,
        )

    def new_items(self, asked: str = "new_item_slots") -> np.ndarray:
        """The items the model never trained on, as contiguous ids: no
        interaction in the run's training data, ranked by their
        attributes (``ItemFeatureEncoder.id_known`` 0).

        Args:
            asked: str. The option that needs them, for the message.

        Raises:
            ValueError: a model without item features, which ranks a
                never-trained item by an id row no data has moved.
        """
        encoder = self.model.item_features
        if encoder is None:
            raise ValueError(
                f"`{asked.split('=')[0]}` needs a model with item features "
                "(train --item-features): without them a new item has no "
                f"attribute to be ranked by. Received: {asked} for a model "
                "of item ids only"
            )
        known = np.asarray(encoder.id_known.numpy())
        new = np.flatnonzero(known == 0)
        return new[new > 0].astype(np.int64)

    def _recommend_filtered(self, history, exclude, k, last, features):
        return self.module.recommend_filtered(
            history, exclude, k, last, **features
        )

    def _score_candidates(self, history, candidate_ids, features):
        return self.module.score_candidates(history, candidate_ids, **features)


def _best(ids: np.ndarray, scores: np.ndarray, k: int) -> tuple:
    """Each row's top-``k`` by score, ties to the lower id.

    >>> _best(np.array([[3, 1, 2]]), np.array([[0.5, 0.5, 0.9]]), 2)
    (array([[2, 1]]), array([[0.9, 0.5]]))
    """
    order = np.lexsort((ids, -scores))[:, :k]
    return (
        np.take_along_axis(ids, order, 1),
        np.take_along_axis(scores, order, 1),
    )


def _padded(rows: list[np.ndarray]) -> np.ndarray:
    """Rows of raw ids as one str ``[B, E]`` array padded with ``""``.

    >>> _padded([np.array(["a"]), np.array([], object)]).tolist()
    [['a'], ['']]
    """
    width = max((len(row) for row in rows), default=0)
    table = np.full((len(rows), width), "", dtype=object)
    for index, row in enumerate(rows):
        table[index, : len(row)] = row
    return table.astype(str)


def _feature_tensors(features: dict[str, np.ndarray]) -> dict:
    """The request's feature arrays as tensors: str ones (token features,
    an object array) as ``tf.string``, float ones as they are.

    >>> tensors = _feature_tensors({"device": np.array([["web", ""]], object),
    ...                             "rating": np.ones((1, 2), np.float32)})
    >>> tensors["device"].dtype.name, tensors["rating"].dtype.name
    ('string', 'float32')
    """
    return {
        name: tf.constant(values.astype(str), tf.string)
        if values.dtype == object
        else tf.constant(values)
        for name, values in features.items()
    }


def _decoded(values: np.ndarray) -> np.ndarray:
    """A TensorFlow string array (bytes) as an object array of str."""
    flat = [value.decode("utf-8") for value in values.reshape(-1)]
    return np.asarray(flat, dtype=object).reshape(values.shape)
