"""Long strings: masks along a JSON string of ``maxLength`` 1000 and 5000 (with and without
``minLength``), ours, xgrammar and llguidance, on Llama-3.2.

A benchmark, not a test: ``python -m tools.bench.long_strings`` prints, per schema and engine,
the compile time and the mean, p99 and max of the masks along one value that ends three
characters short of the bound, each engine compiled fresh (its first masks of the string are
in the figures). The value is written in raw UTF-8: both peers rejected a ``\u20ac`` escape
inside these bounded strings. ``--clock cpu`` times with the thread's CPU clock, which leaves out the time the
process was descheduled on a busy machine; ``--repeats`` walks each value again on the same
compiled grammar and keeps, per mask, the fastest.
"""

from __future__ import annotations

import argparse
import json
import random
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .stats import dist_us, fmt, print_table
from .walkers import Setup, Walker

ENGINES = ("ours", "xgr", "llg")
CASES = ((1000, 0), (1000, 500), (5000, 0), (5000, 2500))
WORDS = ("the", "model", "writes", "a", "long", "value", "of", "plain", "text,", "with", "some", "café", "€5")


def schema_of(max_length: int, min_length: int) -> Dict[str, Any]:
    """An object whose one required property is the bounded string."""
    s = {"type": "string", "maxLength": max_length, "minLength": min_length}
    return {"type": "object", "properties": {"s": s}, "required": ["s"]}


def value_of(length: int, seed: int = 0) -> str:
    """Words picked with ``seed`` up to exactly ``length`` characters."""
    rnd, out = random.Random(seed), ""
    while len(out) < length:
        out += rnd.choice(WORDS) + " "
    return out[:length]


def _compile(setup: Setup, engine: str, schema: Dict[str, Any]) -> Any:
    if engine == "ours":
        from agentgrammar import Compiler, Grammar

        return Compiler(setup.vocab).compile(Grammar.from_json_schema(schema))
    if engine == "xgr":
        return setup.xcompiler(jit=False, cache=False).compile_json_schema(json.dumps(schema))
    import llguidance

    return llguidance.LLMatcher.grammar_from_json_schema(
        schema, defaults={"whitespace_flexible": True, "coerce_one_of": True}
    )


def walk_masks(
    setup: Setup, engine: str, compiled: Any, ids: Sequence[int], clock: Callable[[], float]
) -> Optional[List[float]]:
    """Seconds of each mask along ``ids`` (the accepts untimed); None when a token is rejected."""
    w = Walker(setup, engine, compiled)
    times: List[float] = []
    for token in ids:
        start = clock()
        w.fill()
        times.append(clock() - start)
        if not w.accept(token):
            return None
    return times


def run_case(
    setup: Setup, max_length: int, min_length: int, repeats: int, clock: Callable[[], float]
) -> Dict[str, Tuple[float, Optional[List[float]]]]:
    """Per engine: compile seconds and the per-mask seconds (fastest over ``repeats`` walks)."""
    schema = schema_of(max_length, min_length)
    ids = setup.encode(json.dumps({"s": value_of(max_length - 3)}, ensure_ascii=False))
    out: Dict[str, Tuple[float, Optional[List[float]]]] = {}
    for engine in ENGINES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            compiled = _compile(setup, engine, schema)
            compile_s = time.perf_counter() - start
            best: Optional[List[float]] = None
            for _ in range(repeats):
                times = walk_masks(setup, engine, compiled, ids, clock)
                if times is None:
                    best = None
                    break
                best = times if best is None else [min(a, b) for a, b in zip(best, times)]
        out[engine] = (compile_s, best)
    return out


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--repeats", type=int, default=1, help="walks per engine; the fastest per mask")
    args = parser.parse_args(argv)
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    setup = Setup()
    rows = []
    for max_length, min_length in CASES:
        res = run_case(setup, max_length, min_length, max(1, args.repeats), clock)
        for engine in ENGINES:
            compile_s, times = res[engine]
            d = dist_us(times or [])
            rows.append(
                [
                    f"maxLength {max_length} minLength {min_length}",
                    engine,
                    fmt(compile_s * 1e3, 1),
                    str(d["n"]) if times else "rejected",
                    fmt(d["mean"], 0),
                    fmt(d["p99"], 0),
                    fmt(d["max"], 0),
                ]
            )
    print_table(
        f"Long strings, Llama-3.2: masks along a value 3 characters short of maxLength "
        f"({args.clock} clock, fastest of {max(1, args.repeats)} walks per mask)",
        ["schema", "engine", "compile ms", "masks", "mean µs", "p99 µs", "max µs"],
        rows,
    )


if __name__ == "__main__":
    main()
