"""The built-in kinds of item features: ``token``, ``token_seq``,
``float`` and ``float_seq`` (RecBole's atomic-file types).

Registered on import (``tfrec_tricks.data.item_features`` imports this
module).
A ``*_seq``
field is split on single spaces with the empty tokens dropped, as RecBole
does; a ``token`` value is kept as written.
"""

from tfrec_tricks.data.item_features.feature_kind_registry import (
    FeatureKind,
    register_feature_kind,
)


def space_separated(field: str) -> tuple[str, ...]:
    """The tokens of a ``*_seq`` field: split on spaces, empty ones dropped.

    >>> space_separated(" Animation  Comedy ")
    ('Animation', 'Comedy')
    """
    return tuple(token for token in field.split(" ") if token)


def one_value(field: str) -> tuple[str, ...]:
    """A one-value field as written; ``()`` when it is blank.

    >>> one_value(" 1995"), one_value("  ")
    ((' 1995',), ())
    """
    return (field,) if field.strip() else ()


@register_feature_kind
class TokenKind(FeatureKind):
    """One categorical value (``release_year:token`` ``1995``)."""

    name = "token"
    summary = "one categorical value"
    tokens = True
    sequence = False

    def split(self, field: str) -> tuple[str, ...]:
        return one_value(field)


@register_feature_kind
class TokenSeqKind(FeatureKind):
    """Space-separated tokens (``class:token_seq`` ``Animation Comedy``)."""

    name = "token_seq"
    summary = "space-separated tokens"
    tokens = True
    sequence = True

    def split(self, field: str) -> tuple[str, ...]:
        return space_separated(field)


@register_feature_kind
class FloatKind(FeatureKind):
    """One number (``price:float`` ``9.99``)."""

    name = "float"
    summary = "one number"
    tokens = False
    sequence = False

    def split(self, field: str) -> tuple[str, ...]:
        return one_value(field)


@register_feature_kind
class FloatSeqKind(FeatureKind):
    """Space-separated numbers (``sizes:float_seq`` ``38 40 42``)."""

    name = "float_seq"
    summary = "space-separated numbers"
    tokens = False
    sequence = True

    def split(self, field: str) -> tuple[str, ...]:
        return space_separated(field)
