"""Time JSON Schema conversion: agentgrammar against xgrammar and llguidance on the same schemas.

For each MaskBench file of FOLDER whose name starts with one of ``--prefix`` (default: the
function-calling sets, BFCL and Glaive: typical tool schemas), times

* agentgrammar: ``Grammar.from_json_schema`` (schema -> grammar IR) and ``Compiler.compile``
  (IR -> automata, no mask computed yet);
* xgrammar: ``GrammarCompiler.compile_json_schema`` (its cache off, so every call converts);
* llguidance: ``LLMatcher`` construction (which converts and checks the schema) with
  flexible whitespace and ``coerce_one_of``.

All run in one process on the Llama-3.2 vocabulary, one schema after another (the converters'
internal caches of shared pieces stay warm, as in a server). Prints medians, p90 and max per
engine, and the ratio of medians.

    python -m tools.bench.json_schema ../shared/data/maskbench
    python -m tools.bench.json_schema FOLDER --prefix Github_easy --limit 300
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence


def _timed(fn: Callable[[], Any]) -> Optional[float]:
    start = time.perf_counter()
    try:
        fn()
    except Exception:
        return None
    return (time.perf_counter() - start) * 1e6


def _agentgrammar(tokenizer: Any) -> Dict[str, Callable[[Any], Callable[[], Any]]]:
    from agentgrammar import Compiler, Grammar, Vocabulary

    compiler = Compiler(Vocabulary.from_huggingface(tokenizer))

    def convert(schema: Any) -> Callable[[], Any]:
        def run() -> Any:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return Grammar.from_json_schema(schema)

        return run

    def both(schema: Any) -> Callable[[], Any]:
        return lambda: compiler.compile(convert(schema)())

    return {"agentgrammar convert": convert, "agentgrammar convert+compile": both}


def _xgrammar(tokenizer: Any) -> Dict[str, Callable[[Any], Callable[[], Any]]]:
    try:
        import xgrammar as xgr
    except ImportError:
        return {}
    info = xgr.TokenizerInfo.from_huggingface(tokenizer)
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    return {"xgrammar compile": lambda s: lambda: compiler.compile_json_schema(json.dumps(s))}


def _llguidance(tokenizer: Any) -> Dict[str, Callable[[Any], Callable[[], Any]]]:
    try:
        import llguidance
        import llguidance.hf
    except ImportError:
        return {}
    tok = llguidance.hf.from_tokenizer(tokenizer)

    def run(schema: Any) -> Callable[[], Any]:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            schema, defaults={"whitespace_flexible": True, "coerce_one_of": True}
        )

        def go() -> Any:
            matcher = llguidance.LLMatcher(tok, grammar)
            if matcher.is_error():
                raise ValueError(matcher.get_error())
            return matcher

        return go

    return {"llguidance compile": run}


def _summary(values: Sequence[float]) -> str:
    if not values:
        return "n=0"
    ordered = sorted(values)
    p90 = ordered[max(0, int(0.9 * len(ordered) + 0.999999) - 1)]
    return f"n={len(values)} median={statistics.median(values):.0f} p90={p90:.0f} max={ordered[-1]:.0f}"


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a folder of MaskBench *.json files")
    parser.add_argument("--prefix", action="append", help="file name prefixes (default: BFCL, Glaiveai2K)")
    parser.add_argument("--limit", type=int, default=500, help="at most this many files")
    parser.add_argument("--repeats", type=int, default=3, help="runs per schema; the fastest counts")
    args = parser.parse_args(argv)

    from agentgrammar.engine.tokenizers import load_llama32_tokenizer
    from agentgrammar.errors import VocabularyError

    try:
        tokenizer = load_llama32_tokenizer()
    except VocabularyError as e:
        raise SystemExit(str(e)) from None
    prefixes = tuple(args.prefix or ["BFCL", "Glaiveai2K"])
    files = sorted(p for p in args.folder.iterdir() if p.name.startswith(prefixes))[: args.limit]
    schemas = [json.loads(p.read_text(encoding="utf-8"))["schema"] for p in files]
    engines: Dict[str, Callable[[Any], Callable[[], Any]]] = {}
    for factory in (_agentgrammar, _xgrammar, _llguidance):
        engines.update(factory(tokenizer))
    times: Dict[str, List[float]] = {name: [] for name in engines}
    failures: Dict[str, int] = dict.fromkeys(engines, 0)
    for schema in schemas:
        for name, make in engines.items():
            try:
                fn = make(schema)
            except Exception:
                failures[name] += 1
                continue
            runs = [_timed(fn) for _ in range(args.repeats)]
            ok = [r for r in runs if r is not None]
            if ok:
                times[name].append(min(ok))
            else:
                failures[name] += 1
    print(f"{len(schemas)} schemas ({', '.join(prefixes)}), microseconds, fastest of {args.repeats}:")
    for name in engines:
        print(f"  {name:30} {_summary(times[name])}  failed={failures[name]}")
    base = times.get("agentgrammar convert+compile")
    if base:
        for name in engines:
            if name.startswith("agentgrammar") or not times[name]:
                continue
            ratio = statistics.median(base) / statistics.median(times[name])
            print(f"  median ratio agentgrammar convert+compile / {name}: {ratio:.2f}")


if __name__ == "__main__":
    main()
