"""An exported SavedModel in Beam's ``RunInference``: the Beam engine's model.

``RecommendationModelHandler`` is a ``ModelHandler`` of Beam's
``RunInference`` (``apache_beam.ml.inference.base``): each worker loads
the SavedModel ``tfrec-tricks export`` writes with plain
``tf.saved_model.load`` (``SavedModelLists``) and ranks batches of users
(``UserRequest`` s, batched by ``RunInference`` as
``batch_elements_kwargs`` says) through its ``recommend_filtered`` and
``score_candidates`` signatures, with the request arrays and filters of
the local engine (``local_engine.ServedLists``): one ``UserList`` per
user. Beam's own ``TFModelHandlerTensor`` is no fit: it calls one
function on one tensor, and it needs ``tensorflow_hub``; a ``ModelHandler``
subclass is Beam's documented way for other models.

``check_saved_model`` refuses, before a pipeline runs, a folder that is
not such an export, one exported from another model than the run's (or
that does not say which: ``export.model_identity``), or one that serves
another catalogue or other features than the run's, or shorter lists than
asked for.

Needs Apache Beam: ``pip install "tfrec_tricks[beam]"``.

Example:

>>> import os, tempfile
>>> import numpy as np
>>> from tfrec_tricks.export import export_for_serving
>>> from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
>>> from tfrec_tricks.recommendation.local_engine import ListFilters
>>> model = SequentialRetrievalModel(ModelConfig(num_items=6, max_len=4))
>>> path = export_for_serving(
...     model, os.path.join(tempfile.mkdtemp(), "m"),
...     ["[PAD]", "a", "b", "c", "d", "e"], k=3, warmup=False)
>>> handler = RecommendationModelHandler(
...     path, k=3, max_len=4, filters=ListFilters(), batch_size=2)
>>> handler.batch_elements_kwargs()
{'min_batch_size': 2, 'max_batch_size': 2}
>>> request = UserRequest("ann", np.array([1, 2, 3, 4], np.int32), {})
>>> (ann,) = handler.run_inference([request], handler.load_model())
>>> ann.user_id, len(ann.item_ids)
('ann', 1)
"""

import os
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import tensorflow as tf

from tfrec_tricks.export.model_identity import (
    ModelIdentity,
    check_exported_model,
)
from tfrec_tricks.recommendation.local_engine import (
    ListFilters,
    ServedLists,
    empty_frame,
)
from tfrec_tricks.recommendation.user_histories import HistoryBatch


def missing_beam(error: ImportError) -> ImportError:
    """The error of the Beam engine without Apache Beam, naming the
    extra that installs it."""
    return ImportError(
        "The Beam engine needs Apache Beam: pip install "
        f'"tfrec_tricks[beam]". Received: {error}'
    )


try:
    from apache_beam.ml.inference.base import ModelHandler
except ImportError as error:  # pragma: no cover (the extra is installed)
    raise missing_beam(error) from error

# The signatures the Beam engine calls, and the inputs of
# ``recommend_filtered`` that are not per-interaction features.
SIGNATURES = ("recommend_filtered", "score_candidates")
FILTER_INPUTS = ("history", "exclude_item_ids", "k", "history_last")


class UserRequest(NamedTuple):
    """One user's whole history, an element of the Beam engine.

    Attributes:
        user_id: str. The raw user id.
        item_ids: int32 array. The items in time order, as the run's
            contiguous ids (0: not in the run's catalogue).
        features: dict of arrays aligned with ``item_ids``, one per
            feature the model reads: float32, or str for a token feature.
    """

    user_id: str
    item_ids: np.ndarray
    features: dict


class UserList(NamedTuple):
    """One user's list, best first (ranks 1, 2, ...).

    Attributes:
        user_id: str. The raw user id.
        item_ids: list of str. Raw item ids; may be shorter than ``k``,
            or empty.
        scores: float32 array. Their scores, the model's logits.
    """

    user_id: str
    item_ids: list
    scores: np.ndarray


class SavedModelInfo(NamedTuple):
    """What an exported SavedModel serves.

    Attributes:
        items: list of str. Its catalogue: raw item ids by contiguous id.
        feature_names: tuple of str. The per-interaction features it reads.
        k: int. The longest list it returns (the exported ``k``).
        token_names: tuple of str. The token features among them (string
            inputs).
    """

    items: list
    feature_names: tuple
    k: int
    token_names: tuple = ()


