"""Where a cold time to first mask goes: ours phase by phase, against llguidance's whole.

On the MaskBench sample of ``tools/bench.py`` (the same files, drawn with the same seed), each
schema is compiled cold (a fresh ``Compiler``, our caches of schemas and tools cleared, as
the bench does) ``--repeats`` times, ours and llguidance in turn, and the fastest time to
first mask of each is kept. Ours is split into its phases: converting and checking the
schema (``Grammar.from_json_schema``, which also writes the words where it checks the rules
from them), writing it (``Grammar.digest``: the digest, and the words where they were not
written yet), compiling it
(``Compiler.compile``: building the automata in C, binding the vocabulary; for a large
grammar, the two small grammars that bound its first mask instead), and the first matcher and
mask; building all the automata is timed again on its own after the compile (the same C build
of the same words, the fastest of three). Prints ours over llguidance (median, mean, p99; xgrammar
is left out, so a schema only xgrammar refuses counts here and not in the bench), each
phase's share over the whole sample and over its middle half (the schemas around the median),
and the schemas with the largest ratios.

    python -m tools.bench.first_mask ../shared/data/maskbench
    python -m tools.bench.first_mask FOLDER --sample 200 --repeats 3 --show 15
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")

import argparse
import gc
import json
import random
import time
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .caches import clear_ours
from .stats import dist_us
from .walkers import Setup, timed_request

PHASES = ("convert", "write", "compile", "first mask")


def _ours(setup: Setup, schema: Any) -> Optional[Dict[str, float]]:
    """Seconds of each phase of one cold time to first mask, and of building the automata
    alone; None when the schema does not compile."""
    from agentgrammar import Compiler, Grammar, Matcher
    from agentgrammar._gc_pause import gc_paused
    from agentgrammar.engine.compiler import _load_grammar_now

    clear_ours()
    compiler = Compiler(setup.vocab)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            grammar = Grammar.from_json_schema(schema)
            t1 = time.perf_counter()
            with gc_paused():  # as inside compile, where it is computed otherwise
                _ = grammar.digest
            t2 = time.perf_counter()
            compiled = compiler.compile(grammar)
            t3 = time.perf_counter()
            matcher = Matcher(compiled)
            matcher.fill_next_token_bitmask(setup.bitmask)
            t4 = time.perf_counter()
    except Exception:
        return None
    # Freed after the clock stops, as the peers' matchers are (walkers.timed_request); freeing
    # the grammar also ends its background classification, which would run beside the repeats.
    parts = compiled._parts
    del matcher, compiled, compiler  # the compiler keeps the grammar among its recent ones
    automata = float("inf")
    for _ in range(3):  # the same C build again, the fastest of three
        start = time.perf_counter()
        _load_grammar_now(grammar, parts)
        automata = min(automata, time.perf_counter() - start)
    return {
        "convert": t1 - t0,
        "write": t2 - t1,
        "compile": t3 - t2,
        "first mask": t4 - t3,
        "automata": automata,
    }


def _llg(setup: Setup, schema: Any) -> Optional[float]:
    import llguidance

    def build() -> Any:
        return llguidance.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": True, "coerce_one_of": True}
        )

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return timed_request(setup, "llg", build)[1]
    except Exception:
        return None


def measure(setup: Setup, paths: Sequence[Path], repeats: int) -> List[Dict[str, Any]]:
    """Per schema compiled by both: its file, llguidance's time to first mask and our
    fastest one's phases (seconds)."""
    rows: List[Dict[str, Any]] = []
    for path in paths:
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        ours: Optional[Dict[str, float]] = None
        llg: Optional[float] = None
        for rep in range(repeats):
            for engine in ("ours", "llg") if rep % 2 == 0 else ("llg", "ours"):
                if engine == "ours":
                    got = _ours(setup, schema)
                    if got is not None and (ours is None or _total(got) < _total(ours)):
                        ours = got
                else:
                    t = _llg(setup, schema)
                    if t is not None and (llg is None or t < llg):
                        llg = t
        if ours is not None and llg is not None:
            rows.append({"file": path.name, "llg": llg, "ours": ours})
    return rows


