"""The checks of item features: their descriptions and their values.

``ItemFeatureEncoder`` takes feature descriptions (``check_features``)
and each item's values (``checked_rows``, ``checked_id_known``); every
check raises a ``ValueError`` that names the feature and what was
received.
"""

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from tfrec_tricks.data.item_features.feature_kind_registry import (
    FEATURE_KINDS,
    FLOAT_KINDS,
    SCALAR_KINDS,
    TOKEN_KINDS,
)
from tfrec_tricks.data.item_features.ragged_rows import RaggedRows
from tfrec_tricks.layers.common import is_integer

_FEATURE_KEYS = (
    "name",
    "kind",
    "width",
    "vocabulary_size",
    "mean",
    "variance",
    "num_values",
)
# A feature name is part of weight and layer names.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _feature_error(index: int, message: str, received: str) -> ValueError:
    return ValueError(f"features[{index}]: {message}. Received: {received}")


def check_feature(index: int, feature: Any) -> dict:
    """One feature description, checked and completed (plain JSON types).

    Args:
        index: int. Its position in ``features`` (for the messages).
        feature: dict with ``name``, ``kind``, ``width`` and, as needed,
            ``vocabulary_size`` (token kinds), ``mean`` and ``variance``
            (float kinds; default 0.0 and 1.0), and optionally
            ``num_values`` (the values stored: ragged tables).

    Returns:
        A new dict with all of ``name, kind, width, vocabulary_size, mean,
        variance``, and ``num_values`` when given.

    Raises:
        ValueError: a key is missing or unknown, or a value is wrong.
    """
    if not isinstance(feature, Mapping):
        raise _feature_error(
            index, "a feature is a dict", f"{type(feature).__name__}"
        )
    unknown = sorted(set(feature) - set(_FEATURE_KEYS))
    missing = [key for key in ("name", "kind", "width") if key not in feature]
    if unknown or missing:
        raise _feature_error(
            index,
            f"a feature has keys {_FEATURE_KEYS} (name, kind and width "
            "required)",
            f"keys={sorted(feature)}",
        )
    name, kind, width = feature["name"], feature["kind"], feature["width"]
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _feature_error(
            index,
            "`name` must be letters, digits, '_', '.' or '-', starting with "
            "a letter or digit",
            f"name={name!r}",
        )
    if kind not in FEATURE_KINDS:
        raise _feature_error(
            index, f"`kind` must be one of {FEATURE_KINDS}", f"kind={kind!r}"
        )
    if not is_integer(width) or width < 1:
        raise _feature_error(
            index, "`width` must be an int >= 1", f"width={width!r}"
        )
    if kind in SCALAR_KINDS and width != 1:
        several = f"{kind}_seq"
        hint = (
            f" (use {several!r} for several)"
            if several in FEATURE_KINDS
            else ""
        )
        raise _feature_error(
            index,
            f"kind {kind!r} has one value per item, so width 1{hint}",
            f"width={width!r}",
        )
    size = feature.get("vocabulary_size", 0)
    if kind in TOKEN_KINDS and (not is_integer(size) or size < 2):
        raise _feature_error(
            index,
            "a token feature needs `vocabulary_size`, an int >= 2 (id 0 is "
            "padding, 1 out-of-vocabulary)",
            f"vocabulary_size={size!r}",
        )
    if kind in FLOAT_KINDS and size != 0:
        raise _feature_error(
            index,
            "a float feature has no vocabulary: `vocabulary_size` is 0",
            f"vocabulary_size={size!r}",
        )
    mean, variance = feature.get("mean", 0.0), feature.get("variance", 1.0)
    try:
        mean, variance = float(mean), float(variance)
    except (TypeError, ValueError):
        mean = variance = float("nan")
    if not np.isfinite(mean) or not np.isfinite(variance) or variance < 0:
        raise _feature_error(
            index,
            "`mean` must be a finite float and `variance` a finite float >= 0",
            f"mean={feature.get('mean')!r}, "
            f"variance={feature.get('variance')!r}",
        )
    checked = {
        "name": name,
        "kind": kind,
        "width": int(width),
        "vocabulary_size": int(size),
        "mean": mean,
        "variance": variance,
    }
    if "num_values" in feature:
        num_values = feature["num_values"]
        if not is_integer(num_values) or num_values < 0:
            raise _feature_error(
                index,
                "`num_values` (the values stored) must be an int >= 0",
                f"num_values={num_values!r}",
            )
        checked["num_values"] = int(num_values)
    return checked


def check_features(features: Any) -> list:
    """`check_feature` of each of ``features``; names must be unique."""
    if isinstance(features, (str, bytes, Mapping)) or not isinstance(
        features, (list, tuple)
    ):
        raise ValueError(
            "`features` must be a list of dicts. "
            f"Received: features={features!r}"
        )
    checked = [check_feature(i, f) for i, f in enumerate(features)]
    names = [f["name"] for f in checked]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(
            "Feature names must be unique. "
            f"Received: features with names {repeated} more than once"
        )
    ragged = ["num_values" in f for f in checked]
    if any(ragged) and not all(ragged):
        raise ValueError(
            "Either every feature gives `num_values` (ragged tables) or none "
            "does (padded tables). Received: num_values for "
            f"{[n for n, r in zip(names, ragged) if r]} only"
        )
    return checked


