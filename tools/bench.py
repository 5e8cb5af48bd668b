"""Every benchmark workload: ``python tools/bench.py BFCL_WHEEL MASKBENCH_DIR`` (``--help``).

The benchmark is the package ``tools/bench/`` (its ``cli`` module documents the workloads);
``python -m tools.bench`` from the repository root is the same command.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.bench.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
