"""Exit 0 when agentgrammar is installed with its C core built from the current sources and
every requirement of its ``[dev]`` extra is installed; else 1 (``tools/test.sh`` then installs).

Usage::

    python tools/deps_ok.py && echo up to date
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _dev_requirements() -> list:
    try:
        import tomllib
    except ImportError:  # Python < 3.11: cannot tell, install
        return []
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return list(project["dependencies"]) + list(project["optional-dependencies"]["dev"])


def _installed(requirement: str) -> bool:
    name = re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _core_is_fresh() -> bool:
    built = sorted((ROOT / "agentgrammar").glob("_core*.so")) + sorted(
        (ROOT / "agentgrammar").glob("_core*.pyd")
    )
    if not built:
        return False
    sources = list((ROOT / "csrc").glob("*.[ch]")) + [ROOT / "agentgrammar" / "_build.py"]
    return min(p.stat().st_mtime for p in built) >= max(p.stat().st_mtime for p in sources)


def main() -> int:
    requirements = _dev_requirements()
    ok = bool(requirements) and all(_installed(r) for r in requirements) and _installed("agentgrammar")
    return 0 if ok and _core_is_fresh() else 1


if __name__ == "__main__":
    sys.exit(main())
