"""Kinds of item features by name (an ``.item`` header's ``name:kind``).

A kind says how one field of an ``.item`` file is read and what its values
are: ``FeatureKind.split`` cuts the field into its raw values, ``tokens``
says whether they are tokens (a vocabulary, embedded) or numbers
(standardised, soft one-hot encoded), ``sequence`` whether an item has
several (a row of values, averaged) or one. Everything that used to compare
a kind's name asks its spec (``feature_kind(name)``) or the live views
below, so a new kind is one class, registered with
``@register_feature_kind``::

    @register_feature_kind
    class CommaTokens(FeatureKind):
        name = "token_csv"
        summary = "comma-separated tokens"
        tokens = True
        sequence = True

        def split(self, field):
            return tuple(t for t in field.split(",") if t.strip())

The built-in kinds (``token``, ``token_seq``, ``float``, ``float_seq``)
are ``tfrec_tricks.data.item_features.feature_kind_specs``, registered
by the package's ``__init__`` (before any of its modules is used). No
TensorFlow here: the command line checks a file's header before
TensorFlow loads.
"""

from collections.abc import Iterator
from typing import ClassVar

from tfrec_tricks.family_registry import RegisteredNames, Registry


class FeatureKind:
    """What the toolkit knows about one kind of item feature.

    Subclass it, set the class attributes, implement ``split`` and decorate
    the class with ``register_feature_kind``.

    Attributes:
        name: str. The type in an ``.item`` header (``genres:token_seq``).
        summary: str. One line: what a field of this kind holds.
        tokens: bool. True: the values are tokens, kept as written,
            counted into a vocabulary and embedded. False: they are
            numbers (float32, finite), standardised and soft one-hot
            encoded.
        sequence: bool. True: an item has a row of values (its width is
            the catalogue's longest row). False: one value (width 1).
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    tokens: ClassVar[bool] = True
    sequence: ClassVar[bool] = False

    def split(self, field: str) -> tuple[str, ...]:
        """The raw values written in one field of this kind; ``()`` when
        it holds none (no value for that item, not an error).

        Args:
            field: str. The field as written, without the tab around it.
        """
        raise NotImplementedError(f"{type(self).__name__}.split")


_KINDS = Registry("item feature kind")
#: Class decorator: registers a ``FeatureKind`` subclass under its
#: ``name`` (a ValueError for no name or a taken one).
register_feature_kind = _KINDS.register
#: Removes a registered kind (a notebook's or a test's own).
unregister_feature_kind = _KINDS.unregister
#: The registered spec of kind ``name`` (a ValueError naming the kinds).
feature_kind = _KINDS.get


class KindNames:
    """The registered kinds whose spec has ``attribute`` equal to
    ``value``, live: iteration and ``in`` see the registry as it is now,
    and it prints as a tuple (``('token', 'token_seq')``)."""

    def __init__(self, attribute: str, value: bool) -> None:
        self.attribute = attribute
        self.value = value

    def _names(self) -> tuple[str, ...]:
        return tuple(
            name
            for name in _KINDS.names()
            if getattr(_KINDS.get(name), self.attribute) == self.value
        )

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return repr(self._names())


#: Every registered kind's name, live.
FEATURE_KINDS: RegisteredNames = _KINDS.names()
#: The kinds whose values are tokens (a vocabulary, embedded).
TOKEN_KINDS = KindNames("tokens", True)
#: The kinds whose values are numbers (standardised, soft one-hot).
FLOAT_KINDS = KindNames("tokens", False)
#: The kinds of several values per item.
SEQUENCE_KINDS = KindNames("sequence", True)
#: The kinds of one value per item (width 1).
SCALAR_KINDS = KindNames("sequence", False)
