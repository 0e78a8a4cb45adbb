"""``Recommender``: train, evaluate, recommend, save and export in a few calls.

A facade over the run machinery of the ``tfrec-tricks`` command line. It
takes ``tfrec-tricks train``'s options by their names; ``fit`` trains one
run into a run directory (``tfrec_tricks.training.run_training.train``),
``recommend`` ranks items from it as ``tfrec-tricks recommend`` does
(``tfrec_tricks.recommendation.recommend_frame``, from memory after the
first call), ``save`` copies it
where ``Recommender.load`` and the command line read it, and ``export``
writes the SavedModel ``tfrec-tricks export`` writes.

A DataFrame given to ``fit`` is written as a RecBole atomic file beside
the run directory, ``interactions-<hash>.inter`` (named by its content),
because the run records the path of its data: recommending for a user by
id reads the user's history from it. ``save`` takes that file along.
"""

import dataclasses
import difflib
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tfrec_tricks.keras_version import require_model_keras

# tf-keras unless the environment chose Keras 3 (TF_USE_LEGACY_KERAS=0, or
# tf.keras resolved to it already); a run is read only under its own.
require_model_keras("tfrec_tricks.Recommender")

from tfrec_tricks.atomic_files import (  # noqa: E402
    file_sha256,
    publish_directory,
    write_text_atomic,
)
from tfrec_tricks.data.sources.named_sources import SOURCES, resolved_path  # noqa: E402
from tfrec_tricks.errors import OutputError, writes_named  # noqa: E402
from tfrec_tricks.export import export_for_serving  # noqa: E402
from tfrec_tricks.export.model_identity import ModelIdentity  # noqa: E402
from tfrec_tricks.export.models_config import (  # noqa: E402
    check_model_name,
    check_version,
)
from tfrec_tricks.models.config import AUTO_HEAD, ModelConfig  # noqa: E402
from tfrec_tricks.output_folders import check_target, target_lock  # noqa: E402
from tfrec_tricks.recommendation import (  # noqa: E402
    RecommendationJob,
    RecommendationOptions,
)
from tfrec_tricks.recommendation.served_run import RunMemory  # noqa: E402
from tfrec_tricks.training.model_options import (  # noqa: E402
    DERIVED_MODEL_FIELDS,
)
from tfrec_tricks.training.persistence import load_model  # noqa: E402
from tfrec_tricks.training.recipes import recipe_options  # noqa: E402
from tfrec_tricks.training.run_directory import (  # noqa: E402
    RUN_DIRECTORY,
    RUN_FILE,
    check_finished_run,
    finish_run,
    read_run_file,
)
from tfrec_tricks.training.run_keras import check_run_keras  # noqa: E402
from tfrec_tricks.training.run_training import train  # noqa: E402
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402

#: The option naming a recipe, as ``tfrec-tricks train --recipe``.
RECIPE_OPTION = "recipe"
# TrainConfig fields no option sets: fit's data gives the first, the model
# options fill the second.
_NOT_OPTIONS = ("data", "model")
# The file fit writes a DataFrame to, beside the run directory.
_FRAME_FILE = re.compile(r"interactions-[0-9a-f]{12}\.inter")
# The columns of a DataFrame of interactions.
_ID_COLUMNS = ("user_id", "item_id")
_TIME_COLUMN = "timestamp"


