"""Statistics and tables of the benchmark: distributions in microseconds, ratios to the peers.

>>> ratio_to_best({"ours": 2.0, "xgr": 4.0, "llg": 1.0})
2.0
>>> fmt(float("nan"))
'n/a'
"""

from __future__ import annotations

import statistics
from typing import Any, Dict, Sequence

from tools.maskbench import percentile


def dist_us(seconds: Sequence[float]) -> Dict[str, float]:
    """n, mean, p50, p99, p99.9 and max of ``seconds``, in microseconds (NaN when empty)."""
    us = [s * 1e6 for s in seconds]
    return {
        "n": len(us),
        "mean": statistics.fmean(us) if us else float("nan"),
        "p50": percentile(us, 0.5),
        "p99": percentile(us, 0.99),
        "p99.9": percentile(us, 0.999),
        "max": max(us) if us else float("nan"),
    }


def median_ms(seconds: Sequence[float]) -> float:
    return statistics.median(seconds) * 1e3 if seconds else float("nan")


def ratio_to_best(row: Dict[str, float]) -> float:
    """``row["ours"]`` over the smallest peer figure in ``row`` (NaN when there is none)."""
    peers = [v for k, v in row.items() if k != "ours" and v == v]
    ours = row.get("ours", float("nan"))
    return ours / min(peers) if peers and min(peers) > 0 and ours == ours else float("nan")


def ratio_to(row: Dict[str, float], peers: Sequence[str]) -> float:
    """``row["ours"]`` over the smallest figure of ``peers``: the peer that an issue's target
    names (llguidance for MaskBench, xgrammar for the agentic workload), which need not be the
    best peer in the run (NaN when there is none)."""
    return ratio_to_best({"ours": row.get("ours", float("nan")), **{p: row[p] for p in peers if p in row}})


def fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(f"\n{title}\n{line}\n{'-' * len(line)}")
    for r in cells:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
