"""Workload 4, ``batch``: a serving batch walked in lock step, one batch fill per step, ours
``BatchMatcher`` against xgrammar's ``BatchGrammarMatcher``."""

from __future__ import annotations

import time
from typing import Any, Dict, List

from .agentic import agentic_registry
from .stats import dist_us, fmt, print_table
from .walkers import Setup


def run_batch(setup: Setup, args: Any) -> Dict[str, Any]:
    """A serving batch: ``--batch-rows`` rows, each its own agentic request (a random subset of
    ``min(--sizes)`` tools), walked in lock step along its output; per step, the time to fill
    every live row's mask with one call: ours ``BatchMatcher`` against xgrammar's
    ``BatchGrammarMatcher`` (eager, whose masks are precomputed), 1 thread and ``--batch-threads``.
    Every tool was compiled before by a fresh warm compiler per thread count; the rows' first
    visits (none of xgrammar's, which precomputes) happen in the walk."""
    import numpy as np
    import xgrammar as xgr

    from agentgrammar import BatchMatcher, Compiler, Matcher

    ag = agentic_registry(setup, args)
    size = min(args.sizes)
    rows = args.batch_rows
    threads = sorted({1, args.batch_threads})
    xgr_compiler = setup.xcompiler(jit=False, cache=True)
    subsets = [ag.subset(size) for _ in range(rows)]
    outputs = [setup.encode(ag.output(names)) for names in subsets]
    xgr_grammars = [ag.build_xgr(xgr_compiler, names) for names in subsets]
    results: Dict[str, Any] = {"rows": rows, "tools": size, "threads": {}}
    for n in threads:
        per_engine: Dict[str, List[float]] = {"ours": [], "xgr": []}
        for engine in ("ours", "xgr"):
            if engine == "ours":  # a fresh warm compiler: every tool built, no mask computed yet
                ours_compiler = Compiler(setup.vocab)
                ag.build_ours(ours_compiler, list(ag.by_name))
                grammars = [ag.build_ours(ours_compiler, names) for names in subsets]
                matchers: List[Any] = [Matcher(g) for g in grammars]
                pool: Any = BatchMatcher(max_threads=n)
                fill = BatchMatcher.fill_next_token_bitmask
                bitmask = np.zeros((rows, (setup.vocab.vocab_size + 31) // 32), dtype=np.int32)
            else:
                matchers = [xgr.GrammarMatcher(g) for g in xgr_grammars]
                pool = xgr.BatchGrammarMatcher(max_threads=n)
                fill = xgr.BatchGrammarMatcher.batch_fill_next_token_bitmask
                bitmask = xgr.allocate_token_bitmask(rows, setup.info.vocab_size)
            step = 0
            while True:
                live = [i for i in range(rows) if step < len(outputs[i])]
                if not live:
                    break
                start = time.perf_counter()
                fill(pool, [matchers[i] for i in live], bitmask, live)
                per_engine[engine].append(time.perf_counter() - start)
                for i in live:
                    if not matchers[i].accept_token(outputs[i][step]):
                        raise SystemExit(f"[batch] {engine} rejected row {i}'s token at step {step}")
                step += 1
        results["threads"][str(n)] = {e: dist_us(v) for e, v in per_engine.items()}
    return results


def print_batch(res: Dict[str, Any]) -> None:
    rows = []
    for n, eng in res["threads"].items():
        for key in ("mean", "p50", "p99", "max"):
            ours, theirs = eng["ours"][key], eng["xgr"][key]
            rows.append([n, f"per step {key} µs", fmt(ours, 0), fmt(theirs, 0), fmt(ours / theirs, 2)])
    print_table(
        f"Batch masks: {res['rows']} rows, each its own {res['tools']}-tool request, one fill call per step "
        "(ours BatchMatcher, xgrammar eager BatchGrammarMatcher)",
        ["threads", "measure", "ours", "xgr", "ours/xgr"],
        rows,
    )