class Recommender:
    """A sequential recommender trained, served and saved in a few calls.

    Takes the options of ``tfrec-tricks train`` by their names (the flag
    without its dashes: ``--max-len`` is ``max_len``): the fields of
    ``TrainConfig`` and of ``ModelConfig`` but those the data gives, and
    ``recipe``, whose settings the other options override. ``fit`` trains
    a run as ``tfrec-tricks train`` does (early stopping on validation
    NDCG@10, leave-one-out test metrics) and writes its run directory in
    ``output_dir``; ``recommend`` ranks the catalogue for users or
    histories; ``save`` copies the run where ``Recommender.load``,
    ``tfrec-tricks recommend DIR`` and ``tfrec-tricks export DIR`` read it.

    Args:
        encoder: str or None. "gru4rec", "sasrec" or "hstu". Defaults to
            None: the recipe's, else "gru4rec".
        head: str or None. "auto" (chosen from the data), "softmax",
            "cpr", "mos" or "softmax_no_dup". Defaults to None: the
            recipe's, else "auto".
        **options: ``tfrec-tricks train``'s options, e.g. ``epochs=5``,
            ``max_len=50``, ``embedding_dim=64``, ``learning_rate=1e-3``,
            ``seed=0``, ``features=("rating",)``, ``recipe=
            "long-histories"``. ``output_dir`` defaults to a temporary
            folder, removed with the ``Recommender`` (``save`` keeps a
            run); ``name`` (the run directory's) to "recommender" for a
            DataFrame, the file's name for a file, the source's for a
            built-in dataset.

    Attributes:
        run_dir: str or None. The run directory, once fitted or loaded.

    Raises:
        ValueError: an unknown option (named, with close matches), or an
            option's value out of its range.

    Example:

    >>> import numpy as np, pandas as pd
    >>> import tfrec_tricks
    >>> rng = np.random.default_rng(0)
    >>> frame = pd.DataFrame({
    ...     "user_id": np.repeat(np.arange(40), 6),
    ...     "item_id": rng.integers(0, 15, 240),
    ...     "timestamp": np.tile(np.arange(6), 40),
    ... })
    >>> recommender = tfrec_tricks.Recommender(
    ...     epochs=1, max_len=6, embedding_dim=8, seed=0)
    >>> recommender.fit(frame, verbose=0)
    Recommender(epochs=1, max_len=6, embedding_dim=8, seed=0)
    >>> top = recommender.recommend(users=[0, 1], k=3)
    >>> top.columns.tolist(), len(top)
    (['user_id', 'rank', 'item_id', 'score'], 6)
    >>> sorted(recommender.evaluate()["test"])
    ['hr@10', 'mrr@10', 'ndcg@10']
    """

    def __init__(
        self,
        encoder: str | None = None,
        head: str | None = None,
        **options: Any,
    ) -> None:
        self.encoder = encoder
        self.head = head
        self.options = dict(options)
        named = {"encoder": encoder, "head": head}
        given = {k: v for k, v in named.items() if v is not None}
        self._config = _train_config({**self.options, **given})
        self.run_dir: str | None = None
        self._model = None
        # The identity of the run's model when _model was read: export
        # refuses the run once it holds another (retrained elsewhere).
        self._identity: ModelIdentity | None = None
        self._temporary: tempfile.TemporaryDirectory | None = None
        # What recommend reads, held between calls: the run's vocabulary,
        # histories, model and traced engines (served_run).
        self._served = RunMemory()

    def __repr__(self) -> str:
        named = {"encoder": self.encoder, "head": self.head, **self.options}
        shown = ", ".join(
            f"{name}={value!r}"
            for name, value in named.items()
            if value is not None
        )
        return f"Recommender({shown})"

    def fit(
        self,
        data: pd.DataFrame | str | os.PathLike,
        *,
        verbose: int | None = None,
        overwrite: bool = False,
    ) -> "Recommender":
        """Trains a run on ``data`` and evaluates it.

        Args:
            data: the interactions. A DataFrame: a row per interaction,
                columns ``user_id`` and ``item_id`` (ids, read as
                strings), optionally ``timestamp`` (numbers or datetimes;
                without it the row order within a user is the time order)
                and numeric columns (e.g. ``rating``, a per-interaction
                feature for ``features=("rating",)``). A path: an
                interaction file in a format ``tfrec-tricks train --data
                file`` reads (``file_format`` option; a glob of shards
                too). A built-in source's name: "synthetic", "ml-1m",
                "ml-100k", ... (the real ones read from the ``data_path``
                option's folder).
            verbose: int or None. Keras' verbosity; None: a progress bar
                on a terminal, a line per epoch otherwise.
            overwrite: bool. Replace a run of other settings (or the
                same, finished) in ``output_dir/name``. Without it the
                same settings and data reuse a finished run, and others
                are refused, as ``tfrec-tricks train`` does. Defaults to
                False.

        Returns:
            The ``Recommender``, fitted.

        Raises:
            ValueError: a DataFrame without the id columns (or with ids
                holding tabs or line ends, or numbers that are not
                finite), data of another type, a file the loaders
                refuse, or a run directory that holds another run.
        """
        temporary = None
        output_dir = self.options.get("output_dir")
        if output_dir is None:
            temporary = tempfile.TemporaryDirectory(
                prefix="tfrec-tricks-", ignore_cleanup_errors=True
            )
            output_dir = temporary.name
        # run_dir stays valid when the working directory changes.
        output_dir = os.path.abspath(output_dir)
        changes = _data_options(data, output_dir, self._config)
        changes["output_dir"] = output_dir
        if self._config.name is None:
            changes["name"] = _default_name(data)
        config = dataclasses.replace(self._config, **changes)
        self._served.clear()
        result = train(config, verbose=verbose, overwrite=overwrite)
        self._temporary = temporary
        self.run_dir, self._model = result.run_dir, result.model
        self._identity = ModelIdentity.of_run(
            result.run_dir, read_run_file(result.run_dir)
        )
        return self

    def recommend(
        self,
        users: Sequence[Any] | None = None,
        histories: pd.DataFrame | None = None,
        k: int = 10,
        filter_seen: bool = True,
        items: Sequence[Any] | None = None,
        exclude_items: Sequence[Any] | None = None,
        new_item_slots: int = 0,
        new_item_boost: float = 0.0,
    ) -> pd.DataFrame:
        """The top ``k`` items for users of the data, or for histories.

        The lists ``recommend_frame`` gives, from memory: the first call
        loads the run's vocabulary, its users' histories and its model (a
        ``LocalEngine``, traced once per ``k``); later calls reuse them
        while the run is unchanged, so one user's list costs about one
        served call. A run retrained since (``fit``, or ``tfrec-tricks
        train --overwrite`` elsewhere), or data edited, is read again
        (``recommendation.served_run``). Users are ranked a batch at a
        time.

        Args:
            users: raw user ids of the data fitted on (their histories are
                read from it), or None: every user, unless ``histories``
                are given. Ids are compared as strings (``1`` is "1").
            histories: a DataFrame of other histories (``user_id``,
                ``item_id``, optionally ``timestamp`` and the model's
                features), recommended for in place of the data's.
            k: int. Items per user. Defaults to 10.
            filter_seen: bool. Leave out the items a user's history holds.
                Defaults to True.
            items: raw item ids to choose from, or None: the catalogue.
            exclude_items: raw item ids never recommended, or None.
            new_item_slots: int in ``0..k``. The last places of each list
                kept for the best items the model never trained on
                (ranked by their attributes; a model fitted with item
                features), so that new items reach the lists. Defaults
                to 0.
            new_item_boost: float >= 0. Raise every new item's score by
                this many standard deviations of the user's scores, so
                that new items enter a list where they come close to the
                trained ones (a model fitted with item features).
                Defaults to 0.

        Returns:
            A DataFrame with columns ``user_id``, ``rank`` (1 first),
            ``item_id`` and ``score`` (the model's logit, a new item's
            raised by ``new_item_boost``): ``k`` rows per
            user, fewer where fewer items are eligible.

        Raises:
            ValueError: not fitted, or an unknown user or item id.
        """
        options = RecommendationOptions(
            k=k,
            users=_raw_ids(users),
            histories=histories,
            items=_raw_ids(items),
            exclude_items=_raw_ids(exclude_items),
            keep_seen=not filter_seen,
            new_item_slots=new_item_slots,
            new_item_boost=new_item_boost,
        )
        run_dir = self._fitted_run()
        return RecommendationJob(run_dir, options, self._served).frame()

    def evaluate(self) -> dict:
        """The run's evaluation: its ``metrics.json``.

        Returns:
            A dict: ``validation`` and ``test`` (NDCG@10, HR@10, MRR@10
            of the full ranking of each user's held-out last items),
            ``test_by_target`` (repeat, new and cold targets), the
            options' other metrics (``eval_negatives``,
            ``eval_seen_excluded``) and the run's facts (epochs, seconds
            per epoch, parameters).

        Raises:
            ValueError: not fitted.
        """
        path = os.path.join(self._fitted_run(), "metrics.json")
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)

    @property
    def model(self) -> Any:
        """The trained ``SequentialRetrievalModel`` (a Keras model)."""
        if self._model is None:
            run_dir = self._fitted_run()
            run = check_finished_run(run_dir)
            self._model = load_model(run_dir)
            self._identity = ModelIdentity.of_run(run_dir, run)
        return self._model

    def save(self, directory: str, overwrite: bool = False) -> str:
        """Copies the run to ``directory``, a run directory of its own.

        ``Recommender.load(directory)``, ``tfrec-tricks recommend`` and
        ``tfrec-tricks export`` read it. The file a DataFrame was written
        to goes beside it (``interactions-<hash>.inter``), and the copy
        reads its data from there; a run of a file or a built-in dataset
        reads it where it was.

        Args:
            directory: str. The folder to write; its parent is created.
            overwrite: bool. Replace a run directory already there (only
                what tfrec-tricks recorded writing). Defaults to False.

        Returns:
            ``directory``.

        Raises:
            ValueError: not fitted, or ``directory`` is not a place for
                the copy (it exists, without ``overwrite``; it holds what
                tfrec-tricks did not write; it lies inside the run), or
                a file of the data's name beside it holds other rows (an
                edited copy: named, never replaced, ``overwrite`` or not).
                Nothing is written then.
        """
        run_dir = self._fitted_run()
        check_finished_run(run_dir)
        data = _travelling_data(run_dir)
        target = os.path.normpath(directory)
        check_target(target, RUN_DIRECTORY, [run_dir, *filter(None, [data])])
        empty = not os.path.isdir(target) or not os.listdir(target)
        if not (empty or overwrite):
            raise OutputError(
                f"{directory!r} already exists; pass overwrite=True to "
                "replace the run saved there, or choose another folder. "
                f"Received: directory={directory!r}, overwrite=False"
            )
        beside = _beside(data, target, directory) if data else None
        with writes_named(target), target_lock(target, RUN_DIRECTORY):
            moved = _copy_beside(data, beside) if data else None
            publish_directory(
                target,
                lambda staging: _copy_run(run_dir, staging, target, moved),
                replace=os.path.isdir(target),
                kind=RUN_DIRECTORY.name,
            )
        return directory

    @classmethod
    def load(cls, directory: str) -> "Recommender":
        """The ``Recommender`` of a finished run directory.

        Args:
            directory: str. A run ``fit``, ``save`` or ``tfrec-tricks
                train`` wrote.

        Returns:
            A fitted ``Recommender`` (``encoder`` and ``head`` as trained).

        Raises:
            RunDirectoryError: the run has not finished, failed, or its
                files do not belong together (``check_finished_run``), or
                it was trained under the other Keras (tf-keras or Keras 3:
                ``training.run_keras.check_run_keras``, naming both).
        """
        run = check_finished_run(directory)
        check_run_keras(directory, run["fingerprint"], "loaded")
        with open(os.path.join(directory, "config.json")) as handle:
            model = json.load(handle)["model"]
        recommender = cls(encoder=model["encoder"], head=model["head"])
        recommender.run_dir = directory
        return recommender

    def export(
        self,
        base_path: str,
        name: str | None = None,
        k: int = 10,
        version: int | None = None,
        scoring: str = "auto",
    ) -> str:
        """Writes the model as a TF Serving SavedModel version.

        As ``tfrec-tricks export RUN_DIR --name NAME --base-path
        BASE_PATH`` (see ``tfrec_tricks.export.export_for_serving``):
        ``base_path/name/version/``, its ``models.config`` entry and a
        REST request example.

        Args:
            base_path: str. The folder of served models.
            name: str or None. The served model's name, one folder of
                ``base_path`` (``check_model_name``, as ``--name``: no
                ``/``, ``..`` or absolute path). Defaults to the run
                directory's name.
            k: int. Items a request returns. Defaults to 10.
            version: int or None. 1 to 2**63 - 1 (``check_version``, as
                ``--version``). Defaults to the next free one.
            scoring: str. "auto", "index" or "full". Defaults to "auto".

        Returns:
            The path of the SavedModel version folder.

        The version records the model it holds (``export.model_identity``),
        which ``tfrec-tricks recommend --engine beam --saved-model``
        checks.

        Raises:
            ValueError: not fitted, a bad name or version (before anything
                is read or written), ``k`` above the catalogue,
                an existing version, or a run that holds another model
                than this ``Recommender``'s (retrained since, by another
                ``fit`` or ``tfrec-tricks train --overwrite``).
        """
        run_dir = self._fitted_run()
        if name is None:
            name = os.path.basename(os.path.normpath(run_dir))
        # tfrec-tricks export's checks of --name and --version: a name is
        # one folder of base_path, never a path out of it.
        check_model_name(name)
        if version is not None:
            check_version(version)
        identity = ModelIdentity.of_run(run_dir, check_finished_run(run_dir))
        model = self.model
        if self._identity.sha256 != identity.sha256:
            raise ValueError(
                f"{run_dir} now holds another model than this Recommender's "
                f"({identity.facts()}): it was retrained since. "
                "Recommender.load(run_dir) exports the run's model, fit "
                "trains this one's again. Received: this Recommender's "
                f"{self._identity.describe()}"
            )
        model_dir = os.path.join(base_path, name)
        vocabulary = os.path.join(run_dir, "vocabulary.json")
        with writes_named(base_path):
            return export_for_serving(
                model,
                model_dir,
                vocabulary,
                version=version,
                k=k,
                scoring=scoring,
                inputs=(run_dir,),
                identity=identity,
            )

    def _fitted_run(self) -> str:
        if self.run_dir is None:
            raise ValueError(
                "This Recommender is not fitted yet: call fit(data) first, "
                "or Recommender.load(directory) for a saved run. Received: "
                "run_dir=None"
            )
        return self.run_dir


