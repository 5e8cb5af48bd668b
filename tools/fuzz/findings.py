"""Findings: how they are told apart, saved (a pickle of the input and a text report) and replayed.

>>> signature("exception", "KeyError: 'x'")
'exception|KeyError|'
>>> signature("hang", "no answer within 20 s")
'hang'
"""

from __future__ import annotations

import hashlib
import pickle
import re
import sys
import time
from pathlib import Path
from typing import Any

from .contract import execute
from .harnesses import HARNESSES


class _deep_recursion:
    """A higher recursion limit while pickling deeply nested inputs (only around pickle calls)."""

    def __enter__(self) -> None:
        self.old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.old, 20000))

    def __exit__(self, *exc: Any) -> None:
        sys.setrecursionlimit(self.old)


def dumps(obj: Any) -> bytes:
    with _deep_recursion():
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes) -> Any:
    with _deep_recursion():
        return pickle.loads(data)


def where(detail: str) -> str:
    """``file.py:function`` of the innermost agentgrammar frame of a traceback ("" when none)."""
    found = re.findall(r'File "[^"]*agentgrammar[/\\]([^"]+)", line \d+, in (\S+)', detail)
    return f"{found[-1][0]}:{found[-1][1]}" if found else ""


def signature(kind: str, detail: str) -> str:
    """What makes two findings the same: the kind, the exception type and the innermost frame."""
    if kind in ("crash", "hang", "slow"):
        return kind
    lines = [ln.strip() for ln in detail.splitlines()]
    frames = [ln for ln in lines if ln.startswith("File ")]
    head = lines[0].split(":")[0] if lines else ""
    if kind == "invariant":
        head = lines[0][:40] if lines else ""
    return f"{kind}|{head}|{frames[-1] if frames else ''}"


def save_finding(findings: Path, harness: str, kind: str, inp: Any, detail: str, seconds: float) -> str:
    findings.mkdir(parents=True, exist_ok=True)
    blob = dumps(inp)
    digest = hashlib.sha1(blob).hexdigest()[:12]
    stem = findings / f"{harness}-{kind}-{digest}"
    stem.with_suffix(".pkl").write_bytes(blob)
    with _deep_recursion():
        shown = repr(inp)
    text = f"harness: {harness}\nkind: {kind}\nseconds: {seconds:.3f}\ninput: {shown}\n\n{detail}\n"
    stem.with_suffix(".txt").write_text(text, encoding="utf-8", errors="replace")
    return str(stem.with_suffix(".pkl"))


def replay(path: Path) -> int:
    """Run a saved finding in this process and print what happens."""
    harness = HARNESSES[path.name.split("-", 1)[0]]
    inp = loads(path.read_bytes())
    print(f"input: {inp!r}"[:2000])
    t0 = time.perf_counter()
    kind, detail = execute(harness, inp)
    print(f"{kind} in {time.perf_counter() - t0:.3f} s\n{detail}")
    return 0 if kind in ("ok", "error") else 1
