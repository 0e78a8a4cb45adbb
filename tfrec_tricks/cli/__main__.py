"""``python -m tfrec_tricks.cli``: the same as ``tfrec-tricks``."""

from tfrec_tricks.cli import run

run()
