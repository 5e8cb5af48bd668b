"""Coverage-guided fuzzing with atheris: libFuzzer's bytes drive the same generators.

>>> r = BytesRandom(bytes(6) + b"\\x80")
>>> r.random(), r.random()
(0.5, 0.0)
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

from .contract import execute
from .harnesses import HARNESSES


class BytesRandom(random.Random):
    """A ``random.Random`` whose randomness is read from a byte string, so that a coverage-guided
    fuzzer (atheris / libFuzzer) steers the same structure-aware generators; past the end of the
    bytes every draw is 0."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0
        super().__init__(0)

    def _take(self, n: int) -> int:
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return int.from_bytes(chunk.ljust(n, b"\0"), "little")

    def random(self) -> float:
        return self._take(7) / float(1 << 56)

    def getrandbits(self, k: int) -> int:
        return self._take((k + 7) // 8) & ((1 << k) - 1) if k else 0


def atheris_main(name: str, seconds: float, timeout: float, findings: Path) -> int:
    """Coverage-guided fuzzing of one harness with atheris (``pip install atheris``), in this
    process. libFuzzer saves a failing input as ``<findings>/<harness>-crash-<sha1>`` (its bytes
    drive ``BytesRandom``; rerun with ``--engine atheris --replay-bytes FILE``)."""
    import atheris  # type: ignore[import-not-found]

    with atheris.instrument_imports():
        import agentgrammar  # noqa: F401

    harness = HARNESSES[name]
    findings.mkdir(parents=True, exist_ok=True)

    def one_input(data: bytes) -> None:
        try:
            inp = harness.generate(BytesRandom(data))
        except RecursionError:
            return
        kind, detail = execute(harness, inp)
        if kind not in ("ok", "error"):
            raise RuntimeError(f"{kind}: {detail}")

    argv = [
        sys.argv[0],
        f"-max_total_time={max(1, int(seconds))}",
        f"-timeout={max(1, int(timeout))}",
        f"-artifact_prefix={findings}/{name}-",
        "-print_final_stats=1",
    ]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


def replay_bytes(name: str, path: Path) -> int:
    """Run one libFuzzer artifact (the bytes behind an atheris finding) in this process."""
    harness = HARNESSES[name]
    inp = harness.generate(BytesRandom(path.read_bytes()))
    print(f"input: {inp!r}"[:2000])
    kind, detail = execute(harness, inp)
    print(f"{kind}\n{detail}")
    return 0 if kind in ("ok", "error") else 1
