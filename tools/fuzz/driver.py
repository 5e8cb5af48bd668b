"""The fuzzing loop: generate inputs for one harness, run them, count and save findings.

>>> print(table([Result("regex", executions=10, seconds=2.0).row()]))  # doctest: +NORMALIZE_WHITESPACE
harness executions exec/s refused findings kinds
regex 10 5.0 0 0 -
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import rand
from .contract import execute
from .findings import save_finding, signature, where
from .harnesses import HARNESSES
from .worker import Worker


@dataclass
class Result:
    harness: str
    executions: int = 0
    seconds: float = 0.0
    errors: int = 0  # inputs refused with an AgentGrammarError (the expected outcome for junk)
    findings: int = 0
    kinds: Dict[str, int] = field(default_factory=dict)
    saved: List[str] = field(default_factory=list)
    #: (kind, first line of the detail, innermost agentgrammar frame) of every finding
    details: List[Tuple[str, str, str]] = field(default_factory=list)

    def row(self) -> Dict[str, Any]:
        rate = self.executions / self.seconds if self.seconds else 0.0
        return {
            "harness": self.harness,
            "executions": self.executions,
            "exec_per_s": round(rate, 1),
            "refused": self.errors,
            "findings": self.findings,
            "kinds": self.kinds,
            "saved": self.saved,
        }


def fuzz(
    name: str,
    seconds: float,
    seed: int,
    *,
    findings: Optional[Path] = None,
    in_process: bool = False,
    timeout: float = 20.0,
    slow: float = 2.0,
    max_saved_per_signature: int = 3,
    log: Optional[Callable[[str], None]] = None,
    tame: bool = False,
) -> Result:
    """Run one harness for ``seconds``; inputs from ``random.Random(seed)``."""
    rand.TAME = tame
    harness = HARNESSES[name]
    rng = random.Random(f"{name}:{seed}")
    res = Result(name)
    seen: Dict[str, int] = {}
    worker: Optional[Worker] = None
    if findings is None:
        findings = Path(tempfile.mkdtemp(prefix="agentgrammar-fuzz-"))
    if not in_process:
        findings.mkdir(parents=True, exist_ok=True)
        worker = Worker(name, findings / f"worker-{name}.log")
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            try:
                inp = harness.generate(rng)
            except RecursionError:
                continue
            if worker is None:
                t0 = time.perf_counter()
                kind, detail = execute(harness, inp)
                took = time.perf_counter() - t0
            else:
                kind, detail, took = worker.run(inp, timeout)
                if kind in ("crash", "hang"):
                    worker.kill()
                    worker.close()
                    worker = Worker(name, findings / f"worker-{name}.log")
            res.executions += 1
            if kind == "error":
                res.errors += 1
            if kind in ("ok", "error") and took > slow:
                kind, detail = "slow", f"took {took:.2f} s (limit {slow} s)"
            if kind in ("ok", "error"):
                continue
            res.findings += 1
            res.kinds[kind] = res.kinds.get(kind, 0) + 1
            res.details.append(
                (kind, detail.strip().splitlines()[0] if detail.strip() else "", where(detail))
            )
            sig = signature(kind, detail)
            seen[sig] = seen.get(sig, 0) + 1
            if seen[sig] <= max_saved_per_signature:
                path = save_finding(findings, name, kind, inp, detail, took)
                res.saved.append(path)
                if log is not None:
                    first = detail.strip().splitlines()[0] if detail.strip() else ""
                    log(f"[{name}] {kind}: {first[:160]} -> {path}")
    finally:
        res.seconds = time.perf_counter() - start
        rand.TAME = False
        if worker is not None:
            worker.close()
    return res


def table(rows: List[Dict[str, Any]]) -> str:
    out = [f"{'harness':<16}{'executions':>12}{'exec/s':>10}{'refused':>10}{'findings':>10}  kinds"]
    for r in rows:
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(r["kinds"].items())) or "-"
        out.append(
            f"{r['harness']:<16}{r['executions']:>12}{r['exec_per_s']:>10}{r['refused']:>10}{r['findings']:>10}  {kinds}"
        )
    return "\n".join(out)
