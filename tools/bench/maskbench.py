"""Workload 2, ``maskbench``: sampled MaskBench schemas, cold time to first mask and time
between masks along every valid instance."""

from __future__ import annotations

import json
import random
import sys
import warnings
from functools import partial
from typing import Any, Callable, Dict, List, Sequence, Tuple

from .caches import clear_ours
from .stats import dist_us, fmt, print_table, ratio_to, ratio_to_best
from .walkers import ENGINES, Setup, timed_request, walk


def _ours_json_schema(compiler: Any, schema: Any) -> Any:
    return compiler.compile_json_schema(schema)


def _cold_first_masks(
    setup: Setup, schema: Any, order: Sequence[str]
) -> Tuple[Dict[str, float], Dict[str, Any]]:
    """Each engine's cold time to first mask of ``schema`` (seconds) and its compiled grammar,
    the engines timed in ``order``: fresh compilers (made outside the timing) and our caches of
    schemas and tools cleared. An engine that fails to compile is left out of both."""
    import llguidance

    from agentgrammar import Compiler

    clear_ours()
    ours = Compiler(setup.vocab)
    xcomp = {
        "xgr": setup.xcompiler(jit=False, cache=True),
        "xgr-jit": setup.xcompiler(jit=True, cache=True),
    }
    builders: Dict[str, Callable[[], Any]] = {
        "ours": partial(_ours_json_schema, ours, schema),
        "xgr": partial(xcomp["xgr"].compile_json_schema, json.dumps(schema)),
        "xgr-jit": partial(xcomp["xgr-jit"].compile_json_schema, json.dumps(schema)),
        "llg": partial(
            llguidance.LLMatcher.grammar_from_json_schema,
            schema,
            defaults={"whitespace_flexible": True, "coerce_one_of": True},
        ),
    }
    first: Dict[str, float] = {}
    compiled: Dict[str, Any] = {}
    for engine in order:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, first[engine], compiled[engine] = timed_request(setup, engine, builders[engine])
        except Exception:
            pass
    return first, compiled


def run_maskbench(setup: Setup, args: Any) -> Dict[str, Any]:
    paths = sorted(p for p in args.maskbench.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    sample = random.Random(args.seed).sample(paths, min(args.maskbench_sample, len(paths)))
    ttfm: Dict[str, List[float]] = {e: [] for e in ENGINES}
    between: Dict[str, List[float]] = {e: [] for e in ENGINES}
    failed: Dict[str, int] = dict.fromkeys(ENGINES, 0)
    rejected: Dict[str, int] = dict.fromkeys(ENGINES, 0)
    schemas = instances = 0
    for i, path in enumerate(sample):
        data = json.loads(path.read_text(encoding="utf-8"))
        schema = data["schema"]
        first: Dict[str, float] = {}
        compiled: Dict[str, Any] = {}
        for rep in range(args.maskbench_repeats):
            order = ENGINES[rep % len(ENGINES) :] + ENGINES[: rep % len(ENGINES)]
            times, compiled = _cold_first_masks(setup, schema, order)
            for engine, t in times.items():
                first[engine] = min(first.get(engine, t), t)
            if len(compiled) < len(ENGINES):
                break
        for engine in ENGINES:
            failed[engine] += engine not in compiled
        if len(compiled) < len(ENGINES):
            continue
        schemas += 1
        for engine in ENGINES:
            ttfm[engine].append(first[engine])
        for test in data.get("tests", []):
            if not test.get("valid"):
                continue
            ids = setup.encode(json.dumps(test["data"]))
            runs = {e: walk(setup, e, compiled[e], ids) for e in ENGINES}
            for e, t in runs.items():
                rejected[e] += t is None
            if all(t is not None for t in runs.values()):
                instances += 1
                for e, t in runs.items():
                    between[e].extend(t[1:])  # mask + accept after the first
        if (i + 1) % 50 == 0:
            print(f"[maskbench] {i + 1}/{len(sample)}", file=sys.stderr)
    return {
        "sample": len(sample),
        "repeats": args.maskbench_repeats,
        "schemas_compared": schemas,
        "instances_compared": instances,
        "compile_failed": failed,
        "instances_rejected": rejected,
        "ttfm_us": {e: dist_us(ttfm[e]) for e in ENGINES},
        "between_us": {e: dist_us(between[e]) for e in ENGINES},
    }


def print_maskbench(res: Dict[str, Any]) -> None:
    rows = []
    for label, key in (("time to first mask µs", "ttfm_us"), ("time between masks µs", "between_us")):
        for stat in ("mean", "p50", "p99", "p99.9", "max"):
            row = {e: res[key][e][stat] for e in ENGINES}
            rows.append(
                [
                    f"{label} {stat}",
                    *(fmt(row[e], 0) for e in ENGINES),
                    fmt(ratio_to_best(row), 2),
                    fmt(ratio_to(row, ("llg",)), 2),
                ]
            )
    rows.append(["compile failed (schemas)", *(str(res["compile_failed"][e]) for e in ENGINES), "", ""])
    rows.append(["valid instances rejected", *(str(res["instances_rejected"][e]) for e in ENGINES), "", ""])
    print_table(
        f"MaskBench: {res['sample']} sampled files, {res['schemas_compared']} compiled by all "
        f"(time to first mask: the fastest of {res['repeats']} cold compiles), "
        f"{res['instances_compared']} valid instances accepted by all (between = mask + accept)",
        ["measure", *ENGINES, "ours/best", "ours/llg"],
        rows,
    )
