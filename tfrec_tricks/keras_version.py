"""Which Keras TensorFlow uses, and the check TFRS-dependent parts make.

TensorFlow Recommenders 0.7.7 imports only under tf-keras (Keras 2), which
TensorFlow selects when ``TF_USE_LEGACY_KERAS=1`` is set before ``tf.keras``
is first resolved. The layers in ``tfrec_tricks.layers``, the models of
``tfrec_tricks.models`` (``choose_model_keras``), training runs, tuning,
export, recommendations and the ``Recommender`` work with either Keras:
tf-keras unless the process chose Keras 3 (``choose_model_keras``).
"""

import os
import sys
from collections.abc import Callable, Mapping

from tfrec_tricks.lazy_exports import lazy_exports

LEGACY_KERAS_ENV = "TF_USE_LEGACY_KERAS"

_FALSE_VALUES = ("0", "false", "no", "off")


class KerasVersionError(ImportError):
    """TensorFlow resolved ``tf.keras`` to Keras 3 where tf-keras is needed."""


def use_legacy_keras() -> None:
    """Select tf-keras for this process, as the entry points do.

    Must run before TensorFlow resolves ``tf.keras``; afterwards it only
    checks (see ``require_legacy_keras``).
    """
    os.environ[LEGACY_KERAS_ENV] = "1"
    if "tensorflow" in sys.modules:
        require_legacy_keras("tfrec_tricks")


def use_command_keras() -> None:
    """The command line's choice: tf-keras (``use_legacy_keras``) unless
    Keras 3 was chosen (``choose_model_keras``): ``TF_USE_LEGACY_KERAS`` set
    false, ``tf.keras`` already resolved to Keras 3 in this process, or
    Keras 3 imported before TensorFlow.

    Training runs, tuning, export and recommendations work under either;
    a part that needs tf-keras would raise ``KerasVersionError`` when it
    starts (``require_legacy_keras``).
    """
    if _keras_3_chosen() or "tensorflow" in sys.modules:
        # Once TensorFlow is imported, tf.keras may be resolved already:
        # its Keras stands if the models run under it.
        choose_model_keras("tfrec_tricks")
    else:
        use_legacy_keras()


def require_legacy_keras(feature: str) -> None:
    """Make sure ``tf.keras`` is tf-keras, or say exactly what to do.

    Args:
        feature: str. What needs tf-keras, named in the error message.

    Raises:
        KerasVersionError: when ``tf.keras`` is Keras 3 (because
            ``TF_USE_LEGACY_KERAS`` was unset or false when TensorFlow first
            resolved ``tf.keras``) or tf-keras is not installed.
    """
    _choose_legacy_keras(feature)
    try:
        import tensorflow as tf

        # The class's module, not tf.keras.__name__: a `from tensorflow.keras
        # import *` elsewhere can rename the lazily loaded module.
        keras_module = tf.keras.layers.Layer.__module__
    except ImportError as error:  # tf-keras missing
        raise KerasVersionError(
            f"{feature} needs tf-keras: `pip install 'tf-keras~=2.21.0'`. "
            f"Import failed with: {error}"
        ) from error
    if not keras_module.startswith("tf_keras"):
        raise KerasVersionError(
            _message(feature, f"tf.keras is Keras 3 ({keras_module})")
        )


def choose_legacy_keras(feature: str) -> None:
    """``require_legacy_keras`` without importing TensorFlow.

    Before TensorFlow is imported, choosing tf-keras (``TF_USE_LEGACY_KERAS``
    set to 1, unless set false: ``KerasVersionError``) is all there is to
    check: TensorFlow reads the choice when it first resolves ``tf.keras``.
    Once TensorFlow is imported, the whole check runs. So a package can check
    on import and still be imported where TensorFlow must not load yet (the
    command line reads ``tfrec_tricks.models.config`` for its flags).

    Args:
        feature: str. What needs tf-keras, named in the error message.

    Raises:
        KerasVersionError: as ``require_legacy_keras``.
    """
    if "tensorflow" in sys.modules:
        require_legacy_keras(feature)
    else:
        _choose_legacy_keras(feature)


def keras_3_in_use() -> bool:
    """Whether ``tf.keras`` is Keras 3 (resolving it if not yet resolved).

    Returns:
        bool. True under Keras 3, False under tf-keras.
    """
    import tensorflow as tf

    # The class's module, as in ``require_legacy_keras``.
    return not tf.keras.layers.Layer.__module__.startswith("tf_keras")


