"""Item side-information encoded against a catalogue of contiguous item ids.

``encode_item_features`` turns an ``ItemFeatureTable`` (raw attributes per
raw item id, ``tfrec_tricks.data.item_features.item_file``) into one array per
feature, indexed by contiguous item id (row 0 is the padding item), and
one ``ItemFeatureSpec`` per feature: what a Keras layer needs to embed it.

Token features (``token``, ``token_seq``) become int32 ids: 0 is padding
(no value, or the end of a shorter list), 1 is out-of-vocabulary, the
vocabulary's tokens are 2, 3, ... The vocabulary holds the tokens that at
least ``min_count`` training items hold, most held first, ties in token
order (Unicode code point order, which is also the order of their UTF-8
bytes): any engine that counts the same items gives the same vocabulary.
Float features (``float``, ``float_seq``) stay float32; their mean and
variance are those of the training items' values, for the layer to
normalise with. Each feature's values are stored ragged (``RaggedRows``:
flat values and row offsets, no padding), so their size follows the number
of values, not the number of items times the widest row. A row far wider
than the feature's others is named in a warning (``wide_row_warning``); one
of more than ``MAX_ROW_VALUES`` values is refused.

Only the training items decide vocabularies and statistics, so that
nothing of the validation and test items leaks into them; the other items
(and the cold-start items ``cold_item_names`` finds, appended to the
catalogue by the caller) are encoded with them, their unseen tokens as
out-of-vocabulary.
"""

import collections
import dataclasses
import json
import math
import os
import warnings
from typing import Any

import numpy as np

from tfrec_tricks.data.item_features.item_file import (
    FEATURE_KINDS,
    TOKEN_KINDS,
    ItemFeatureTable,
)
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows
from tfrec_tricks.data.user_sequences import PADDING
from tfrec_tricks.errors import DataError

PAD_ID = 0
OOV_ID = 1
FIRST_TOKEN_ID = 2
FEATURES_JSON = "item_features.json"
FEATURES_NPZ = "item_features.npz"
# The keys of ``spec_dicts``: what the Keras layer is configured with.
_LAYER_KEYS = ("name", "kind", "width", "vocabulary_size", "mean", "variance")
#: The most values one item may hold in one feature. A row of more is
#: almost surely a text column read as tokens (and the mean of so many
#: embeddings says little of the item): refused, with its file and line.
MAX_ROW_VALUES = 100_000
#: A row is named in a warning when it holds more values than this many
#: times the feature's 99th percentile of row lengths ...
WIDE_ROW_FACTOR = 100
#: ... and more than this many values (small lists are never worth one).
WIDE_ROW_MINIMUM = 1_000


