"""TensorFlow's start-up lines kept off the terminal, unless --verbose.

TensorFlow and its CUDA stubs write C++ log lines ("Could not find cuda
drivers", oneDNN notices) straight to file descriptor 2 while they load,
before any Python logging setting applies. They say nothing a user of this
command can act on, and they bury its output.
"""

import contextlib
import logging
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def native_stderr_silenced(enabled: bool = True) -> Iterator[None]:
    """Points file descriptor 2 at /dev/null inside the block.

    Python exceptions raised inside still propagate (and print after the
    block), so an import that fails is never hidden.
    """
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def load_tensorflow(verbose: bool) -> None:
    """Imports TensorFlow under tf-keras, quietly unless ``verbose``."""
    if not verbose:
        # C++ INFO and WARNING lines after start-up (errors still show).
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from tfrec_tricks.keras_version import use_legacy_keras

    use_legacy_keras()
    with native_stderr_silenced(not verbose):
        import tensorflow as tf

        import tfrec_tricks.models  # noqa: F401  (tf-keras and TFRS)

        # Device discovery logs a CUDA error on machines without a GPU.
        tf.config.list_physical_devices()
    if not verbose:
        tf.get_logger().setLevel(logging.ERROR)
