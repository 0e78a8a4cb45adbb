"""``--config FILE``: a run's config.json or tune's best configuration."""

import dataclasses
import json
from typing import Any

from tfrec_tricks.config_fields import (
    check_finite,
    describe_type,
    value_has_type,
)
from tfrec_tricks.errors import DataError
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.training.feature_selection import ALL_FEATURES
from tfrec_tricks.training.model_options import DERIVED_MODEL_FIELDS
from tfrec_tricks.training.train_config import TrainConfig

# Top-level keys of a config file: the options, and what ``train`` records
# beside them in config.json that a rerun does not take as an option:
# ``head_choice``, how ``--head auto`` chose the head (the chosen head is
# ``model.head``, so the file repeats the run it records).
OPTION_KEYS = ("train", "model")
RECORD_KEYS = ("head_choice",)
# An option a config file leaves unset.
_UNSET = object()


def load_config_file(path: str) -> dict:
    """Reads a run's config.json (or tune's best config) as option values.

    Accepts ``{"train": {...}, "model": {...}}`` (what ``train`` writes into
    its run directory and ``tune`` writes as its best configuration), and
    every other key ``train`` writes there (``RECORD_KEYS``: read past, not
    options). Keys and value types are checked here, value ranges by
    ``TrainConfig`` and ``ModelConfig``; every error names the file, and an
    unknown key by its name.

    Steps: read the file's bytes, parse them as JSON, take the training
    and model options out of the document, check their names and value
    types, then their value ranges.

    Raises:
        DataError: naming the file and what is wrong with it.
    """
    document = _parse_json(path, _read_bytes(path))
    values, model = _split_options(path, document)
    fields = _option_fields()
    for part, options in (("train", values), ("model", model)):
        _check_options(path, part, options, fields[part])
    _check_ranges(path, values, model)
    return {"train": values, "model": model}


