"""``python -m tools.bench ...``: the same as ``python tools/bench.py ...`` (see ``cli``)."""

from .cli import main

main()