def _option_names() -> tuple[set[str], set[str]]:
    """The training options and the model options ``Recommender`` takes."""
    train = {f.name for f in dataclasses.fields(TrainConfig)}
    model = {f.name for f in dataclasses.fields(ModelConfig)}
    return train - set(_NOT_OPTIONS), model - set(DERIVED_MODEL_FIELDS)


def _check_names(options: dict) -> None:
    """Refuses option names ``Recommender`` does not take, naming close
    matches."""
    if "data" in options:
        raise ValueError(
            "The data is fit's argument: Recommender(...).fit(data). "
            f"Received: data={options['data']!r}"
        )
    train, model = _option_names()
    known = train | model | {RECIPE_OPTION}
    unknown = sorted(set(options) - known)
    if not unknown:
        return
    hints = [
        f"{name} -> {' or '.join(matches)}"
        for name in unknown
        if (matches := difflib.get_close_matches(name, known, n=3))
    ]
    received = ", ".join(f"{name}={options[name]!r}" for name in unknown)
    raise ValueError(
        f"Unknown Recommender options {unknown}"
        + (f" (did you mean {'; '.join(hints)}?)" if hints else "")
        + ". The options are the fields of TrainConfig and ModelConfig: "
        "tfrec-tricks train's flags without the dashes (--max-len: "
        f"max_len; see tfrec-tricks train --help). Received: {received}"
    )