@dataclasses.dataclass(frozen=True)
class ItemFeatureSpec:
    """How one feature is encoded: its kind, width, vocabulary, statistics.

    Attributes:
        name: str. The feature's name in the ``.item`` file.
        kind: str. One of ``FEATURE_KINDS``.
        width: int. Values per item: 1 for ``token`` and ``float``, the
            longest list of the catalogue's items for ``*_seq``.
        vocabulary: tuple of str. Token kinds: the kept tokens, the first
            with id 2 (0 is padding, 1 out-of-vocabulary). Empty for float
            kinds.
        mean: float. Float kinds: the mean of the training items' finite
            values. Defaults to 0.0.
        variance: float. Float kinds: their variance, 1.0 when it is 0
            (or there are none). Defaults to 1.0.
        coverage: float. The share of catalogue items (padding excluded)
            with a value. Defaults to 0.0.

    Example:

    >>> spec = ItemFeatureSpec("genres", "token_seq", 3, ("Drama", "War"))
    >>> spec.vocabulary_size
    4
    >>> ItemFeatureSpec.from_dict(spec.to_dict()) == spec
    True
    """

    name: str
    kind: str
    width: int
    vocabulary: tuple[str, ...] = ()
    mean: float = 0.0
    variance: float = 1.0
    coverage: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in FEATURE_KINDS:
            raise ValueError(
                f"Feature {self.name!r}: the kind must be one of "
                f"{FEATURE_KINDS}. Received: kind={self.kind!r}"
            )
        if isinstance(self.width, bool) or not isinstance(self.width, int):
            raise ValueError(
                f"Feature {self.name!r}: the width must be an int. "
                f"Received: width={self.width!r}"
            )
        if self.width < 1:
            raise ValueError(
                f"Feature {self.name!r}: the width must be >= 1. "
                f"Received: width={self.width}"
            )
        if self.vocabulary and self.kind not in TOKEN_KINDS:
            raise ValueError(
                f"Feature {self.name!r} of kind {self.kind!r} has no "
                f"vocabulary. Received: {len(self.vocabulary)} tokens"
            )

    @property
    def vocabulary_size(self) -> int:
        """Ids of a token kind, padding and OOV included; 0 for floats."""
        if self.kind in TOKEN_KINDS:
            return len(self.vocabulary) + FIRST_TOKEN_ID
        return 0

    def to_dict(self) -> dict[str, Any]:
        """Every field, JSON-serialisable (what ``from_dict`` reads)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "width": self.width,
            "vocabulary": list(self.vocabulary),
            "mean": self.mean,
            "variance": self.variance,
            "coverage": self.coverage,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ItemFeatureSpec":
        """The spec ``to_dict`` gave ``d`` of.

        Raises:
            ValueError: if ``d`` lacks ``name``, ``kind`` or ``width``, or
                holds a key that is not a field.
        """
        fields = {field.name for field in dataclasses.fields(cls)}
        missing = [k for k in ("name", "kind", "width") if k not in d]
        unknown = sorted(set(d) - fields)
        if missing or unknown:
            raise ValueError(
                f"A feature spec needs name, kind and width, and takes "
                f"{sorted(fields)}; missing {missing}, unknown {unknown}. "
                f"Received: {d!r}"
            )
        return cls(
            name=str(d["name"]),
            kind=str(d["kind"]),
            width=int(d["width"]),
            vocabulary=tuple(str(t) for t in d.get("vocabulary", ())),
            mean=float(d.get("mean", 0.0)),
            variance=float(d.get("variance", 1.0)),
            coverage=float(d.get("coverage", 0.0)),
        )


@dataclasses.dataclass(frozen=True, eq=False)
class ItemFeatures:
    """Encoded item features, one array per feature, by contiguous item id.

    Attributes:
        specs: tuple of ``ItemFeatureSpec``. One per feature, in file
            order.
        values: dict of str to ``RaggedRows``. Feature name -> the values
            of each item (``N`` rows, row ``i`` item ``i``'s values, empty
            when it has none): int32 ids for token kinds (1 OOV, 2..
            tokens; never 0, the padding id), float32 for float kinds
            (finite). Row 0, the padding item, is empty.
        has_row: np.ndarray. bool ``[N]``: the item has a row in the file
            (row 0 False).
    """

    specs: tuple[ItemFeatureSpec, ...]
    values: dict[str, np.ndarray]
    has_row: np.ndarray

    def names(self) -> list[str]:
        """The feature names, in file order."""
        return [spec.name for spec in self.specs]

    def summary_rows(self) -> list[dict[str, Any]]:
        """Per feature: name, kind, vocabulary_size, width, coverage."""
        return [
            {
                "name": spec.name,
                "kind": spec.kind,
                "vocabulary_size": spec.vocabulary_size,
                "width": spec.width,
                "coverage": spec.coverage,
            }
            for spec in self.specs
        ]

    def spec_dicts(self) -> list[dict[str, Any]]:
        """Per feature: name, kind, width, vocabulary_size, mean, variance
        and num_values (the number of values stored): what the Keras
        item-feature layer is configured with (its ragged tables)."""
        dicts = []
        for spec in self.specs:
            d = spec.to_dict()
            d["vocabulary_size"] = spec.vocabulary_size
            layer = {key: d[key] for key in _LAYER_KEYS}
            layer["num_values"] = int(self.values[spec.name].values.size)
            dicts.append(layer)
        return dicts

    def dense(self, name: str) -> np.ndarray:
        """Feature ``name``'s values padded to ``[N, width]`` (0 or NaN
        after a row's end): for small catalogues and tests only, as this
        is the storage the ragged rows avoid."""
        return self.values[name].to_dense()

    def save(self, folder: str) -> list[str]:
        """Writes the specs (JSON) and the arrays (``.npz``) into ``folder``.

        Args:
            folder: str. Created if missing.

        Returns:
            list of str. The names of the files written in ``folder``:
            ``item_features.json`` and ``item_features.npz``.
        """
        os.makedirs(folder, exist_ok=True)
        document = {
            "num_items": int(len(self.has_row)),
            "specs": [spec.to_dict() for spec in self.specs],
        }
        with open(
            os.path.join(folder, FEATURES_JSON), "w", encoding="utf-8"
        ) as handle:
            json.dump(document, handle, indent=1)
            handle.write("\n")
        # Arrays by position: a feature's name may be any text.
        arrays = {"has_row": self.has_row}
        for k, spec in enumerate(self.specs):
            arrays[f"value_{k}"] = self.values[spec.name].values
            arrays[f"row_splits_{k}"] = self.values[spec.name].row_splits
        with open(os.path.join(folder, FEATURES_NPZ), "wb") as handle:
            np.savez(handle, **arrays)
        return [FEATURES_JSON, FEATURES_NPZ]

    @classmethod
    def load(cls, folder: str) -> "ItemFeatures":
        """Reads what ``save`` wrote into ``folder``.

        A file written before the values were stored ragged (``value_k``
        padded ``[N, width]``, no ``row_splits_k``) is read too.

        Raises:
            DataError: a file is missing or does not hold what ``save``
                writes (the message names the file).
        """
        path = os.path.join(folder, FEATURES_JSON)
        arrays_path = os.path.join(folder, FEATURES_NPZ)
        for needed in (path, arrays_path):
            if not os.path.isfile(needed):
                raise DataError(
                    f"Data file not found. Received: path={needed!r}"
                )
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
            specs = tuple(
                ItemFeatureSpec.from_dict(d) for d in document["specs"]
            )
            size = int(document["num_items"])
        except (ValueError, KeyError, TypeError) as error:
            raise DataError(
                f"{path}: not an item-features file written by "
                f"ItemFeatures.save ({type(error).__name__}: {error})"
            ) from None
        with np.load(arrays_path, allow_pickle=False) as stored:
            arrays = {key: stored[key] for key in stored.files}
        has_row = _stored(arrays, "has_row", arrays_path, (size,), np.bool_)
        values = {
            spec.name: _stored_rows(arrays, k, spec, arrays_path, size)
            for k, spec in enumerate(specs)
        }
        return cls(specs=specs, values=values, has_row=has_row)


def _stored_rows(
    arrays: dict[str, np.ndarray],
    k: int,
    spec: ItemFeatureSpec,
    path: str,
    size: int,
) -> RaggedRows:
    """Feature ``k``'s ``RaggedRows`` as ``save`` wrote them, or from the
    padded ``[N, width]`` array of a file from before ragged storage."""
    dtype = np.int32 if spec.kind in TOKEN_KINDS else np.float32
    key = f"value_{k}"
    if f"row_splits_{k}" not in arrays:
        padded = _stored(arrays, key, path, (size, spec.width), dtype)
        return RaggedRows.from_dense(padded)
    splits = _stored(arrays, f"row_splits_{k}", path, (size + 1,), np.int64)
    values = _stored(arrays, key, path, (int(splits[-1]),), dtype)
    try:
        return RaggedRows(values, splits)
    except ValueError as error:
        raise DataError(f"{path}: {key!r}: {error}") from None


def _stored(
    arrays: dict[str, np.ndarray],
    key: str,
    path: str,
    shape: tuple[int, ...],
    dtype: type,
) -> np.ndarray:
    """``arrays[key]``, checked to have ``shape`` and ``dtype``."""
    array = arrays.get(key)
    if array is None or array.shape != shape or array.dtype != dtype:
        received = (
            "nothing" if array is None else f"{array.dtype} {array.shape}"
        )
        raise DataError(
            f"{path}: {key!r} should be {np.dtype(dtype)} {shape}. "
            f"Received: {received}"
        )
    return array


def encode_item_features(
    table: ItemFeatureTable,
    item_names: list[str],
    training_items: np.ndarray,
    min_count: int = 1,
) -> ItemFeatures:
    """Encodes ``table`` against the catalogue ``item_names``.

    Args:
        table: ItemFeatureTable. The raw attributes; its rows of items
            that are not in the catalogue are ignored (``cold_item_names``
            lists them).
        item_names: list of str. The catalogue: ``item_names[0]`` is
            ``"[PAD]"``, then the raw ids; an item's contiguous id is its
            index.
        training_items: np.ndarray. bool ``[N]``: the items of the
            training split. Vocabularies and statistics come from these
            only (index 0 is never one).
        min_count: int. Tokens held by fewer training items are
            out-of-vocabulary (id 1). Defaults to 1.

    Returns:
        ItemFeatures. One ``RaggedRows`` and one spec per feature;
        catalogue items without a row have no values, and ``has_row``
        False.

    Raises:
        ValueError: if ``min_count`` is not an integer >= 1,
            ``item_names[0]`` is not ``"[PAD]"`` or ``training_items`` is
            not one flag per item.
        DataError: an item holds more than ``MAX_ROW_VALUES`` values of a
            feature (the message names ``file:line``, the item and the
            count).

    Warns:
        UserWarning: a row far wider than the feature's others
            (``wide_row_warning``).

    Example:

    >>> table = ItemFeatureTable(
    ...     kinds={"genre": "token", "year": "float"},
    ...     rows={
    ...         "a": {"genre": "Drama", "year": 1990.0},
    ...         "b": {"genre": "War", "year": 2000.0},
    ...         "c": {"genre": "Horror"},
    ...     },
    ... )
    >>> features = encode_item_features(
    ...     table,
    ...     ["[PAD]", "a", "b", "c", "d"],
    ...     np.array([False, True, True, False, False]),
    ... )
    >>> features.specs[0].vocabulary  # training items' tokens only
    ('Drama', 'War')
    >>> features.dense("genre")[:, 0]  # c's Horror is OOV; d has no row
    array([0, 2, 3, 1, 0], dtype=int32)
    >>> features.values["genre"].row_splits.tolist()  # ragged: no padding
    [0, 0, 1, 2, 3, 3]
    >>> features.specs[1].mean, features.specs[1].variance
    (1995.0, 25.0)
    >>> features.has_row
    array([False,  True,  True,  True, False])
    """
    training = _checked_arguments(item_names, training_items, min_count)
    index = {name: i for i, name in enumerate(item_names) if i}
    present = [
        (index[item], values)
        for item, values in table.rows.items()
        if item in index
    ]
    size = len(item_names)
    has_row = np.zeros(size, bool)
    has_row[[i for i, _ in present]] = True
    specs, arrays = [], {}
    for name, kind in table.kinds.items():
        column = [
            (i, _as_tuple(values[name]))
            for i, values in present
            if name in values
        ]
        # By contiguous id: the order of the stored rows.
        column = sorted(
            ((i, value) for i, value in column if value), key=lambda c: c[0]
        )
        check_row_widths(
            name, [(item_names[i], len(value)) for i, value in column], table
        )
        if kind in TOKEN_KINDS:
            spec, array = _encode_tokens(
                name, kind, column, size, training, min_count
            )
        else:
            spec, array = _encode_floats(name, kind, column, size, training)
        specs.append(spec)
        arrays[name] = array
    return ItemFeatures(specs=tuple(specs), values=arrays, has_row=has_row)


def cold_item_names(
    table: ItemFeatureTable, item_names: list[str]
) -> list[str]:
    """The items of ``table`` that are not in the catalogue, in file order.

    The caller appends them to the catalogue as cold-start items (items
    with features and no interaction) before ``encode_item_features``.

    >>> table = ItemFeatureTable({}, {"b": {}, "x": {}, "a": {}, "w": {}})
    >>> cold_item_names(table, ["[PAD]", "a", "b"])
    ['x', 'w']
    """
    known = set(item_names[1:])
    return [item for item in table.rows if item not in known]


def check_min_count(min_count: Any, counted: str) -> None:
    """Raises ValueError unless ``min_count`` is an int >= 1.

    Args:
        min_count: the count a value needs to enter a vocabulary.
        counted: what is counted, for the message (e.g. "training items
            a token needs").

    >>> check_min_count(0, "training items a token needs")
    Traceback (most recent call last):
    ...
    ValueError: min_count (the training items a token needs to be in the vocabulary) must be an integer >= 1. Received: min_count=0
    """  # noqa: E501
    if (
        isinstance(min_count, bool)
        or not isinstance(min_count, (int, np.integer))
        or min_count < 1
    ):
        raise ValueError(
            f"min_count (the {counted} to be in the vocabulary) must be an "
            f"integer >= 1. Received: min_count={min_count!r}"
        )


def _checked_arguments(
    item_names: list[str], training_items: np.ndarray, min_count: int
) -> np.ndarray:
    """The training flags as a bool array, padding False; refuses bad
    arguments."""
    check_min_count(min_count, "training items a token needs")
    if not len(item_names) or item_names[0] != PADDING:
        first = item_names[0] if len(item_names) else None
        raise ValueError(
            f"item_names[0] must be the padding item {PADDING!r}. "
            f"Received: item_names[0]={first!r}"
        )
    training = np.array(training_items, dtype=bool)
    if training.shape != (len(item_names),):
        raise ValueError(
            f"training_items must hold one flag per item of item_names "
            f"({len(item_names)}). Received: shape {training.shape}"
        )
    training[0] = False
    return training


def _as_tuple(value: Any) -> tuple:
    """A value of any kind as the tuple of its elements."""
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _encode_tokens(
    name: str,
    kind: str,
    column: list[tuple[int, tuple]],
    size: int,
    training: np.ndarray,
    min_count: int,
) -> tuple[ItemFeatureSpec, RaggedRows]:
    """The spec and int32 ids (``RaggedRows``) of a token feature."""
    # Items holding each token: a token twice in one item counts once.
    counts: collections.Counter = collections.Counter()
    for i, tokens in column:
        if training[i]:
            counts.update(set(tokens))
    vocabulary = kept_vocabulary(counts, min_count)
    ids = {token: FIRST_TOKEN_ID + k for k, token in enumerate(vocabulary)}
    rows = _rows(
        [[ids.get(token, OOV_ID) for token in tokens] for _, tokens in column],
        column,
        size,
        np.int32,
    )
    spec = ItemFeatureSpec(
        name=name,
        kind=kind,
        width=rows.width,
        vocabulary=vocabulary,
        coverage=_coverage(rows),
    )
    return spec, rows


def _rows(
    lists: list, column: list[tuple[int, tuple]], size: int, dtype: Any
) -> RaggedRows:
    """``size`` rows: ``lists[k]`` at row ``column[k][0]`` (``column`` in
    increasing order of rows), every other row empty."""
    lengths = np.zeros(size, np.int64)
    lengths[[i for i, _ in column]] = [len(values) for values in lists]
    flat = np.fromiter(
        (value for values in lists for value in values),
        dtype,
        int(lengths.sum()),
    )
    return RaggedRows(flat, np.concatenate([[0], np.cumsum(lengths)]))


def kept_vocabulary(counts: Any, min_count: int) -> tuple[str, ...]:
    """The tokens of ``counts`` (token -> count) held at least
    ``min_count`` times, most held first, ties in token order: the
    vocabulary whose first token has id ``FIRST_TOKEN_ID``.

    >>> kept_vocabulary({"b": 2, "a": 2, "c": 5, "d": 1}, 2)
    ('c', 'a', 'b')
    """
    kept = [token for token, count in counts.items() if count >= min_count]
    return tuple(sorted(kept, key=lambda token: (-counts[token], token)))


def _encode_floats(
    name: str,
    kind: str,
    column: list[tuple[int, tuple]],
    size: int,
    training: np.ndarray,
) -> tuple[ItemFeatureSpec, RaggedRows]:
    """The spec and float32 values (``RaggedRows``) of a float feature."""
    rows = _rows([numbers for _, numbers in column], column, size, np.float32)
    # The statistics of the values as stored (float32), in float64, in
    # row order.
    per_value = np.repeat(training, rows.row_lengths())
    train = rows.values[per_value].astype(np.float64)
    finite = train[np.isfinite(train)]
    mean = float(finite.mean()) if finite.size else 0.0
    variance = float(finite.var()) if finite.size else 1.0
    if not variance > 0 or not math.isfinite(variance):
        variance = 1.0
    spec = ItemFeatureSpec(
        name=name,
        kind=kind,
        width=rows.width,
        mean=mean,
        variance=variance,
        coverage=_coverage(rows),
    )
    return spec, rows


def _coverage(rows: RaggedRows) -> float:
    """The share of catalogue items (row 0 excluded) with a value."""
    items = rows.row_lengths()[1:] > 0
    return float(items.mean()) if items.size else 0.0


def check_row_widths(
    name: str, widths: list[tuple[str, int]], table: ItemFeatureTable
) -> None:
    """Refuses a row of more than ``MAX_ROW_VALUES`` values; warns of rows
    far wider than the feature's others (``wide_row_warning``).

    Args:
        name: str. The feature.
        widths: list of ``(raw item id, number of values)``, the items
            with a value.
        table: the ``ItemFeatureTable`` read (its ``source`` and
            ``lines`` name the rows).

    Raises:
        DataError: a row holds more than ``MAX_ROW_VALUES`` values.

    Example:

    >>> table = ItemFeatureTable({"tags": "token_seq"}, {}, "shop.item",
    ...                          {"x": 7})
    >>> check_row_widths("tags", [("x", 100_001)], table)
    Traceback (most recent call last):
    ...
    tfrec_tricks.errors.DataError: shop.item:7: item 'x' holds 100,001 values of 'tags'; an item holds at most 100,000 values of a feature (MAX_ROW_VALUES): a column of text read as tokens? Shorten or drop that column
    """  # noqa: E501
    if not widths:
        return
    item, width = max(widths, key=lambda pair: pair[1])
    if width > MAX_ROW_VALUES:
        raise DataError(
            f"{_where(table, item)}: item {item!r} holds {width:,} values of "
            f"{name!r}; an item holds at most {MAX_ROW_VALUES:,} values of a "
            "feature (MAX_ROW_VALUES): a column of text read as tokens? "
            "Shorten or drop that column"
        )
    message = wide_row_warning(name, widths, table)
    if message:
        warnings.warn(message, UserWarning, stacklevel=3)


def wide_row_warning(
    name: str, widths: list[tuple[str, int]], table: ItemFeatureTable
) -> str:
    """The warning naming the rows far wider than the feature's others,
    or "" when there are none.

    A row is far wider when it holds more than ``WIDE_ROW_MINIMUM``
    values and more than ``WIDE_ROW_FACTOR`` times the 99th percentile of
    the feature's row lengths (over the items with a value). Its storage
    and cost are only its own values, but the mean of so many embeddings
    says little about the item: more often the sign of a wrong column.

    Example:

    >>> table = ItemFeatureTable({"tags": "token_seq"}, {}, "shop.item",
    ...                          {"a": 2, "b": 3})
    >>> print(wide_row_warning("tags", [("a", 20_000)] + [("b", 5)] * 99,
    ...                        table))
    shop.item:2: item 'a' holds 20,000 values of 'tags', far more than the other items (median 5, 99th percentile 5); its storage and cost are its own values, but the mean of so many embeddings says little about the item: check the column
    >>> wide_row_warning("tags", [("a", 37)] + [("b", 5)] * 99, table)
    ''
    """  # noqa: E501
    lengths = np.asarray([width for _, width in widths], np.int64)
    median, p99 = np.percentile(lengths, [50, 99], method="lower")
    limit = max(WIDE_ROW_MINIMUM, WIDE_ROW_FACTOR * int(p99))
    wide = sorted(
        ((width, item) for item, width in widths if width > limit),
        reverse=True,
    )
    if not wide:
        return ""
    named = "; ".join(
        f"{_where(table, item)}: item {item!r} holds {width:,} values of "
        f"{name!r}"
        for width, item in wide[:3]
    )
    more = f" (and {len(wide) - 3} more such items)" if len(wide) > 3 else ""
    return (
        f"{named}{more}, far more than the other items (median "
        f"{int(median):,}, 99th percentile {int(p99):,}); its storage and "
        "cost are its own values, but the mean of so many embeddings says "
        "little about the item: check the column"
    )


def _where(table: ItemFeatureTable, item: str) -> str:
    """``file:line`` of ``item``'s row, or what ``table`` knows of it."""
    source = table.source or "the item table"
    line = table.lines.get(item)
    return f"{source}:{line}" if line else source
