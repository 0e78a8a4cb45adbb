"""What ``export --format onnx`` needs and refuses, without TensorFlow.

The command line checks these before TensorFlow loads (``cli.export``'s
``check``): the ONNX packages are installed (the ``onnx`` extra), and the
run and the options are ones the ONNX export converts.

Example:

>>> check_onnx_scoring("auto")
>>> check_onnx_scoring("index")
Traceback (most recent call last):
...
ValueError: --format onnx scores the full catalogue: the index's ranking sorts its candidates with keys made by bit casts, which ONNX has no op for. Received: --scoring index; use --scoring full or auto
"""  # noqa: E501

import importlib.util

#: ``export --format`` values: TF Serving's SavedModel, onnxruntime's ONNX.
FORMATS = ("savedmodel", "onnx")
#: The packages the ``onnx`` extra installs: the converter, the model
#: format, and the runtime that checks the converted model.
ONNX_PACKAGES = ("tf2onnx", "onnx", "onnxruntime")
INSTALL_HINT = "pip install tfrec_tricks[onnx]"


def missing_onnx_packages() -> list[str]:
    """The packages of ``ONNX_PACKAGES`` that cannot be imported, found
    without importing any (tf2onnx imports TensorFlow)."""
    return [
        package
        for package in ONNX_PACKAGES
        if importlib.util.find_spec(package) is None
    ]


def require_onnx_packages() -> None:
    """Raises ImportError, naming the extra to install, unless every
    package of ``ONNX_PACKAGES`` is installed.

    Raises:
        ImportError: naming the missing packages and ``INSTALL_HINT``.
    """
    missing = missing_onnx_packages()
    if missing:
        raise ImportError(
            "--format onnx needs the packages "
            f"{', '.join(ONNX_PACKAGES)}, which the onnx extra installs: "
            f"{INSTALL_HINT}. Received: {', '.join(missing)} not installed"
        )


def check_onnx_scoring(scoring: str) -> None:
    """Refuses an ``export --scoring`` the ONNX export does not take.

    The ONNX model scores the whole catalogue (``OnnxScoringModule``):
    ``"auto"`` and ``"full"`` are taken, ``"index"`` is refused.

    Args:
        scoring: str. ``--scoring``.

    Raises:
        ValueError: naming the option and the value received.
    """
    if scoring == "index":
        raise ValueError(
            "--format onnx scores the full catalogue: the index's ranking "
            "sorts its candidates with keys made by bit casts, which ONNX "
            f"has no op for. Received: --scoring {scoring}; use --scoring "
            "full or auto"
        )