def _train_config(options: dict) -> TrainConfig:
    """The ``TrainConfig`` of ``options``, over the recipe's settings as
    ``tfrec-tricks train --recipe`` does; the model options are checked
    against ``ModelConfig`` at once."""
    _check_names(options)
    options = dict(options)
    recipe = options.pop(RECIPE_OPTION, None)
    defaults = {"train": {}, "model": {}}
    if recipe is not None:
        defaults = recipe_options(recipe)
    train_names, _ = _option_names()
    train = dict(defaults["train"])
    model = dict(defaults["model"])
    for name, value in options.items():
        (train if name in train_names else model)[name] = value
    config = TrainConfig(**train, model=model)
    # As a config file's: ranges now, the catalogue's bounds once known.
    if model.get("head") == AUTO_HEAD:
        model.pop("head")
    ModelConfig(num_items=2**31 - 1, **model)
    return config


def _data_options(data: Any, output_dir: str, config: TrainConfig) -> dict:
    """The ``TrainConfig`` data fields of ``fit``'s ``data``: a DataFrame
    as the file it is written to, a path, or a built-in source."""
    if isinstance(data, str) and data in SOURCES and data != "file":
        return {"data": data}
    if not isinstance(data, (pd.DataFrame, str, os.PathLike)):
        raise ValueError(
            "fit takes a pandas DataFrame of interactions, the path of an "
            "interaction file or a built-in dataset's name. Received: "
            f"data of type {type(data).__name__}"
        )
    if config.data_path is not None:
        raise ValueError(
            "The data_path option names the folder of the built-in "
            "datasets; fit's data is a DataFrame or a file. Received: "
            f"data_path={config.data_path!r}"
        )
    if isinstance(data, pd.DataFrame):
        path = _write_frame(data, output_dir)
        return {"data": "file", "data_path": path, "file_format": "recbole"}
    return {"data": "file", "data_path": os.path.abspath(os.fspath(data))}


