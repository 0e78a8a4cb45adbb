"""Names of a package imported from their submodules on first access.

A package whose names need TensorFlow (a head's layer, an objective's
loss) but whose own import must not (the command line reads its specs
before TensorFlow loads) exports them lazily, PEP 562 style.
"""

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str,
    namespace: dict,
    submodules: Mapping[str, str],
    check: Callable[[str], None] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list]]:
    """The ``__getattr__`` and ``__dir__`` of a package with lazy names.

    Args:
        package: the package's ``__name__``.
        namespace: the package's ``globals()``: a name, once imported, is
            stored there, so the next access does not come back here.
        submodules: ``{name: submodule}``, the submodule (relative to the
            package) that defines each lazy name.
        check: called with ``package`` before a name's first import (the
            Keras check of ``keras_version.lazy_legacy_keras_names``);
            None: no check. Defaults to None.

    Returns:
        ``(__getattr__, __dir__)``, to assign in the package.

    Example:

    >>> namespace = {}
    >>> getattr_, dir_ = lazy_exports(
    ...     "json", namespace, {"JSONDecoder": "decoder"})
    >>> getattr_("JSONDecoder").__name__, "JSONDecoder" in namespace
    ('JSONDecoder', True)
    >>> getattr_("missing")
    Traceback (most recent call last):
    ...
    AttributeError: module 'json' has no attribute 'missing'
    """

    def __getattr__(name: str) -> Any:
        if name not in submodules:
            raise AttributeError(
                f"module {package!r} has no attribute {name!r}"
            )
        if check is not None:
            check(package)
        module = importlib.import_module(f"{package}.{submodules[name]}")
        value = getattr(module, name)
        namespace[name] = value
        return value

    def __dir__() -> list:
        return sorted(set(namespace) | set(submodules))

    return __getattr__, __dir__