def require_model_keras(feature: str) -> None:
    """Make sure ``tf.keras`` is one the models run under, or say which.

    tf-keras (TFRS, the default) or Keras 3 on the TensorFlow backend:
    the models' code is written against ``tf.keras`` and ``tf`` ops.
    TensorFlow itself refuses a Keras 3 of another backend as ``tf.keras``
    (ImportError), and so does this, saying why.

    Args:
        feature: str. What needs it, named in the error message.

    Raises:
        KerasVersionError: Keras 3 on another backend, or tf-keras asked
            for (``TF_USE_LEGACY_KERAS=1``) but not installed.
    """
    if not _keras_3_chosen():
        _choose_legacy_keras(feature)
    try:
        keras_3_in_use()
    except ImportError as error:
        # tf-keras asked for but missing, or Keras 3 on another backend
        # (TensorFlow then refuses to import it as tf.keras).
        if _keras_3_chosen():
            wanted = (
                "Keras 3 on the TensorFlow backend (KERAS_BACKEND unset or "
                f"'tensorflow'; it is {os.environ.get('KERAS_BACKEND')!r})"
            )
        else:
            wanted = (
                "tf-keras: `pip install 'tf-keras~=2.21.0'` (or "
                f"{LEGACY_KERAS_ENV}=0 for Keras 3)"
            )
        raise KerasVersionError(
            f"{feature} needs {wanted}. Import failed with: {error}"
        ) from error


def choose_model_keras(feature: str) -> None:
    """``choose_legacy_keras`` for the parts that run under either Keras.

    tf-keras stays the default: with ``TF_USE_LEGACY_KERAS`` unset and
    ``tf.keras`` not yet resolved, it is chosen, as before. Keras 3 is
    taken where the process chose it: ``TF_USE_LEGACY_KERAS`` set false,
    ``tf.keras`` already resolved to Keras 3 when this runs, or Keras 3
    imported before TensorFlow (a script that starts with ``import keras``;
    then ``TF_USE_LEGACY_KERAS=0`` is set, so that child processes follow).
    It never imports TensorFlow itself.

    Args:
        feature: str. What is checked, named in error messages.

    Raises:
        KerasVersionError: as ``require_model_keras``, once TensorFlow is
            imported.
    """
    if "tensorflow" in sys.modules:
        require_model_keras(feature)
    elif not _keras_3_chosen():
        _choose_legacy_keras(feature)


def lazy_legacy_keras_names(
    package: str,
    lazy: dict[str, str],
    check: Callable[[str], None] | None = None,
) -> tuple[Callable, Callable]:
    """A package's PEP 562 ``__getattr__`` and ``__dir__`` for names that
    need tf-keras: ``lazy_exports`` with ``require_legacy_keras`` (or
    ``check``) made before a name's first import.

    Args:
        package: str. The package's ``__name__``.
        lazy: dict. Name -> the package's submodule that defines it.
        check: the check made before the first access of a name, called
            with ``package``; None: ``require_legacy_keras``
            (``require_model_keras`` for names that run under either
            Keras). Defaults to None.

    Returns:
        ``(__getattr__, __dir__)``, for the package to bind to those names.
    """
    return lazy_exports(
        package,
        sys.modules[package].__dict__,
        lazy,
        check=check or require_legacy_keras,
    )


def _keras_3_chosen() -> bool:
    setting = os.environ.get(LEGACY_KERAS_ENV)
    if setting is None and _keras_3_imported_before_tensorflow():
        # Recorded, as the tf-keras default is, so that child processes
        # (tuning workers, Beam workers, commands run from here) follow.
        os.environ[LEGACY_KERAS_ENV] = setting = "0"
    return setting is not None and setting.strip().lower() in _FALSE_VALUES


def _keras_3_imported_before_tensorflow(
    modules: Mapping[str, object] = sys.modules,
) -> bool:
    """Whether this process imported Keras 3 itself, before TensorFlow.

    A script that starts with ``import keras`` works in Keras 3 (its
    optimizers and layers are Keras 3's), and TensorFlow, with the variable
    unset, resolves ``tf.keras`` to it too. ``import tensorflow`` imports
    ``keras`` as well, so being in ``sys.modules`` says nothing; which
    import finished last does: importlib moves a module to the end of
    ``sys.modules`` when its import finishes (for the clean-up order at
    shutdown), so the outer of two nested imports comes after the inner.
    """
    keras = modules.get("keras")
    if keras is None or "tensorflow" not in modules:
        return False
    if not str(getattr(keras, "__version__", "")).startswith("3."):
        return False
    # A snapshot: another thread may import while this looks.
    for name in reversed(list(modules)):
        if name in ("keras", "tensorflow"):
            return name == "keras"
    return False


def _choose_legacy_keras(feature: str) -> None:
    setting = os.environ.get(LEGACY_KERAS_ENV)
    if setting is None:
        # Nothing chosen yet: choose tf-keras. This is enough if tf.keras
        # has not been resolved yet (TensorFlow resolves it lazily).
        os.environ[LEGACY_KERAS_ENV] = "1"
    elif setting.strip().lower() in _FALSE_VALUES:
        raise KerasVersionError(
            _message(feature, f"{LEGACY_KERAS_ENV}={setting}")
        )


def _message(feature: str, found: str) -> str:
    return (
        f"{feature} needs tf-keras (Keras 2) so far, but {found}. Set "
        f"{LEGACY_KERAS_ENV}=1 before TensorFlow is imported: `export "
        f"{LEGACY_KERAS_ENV}=1` in the shell, or "
        f"`os.environ['{LEGACY_KERAS_ENV}'] = '1'` as the first line of your "
        "script, before `import tensorflow`. The layers (tfrec_tricks.layers) "
        "and the models (tfrec_tricks.models: build, fit, evaluate, predict) "
        "work with either Keras; docs/keras-versions.md says what else does."
    )
