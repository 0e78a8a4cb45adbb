"""An offline recommendation job: top-k lists for many users of a run.

``RecommendationJob`` is what ``tfrec-tricks recommend`` and
``recommend_frame`` share: it checks everything first (the run, ``k``,
the id lists, the users), loads the users' whole histories and the model,
then streams the lists as ``pandas.DataFrame`` s, a batch of users at a
time. The command line writes each batch to its file
(``writers.staged_output``); ``recommend_frame`` concatenates them.
"""

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from tfrec_tricks.export.serving_module import check_k
from tfrec_tricks.layers.common import is_integer
from tfrec_tricks.recommendation.history_frames import (
    frame_sequences,
    missing_columns_hint,
)
from tfrec_tricks.recommendation.id_lists import check_known
from tfrec_tricks.recommendation.local_engine import (
    ListFilters,
    empty_frame,
)
from tfrec_tricks.recommendation.new_item_boost import check_boost
from tfrec_tricks.recommendation.served_run import RunMemory, ServedRun
from tfrec_tricks.recommendation.user_histories import SequenceHistories


def _positive_int(name: str, value: Any) -> int:
    """``value`` if it is a positive int, else ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(
            f"`{name}` must be a positive int. Received: {name}={value!r}"
        )
    if value < 1:
        raise ValueError(
            f"`{name}` must be a positive int. Received: {name}={value}"
        )
    return int(value)


@dataclasses.dataclass(frozen=True)
class RecommendationOptions:
    """What a ``RecommendationJob`` ranks, and for whom.

    Attributes:
        k: int. Items per user, at most the catalogue. Defaults to 10.
        users: raw user ids to rank for, or None for every user of the
            histories. Defaults to None.
        histories: ``pandas.DataFrame`` of new users' interactions
            (``history_frames.frame_sequences``), ranked instead of the
            run's data; None ranks the run's users with their whole
            history in its data. Defaults to None.
        items: raw item ids: the only items recommended (allow-list), or
            None for all. Defaults to None.
        exclude_items: raw item ids never recommended (deny-list), or
            None. Defaults to None.
        keep_seen: bool. Let a user's own history's items be recommended.
            Defaults to False.
        batch_size: int. Users ranked per batch. Defaults to 256.
        new_item_slots: int in ``0..k``. The last places of each list
            reserved for the best new items: the run's items the model
            never trained on, ranked by their attributes (a model with
            item features). Defaults to 0.
        new_item_boost: float >= 0. How many standard deviations of each
            user's scores raise the new items' scores, so that new items
            enter a list where they come close to the trained ones
            (``new_item_boost``; a model with item features). Defaults
            to 0.
        histories_name: str. What ``histories`` is, for messages.
            Defaults to "histories".
    """

    k: int = 10
    users: Sequence[str] | None = None
    histories: pd.DataFrame | None = None
    items: Sequence[str] | None = None
    exclude_items: Sequence[str] | None = None
    keep_seen: bool = False
    batch_size: int = 256
    new_item_slots: int = 0
    new_item_boost: float = 0.0
    histories_name: str = "histories"


class RecommendationJob:
    """Top-k lists of a finished run for many users, checked and loaded.

    Everything is checked before the data or the model is loaded, and
    nothing is written: a finished run (``check_finished_run``), ``k``
    within the catalogue, every listed item and user known. Then the
    users' histories are loaded (the run's data, or ``histories``) and
    the model (``load_model``), wrapped in the ``ServingModule`` a TF
    Serving export holds (``LocalEngine``).

    Args:
        run_dir: str. A finished run directory.
        options: a ``RecommendationOptions``.

    Attributes:
        num_users: int. The users the job ranks.
        histories: the ``UserHistories`` ranked.
        engine: the ``LocalEngine``.
        model_identity: the ``ModelIdentity`` of the run's model, which
            an export the job ranks with must hold
            (``beam_model_handler.check_saved_model``).

    Raises:
        ValueError: (``DataError``, ``RunDirectoryError``) naming what
            is wrong, before anything is written.
    """

    def __init__(
        self,
        run_dir: str,
        options: RecommendationOptions,
        memory: RunMemory | None = None,
    ) -> None:
        self.k = _positive_int("k", options.k)
        self.batch_size = _positive_int("batch_size", options.batch_size)
        # The run a RunMemory holds (the facade's: loaded once, checked
        # current), or one for this job alone.
        if memory is None:
            served = ServedRun(run_dir, held=False)
        else:
            served = memory.get(run_dir)
        self.model_identity = served.model_identity
        catalogue = served.catalogue
        check_k(self.k, len(catalogue))
        slots = _slots(options.new_item_slots, self.k)
        boost = check_boost(options.new_item_boost)
        index = served.item_index()
        among = f"the run's catalogue ({len(catalogue) - 1:,} items)"
        items = options.items
        self.filters = ListFilters(
            keep_seen=bool(options.keep_seen),
            denied=self._item_ids(
                options.exclude_items, index, "exclude_items", among
            ),
            allowed=None
            if items is None
            else self._item_ids(items, index, "items", among),
        )
        name = options.histories_name
        if options.histories is None:
            self.users = None
            if options.users is not None:
                self.users = self._known_users(
                    options.users,
                    served.known_users(),
                    f"the run's data ({served.num_users:,} users after its "
                    "filters)",
                )
            # The users' ids are needed only to check --users: a job of
            # its own keeps neither them nor a set of them while the
            # histories load.
            served.drop_users()
            self.histories = served.histories()
            self.engine = served.engine(self.k)
            hint = ""
        else:
            # First: the model says which columns it reads, and which of
            # them are token features; the others are left unread.
            self.engine = served.engine(self.k)
            sequences = frame_sequences(
                options.histories,
                name,
                self.engine.token_names,
                self.engine.feature_names,
            )
            self.histories = SequenceHistories(sequences, catalogue, name)
            self.users = self._known_users(
                options.users,
                set(self.histories.user_names),
                f"{name} ({len(sequences.user_names):,} users)",
            )
            hint = missing_columns_hint(
                options.histories,
                self.engine.feature_names,
                self.histories.feature_names,
                self.engine.token_names,
            )
        self.histories.check_features(self.engine.feature_names, hint)
        self.filters.new_item_slots = slots
        self.filters.new_item_boost = boost
        if self.filters.promotes_new_items:
            asked = (
                f"new_item_slots={slots}"
                if slots
                else f"new_item_boost={boost:g}"
            )
            self.filters.new_items = self.engine.new_items(asked)

    @staticmethod
    def _item_ids(
        ids: Sequence[str] | None, index: dict, name: str, among: str
    ) -> np.ndarray:
        """Known item ids as contiguous ids (``check_known``)."""
        known = check_known(ids or [], index, name, "item", among)
        return np.asarray([index[raw] for raw in known], np.int64)

    @staticmethod
    def _known_users(
        users: Sequence[str] | None, known: set, among: str
    ) -> list[str] | None:
        if users is None:
            return None
        return check_known(users, known, "users", "user", among)

    @property
    def num_users(self) -> int:
        if self.users is None:
            return len(self.histories.user_names)
        return len(self.users)

    def describe(self) -> str:
        """The job's list length and filters in words
        (``ListFilters.describe``)."""
        return self.filters.describe(self.k)

    def batches(
        self, progress: Callable[[int], Any] | None = None
    ) -> Iterator[pd.DataFrame]:
        """The lists, a ``pandas.DataFrame`` per batch of users.

        Args:
            progress: called with the number of users of each batch once
                it is ranked (e.g. a progress bar's ``update``), or None.

        Yields:
            ``pandas.DataFrame`` with columns ``user_id``, ``rank``,
            ``item_id``, ``score`` (see ``LocalEngine.rank``).
        """
        for batch in self.histories.batches(
            self.batch_size, self.users, self.engine.feature_names
        ):
            frame = self.engine.rank(batch, self.filters)
            if progress is not None:
                progress(len(batch))
            yield frame

    def frame(self) -> pd.DataFrame:
        """Every list, as one table: the batches concatenated."""
        frames = list(self.batches())
        return pd.concat(frames, ignore_index=True) if frames else empty_frame()


def _slots(slots: Any, k: int) -> int:
    """``new_item_slots``, an int in ``0..k``."""
    if not is_integer(slots) or not 0 <= slots <= k:
        raise ValueError(
            f"`new_item_slots` must be an int in 0..k={k}: the last places "
            f"of each list kept for new items. Received: "
            f"new_item_slots={slots!r}"
        )
    return int(slots)


def recommend_frame(
    run_dir: str,
    *,
    k: int = 10,
    users: Sequence[str] | None = None,
    histories: pd.DataFrame | None = None,
    items: Sequence[str] | None = None,
    exclude_items: Sequence[str] | None = None,
    keep_seen: bool = False,
    batch_size: int = 256,
    new_item_slots: int = 0,
    new_item_boost: float = 0.0,
) -> pd.DataFrame:
    """Top-k recommendations of a finished run, as one table.

    What ``tfrec-tricks recommend`` writes, in memory: a row per (user,
    rank), raw ids. Each user is ranked with their whole known history
    (the run's data: training, validation and test interactions, after
    the run's filters; or ``histories``), by the served model's code
    (``ServingModule``: the same lists an export of the run serves).

    Args:
        run_dir: str. A finished run directory (``tfrec-tricks train``).
        k: int. Items per user, at most the catalogue. Defaults to 10.
        users: raw user ids, or None for every user. Defaults to None.
        histories: ``pandas.DataFrame`` with columns ``user_id``,
            ``item_id`` and optionally ``timestamp`` and per-interaction
            features (numeric; a token feature of the model, its raw
            values): new users' histories, ranked instead of the run's
            data. Defaults to None.
        items: raw item ids, the only ones recommended, or None.
            Defaults to None.
        exclude_items: raw item ids never recommended, or None. Defaults
            to None.
        keep_seen: bool. Let a user's own items be recommended (else they
            never are). Defaults to False.
        batch_size: int. Users ranked at a time. Defaults to 256.
        new_item_slots: int in ``0..k``. The last places of each list
            kept for the best items the model never trained on (ranked
            by their attributes; a model with item features), so new
            items reach the lists. Defaults to 0.
        new_item_boost: float >= 0. Raise every new item's score by this
            many standard deviations of the user's scores, so that new
            items enter a list where they come close to the trained ones
            (``docs/side-information.md`` has the measured trade-off; a
            model with item features). Defaults to 0.

    Returns:
        ``pandas.DataFrame`` with columns ``user_id`` (str), ``rank``
        (int32, from 1), ``item_id`` (str) and ``score`` (float32, the
        model's logit, a new item's raised by ``new_item_boost``): at
        most ``k`` rows a user, fewer when fewer items are eligible;
        users in the order of the data.

    Raises:
        ValueError: an unfinished or failed run, ``k`` out of range, an
            unknown user or item (named), or histories that cannot be
            used.

    Example:

    >>> import tempfile
    >>> from tfrec_tricks.training.train_config import TrainConfig
    >>> from tfrec_tricks.training.run_training import train
    >>> run = train(TrainConfig(
    ...     synthetic_users=30, synthetic_items=40, max_len=5, epochs=1,
    ...     output_dir=tempfile.mkdtemp(), model={"embedding_dim": 4},
    ... ), verbose=0).run_dir
    >>> lists = recommend_frame(run, k=3, users=["u1", "u2"])
    >>> lists.columns.tolist(), lists["rank"].tolist()
    (['user_id', 'rank', 'item_id', 'score'], [1, 2, 3, 1, 2, 3])
    """
    # The fields in the order of this signature (tests/recommendation/
    # test_job.py holds them to it).
    options = RecommendationOptions(
        k,
        users,
        histories,
        items,
        exclude_items,
        keep_seen,
        batch_size,
        new_item_slots,
        new_item_boost,
    )
    return RecommendationJob(run_dir, options).frame()