def _read_bytes(path: str) -> bytes:
    """The file's contents; a DataError when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise DataError(f"Config file not found. Received: --config {path}")
    except OSError as error:
        raise DataError(
            f"Cannot read the config file ({error.strerror}). Received: "
            f"--config {path}"
        ) from None


def _parse_json(path: str, raw: bytes) -> Any:
    """``raw`` as a JSON document; a DataError naming the bad byte or line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(
            f"{path}: not a JSON text file (byte {error.start} is "
            f"{raw[error.start]:#04x}, not UTF-8). Received: --config {path}"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(
            f"{path}:{error.lineno}: not valid JSON ({error.msg})"
        ) from None


def _split_options(path: str, document: Any) -> tuple[dict, dict]:
    """The training options and the model options of ``document``.

    The model options are ``train.model`` updated with ``model``, without
    the fields derived from the data (``DERIVED_MODEL_FIELDS``).

    Raises:
        DataError: the document, ``train``, ``train.model`` or ``model``
            is not an object, or the document has other keys.
    """
    if not isinstance(document, dict):
        raise DataError(
            f"{path}: expected an object with 'train' and/or 'model'. "
            f"Received: {str(document)[:80]}"
        )
    unknown = sorted(set(document) - {*OPTION_KEYS, *RECORD_KEYS}, key=str)
    if unknown:
        raise DataError(
            f"{path}: expected an object with 'train' and/or 'model' (and "
            f"{list(RECORD_KEYS)}, which train records beside them); "
            f"unknown top-level keys {unknown}. Received keys: "
            f"{sorted(document, key=str)}"
        )
    for name in RECORD_KEYS:
        if name in document and not isinstance(document[name], dict):
            raise DataError(
                f"{path}: '{name}' must be an object, as train writes it. "
                f"Received: {name}={str(document[name])[:80]}"
            )
    train = document.get("train", {})
    if not isinstance(train, dict):
        raise DataError(
            f"{path}: 'train' must be an object of training options. "
            f"Received: train={str(train)[:80]}"
        )
    values = dict(train)
    parts = {
        "train.model": values.pop("model", None),
        "model": document.get("model"),
    }
    for where, part in parts.items():
        if part is not None and not isinstance(part, dict):
            raise DataError(
                f"{path}: '{where}' must be an object of model options. "
                f"Received: {where}={str(part)[:80]}"
            )
    model = {**(parts["train.model"] or {}), **(parts["model"] or {})}
    features = _features(parts["train.model"], parts["model"] or {}, values)
    model.pop("features", None)
    if features is not _UNSET:
        model["features"] = features
    for name in DERIVED_MODEL_FIELDS:
        model.pop(name, None)
    return values, model


def _features(given: dict | None, resolved: dict, train: dict) -> Any:
    """The ``features`` option of a config file, or ``_UNSET``.

    A run's resolved model (``model``) lists the features it read from
    its data: the float per-interaction ones in ``features``, the token
    ones in ``token_features``, the item attributes in ``item_features``.
    Its ``train.model`` holds the ``features`` it was given. The two name
    the same features spelled two ways (``all``, or nothing for every
    attribute of ``--item-features``, against the names selected), and
    the run's fingerprint records the given one: kept when the resolved
    lists are what it selects, the file repeats the run as it was
    started. The resolved names are asked for when they contradict it (an
    edited file) or when the file records nothing given.

    Args:
        given: the document's ``train.model``, or None.
        resolved: the document's ``model``.
        train: the document's training options.

    Returns:
        The ``features`` value to give (its type checked by the caller),
        or ``_UNSET``: leave it unset.
    """
    floats = resolved.get("features", [])
    if not _names(floats):
        return floats  # refused by the type check, as written
    tokens, items = (
        [
            f["name"]
            for f in resolved.get(key) or ()
            if isinstance(f, dict) and isinstance(f.get("name"), str)
        ]
        for key in ("token_features", "item_features")
    )
    requested = _UNSET if given is None else given.get("features", _UNSET)
    if given is not None and _selects(
        requested, floats, tokens, items, train.get("item_features")
    ):
        return requested
    if "features" not in resolved and not tokens + items:
        return requested
    if "features" not in resolved and _names(requested):
        floats = requested
    return [*floats, *tokens, *items]


def _names(value: Any) -> bool:
    """Whether ``value`` is a list of str (a JSON ``features``)."""
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _selects(
    requested: Any,
    floats: list,
    tokens: list,
    items: list,
    item_file: Any,
) -> bool:
    """Whether ``requested`` (a run's given ``features``, or ``_UNSET``)
    selects what its resolved model lists, as ``select_features`` does:
    nothing reads no per-interaction feature and every attribute of
    ``--item-features``; ``all`` every feature (the data's names are not
    known here: any); names those features, the float ones in order."""
    if requested is _UNSET:
        requested = []
    if not _names(requested):
        return False
    if not requested:
        return not floats and not tokens and (not items or bool(item_file))
    if ALL_FEATURES in requested:
        return True
    in_order = [name for name in requested if name in floats]
    return set(requested) == {*floats, *tokens, *items} and in_order == floats


def _option_fields() -> dict[str, dict[str, Any]]:
    """The field types a file may set, by part ("train", "model")."""
    return {
        "train": {f.name: f.type for f in dataclasses.fields(TrainConfig)},
        "model": {
            f.name: f.type
            for f in dataclasses.fields(ModelConfig)
            if f.name not in DERIVED_MODEL_FIELDS
        },
    }


def _check_options(
    path: str, part: str, options: dict, fields: dict[str, Any]
) -> None:
    """Checks the names of one part's options, then each value's type.

    Raises:
        DataError: an unknown name (``model`` included), or a value of the
            wrong type or not finite.
    """
    known = {n: t for n, t in fields.items() if n != "model"}
    unknown = sorted(set(options) - set(known))
    if unknown:
        label = "training" if part == "train" else "model"
        raise DataError(
            f"{path}: unknown {label} options {unknown}. Known: {sorted(known)}"
        )
    for name, value in options.items():
        _check_value(path, part, name, value, known[name])


def _check_value(
    path: str, part: str, name: str, value: Any, field_type: Any
) -> None:
    """Checks that ``value`` (or each entry of a list) has the field's type
    and is finite."""
    if not value_has_type(value, field_type):
        raise DataError(
            f"{path}: {part}.{name} must be "
            f"{describe_type(field_type)}. Received: "
            f"{name}={value!r}"
        )
    # Python's json reads NaN, Infinity and -Infinity; 1e39 is inf in
    # float32.
    entries = value if isinstance(value, list) else [value]
    for number in entries:
        if isinstance(number, float):
            try:
                check_finite(f"{part}.{name}", number)
            except ValueError as error:
                raise DataError(f"{path}: {error}") from None


def _check_ranges(path: str, values: dict, model: dict) -> None:
    """Checks the value ranges with ``TrainConfig`` and ``ModelConfig``."""
    # The catalogue size is not known yet, so reranker sizes are checked
    # against the data later.
    try:
        TrainConfig(**values)
        ModelConfig(num_items=2**31 - 1, **model)
    except ValueError as error:
        raise DataError(f"{path}: {error}") from None
