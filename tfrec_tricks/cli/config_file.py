"""``--config FILE``: a run's config.json or tune's best configuration."""

import dataclasses
import json

from tfrec_tricks.config_fields import (
    check_finite,
    describe_type,
    value_has_type,
)
from tfrec_tricks.errors import DataError
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.runs.train_config import DERIVED_MODEL_FIELDS, TrainConfig


def load_config_file(path: str) -> dict:
    """Reads a run's config.json (or tune's best config) as option values.

    Accepts ``{"train": {...}, "model": {...}}`` (what ``train`` writes into
    its run directory and ``tune`` writes as its best configuration). Keys
    and value types are checked here, value ranges by ``TrainConfig`` and
    ``ModelConfig``; every error names the file.

    Raises:
        DataError: naming the file and what is wrong with it.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        raise DataError(f"Config file not found. Received: --config {path}")
    except OSError as error:
        raise DataError(
            f"Cannot read the config file ({error.strerror}). Received: "
            f"--config {path}"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(
            f"{path}: not a JSON text file (byte {error.start} is "
            f"{raw[error.start]:#04x}, not UTF-8). Received: --config {path}"
        ) from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise DataError(
            f"{path}:{error.lineno}: not valid JSON ({error.msg})"
        ) from None
    if not isinstance(document, dict) or not (
        set(document) <= {"train", "model"}
    ):
        raise DataError(
            f"{path}: expected an object with 'train' and/or 'model'. "
            f"Received: {str(document)[:80]}"
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
    for name in DERIVED_MODEL_FIELDS:
        model.pop(name, None)
    fields = {
        "train": {f.name: f.type for f in dataclasses.fields(TrainConfig)},
        "model": {
            f.name: f.type
            for f in dataclasses.fields(ModelConfig)
            if f.name not in DERIVED_MODEL_FIELDS
        },
    }
    for part, options in (("train", values), ("model", model)):
        known = {n: t for n, t in fields[part].items() if n != "model"}
        unknown = sorted(set(options) - set(known))
        if unknown:
            label = "training" if part == "train" else "model"
            raise DataError(
                f"{path}: unknown {label} options {unknown}. Known: "
                f"{sorted(known)}"
            )
        for name, value in options.items():
            if not value_has_type(value, known[name]):
                raise DataError(
                    f"{path}: {part}.{name} must be "
                    f"{describe_type(known[name])}. Received: "
                    f"{name}={value!r}"
                )
            # Python's json reads NaN, Infinity and -Infinity; 1e39 is
            # inf in float32.
            entries = value if isinstance(value, list) else [value]
            for number in entries:
                if isinstance(number, float):
                    try:
                        check_finite(f"{part}.{name}", number)
                    except ValueError as error:
                        raise DataError(f"{path}: {error}") from None
    # Value ranges, with the file named; the catalogue size is not known
    # yet, so reranker sizes are checked against the data later.
    try:
        TrainConfig(**values)
        ModelConfig(num_items=2**31 - 1, **model)
    except ValueError as error:
        raise DataError(f"{path}: {error}") from None
    return {"train": values, "model": model}