def _default_name(data: Any) -> str | None:
    """The run's name when the options give none: "recommender" for a
    DataFrame, a file's name before its first dot, None (the source's
    name) for a built-in dataset."""
    if isinstance(data, pd.DataFrame):
        return "recommender"
    path = os.fspath(data)
    if path in SOURCES:
        return None
    return os.path.basename(os.path.normpath(path)).split(".")[0] or None


def _write_frame(frame: pd.DataFrame, folder: str) -> str:
    """Writes ``frame`` as a RecBole atomic file in ``folder``, named by
    its content (``interactions-<hash>.inter``, kept if there already),
    and returns its absolute path."""
    text = _atomic_text(frame)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    path = os.path.abspath(
        os.path.join(folder, f"interactions-{digest[:12]}.inter")
    )
    if _holds(path, digest, f"output_dir={folder!r}"):
        return path
    os.makedirs(folder, exist_ok=True)
    return write_text_atomic(path, text)


def _holds(path: str, digest: str, received: str) -> bool:
    """Whether ``path``, a data file named by its content (``fit``'s
    ``interactions-<hash>.inter``), is there with that content (SHA-256
    ``digest``); False when there is none.

    Raises:
        OutputError: a file of that name holds other bytes: someone edited
            it. It is named and never replaced (nothing records it as
            tfrec-tricks' own: ``ownership``).
    """
    if not os.path.lexists(path):
        return False
    if not os.path.isfile(path) or file_sha256(path) != digest:
        raise OutputError(
            f"{path} exists and is not the data file of that name (its "
            "rows differ from those it was named for: edited since it was "
            "written?); it is never replaced: move it away. Received: "
            f"{received}"
        )
    return True


