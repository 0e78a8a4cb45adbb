"""Which Keras the tests run under: tf-keras unless the run asks for
Keras 3 (tests/conftest.py sets the default)."""

import os

#: Whether this run asked for Keras 3 (``TF_USE_LEGACY_KERAS=0``).
KERAS3 = os.environ.get("TF_USE_LEGACY_KERAS", "1").lower() in (
    "0",
    "false",
    "no",
    "off",
)