def checked_rows(
    feature: dict, value: Any, num_items: int, ragged: bool
) -> RaggedRows:
    """``value`` as the feature's ``RaggedRows``; ValueError if it cannot
    be (see ``ItemFeatureEncoder.set_item_values``)."""
    name = feature["name"]
    token = feature["kind"] in TOKEN_KINDS
    if isinstance(value, tuple) or hasattr(value, "row_splits"):
        rows = _given_rows(name, value, num_items)
    else:
        array = np.asarray(value)
        if not ragged and array.shape != (num_items, feature["width"]):
            raise ValueError(
                f"`values['{name}']` must have shape "
                f"{(num_items, feature['width'])} (num_items, width). "
                f"Received: shape={array.shape}"
            )
        if array.ndim != 2 or array.shape[0] != num_items:
            raise ValueError(
                f"`values['{name}']` must be ragged (values, row_splits) or "
                f"padded [num_items={num_items}, width]. Received: "
                f"shape={array.shape}"
            )
        _check_dtype(name, token, array.dtype)
        rows = RaggedRows.from_dense(array)
    _check_dtype(name, token, rows.values.dtype)
    if token:
        size = feature["vocabulary_size"]
        bad = rows.values[(rows.values < 1) | (rows.values >= size)]
        if bad.size:
            raise ValueError(
                f"`values['{name}']` must be ids in [1, {size}) (0 is "
                f"padding; vocabulary_size {size}). Received: an id "
                f"{int(bad[0])}"
            )
        rows = RaggedRows(rows.values.astype(np.int32), rows.row_splits)
    else:
        if not np.isfinite(rows.values).all():
            raise ValueError(
                f"`values['{name}']` holds a NaN or infinite value among its "
                "ragged values; leave a missing value out of its row"
            )
        rows = RaggedRows(rows.values.astype(np.float32), rows.row_splits)
    widest = int(rows.row_lengths().max(initial=0))
    if widest > feature["width"]:
        raise ValueError(
            f"`values['{name}']`: a row holds {widest} values, more than the "
            f"feature's width {feature['width']}. Received: item "
            f"{int(rows.row_lengths().argmax())}"
        )
    if ragged and rows.values.size != feature["num_values"]:
        raise ValueError(
            f"`values['{name}']` must hold num_values={feature['num_values']} "
            f"values (the size of the layer's table). Received: "
            f"{rows.values.size} values"
        )
    return rows


def _given_rows(name: str, value: Any, num_items: int) -> RaggedRows:
    """Ragged ``(values, row_splits)`` (or an object with both) as
    ``RaggedRows`` of ``num_items`` rows; ValueError if they are not."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(
                f"`values['{name}']` as a tuple is (values, row_splits). "
                f"Received: a tuple of {len(value)}"
            )
        flat, splits = value
    else:
        flat, splits = value.values, value.row_splits
    flat, splits = np.asarray(flat), np.asarray(splits)
    if splits.shape != (num_items + 1,):
        raise ValueError(
            f"`values['{name}']`: row_splits must have shape "
            f"({num_items + 1},) (num_items + 1). Received: "
            f"shape={splits.shape}"
        )
    try:
        return RaggedRows(flat, splits)
    except ValueError as error:
        raise ValueError(f"`values['{name}']`: {error}") from None


def _check_dtype(name: str, token: bool, dtype: Any) -> None:
    """Refuses non-integer ids (token kinds) and non-numbers (floats)."""
    if token and not np.issubdtype(dtype, np.integer):
        raise ValueError(
            f"`values['{name}']` must be integer ids (a token feature). "
            f"Received: dtype={dtype}"
        )
    if not token and (
        np.dtype(dtype) == np.bool_
        or not (
            np.issubdtype(dtype, np.floating)
            or np.issubdtype(dtype, np.integer)
        )
    ):
        raise ValueError(
            f"`values['{name}']` must be numbers (a float feature, NaN for "
            f"no value). Received: dtype={dtype}"
        )


def padded_table(rows: RaggedRows, width: int, dtype: Any) -> np.ndarray:
    """``rows`` as a padded ``[N, width]`` table (0 or NaN after a row)."""
    dense = rows.to_dense()
    padding = 0 if np.issubdtype(dtype, np.integer) else np.nan
    table = np.full((rows.num_rows, width), padding, dtype)
    table[:, : dense.shape[1]] = dense
    return table


def checked_id_known(id_known: Any, num_items: int) -> np.ndarray:
    """``id_known`` as float32 ``[num_items]`` of 0 and 1; else ValueError."""
    array = np.asarray(id_known)
    if array.shape != (num_items,):
        raise ValueError(
            f"`id_known` must have shape ({num_items},) (num_items). "
            f"Received: shape={array.shape}"
        )
    if (
        not (
            array.dtype == bool
            or np.issubdtype(array.dtype, np.integer)
            or np.issubdtype(array.dtype, np.floating)
        )
        or not np.isin(array, (0, 1)).all()
    ):
        raise ValueError(
            "`id_known` must hold 0 and 1 (or bools). Received: values "
            f"{sorted(set(np.unique(array).tolist()))[:5]}"
        )
    return array.astype(np.float32)
