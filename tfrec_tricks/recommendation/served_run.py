"""A finished run held in memory, for many recommendation calls.

A ``RecommendationJob`` needs a run's vocabulary, its users' histories
and its model wrapped in a ``LocalEngine`` (the ``ServingModule`` in
``tf.function`` s, traced on the first call). The command line's job
loads them, ranks, and ends. ``tfrec_tricks.Recommender`` keeps them
instead (``RunMemory``) and hands them to each of its jobs, so a call
after the first costs the served call, not a load and a trace
(``benchmarks/facade_latency``): the same lists, by the same code and
checks.

What is held stays the run's: ``ServedRun.current`` compares the status
(inode, size, modification time) of every file the parts were read from
(``run.json``, each file it records, the data's files) with their status
when the run was checked. A run retrained since (``fit``, ``tfrec-tricks
train --overwrite``, in this process or another), a file of it replaced,
or its data edited changes them, and ``RunMemory`` loads the run again,
through the checks of a first call (a retrained run's new model; edited
data refused as ``recommend_frame`` refuses it).
"""

import os

from tfrec_tricks.data.in_memory_dataset import Vocabulary
from tfrec_tricks.export.model_identity import ModelIdentity
from tfrec_tricks.recommendation.local_engine import LocalEngine
from tfrec_tricks.recommendation.run_data import run_histories, run_train_config
from tfrec_tricks.recommendation.user_histories import UserHistories
from tfrec_tricks.training.persistence import load_model
from tfrec_tricks.training.run_directory import RUN_FILE, check_finished_run
from tfrec_tricks.training.run_inputs import data_files

#: Engines kept, one per list length ``k`` (the ``ServingModule``'s own):
#: each holds the catalogue's lookup tables and its traced functions.
ENGINES_KEPT = 4


class ServedRun:
    """A finished run's parts, checked once and loaded when first asked.

    Args:
        run_dir: str. A finished run directory (``check_finished_run``).
        held: bool. Held between calls (a ``RunMemory``'s): it records the
            status of the files it reads (``current``) and keeps the
            user ids, their set and the item index once built. False (a
            one-shot job) builds each when asked and drops the user ids
            once checked (``drop_users``). Defaults to True.

    Attributes:
        run_dir: str.
        run: dict. Its ``run.json``, checked.
        model_identity: the ``ModelIdentity`` of its model.
        catalogue: list of str. Raw item ids by contiguous id (0 padding).

    Raises:
        RunDirectoryError: an unfinished, failed or damaged run.
    """

    def __init__(self, run_dir: str, held: bool = True) -> None:
        self.run_dir = run_dir
        self.held = held
        # run.json's status before the checks read it: a retrain between
        # the two leaves a status current() finds changed.
        run_file = _status(os.path.join(run_dir, RUN_FILE))
        self.run = check_finished_run(run_dir)
        self.model_identity = ModelIdentity.of_run(run_dir, self.run)
        self._loaded = None
        if held:
            try:
                self._config = run_train_config(run_dir, self.run)
                self._loaded = (run_file, *self._statuses()[1:])
            except (OSError, ValueError):
                # Data that cannot be listed: never current, so each call
                # checks it again and says why where a job says it.
                pass
        vocabulary = Vocabulary.load(os.path.join(run_dir, "vocabulary.json"))
        self.catalogue = [str(item) for item in vocabulary.items]
        self._user_ids: list | None = vocabulary.users
        self._known_users: set | None = None
        self._item_index: dict | None = None
        self._histories: UserHistories | None = None
        self._model = None
        self._engines: dict[int, LocalEngine] = {}

    def current(self) -> bool:
        """Whether every file a held run was read from is as it was then
        (by status, not content: a few ``os.stat`` calls)."""
        if self._loaded is None:
            return False
        try:
            return self._statuses() == self._loaded
        except (OSError, ValueError):
            return False

    def _statuses(self) -> tuple:
        """The status of ``run.json``, of every file it records and of
        the data's files (listed again: a shard added to a glob counts)."""
        recorded = sorted(self.run.get("files") or {})
        paths = [
            os.path.join(self.run_dir, RUN_FILE),
            *(os.path.join(self.run_dir, name) for name in recorded),
            *data_files(self._config),
        ]
        return tuple(_status(path) for path in paths)

    @property
    def num_users(self) -> int:
        """The run's users (its vocabulary's), until they are dropped."""
        return len(self._user_ids)

    def known_users(self) -> set:
        """The run's user ids as a set of str."""
        known = self._known_users
        if known is None:
            known = set(map(str, self._user_ids))
            if self.held:
                self._known_users = known
        return known

    def drop_users(self) -> None:
        """Frees the user ids of a one-shot run: its job holds neither
        them nor their set while the histories load (60 and 47 bytes a
        user at the peak, ``benchmarks/recommend_throughput``)."""
        if not self.held:
            self._user_ids = None

    def item_index(self) -> dict:
        """Raw item id -> contiguous id of the catalogue's real items."""
        index = self._item_index
        if index is None:
            index = {raw: i for i, raw in enumerate(self.catalogue) if i}
            if self.held:
                self._item_index = index
        return index

    def histories(self) -> UserHistories:
        """Every user of the run's data with their whole history
        (``run_data.run_histories``), loaded on the first call.

        Raises:
            DataError: the data cannot be read, or changed since the run
                trained on it.
        """
        if self._histories is None:
            self._histories = run_histories(
                self.run_dir, self.run, self.catalogue
            )
        return self._histories

    def engine(self, k: int) -> LocalEngine:
        """The ``LocalEngine`` of lists of ``k``: the model is loaded on
        the first call, an engine built (and traced on its first batch)
        once per ``k``; the last ``ENGINES_KEPT`` are kept."""
        engine = self._engines.pop(k, None)
        if engine is None:
            if self._model is None:
                self._model = load_model(self.run_dir)
            engine = LocalEngine(self._model, self.catalogue, k)
        self._engines[k] = engine
        while len(self._engines) > ENGINES_KEPT:
            del self._engines[next(iter(self._engines))]
        return engine


class RunMemory:
    """Holds the ``ServedRun`` of one run directory between calls.

    ``get`` gives the one held while it is current (``ServedRun.current``)
    and of the same folder; otherwise it drops it and checks and loads the
    run again.

    Example:

    >>> memory = RunMemory()
    >>> memory.get("/no/such/run")
    Traceback (most recent call last):
    ...
    tfrec_tricks.errors.RunDirectoryError: No run directory at '/no/such/run'.
    """

    def __init__(self) -> None:
        self._held: ServedRun | None = None

    def get(self, run_dir: str) -> ServedRun:
        """The run of ``run_dir``, held or loaded again.

        Raises:
            RunDirectoryError: an unfinished, failed or damaged run.
        """
        held = self._held
        if held is None or held.run_dir != run_dir or not held.current():
            # Dropped first: the old model is freed before the new loads.
            self._held = None
            self._held = ServedRun(run_dir)
        return self._held

    def clear(self) -> None:
        """Drops what is held (``Recommender.fit`` retrains the run)."""
        self._held = None


def _status(path: str) -> tuple:
    """``(path, inode, size, modification time in ns)``; ``(path,)`` for a
    missing file. A file replaced (written atomically: a new inode) or
    written in place changes it."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return (path,)
    return (path, status.st_ino, status.st_size, status.st_mtime_ns)
