"""Config fields declared once: default, help, range, and command-line flag.

``TrainConfig`` and ``ModelConfig`` declare each field with ``option``: its
default, its help text and its range (``check``). From that one
declaration come the dataclass's validation (``check_fields``), its
docstring's Attributes section (``document_fields``), and the
``tfrec-tricks`` flags (``tfrec_tricks.cli.options``).

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


FLOAT32_MAX = float(np.finfo(np.float32).max)


def check_finite(name: str, value: Any) -> float:
    """Returns ``value`` as a float, or raises if it is not a finite number.

    The model trains in float32, so a value beyond float32's range (such as
    ``1e39``, which becomes ``inf`` there) counts as non-finite too.

    Args:
        name: str. The option's name, for the message.
        value: the value to check (a number or a string Python's ``float``
            reads).

    Returns:
        The value as a float.

    Raises:
        ValueError: ``"learning_rate must be a finite number. Received:
            learning_rate=inf"``.

    Example:

    >>> check_finite("learning_rate", 0.001)
    0.001
    >>> check_finite("rate", float("inf"))
    Traceback (most recent call last):
    ...
    ValueError: rate must be a finite number. Received: rate=inf
    >>> check_finite("rate", "nan")
    Traceback (most recent call last):
    ...
    ValueError: rate must be a finite number. Received: rate=nan
    >>> check_finite("rate", 1e39)  # inf in float32
    Traceback (most recent call last):
    ...
    ValueError: rate must be a finite number (float32 holds at most ...
    """
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"{name} must be a finite number. Received: {name}={value!r}"
        ) from None
    if not np.isfinite(number):
        raise ValueError(
            f"{name} must be a finite number. Received: {name}={number!r}"
        )
    if abs(number) > FLOAT32_MAX:
        raise ValueError(
            f"{name} must be a finite number (float32 holds at most "
            f"{FLOAT32_MAX:.4g} in magnitude). Received: {name}={number!r}"
        )
    return number


# check name -> (holds for a value, the rule a reader needs to fix it)
CHECKS = {
    "positive": (lambda v: v > 0, "must be positive"),
    "non_negative": (lambda v: v >= 0, "must be >= 0"),
    "probability": (lambda v: 0 <= v < 1, "must be in [0, 1)"),
    "at_least_one": (lambda v: v >= 1, "must be >= 1"),
}


def option(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    check: str | None = None,
    cli: bool = True,
    **flag: Any,
) -> Any:
    """A dataclass field with its help text, range and flag settings.

    Args:
        default: the default (a list or dict default is copied per
            instance).
        help: what the field means, for the docstring and ``--help``.
        check: a key of ``CHECKS``: the range every value must be in
            (each element of a tuple; None is always allowed when the
            annotation allows it).
        cli: whether ``tfrec-tricks`` has a flag for it.
        **flag: argparse settings beyond the defaults: ``flag`` (the flag
            name, default ``--field-name``), ``const`` (a switch storing
            this value), ``metavar``, ``choices``, ``nargs``,
            ``default_text`` (how ``--help`` shows the default).
    """
    metadata = {"help": help, "check": check, "cli": cli, "flag": flag}
    if isinstance(default, (list, dict)):
        value = default
        return dataclasses.field(
            default_factory=lambda: type(value)(value), metadata=metadata
        )
    return dataclasses.field(default=default, metadata=metadata)


def holds_floats(annotation: Any) -> bool:
    """Whether ``annotation`` is ``float`` or holds one (``float | None``,
    ``tuple[float, ...]``)."""
    if annotation is float:
        return True
    return any(holds_floats(a) for a in typing.get_args(annotation))


def check_fields(instance: Any, names: Any = None) -> None:
    """Checks types (``check_field_types``), finiteness and declared ranges.

    A number of a ``float`` field must be finite within float32's range
    (``check_finite``): NaN compares false with every bound, and inf or
    1e39 pass ``positive`` but train nothing.

    Raises:
        ValueError: ``"<field> must be positive. Received: <field>=0"``,
            ``"<field> must be a finite number. Received: <field>=inf"``.
    """
    check_field_types(instance, names)
    fields = {f.name: f for f in dataclasses.fields(instance)}
    for name in names or fields:
        kind = fields[name].metadata.get("check")
        value = getattr(instance, name)
        if value is None:
            continue
        if holds_floats(fields[name].type):
            values = value if isinstance(value, (tuple, list)) else (value,)
            for v in values:
                if isinstance(v, numbers.Real) and not isinstance(v, bool):
                    check_finite(name, v)
        if kind is None:
            continue
        holds, rule = CHECKS[kind]
        values = value if isinstance(value, (tuple, list)) else (value,)
        if not all(holds(v) for v in values):
            raise ValueError(f"{name} {rule}. Received: {name}={value!r}")


def check_choices(instance: Any) -> None:
    """Refuses a value outside its field's ``choices``: the values the
    field's flag takes, so that a ``--config`` file or Python
    (``tfrec_tricks.Recommender``) is held to what the command line is.

    Raises:
        ValueError: ``"optimizer must be one of ('adam', 'adagrad').
            Received: optimizer='sgd'"``.
    """
    for field in dataclasses.fields(instance):
        choices = field.metadata.get("flag", {}).get("choices")
        value = getattr(instance, field.name)
        if choices is None or value is None or value in tuple(choices):
            continue
        raise ValueError(
            f"{field.name} must be one of {tuple(choices)}. Received: "
            f"{field.name}={value!r}"
        )


def field_default(cls: Any, name: str) -> Any:
    """The default of field ``name`` of dataclass ``cls``."""
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return field.default


def document_fields(cls: Any) -> Any:
    """Appends an Attributes section built from the fields' help to the
    class docstring, so the help text is written once."""
    lines = ["", "    Attributes:"]
    for field in dataclasses.fields(cls):
        text = field.metadata.get("help")
        if not text:
            continue
        default = field_default(cls, field.name)
        shown = (
            "" if default is dataclasses.MISSING else f" Default: {default!r}."
        )
        lines.append(
            f"        {field.name}: {describe_type(field.type)}. {text}{shown}"
        )
    cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n" + "\n".join(lines) + "\n"
    return cls
