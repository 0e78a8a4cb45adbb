"""Type checks of dataclass fields against their annotations.

Configs arrive from JSON files (``--config``, a run's ``config.json``,
KerasTuner's best configuration) as well as from Python: a string where an
int belongs must be named, not fail later inside TensorFlow.
"""

import dataclasses
import numbers
import types
import typing
from typing import Any

import numpy as np


def describe_type(annotation: Any) -> str:
    """A reader's name for an annotation: ``int | None`` -> "int or null"."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(
            "null" if arg is type(None) else describe_type(arg)
            for arg in typing.get_args(annotation)
        )
    if origin in (tuple, list):
        item = typing.get_args(annotation)[0]
        return f"a list of {describe_type(item)}"
    if annotation is float:
        return "a number"
    if annotation is dict:
        return "an object"
    return getattr(annotation, "__name__", str(annotation))


def value_has_type(value: Any, annotation: Any) -> bool:
    """Whether ``value`` (as JSON or Python gives it) fits ``annotation``.

    An int fits ``float``; a bool fits only ``bool``; a list or tuple fits
    ``tuple[X, ...]`` when each element fits ``X``.
    """
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(
            value_has_type(value, a) for a in typing.get_args(annotation)
        )
    if origin in (tuple, list):
        item = typing.get_args(annotation)[0]
        return isinstance(value, (list, tuple)) and all(
            value_has_type(v, item) for v in value
        )
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, (bool, np.bool_))
    if isinstance(value, (bool, np.bool_)):
        return False
    if annotation is int:
        return isinstance(value, numbers.Integral)
    if annotation is float:
        return isinstance(value, numbers.Real)
    return isinstance(value, annotation)


def check_field_types(instance: Any, names: Any = None) -> None:
    """Raises ValueError naming the first field whose value has a wrong type.

    Args:
        instance: a dataclass instance.
        names: the fields to check. Defaults to all of them.
    """
    fields = {f.name: f for f in dataclasses.fields(instance)}
    for name in names or fields:
        annotation = fields[name].type
        value = getattr(instance, name)
        if not value_has_type(value, annotation):
            raise ValueError(
                f"`{name}` must be {describe_type(annotation)}. "
                f"Received: {name}={value!r}"
            )