def _total(phases: Dict[str, float]) -> float:
    return sum(phases[p] for p in PHASES)


def _row(row: Dict[str, Any]) -> Dict[str, Any]:
    """One schema's figures as listed: its ratio, llguidance's time and our phases (µs)."""
    return {
        "file": row["file"],
        "ratio": round(_total(row["ours"]) / row["llg"], 2),
        "llg_us": round(row["llg"] * 1e6),
        **{f"{p}_us": round(row["ours"][p] * 1e6) for p in (*PHASES, "automata")},
    }


def _shares(rows: Sequence[Dict[str, Any]]) -> Dict[str, float]:
    total = sum(_total(r["ours"]) for r in rows) or 1.0
    out = {p: sum(r["ours"][p] for r in rows) / total for p in (*PHASES, "automata")}
    return {p: round(100 * v, 1) for p, v in out.items()}


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("maskbench", type=Path, help="a folder of MaskBench *.json files")
    parser.add_argument(
        "--sample", type=int, default=200, help="files drawn, as tools/bench.py's --maskbench-sample"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeats", type=int, default=3, help="cold compiles per schema and engine; the fastest is kept"
    )
    parser.add_argument("--show", type=int, default=10, help="schemas with the largest ratios to list")
    parser.add_argument(
        "--tokenizer",
        default="llama3",
        help="as tools/bench.py's --tokenizer: llama3, qwen3, gpt-oss or a folder",
    )
    parser.add_argument(
        "--largest", type=int, default=0, help="schemas with the longest times (ours) to list"
    )
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = parser.parse_args(argv)
    paths = sorted(p for p in args.maskbench.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    sample = random.Random(args.seed).sample(paths, min(args.sample, len(paths)))
    setup = Setup(args.tokenizer)
    gc.collect()
    gc.freeze()  # as tools/bench.py: what setup loaded stays out of the collector's walks
    rows = measure(setup, sample, args.repeats)
    ours = dist_us([_total(r["ours"]) for r in rows])
    llg = dist_us([r["llg"] for r in rows])
    by_total = sorted(rows, key=lambda r: _total(r["ours"]))
    middle = by_total[len(rows) // 4 : len(rows) - len(rows) // 4]
    out = {
        "schemas": len(rows),
        "ours_us": ours,
        "llg_us": llg,
        "ratio": {k: ours[k] / llg[k] for k in ("p50", "mean", "p99") if llg[k]},
        "share_percent": _shares(rows),
        "middle_share_percent": _shares(middle),
        "largest_ratios": [
            _row(r) for r in sorted(rows, key=lambda r: -_total(r["ours"]) / r["llg"])[: args.show]
        ],
        "largest": [_row(r) for r in sorted(rows, key=lambda r: -_total(r["ours"]))[: args.largest]],
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return out
    print(
        f"{len(rows)} schemas compiled by ours and llguidance, the fastest of {args.repeats} cold compiles each"
    )
    for k in ("p50", "mean", "p99"):
        print(
            f"time to first mask {k}: ours {ours[k]:,.0f} µs, llguidance {llg[k]:,.0f} µs, ratio {ours[k] / llg[k]:.2f}"
        )
    print(f"share of ours, whole sample (%): {out['share_percent']}")
    print(f"share of ours, middle half (%): {out['middle_share_percent']}")
    print(
        "('automata' is building them all in C: a part of 'compile', or for a large grammar after its first mask)"
    )
    for title, listed in (("largest ratios", out["largest_ratios"]), ("longest times", out["largest"])):
        if listed:
            print(f"{title}:")
        for r in listed:
            print(
                f"  {r['ratio']:6.2f}  {r['file']}  "
                + ", ".join(f"{k} {v}" for k, v in r.items() if k.endswith("_us"))
            )
    return out


if __name__ == "__main__":
    main()
