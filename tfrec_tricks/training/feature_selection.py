"""Which features a run reads: ``--features`` against what the data has.

A run's data offers two kinds of features: per interaction (the time gap,
a rating, any ``float`` column of an interaction file, and the
categorical ``token`` columns: the history's positions carry them) and
per item (the attributes of ``--item-features``
or of a built-in dataset's metadata, ``movielens_item_features``).
``--features`` names either kind, or ``all``; without it a run reads no
per-interaction feature and, when ``--item-features`` is given, every
item feature of the file.
"""

import dataclasses
from collections.abc import Sequence

#: ``--features all``: every feature the data has.
ALL_FEATURES = "all"


@dataclasses.dataclass(frozen=True)
class FeatureSelection:
    """The features a run reads, by kind.

    Attributes:
        position: names of per-interaction features (``ModelConfig.
            features``).
        item: names of item features (``ItemFeatures``).
        token: names of categorical per-interaction features
            (``ModelConfig.token_features``).
    """

    position: tuple[str, ...] = ()
    item: tuple[str, ...] = ()
    token: tuple[str, ...] = ()


def select_features(
    requested: Sequence[str],
    position_available: Sequence[str],
    item_available: Sequence[str],
    items_by_default: bool = False,
    token_available: Sequence[str] = (),
    item_source: str = "the item attributes",
) -> FeatureSelection:
    """The features ``--features`` selects.

    Args:
        requested: the names given (``ModelConfig.features`` of the run's
            options), possibly ``ALL_FEATURES``.
        position_available: the per-interaction features of the data.
        item_available: the item features of the data (empty without).
        items_by_default: with nothing requested, take every item feature
            (``--item-features`` was given).
        token_available: the categorical per-interaction features of the
            data (``token`` columns).
        item_source: str. Where the item features come from (the
            ``.item`` file), for messages. Defaults to "the item
            attributes".

    Returns:
        A ``FeatureSelection``, each kind in the data's order.

    Raises:
        ValueError: a name the data does not have (the message lists what
            it has), ``ALL_FEATURES`` given with names (the names would
            be ignored), or a name selected both as an item feature and as
            a per-interaction feature (``check_one_meaning``).

    Example:

    >>> select_features(["genres"], ["time_gap"], ["genres", "year"])
    FeatureSelection(position=(), item=('genres',), token=())
    >>> select_features(["all"], ["time_gap"], ["genres"]).position
    ('time_gap',)
    >>> select_features([], [], ["genres"], items_by_default=True).item
    ('genres',)
    """
    requested = tuple(requested)
    if ALL_FEATURES in requested and len(set(requested)) > 1:
        raise ValueError(
            f"--features takes feature names, or '{ALL_FEATURES}' alone "
            f"(it takes every feature: the names beside it would be "
            f"ignored). Received: --features {' '.join(requested)}"
        )
    if ALL_FEATURES in requested:
        selection = FeatureSelection(
            tuple(position_available),
            tuple(item_available),
            tuple(token_available),
        )
        check_one_meaning(selection, requested, item_source)
        return selection
    if not requested:
        return FeatureSelection((), tuple(item_available) * items_by_default)
    known = {*position_available, *item_available, *token_available}
    unknown = [name for name in requested if name not in known]
    if unknown:
        per_interaction = [
            *position_available,
            *(f"{name} (token)" for name in token_available),
        ]
        raise ValueError(
            f"--features names {', '.join(map(repr, unknown))}, which the "
            "data does not have. It has, per interaction: "
            f"{', '.join(per_interaction) or 'none'}; per item: "
            f"{', '.join(item_available) or 'none'} (give the item "
            f"attributes with --item-features FILE.item; '{ALL_FEATURES}' "
            f"takes every feature). Received: --features {' '.join(requested)}"
        )
    selection = FeatureSelection(
        tuple(n for n in position_available if n in requested),
        tuple(n for n in item_available if n in requested),
        tuple(n for n in token_available if n in requested),
    )
    check_one_meaning(selection, requested, item_source)
    return selection


def check_one_meaning(
    selection: FeatureSelection,
    requested: Sequence[str],
    item_source: str = "the item attributes",
) -> None:
    """Refuses a name selected both per item and per interaction.

    A model's inputs are named by their features, so an item column named
    like a per-interaction feature of the data (``time_gap``, a ``rating``
    or ``device`` column) cannot be read beside it. Without ``--features``
    no per-interaction feature is read, and such a column is no clash.

    Raises:
        ValueError: naming the names, ``item_source`` and the way out.

    Example:

    >>> check_one_meaning(
    ...     FeatureSelection(("time_gap",), ("time_gap",)), ["all"],
    ...     "shop.item")
    Traceback (most recent call last):
    ...
    ValueError: --features all selects 'time_gap' twice: a column of shop.item (an item feature) and a per-interaction feature of the data. A name names one feature: rename that column of the .item file (e.g. item_time_gap). Received: --features all
    """  # noqa: E501
    per_interaction = {*selection.position, *selection.token}
    twice = [name for name in selection.item if name in per_interaction]
    if not twice:
        return
    shown = " ".join(requested)
    one = len(twice) == 1
    raise ValueError(
        f"--features {shown} selects {', '.join(map(repr, twice))} twice: "
        + (
            f"a column of {item_source} (an item feature) and a "
            "per-interaction feature of the data"
            if one
            else f"columns of {item_source} (item features) and "
            "per-interaction features of the data"
        )
        + ". A name names one feature: rename "
        + ("that column" if one else "those columns")
        + f" of the .item file (e.g. item_{twice[0]}). Received: "
        f"--features {shown}"
    )
