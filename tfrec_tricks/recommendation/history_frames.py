"""New users' histories: a table of interactions, from a file or a frame.

``tfrec-tricks recommend --histories FILE`` reads any interaction file
``train`` reads (``read_histories``: ``loaders`` through ``load_source``,
exact duplicate rows dropped); ``recommend_frame(histories=...)`` takes a
``pandas.DataFrame``. Both are one table, ``HISTORY_COLUMNS`` plus an
optional ``timestamp`` and feature columns, grouped into user sequences
by ``frame_sequences`` with the rules of the run's data
(``tfrec_tricks.data.user_sequences``): users in order of first
appearance, each user's rows sorted by time (rows of equal time, or
without timestamps, in table order), ``time_gap`` the seconds since the
user's previous interaction (NaN at the first). A column the model does
not read is left unread, as ``train`` leaves the columns ``--features``
does not name: the run's own ``.inter`` file, ``token`` columns and all,
gives its users' histories.
"""

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tfrec_tricks.data.sources.named_sources import load_source
from tfrec_tricks.data.user_sequences import (
    PADDING,
    TIME_GAP,
    UserSequences,
    first_appearance_codes,
)
from tfrec_tricks.errors import DataError

HISTORY_COLUMNS = ("user_id", "item_id")
TIMESTAMP = "timestamp"


def read_histories(path: str, file_format: str = "auto") -> pd.DataFrame:
    """An interaction file as a histories table.

    Args:
        path: str. A file (or glob of shards) ``tfrec-tricks train --data
            file`` reads.
        file_format: str. ``"auto"`` or a format of
            ``tfrec_tricks.data.sources.loaders.FORMATS``.

    Returns:
        ``pandas.DataFrame`` with ``user_id``, ``item_id`` (str), then
        ``timestamp`` (float64 seconds) when the file has times, then its
        numeric columns (float32, e.g. ``rating``), then its categorical
        ``token`` columns (str, ``""`` where a row has no value).

    Raises:
        DataError: the file cannot be read (named ``file:line`` where a
            line is at fault).

    Example:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "new.tsv")
    >>> _ = open(path, "w").write("7\\t31\\t4\\t100\\n7\\t12\\t5\\t160\\n")
    >>> read_histories(path, "udata").columns.tolist()
    ['user_id', 'item_id', 'timestamp', 'rating']
    """
    table = load_source("file", data_path=path, file_format=file_format)
    interactions = table.interactions
    columns = {
        "user_id": np.asarray(interactions.users).astype(str),
        "item_id": np.asarray(interactions.items).astype(str),
    }
    if interactions.timestamps is not None:
        columns[TIMESTAMP] = np.asarray(interactions.timestamps, np.float64)
    for name, values in sorted(interactions.numeric.items()):
        columns[name] = np.asarray(values, np.float32)
    for name, values in sorted(interactions.tokens.items()):
        columns[name] = np.asarray(values).astype(str)
    return pd.DataFrame(columns)


