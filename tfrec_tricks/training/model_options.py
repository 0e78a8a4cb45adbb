"""``ModelOptions``: the model settings a training run gives, by name.

A run's model is a ``ModelConfig``, but a run cannot hold one until its
data is loaded: ``num_items`` comes from the catalogue, and ``max_len``
and the learning rate from the training options. ``--head auto`` (the
run's default) is no ``ModelConfig`` head either: the data chooses one
(``head_choice``). So a ``TrainConfig`` holds the settings it *gives*,
each checked against ``ModelConfig``'s field of that name, and resolves
them into a ``ModelConfig`` (``resolve``) once the data is known.

What is given, not the whole config, is what a run records
(``config.json``'s ``train.model``, the fingerprint's ``train.model``):
a field left out keeps ``ModelConfig``'s default, and a later
``--config`` or flag overrides only what it names.
"""

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from tfrec_tricks.config_fields import (
    describe_type,
    field_default,
    value_has_type,
)
from tfrec_tricks.models.config import AUTO_HEAD, ModelConfig
from tfrec_tricks.training.feature_selection import ALL_FEATURES

# ModelConfig fields that come from the data or the training options.
DERIVED_MODEL_FIELDS = (
    "num_items",
    "max_len",
    "learning_rate",
    "item_features",
    "token_features",
)
_FIELD_TYPES = {
    field.name: field.type
    for field in dataclasses.fields(ModelConfig)
    if field.name not in DERIVED_MODEL_FIELDS
}


class ModelOptions(Mapping):
    """The ``ModelConfig`` fields a run sets; read-only.

    A mapping of field name -> value (``dict(options)`` and ``{**options}``
    give the plain dict a run records); ``value`` reads a field with
    ``ModelConfig``'s default for one left out.

    Args:
        values: field name -> value, for fields of ``ModelConfig`` other
            than ``DERIVED_MODEL_FIELDS``. ``head`` may also be
            ``AUTO_HEAD``.

    Raises:
        ValueError: an unknown or derived field, or a value of the wrong
            type.

    Example:

    >>> options = ModelOptions({"head": "cpr"})
    >>> options.head, options.value("encoder")
    ('cpr', 'gru4rec')
    >>> options.with_values(head="mos") == {"head": "mos"}
    True
    >>> ModelOptions().head
    'auto'
    """

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        values = dict(values or {})
        unknown = sorted(set(values) - set(_FIELD_TYPES))
        if unknown:
            raise ValueError(
                f"Unknown model options {unknown} (the model's "
                f"{list(DERIVED_MODEL_FIELDS)} come from the data and the "
                f"training options); known: {sorted(_FIELD_TYPES)}. "
                f"Received: {values}"
            )
        for name, value in values.items():
            annotation = _FIELD_TYPES[name]
            if not value_has_type(value, annotation):
                raise ValueError(
                    f"`{name}` must be {describe_type(annotation)}. "
                    f"Received: {name}={value!r}"
                )
        self._values = values

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"ModelOptions({self._values!r})"

    @property
    def head(self) -> str:
        """The head asked for: ``AUTO_HEAD`` when none is named."""
        return self._values.get("head", AUTO_HEAD)

    def value(self, name: str) -> Any:
        """Field ``name``: as set, else ``ModelConfig``'s default."""
        if name in self._values:
            return self._values[name]
        return field_default(ModelConfig, name)

    def with_values(self, **values: Any) -> "ModelOptions":
        """These options with ``values`` set (over any set before)."""
        return ModelOptions({**self._values, **values})

    def to_dict(self) -> dict:
        """The options as a plain dict (JSON: ``config.json``)."""
        return dict(self._values)

    def resolve(
        self,
        num_items: int,
        max_len: int,
        learning_rate: float,
        data: Any = None,
    ) -> ModelConfig:
        """The ``ModelConfig`` of these options on a catalogue of
        ``num_items``, with the training options' ``max_len`` and
        ``learning_rate``.

        With the run's prepared ``data`` (``InMemoryDataset`` or
        ``OnDiskDataset``), ``features`` keeps the per-interaction
        features it selects (``feature_selection``; ``all``: every one the
        data has), ``item_features`` are the data's item features
        (``ItemFeatures.spec_dicts``) and ``token_features`` its
        selected categorical per-interaction features. Without ``data`` (a run's
        fingerprint) the names stay as given.

        Raises:
            ValueError: an invalid model config (``--head auto`` not yet
                chosen included).
        """
        values = dict(self._values)
        if data is not None:
            requested = tuple(self.value("features"))
            if ALL_FEATURES in requested:
                requested = tuple(data.feature_names)
            # In the order given: the encoders are created in this order.
            values["features"] = tuple(
                n for n in requested if n in data.feature_names
            )
            values.update(data_model_fields(data))
        return ModelConfig(
            num_items=num_items,
            max_len=max_len,
            learning_rate=learning_rate,
            **values,
        )


def data_model_fields(data: Any) -> dict:
    """The ``ModelConfig`` fields a run's prepared data sets: its item
    features (``item_features``: ``ItemFeatures.spec_dicts``) and its
    categorical per-interaction features (``token_features``:
    ``InteractionTokenSpec.model_dict``), each when the data has them.

    Args:
        data: an ``InMemoryDataset`` or ``OnDiskDataset`` (a search
            trial's data too).

    Returns:
        dict of those fields; empty for id-only data.
    """
    values = {}
    item_features = getattr(data, "item_features", None)
    if item_features is not None:
        values["item_features"] = tuple(item_features.spec_dicts())
    token_features = getattr(data, "token_features", ())
    if token_features:
        values["token_features"] = tuple(
            spec.model_dict() for spec in token_features
        )
    return values
