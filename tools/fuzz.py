"""Fuzz agentgrammar: ``python tools/fuzz.py all --seconds 60`` (``--help`` for the options).

The fuzzer is the package ``tools/fuzz/`` (its ``cli`` module documents the command);
``python -m tools.fuzz`` from the repository root is the same command.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.fuzz.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