def frame_sequences(
    frame: pd.DataFrame,
    source: str = "histories",
    token_names: Sequence[str] = (),
    feature_names: Sequence[str] | None = None,
) -> UserSequences:
    """Groups a histories table into user sequences.

    Args:
        frame: ``pandas.DataFrame`` with ``user_id`` and ``item_id``
            (raw ids; other types are taken as their ``str``), and
            optionally ``timestamp`` (finite numbers) and numeric
            feature columns (NaN allowed). ``time_gap`` is computed from
            ``timestamp`` unless the table has a ``time_gap`` column.
        source: str. What the table is, for messages.
        token_names: the columns that are categorical features (the
            model's token features): read as raw values, ``str`` of each
            (a missing value, NaN or None, is ``""``: no value; a float
            column is refused: its values lost their text). Defaults to
            none.
        feature_names: the per-interaction features the model reads (its
            token features among them or not): the only feature columns
            read, so a column of any other name is ignored, whatever it
            holds; or None: every column besides the ids and
            ``timestamp`` is read, as a number unless in
            ``token_names``. Defaults to None.

    Returns:
        A ``UserSequences`` (no split: its positions are -1).

    Raises:
        DataError: a missing id column, an empty table, a missing id, a
            timestamp that is not a finite number, a feature column read
            that is not numeric, or a categorical one of floats; each
            names what was received.

    Example:

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"user_id": ["u", "u", "v"],
    ...                       "item_id": ["b", "a", "a"],
    ...                       "timestamp": [20.0, 5.0, 1.0]})
    >>> sequences = frame_sequences(frame)
    >>> sequences.user_names, sequences.item_names
    (['u', 'v'], ['[PAD]', 'a', 'b'])
    >>> sequences.items.tolist(), sequences.features["time_gap"].tolist()
    ([1, 2, 1], [nan, 15.0, nan])
    >>> frame["device"] = ["web", None, 7]
    >>> frame_sequences(frame, token_names=["device"]).tokens["device"].tolist()
    ['', 'web', '7']
    >>> sorted(frame_sequences(frame, feature_names=["time_gap"]).features)
    ['time_gap']
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(
            "`histories` must be a pandas.DataFrame with columns user_id, "
            f"item_id. Received: {type(frame).__name__}"
        )
    missing = [c for c in HISTORY_COLUMNS if c not in frame.columns]
    if missing or not len(frame):
        raise DataError(
            f"{source} must be a table with the columns "
            f"{list(HISTORY_COLUMNS)} and at least one row. Received: "
            f"columns {[str(c) for c in frame.columns]}, {len(frame)} rows"
        )
    users = _ids(frame, "user_id", source)
    items = _ids(frame, "item_id", source)
    timestamps = None
    if TIMESTAMP in frame.columns:
        timestamps = _numbers(frame, TIMESTAMP, source, finite=True)
    codes, user_names = first_appearance_codes(users)
    if timestamps is None:
        order = np.argsort(codes, kind="stable")
    else:
        order = np.lexsort((timestamps, codes))
    lengths = np.bincount(codes, minlength=len(user_names))
    starts = np.cumsum(lengths) - lengths
    item_codes, item_names = first_appearance_codes(items[order])
    token_names = [str(name) for name in token_names]
    tokens = {
        str(name): _values(frame, name, source)[order]
        for name in frame.columns
        if str(name) in token_names
    }
    read = None if feature_names is None else set(map(str, feature_names))
    features = {
        str(name): _numbers(frame, name, source)[order]
        for name in frame.columns
        if name not in (*HISTORY_COLUMNS, TIMESTAMP)
        and str(name) not in tokens
        and (read is None or str(name) in read)
    }
    if timestamps is not None and TIME_GAP not in features:
        ordered = timestamps[order]
        gaps = np.empty(len(order), np.float32)
        gaps[1:] = np.diff(ordered)
        gaps[starts] = np.nan
        features[TIME_GAP] = gaps
    none = np.full(len(user_names), -1, np.int64)
    return UserSequences(
        item_names=[PADDING] + [str(name) for name in item_names],
        user_names=[str(name) for name in user_names],
        items=(item_codes + 1).astype(np.int32),
        starts=starts.astype(np.int64),
        lengths=lengths.astype(np.int64),
        features=features,
        tokens=tokens,
        validation_positions=none,
        test_positions=none.copy(),
    )


def missing_columns_hint(
    frame: pd.DataFrame,
    needed: Sequence[str],
    held: Sequence[str],
    token_names: Sequence[str] = (),
) -> str:
    """What a histories table lacks, in words: for each feature the model
    reads (``needed``) that the table's sequences do not hold (``held``),
    the column it is read from, then the table's columns.

    Each kind of feature is read from its own column, so the message
    names that one: ``time_gap`` from the timestamps, a token feature
    from a column of raw values, a float feature from a numeric column.

    Returns:
        str: ``" (...; its columns are ...)"``, or ``""`` when nothing is
        missing.

    Example:

    >>> frame = pd.DataFrame({"user_id": ["u"], "item_id": ["a"]})
    >>> print(missing_columns_hint(frame, ["time_gap"], [], ["device"]))
     (time_gap needs a timestamp column; its columns are user_id, item_id)
    >>> missing_columns_hint(frame, ["time_gap"], ["time_gap"])
    ''
    >>> print(missing_columns_hint(frame, ["device"], [], ["device"]))
    ... # doctest: +NORMALIZE_WHITESPACE
     (device needs a column of its raw values (a categorical feature:
     device:token in a RecBole .inter file); its columns are user_id,
     item_id)
    """
    needs = []
    for name in needed:
        if name in held:
            continue
        if name == TIME_GAP:
            needs.append(f"{TIME_GAP} needs a {TIMESTAMP} column")
        elif name in token_names:
            needs.append(
                f"{name} needs a column of its raw values (a categorical "
                f"feature: {name}:token in a RecBole .inter file)"
            )
        else:
            needs.append(f"{name} needs a numeric {name} column")
    if not needs:
        return ""
    columns = ", ".join(map(str, frame.columns))
    return f" ({'; '.join(needs)}; its columns are {columns})"


def _ids(frame: pd.DataFrame, column: str, source: str) -> np.ndarray:
    """A column of raw ids as str; refuses a missing or empty id."""
    values = frame[column]
    absent = values.isna().to_numpy().copy()
    text = values.astype(str).to_numpy().astype(str)
    absent |= np.char.str_len(np.char.strip(text)) == 0
    if absent.any():
        row = int(np.argmax(absent))
        raise DataError(
            f"{source}: row {row} has no {column}: every row needs a user "
            f"and an item id. Received: {column}={values.iloc[row]!r}"
        )
    return text


def _values(frame: pd.DataFrame, column: str, source: str) -> np.ndarray:
    """A categorical column as str values, ``""`` where it has none.

    Refuses a float column with values: the model looks up each value's
    text, and a float has lost it (``7.0`` was ``"7"``, ``"07"`` or
    ``"7.0"``), so every value would be out-of-vocabulary, silently.
    pandas reads a column of numbers with an empty field as floats.
    """
    values = frame[column]
    if pd.api.types.is_float_dtype(values) and values.notna().any():
        row = int(np.argmax(values.notna().to_numpy()))
        value = float(values.iloc[row])
        raise DataError(
            f"{source}: column {str(column)!r} is a categorical feature of "
            "the model, looked up by its text, and holds floats, which "
            "lost it (7.0 may have been '7', '07' or '7.0'); give it as "
            "text (a :token column of a file; in a DataFrame, str values: "
            "pandas.read_csv(..., dtype=str)). Received: dtype "
            f"{values.dtype}, row {row}: {column}={value!r}"
        )
    text = values.astype(str).to_numpy().astype(object)
    text[values.isna().to_numpy()] = ""
    return text.astype(str)


def _numbers(
    frame: pd.DataFrame, column: str, source: str, finite: bool = False
) -> np.ndarray:
    """A numeric column as float32 (float64 timestamps); refuses text,
    and with ``finite`` a NaN or infinite value."""
    values = frame[column]
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(
        values
    ):
        raise DataError(
            f"{source}: column {str(column)!r} must hold numbers (a "
            "per-interaction feature, or the timestamp). Received: dtype "
            f"{values.dtype}"
        )
    numbers = values.to_numpy(
        np.float64 if finite else np.float32, na_value=np.nan
    )
    if finite and not np.isfinite(numbers).all():
        row = int(np.argmin(np.isfinite(numbers)))
        raise DataError(
            f"{source}: row {row}: {column} must be a finite number. "
            f"Received: {column}={values.iloc[row]!r}"
        )
    return numbers