def _atomic_text(frame: pd.DataFrame) -> str:
    """``frame`` as a RecBole atomic ``.inter`` file: the ids as
    ``:token``, ``timestamp`` and the numeric columns as ``:float``, the
    other columns as ``:token`` (read, and compared only when rows are
    checked for duplicates)."""
    missing = [name for name in _ID_COLUMNS if name not in frame.columns]
    if missing or frame.empty:
        raise ValueError(
            "fit needs a DataFrame with a row per interaction and the "
            "columns user_id and item_id (timestamp and numeric columns "
            f"such as rating are optional). Received: {len(frame)} rows, "
            f"columns {list(frame.columns)}"
        )
    first = [*_ID_COLUMNS, *([_TIME_COLUMN] if _TIME_COLUMN in frame else [])]
    order = first + [name for name in frame.columns if name not in first]
    header, columns = [], []
    for name in order:
        kind, text = _column_text(name, frame[name])
        header.append(f"{name}:{kind}")
        columns.append(text)
    rows = columns[0].str.cat(columns[1:], sep="\t")
    return "\t".join(header) + "\n" + "\n".join(rows) + "\n"


def _column_text(name: Any, column: pd.Series) -> tuple[str, pd.Series]:
    """A column's RecBole type and its values as text.

    Raises:
        ValueError: a name or a value the file cannot hold (a tab, a line
            end, a missing id, a number that is not finite, a timestamp
            that is neither a number nor a time), naming the row.
    """
    if not isinstance(name, str) or re.search(r"[:\t\r\n]", name) or not name:
        raise ValueError(
            "DataFrame column names must be non-empty strings without "
            f"':', tabs or line ends. Received: column {name!r}"
        )
    if name == _TIME_COLUMN and pd.api.types.is_datetime64_any_dtype(column):
        times = pd.to_datetime(column, utc=True)
        column = (times - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)
    if name not in _ID_COLUMNS and pd.api.types.is_numeric_dtype(column):
        values = column.to_numpy(dtype=np.float64)
        _refuse(name, column, ~np.isfinite(values), "finite numbers")
        return "float", pd.Series(values, index=column.index).astype(str)
    if name == _TIME_COLUMN:
        _refuse(name, column, np.ones(len(column), bool), "numbers or times")
    if name in _ID_COLUMNS:
        _refuse(name, column, column.isna().to_numpy(), "an id")
    text = column.fillna("").astype(str)
    tabs = text.str.contains("[\t\r\n]").to_numpy()
    _refuse(name, column, tabs, "values without tabs or line ends")
    return "token", text


