"""``python -m tfrec_tricks.cli``: the same as ``tfrec-tricks``."""

import sys

from tfrec_tricks.cli import main

sys.exit(main())
