"""Hyperparameter values: ``ModelConfig`` values as KerasTuner holds them,
and what a hyperparameter can take.

KerasTuner's hyperparameters hold booleans, numbers and strings only: the
tuple fields of ``ModelConfig`` are comma-joined strings, ``NONE`` for the
empty tuple.

Example:

>>> encode_value("cpr_reranker_ks", (20, 100))
'20,100'
>>> decode_value("cpr_reranker_ks", "20,100")
(20, 100)
>>> decode_value("features", NONE)
()
"""

from typing import Any

# Fields whose value is a tuple; as hyperparameters they are comma-joined
# strings, "none" for the empty tuple. ``item_feature_set`` (the item
# attributes a search fuses, search_space.ITEM_FEATURE_SET) is no
# ModelConfig field but is held alike.
TUPLE_FIELDS = ("cpr_reranker_ks", "features", "item_feature_set")
NONE = "none"


def encode_value(name: str, value: Any) -> Any:
    """A ModelConfig value as a hyperparameter value (tuples as strings).

    Args:
        name: str. The ``ModelConfig`` field.
        value: its value.

    Returns:
        ``value``, or for a tuple field its comma-joined string.
    """
    if name in TUPLE_FIELDS and not isinstance(value, str):
        return ",".join(str(v) for v in value) or NONE
    return value


def decode_value(name: str, value: Any) -> Any:
    """A hyperparameter value as a ModelConfig value (see ``encode_value``).

    Args:
        name: str. The ``ModelConfig`` field.
        value: its hyperparameter value.

    Returns:
        ``value``, or for a tuple field the tuple (of ints for
        ``cpr_reranker_ks``, of names for the others).
    """
    if name not in TUPLE_FIELDS:
        return value
    if value in (NONE, ""):
        return ()
    parts = [part.strip() for part in str(value).split(",")]
    return (
        tuple(int(p) for p in parts)
        if name == "cpr_reranker_ks"
        else tuple(parts)
    )


def listed_values(hp: Any) -> list:
    """The values of a hyperparameter to check: every choice, both ends of
    a range.

    Args:
        hp: a KerasTuner hyperparameter (``Fixed``, ``Boolean``,
            ``Choice``, ``Int`` or ``Float``).

    Returns:
        list of values.
    """
    kind = type(hp).__name__
    if kind == "Fixed":
        return [hp.value]
    if kind == "Boolean":
        return [False, True]
    if kind == "Choice":
        return list(hp.values)
    return [hp.min_value, hp.max_value]


def value_count(hp: Any) -> float:
    """How many values a hyperparameter can take (inf for a float range).

    Args:
        hp: a KerasTuner hyperparameter.

    Returns:
        The count; ``float("inf")`` for a ``Float`` range.
    """
    kind = type(hp).__name__
    if kind == "Fixed":
        return 1
    if kind == "Boolean":
        return 2
    if kind == "Choice":
        return len(hp.values)
    if hp.max_value == hp.min_value:
        return 1
    if kind == "Int":
        return (hp.max_value - hp.min_value) // (hp.step or 1) + 1
    return float("inf")