def _refuse(name: str, column: pd.Series, bad: np.ndarray, rule: str) -> None:
    """Raises ValueError naming the first row of ``column`` that is
    ``bad``: it does not hold ``rule``."""
    if bad.any():
        row = int(np.argmax(bad))
        value = column.iloc[row]
        value = value.item() if isinstance(value, np.generic) else value
        raise ValueError(
            f"DataFrame column {name!r} must hold {rule} in every row. "
            f"Received: row {column.index[row]!r} holds {value!r}"
        )


def _raw_ids(ids: Any) -> list[str] | None:
    """Raw ids as the run's strings: ``[1, 2]`` -> ``["1", "2"]``; one
    string is one id."""
    if ids is None:
        return None
    if isinstance(ids, str):
        return [ids]
    return [str(i) for i in ids]


def _travelling_data(run_dir: str) -> str | None:
    """The file a DataFrame was written to for ``run_dir`` (beside it),
    which a copy of the run takes along; None for other data."""
    with open(os.path.join(run_dir, "config.json")) as handle:
        train = json.load(handle)["train"]
    path = train.get("data_path")
    if train.get("data") != "file" or not isinstance(path, str):
        return None
    beside = os.path.dirname(os.path.realpath(run_dir))
    if not _FRAME_FILE.fullmatch(os.path.basename(path)) or (
        os.path.dirname(os.path.realpath(path)) != beside
    ):
        return None
    return path


def _beside(data: str, target: str, directory: str) -> str:
    """The absolute path of ``data``'s copy beside ``target``, checked
    (``_holds``): there already with the same rows, or absent."""
    parent = os.path.dirname(os.path.abspath(target))
    copy = os.path.join(parent, os.path.basename(data))
    _holds(copy, file_sha256(data), f"directory={directory!r}")
    return copy


def _copy_beside(data: str, copy: str) -> str:
    """Copies ``data`` to ``copy``, the path ``_beside`` checked (kept if
    there: the same rows), and returns ``copy``."""
    if os.path.lexists(copy):
        return copy
    os.makedirs(os.path.dirname(copy), exist_ok=True)
    partial = f"{copy}.{os.getpid()}.tmp"
    try:
        shutil.copyfile(data, partial)
        os.replace(partial, copy)
    finally:
        if os.path.exists(partial):
            os.remove(partial)
    return copy


def _copy_run(
    run_dir: str, staging: str, target: str, data: str | None
) -> None:
    """Fills ``staging`` with a copy of ``run_dir`` placed at ``target``:
    its ``config.json`` names the copy's folder (and ``data``, the data
    file beside it, if any), and its manifest the files' new hashes."""
    shutil.copytree(run_dir, staging, dirs_exist_ok=True)
    path = os.path.join(staging, "config.json")
    with open(path) as handle:
        config = json.load(handle)
    output_dir, name = os.path.split(os.path.abspath(target))
    config["train"].update(output_dir=output_dir, name=name)
    if data is not None:
        config["train"]["data_path"] = data
        run = read_run_file(staging)
        run["fingerprint"]["train"]["data_path"] = resolved_path(data)
        write_text_atomic(
            os.path.join(staging, RUN_FILE), json.dumps(run, indent=2)
        )
    write_text_atomic(path, json.dumps(config, indent=2))
    finish_run(staging)
