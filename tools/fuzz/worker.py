"""The worker subprocess that runs inputs, so that a crash or a hang kills only the worker.

Inputs and answers travel as length-prefixed pickles over the worker's stdin and a private copy
of its stdout; its stderr goes to a log whose tail explains a crash.
"""

from __future__ import annotations

import os
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional, Tuple

from .contract import execute
from .findings import dumps, loads
from .harnesses import HARNESSES

#: The repository root: the worker runs ``python -m tools.fuzz`` from there.
ROOT = Path(__file__).resolve().parents[2]


def _send(f: Any, obj: Any) -> None:
    data = dumps(obj)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _recv(f: Any) -> Any:
    head = f.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError
    return loads(data)


def worker_main(name: str) -> None:
    """Read inputs from stdin, answer ``(kind, detail, seconds)`` on stdout (a private copy)."""
    import faulthandler

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the library prints goes to stderr
    faulthandler.enable(file=sys.stderr)
    inp_f = sys.stdin.buffer
    harness = HARNESSES[name]
    import agentgrammar  # noqa: F401 - imported before the first timed input

    _send(out, ("ready", "", 0.0))
    while True:
        try:
            inp = _recv(inp_f)
        except EOFError:
            return
        t0 = time.perf_counter()
        kind, detail = execute(harness, inp)
        _send(out, (kind, detail, time.perf_counter() - t0))


class Worker:
    def __init__(self, name: str, log: Path) -> None:
        self.log_path = log
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tools.fuzz", "--worker", name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=str(ROOT),
        )
        ready = self._read(120.0)
        if ready is None or ready[0] != "ready":
            raise RuntimeError(f"the fuzz worker did not start; see {log}")

    def _read(self, timeout: float) -> Optional[Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    return _recv(self.proc.stdout)
                except EOFError:
                    return ("crash", "", 0.0)

    def run(self, inp: Any, timeout: float) -> Tuple[str, str, float]:
        assert self.proc.stdin is not None
        t0 = time.perf_counter()
        try:
            _send(self.proc.stdin, inp)
        except (BrokenPipeError, OSError):
            return "crash", self._crash_detail(), 0.0
        got = self._read(timeout)
        if got is None:
            self.kill()
            return "hang", f"no answer within {timeout} s", time.perf_counter() - t0
        if got[0] == "crash":
            return "crash", self._crash_detail(), time.perf_counter() - t0
        return got

    def _crash_detail(self) -> str:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = None
        self.log.flush()
        tail = self.log_path.read_bytes()[-6000:].decode("utf-8", "replace")
        return f"worker exited with status {rc}\n{tail}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()
