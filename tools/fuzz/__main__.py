"""``python -m tools.fuzz ...``: the same as ``python tools/fuzz.py ...`` (see ``cli``)."""

import sys

from .cli import main

sys.exit(main())