def saved_model_info(loaded: Any, path: str) -> SavedModelInfo:
    """The catalogue, features and ``k`` of a loaded export.

    Args:
        loaded: what ``tf.saved_model.load(path)`` returned.
        path: str. Its folder, for messages.

    Raises:
        ValueError: it is not a ``tfrec-tricks export`` SavedModel (a
            signature or the catalogue is missing).
    """
    names = sorted(loaded.signatures.keys())
    needed = (*SIGNATURES, "serving_default")
    missing = [name for name in needed if name not in names]
    if missing or not hasattr(loaded, "raw_item_ids"):
        raise ValueError(
            f"The SavedModel {path!r} is not a tfrec-tricks export: it has "
            f"no signature {missing or ['raw_item_ids']} (export the run "
            "with `tfrec-tricks export`). Received: signatures "
            f"{names}"
        )
    inputs = loaded.signatures["recommend_filtered"].structured_input_signature
    features = sorted(set(inputs[1]) - set(FILTER_INPUTS))
    tokens = [name for name in features if inputs[1][name].dtype == tf.string]
    outputs = loaded.signatures["serving_default"].structured_outputs
    catalogue = loaded.raw_item_ids
    if not hasattr(catalogue, "numpy"):
        # A Keras 3 export keeps it as a list of one variable
        # (export.saved_model_writer.write_export_archive).
        (catalogue,) = catalogue
    items = [raw.decode("utf-8") for raw in catalogue.numpy()]
    return SavedModelInfo(
        items,
        tuple(features),
        int(outputs["item_ids"].shape[1]),
        tuple(tokens),
    )


def load_saved_model(path: str) -> tuple[Any, SavedModelInfo]:
    """``tf.saved_model.load(path)`` and its ``saved_model_info``.

    Raises:
        ValueError: ``path`` is no SavedModel folder, or not an export.
    """
    if not tf.saved_model.contains_saved_model(path):
        if os.path.isdir(path):
            what = f"holds {sorted(os.listdir(path))[:5]}"
        else:
            what = "is a file" if os.path.exists(path) else "does not exist"
        raise ValueError(
            f"{path!r} is not a SavedModel folder: give an exported "
            "version (e.g. saved_models/NAME/1, holding saved_model.pb, "
            f"from `tfrec-tricks export`). Received: {path!r} {what}"
        )
    loaded = tf.saved_model.load(path)
    return loaded, saved_model_info(loaded, path)


def check_saved_model(
    path: str,
    items: Sequence[str],
    feature_names: Sequence[str],
    k: int,
    identity: ModelIdentity,
) -> None:
    """Refuses an export that cannot give a run's lists.

    Args:
        path: str. An exported version folder.
        items: the run's vocabulary, raw item ids by contiguous id.
        feature_names: the features the run's model reads.
        k: int. The list length asked for.
        identity: ``ModelIdentity``. The run's model
            (``ModelIdentity.of_run``): the export must be made from it.

    Raises:
        ValueError: not an export (``load_saved_model``); exported from
            another model than ``identity``, or without a record of its
            model (``model_identity.check_exported_model``, naming both);
            another catalogue (e.g. an export with ``--add-items``) or
            other features than the run's; an exported ``k`` below ``k``.
            Each names what was received.
    """
    _, info = load_saved_model(path)
    check_exported_model(path, identity)
    items = [str(item) for item in items]
    if info.items != items:
        first = next(
            (i for i, (a, b) in enumerate(zip(info.items, items)) if a != b),
            min(len(items), len(info.items)),
        )
        raise ValueError(
            f"The SavedModel {path!r} serves another catalogue than the "
            f"run's ({len(items) - 1:,} items; an export with --add-items "
            "cannot be used here): export the run itself. Received: "
            f"{len(info.items) - 1:,} items, the first difference at "
            f"contiguous id {first}"
        )
    if sorted(info.feature_names) != sorted(feature_names):
        raise ValueError(
            f"The SavedModel {path!r} reads other features than the run's "
            f"model ({sorted(feature_names)}). Received: "
            f"{sorted(info.feature_names)}"
        )
    if info.k < k:
        raise ValueError(
            f"The SavedModel {path!r} returns at most {info.k} items a "
            f"user: export the run with --k {k} or more, or ask for fewer. "
            f"Received: k={k}"
        )


