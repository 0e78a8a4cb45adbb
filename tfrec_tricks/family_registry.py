"""Members of a family by name: the registry of the heads' and the
encoders' specs (``heads.registry``, ``models.encoder_registry``).

No TensorFlow: the command line reads the names before TensorFlow loads.
"""

from collections.abc import Iterator
from typing import Any


class Registry:
    """The registered specs of one family, by name, in registration order.

    Args:
        family: str. The config field that names a member ("head").

    Example:

    >>> shapes = Registry("shape")
    >>> @shapes.register
    ... class Circle:
    ...     name = "circle"
    >>> shapes.get("circle").name, "circle" in shapes.names("auto")
    ('circle', True)
    >>> shapes.get("square")
    Traceback (most recent call last):
    ...
    ValueError: shape must be one of ('circle',). Received: shape='square'
    """

    def __init__(self, family: str) -> None:
        self.family = family
        self._specs: dict[str, Any] = {}

    def register(self, cls: type) -> type:
        """Class decorator: registers an instance of ``cls`` under its
        ``name``.

        Raises:
            ValueError: no name, or the name of another registered class.
        """
        name = getattr(cls, "name", "")
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"A {self.family} spec needs a name. Received: "
                f"{cls.__name__}.name={name!r}"
            )
        known = self._specs.get(name)
        if known is not None and type(known) is not cls:
            raise ValueError(
                f"The {self.family} name {name!r} is taken by "
                f"{type(known).__name__}. Received: {cls.__name__}"
            )
        self._specs[name] = cls()
        return cls

    def unregister(self, name: str) -> None:
        """Removes a registered member (a notebook's or a test's own)."""
        self._specs.pop(name, None)

    def get(self, name: str) -> Any:
        """The spec registered as ``name``.

        Raises:
            ValueError: no member of that name is registered.
        """
        spec = self._specs.get(name)
        if spec is None:
            raise ValueError(
                f"{self.family} must be one of {tuple(self._specs)}. "
                f"Received: {self.family}={name!r}"
            )
        return spec

    def names(self, *also: str) -> "RegisteredNames":
        """The registered names, live, then ``also``."""
        return RegisteredNames(self._specs, also)

    def where(self, attribute: str) -> tuple[str, ...]:
        """The registered names whose spec's ``attribute`` is true."""
        return tuple(
            name
            for name, spec in self._specs.items()
            if getattr(spec, attribute)
        )


class RegisteredNames:
    """A registry's names, live: iteration and ``in`` see the registry as
    it is now (a ``choices`` of a config field and a flag), then
    ``also``."""

    def __init__(self, specs: dict, also: tuple = ()) -> None:
        self._specs = specs
        self.also = tuple(also)

    def __iter__(self) -> Iterator[str]:
        return iter((*self._specs, *self.also))

    def __contains__(self, name: object) -> bool:
        return name in self._specs or name in self.also

    def __len__(self) -> int:
        return len(self._specs) + len(self.also)

    def __repr__(self) -> str:
        return repr(tuple(self))
