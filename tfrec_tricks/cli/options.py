"""Flags generated from the config dataclasses' fields, and back.

Each field of ``TrainConfig`` and ``ModelConfig`` is declared once with
``tfrec_tricks.config_fields.option`` (default, help, range); this module
turns the declarations into argparse arguments, so a default or a help text
is never written twice, and turns parsed arguments back into a
``TrainConfig`` (``train_config``).

The sub-commands (``train``, ``ablation``, ``tune``, ...) and the parser
that gathers them all import their shared helpers from here, never from
one another: ``parser`` imports the sub-commands, so a sub-command that
imported ``parser`` back would close a cycle.
"""

import argparse
import dataclasses
import types
import typing
from typing import Any

from tfrec_tricks.config_fields import (
    CHECKS,
    check_finite,
    field_default,
)
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.training.train_config import TrainConfig

GROUP_TITLES = {
    "data": "data",
    "training": "training",
    "output": "output",
    "model": "model (unset options keep the defaults shown, or --config's "
    "values)",
}


def _number(kind: type, check: str | None):
    """An argparse type: ``kind`` (int or float) within ``CHECKS[check]``.

    A float must be finite within float32's range (``check_finite``):
    ``nan``, ``inf``, ``-inf`` and ``1e39`` are refused.
    """
    word = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {word}, got {text!r}"
            ) from None
        if kind is float:
            try:
                value = check_finite("value", value)
            except ValueError as error:
                # "value must be a finite number (...). Received: ..."
                rule = str(error).split(". Received:")[0]
                raise argparse.ArgumentTypeError(
                    f"{rule.removeprefix('value ')}, got {text!r}"
                ) from None
        if check is not None:
            holds, rule = CHECKS[check]
            if not holds(value):
                rule = rule.replace("must be ", "")
                raise argparse.ArgumentTypeError(f"must be {rule}, got {value}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _validated(validate):
    """An argparse type from a function that raises ValueError."""

    def parse(text: str):
        try:
            return validate(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = validate.__name__
    return parse


def int_list(text: str) -> tuple[int, ...]:
    """``"20,100"`` -> ``(20, 100)``; ``"none"`` or ``""`` -> ``()``."""
    if text.strip().lower() in ("none", ""):
        return ()
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return values


def _scalar_type(annotation: Any) -> Any:
    """``int | None`` -> ``int``; other annotations unchanged."""
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        return annotation
    return next(a for a in typing.get_args(annotation) if a is not type(None))


def _help(field: dataclasses.Field, default: Any, settings: dict) -> str:
    """The field's help and its default, or a switch's own help."""
    if "const" in settings:
        return (
            f"{settings.pop('switch_help')} (sets {field.name}="
            f"{settings['const']!r})"
        )
    shown = settings.pop("default_text", None)
    if shown is None and default is None:
        return field.metadata["help"]
    if shown is None:
        if isinstance(default, bool):
            shown = "on" if default else "off"
        elif isinstance(default, tuple):
            shown = ",".join(map(str, default)) or "none"
        else:
            shown = default
    return f"{field.metadata['help']} Default: {shown}".strip()


def add_field_arguments(
    parser: argparse.ArgumentParser,
    cls: type,
    groups: dict,
    unset_defaults: bool = False,
    only_groups: tuple[str, ...] | None = None,
    skip: tuple[str, ...] = (),
) -> list[str]:
    """Adds a flag for every field of ``cls`` declared with ``cli=True``.

    Args:
        parser: the command's parser.
        cls: ``TrainConfig`` or ``ModelConfig``.
        groups: group name -> argparse argument group, filled as needed.
        unset_defaults: leave each flag's default None (the field's default
            then shows only in the help), so that a ``--config`` file's
            values survive unset flags.
        only_groups: the groups to add (``("data",)`` for ``prepare``);
            None adds all.
        skip: names of fields to leave out.

    Returns:
        The names of the fields that got a flag (each flag's ``dest``).
    """
    names = []
    for field in dataclasses.fields(cls):
        if not field.metadata.get("cli"):
            continue
        settings = dict(field.metadata["flag"])
        group_name = settings.pop("group", "model")
        if field.name in skip or (
            only_groups is not None and group_name not in only_groups
        ):
            continue
        if group_name not in groups:
            groups[group_name] = parser.add_argument_group(
                GROUP_TITLES[group_name]
            )
        default = field_default(cls, field.name)
        flag = settings.pop("flag", "--" + field.name.replace("_", "-"))
        kwargs = {
            "dest": field.name,
            "help": _help(field, default, settings),
            "default": None if unset_defaults else default,
        }
        kind = _scalar_type(field.type)
        check = field.metadata.get("check")
        validate = settings.pop("validate", None)
        if validate is not None:
            kwargs["type"] = _validated(validate)
        elif "const" in settings:
            kwargs.update(action="store_const", const=settings.pop("const"))
        elif kind is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif typing.get_origin(kind) is tuple:
            item = typing.get_args(kind)[0]
            if item is int:
                kwargs["type"] = int_list
        elif kind in (int, float):
            kwargs["type"] = _number(kind, check)
        kwargs.update(settings)
        groups[group_name].add_argument(flag, **kwargs)
        names.append(field.name)
    return names


positive_int = _number(int, "positive")
positive_float = _number(float, "positive")
non_negative_int = _number(int, "non_negative")
#: An argparse type: a finite float >= 0.
non_negative_float = _number(float, "non_negative")
probability = _number(float, "probability")


def flagged_fields(cls: type) -> list[str]:
    """Names of the fields of ``cls`` that have a flag."""
    return [f.name for f in dataclasses.fields(cls) if f.metadata.get("cli")]


def train_config(args: argparse.Namespace) -> TrainConfig:
    """The ``TrainConfig`` of parsed train / ablation / tune options."""
    model = dict(args.config_model)
    model.update(
        {
            name: getattr(args, name)
            for name in flagged_fields(ModelConfig)
            if getattr(args, name) is not None
        }
    )
    train = {
        name: getattr(args, name)
        for name in flagged_fields(TrainConfig)
        if hasattr(args, name)
    }
    return TrainConfig(**train, model=model)


def add_overwrite_argument(parser: argparse.ArgumentParser) -> None:
    """``--overwrite`` of ``train`` and ``ablation``."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="discard what OUTPUT_DIR/NAME holds (a finished run, or a run "
        "with other settings) and train afresh. Without it, the same "
        "settings resume an interrupted run or reuse a finished one, and "
        "other settings are refused",
    )