class SavedModelLists(ServedLists):
    """A loaded export's signatures as ``ServedLists``.

    The catalogue and the features are the SavedModel's own
    (``saved_model_info``); ``max_len`` is the run's (a longer history
    would be cut to it by the model anyway).

    Args:
        path: str. An exported version folder.
        k: int. The longest list, at most the exported ``k``.
        max_len: int. The history length the model reads.
        history_last: bool. The model's own ``history_last``, as its
            ``serving_default`` ranks. Defaults to False.
    """

    def __init__(
        self, path: str, k: int, max_len: int, history_last: bool = False
    ) -> None:
        self.loaded, info = load_saved_model(path)
        self.path = path
        recommend = self.loaded.signatures["recommend_filtered"]
        score = self.loaded.signatures["score_candidates"]

        def recommend_filtered(history, exclude, k, last, features):
            return recommend(
                history=history,
                exclude_item_ids=exclude,
                k=k,
                history_last=last,
                **features,
            )

        def score_candidates(history, candidate_ids, features):
            return score(
                history=history, candidate_ids=candidate_ids, **features
            )

        super().__init__(
            info.items,
            k,
            max_len,
            info.feature_names,
            recommend_filtered,
            score_candidates,
            history_last=history_last,
            token_names=info.token_names,
        )


class RecommendationModelHandler(
    ModelHandler[UserRequest, UserList, SavedModelLists]
):
    """Beam's ``RunInference`` of a recommendation job's lists.

    Each worker loads the SavedModel once (``load_model``); batches of
    ``batch_size`` users (``batch_elements_kwargs``) are ranked as the
    local engine ranks them (``ServedLists.lists``).

    Args:
        saved_model: str. An exported version folder the workers read
            (``check_saved_model`` checks it for the run).
        k: int. Items per user, at most the exported ``k``.
        max_len: int. The history length the run's model reads.
        filters: ``ListFilters`` in the run's contiguous item ids (the
            SavedModel's catalogue must be the run's).
        batch_size: int. Users per ``run_inference`` call. Defaults to
            256.
        history_last: bool. The model's own ``history_last``
            (``SavedModelLists``). Defaults to False.
    """

    def __init__(
        self,
        saved_model: str,
        k: int,
        max_len: int,
        filters: ListFilters,
        batch_size: int = 256,
        history_last: bool = False,
    ) -> None:
        super().__init__(min_batch_size=batch_size, max_batch_size=batch_size)
        self.saved_model = saved_model
        self.k = k
        self.max_len = max_len
        self.filters = filters
        self.batch_size = batch_size
        self.history_last = history_last

    def load_model(self) -> SavedModelLists:
        """The SavedModel, loaded with ``tf.saved_model.load``."""
        return SavedModelLists(
            self.saved_model, self.k, self.max_len, self.history_last
        )

    def run_inference(
        self,
        batch: Sequence[UserRequest],
        model: SavedModelLists,
        inference_args: dict | None = None,
    ) -> Iterable[UserList]:
        """The lists of a batch of users, one ``UserList`` each, in order.

        Args:
            batch: ``UserRequest`` s, with every feature the model reads.
            model: the ``load_model`` result.
            inference_args: unused (Beam's interface).
        """
        histories = HistoryBatch()
        for request in batch:
            histories.append(
                request.user_id, request.item_ids, request.features
            )
        raw, scores, keep = model.lists(histories, self.filters)
        return [
            UserList(
                user,
                [str(item) for item in raw[row][keep[row]]],
                scores[row][keep[row]].astype(np.float32),
            )
            for row, user in enumerate(histories.users)
        ]

    def get_metrics_namespace(self) -> str:
        return "tfrec_tricks.recommend"


def lists_frame(lists: Sequence[UserList]) -> pd.DataFrame:
    """The rows of ``lists``, as ``LocalEngine.rank`` gives them.

    >>> frame = lists_frame([
    ...     UserList("ann", ["b", "a"], np.array([2.0, 1.0], np.float32)),
    ...     UserList("bob", [], np.zeros(0, np.float32))])
    >>> frame.values.tolist()
    [['ann', 1, 'b', 2.0], ['ann', 2, 'a', 1.0]]
    >>> frame.dtypes.astype(str).tolist()
    ['str', 'int32', 'str', 'float32']
    """
    lengths = [len(one.item_ids) for one in lists]
    if not sum(lengths):
        return empty_frame()
    users = np.asarray([one.user_id for one in lists], dtype=object)
    return pd.DataFrame(
        {
            "user_id": pd.Series(np.repeat(users, lengths), dtype=str),
            "rank": np.concatenate(
                [np.arange(1, n + 1, dtype=np.int32) for n in lengths]
            ),
            "item_id": pd.Series(
                [item for one in lists for item in one.item_ids], dtype=str
            ),
            "score": np.concatenate([one.scores for one in lists]).astype(
                np.float32
            ),
        }
    )
