"""``python -m agentgrammar``: the same command line as ``agentgrammar``."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
