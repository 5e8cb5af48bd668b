"""Time per-request grammar build + compile for tool calling: agentgrammar against xgrammar.

Tools are the Berkeley Function-Calling Leaderboard definitions (``pip download --no-deps
bfcl-eval``; pass the wheel or its unpacked folder). For each size (10, 100, 500 by default) and
several random subsets, the request's structural tag is the one xgrammar itself builds for the
model family (``xgrammar.get_model_structural_tag(model, tools=...)``, Qwen-3 by default), so
both engines compile exactly the same input:

* agentgrammar: ``Grammar.from_structural_tag`` + ``Compiler.compile``, *cold* (a fresh
  ``Compiler``, every cache cleared) and *warm* (a shared ``Compiler`` that has compiled these
  tools before; whole grammars are not reused, so each request is converted, built and linked);
* xgrammar: ``GrammarCompiler.compile_structural_tag`` with its cache off (every call compiles).

Single thread, the Llama-3.2 vocabulary. Prints medians per size and the ratio ours / xgrammar.

Then two measurements of our own, with the same tools:

* ``AgentFormat`` requests (``--format``, Qwen-3 by default) with warm tools: the build
  (``fmt.grammar``) and the compile, medians per size;
* turns: the same 10-tool request three times on one ``Compiler``, feeding the start of a
  realistic answer (the end of the reasoning, a tool call's opening) and timing every mask.
  The first turn pays each state's first visit; later turns get the compiled grammar back.

    pip download --no-deps bfcl-eval -d /tmp/bfcl
    python -m tools.bench.request /tmp/bfcl/bfcl_eval-*.whl
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import time
import zipfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from .walkers import xgrammar_vocabulary

_BFCL_TYPES = {
    "dict": "object",
    "float": "number",
    "double": "number",
    "long": "integer",
    "tuple": "array",
    "list": "array",
    "int": "integer",
    "bool": "boolean",
    "hashmap": "object",
}


def _fix_types(schema: Any) -> Any:
    """BFCL writes Python type names (dict, float, tuple, any): map them to JSON Schema."""
    if isinstance(schema, list):
        return [_fix_types(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _fix_types(v) for k, v in schema.items() if k not in ("optional",)}
    t = out.get("type")
    if isinstance(t, str):
        t = _BFCL_TYPES.get(t.lower(), t.lower())
        if t in ("string", "number", "integer", "boolean", "object", "array", "null"):
            out["type"] = t
        else:  # "any", Java / JavaScript class names, ...: unconstrained
            del out["type"]
    return out


def load_bfcl_tools(source: Path) -> List[Dict[str, Any]]:
    """Distinct function definitions from the BFCL data files, as OpenAI tool dicts."""
    texts: List[str] = []
    if source.is_file() and source.suffix == ".whl":
        with zipfile.ZipFile(source) as z:
            for name in z.namelist():
                if name.startswith("bfcl_eval/data/BFCL_") and name.endswith(".json"):
                    texts.append(io.TextIOWrapper(z.open(name), encoding="utf-8").read())
    else:
        texts = [p.read_text(encoding="utf-8") for p in sorted(source.rglob("BFCL_*.json"))]
    tools: Dict[str, Dict[str, Any]] = {}
    for text in texts:
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:  # not a JSON-lines file: skipped
                break
            if not isinstance(entry, dict):
                continue
            for fn in entry.get("function", []) if isinstance(entry.get("function"), list) else []:
                name = fn.get("name", "").replace(".", "_")
                if name and name not in tools and isinstance(fn.get("parameters"), dict):
                    params = _fix_types(fn["parameters"])
                    tools[name] = {
                        "type": "function",
                        "function": {
                            "name": name,
                            "description": fn.get("description", ""),
                            "parameters": params,
                        },
                    }
    return list(tools.values())


def _median_ms(values: Sequence[float]) -> float:
    return statistics.median(values) * 1e3 if values else float("nan")


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bfcl", type=Path, help="the bfcl-eval wheel, or a folder holding its data files")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--model", default="qwen_3", help="xgrammar's model family for the structural tag")
    parser.add_argument("--requests", type=int, default=5, help="random subsets per size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", default="qwen3", help="the AgentFormat preset of the later measurements")
    args = parser.parse_args(argv)

    import xgrammar as xgr

    from agentgrammar import Compiler, Grammar
    from agentgrammar.grammar import structural_tag as converter

    tok, vocab, info = xgrammar_vocabulary()
    xcompiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    tools, dropped = [], 0
    for tool in load_bfcl_tools(args.bfcl):  # keep the tools both engines accept
        tag = xgr.get_model_structural_tag(args.model, tools=[tool]).model_dump()
        try:
            Grammar.from_structural_tag(tag)
            xgr.Grammar.from_structural_tag(json.dumps(tag))
        except Exception:
            dropped += 1
            continue
        tools.append(tool)
    print(
        f"{len(tools)} BFCL tools ({dropped} that either engine refuses left out); "
        f"model template {args.model!r}; {args.requests} requests per size"
    )
    rng = random.Random(args.seed)
    print(
        f"{'tools':>6} {'ours cold ms':>13} {'ours warm ms':>13} {'xgrammar ms':>12} {'cold/xgr':>9} {'warm/xgr':>9}"
    )
    shared = Compiler(vocab, reuse_grammars=False)
    for size in args.sizes:
        cold: List[float] = []
        warm: List[float] = []
        theirs: List[float] = []
        for _ in range(args.requests):
            subset = rng.sample(tools, min(size, len(tools)))
            tag = xgr.get_model_structural_tag(args.model, tools=subset).model_dump()
            for cache in vars(converter).values():  # every per-piece cache: a truly cold start
                if hasattr(cache, "cache_clear") and not isinstance(cache, type):  # caches, not classes
                    cache.cache_clear()
            # cold: a fresh compiler; warm: the shared one, which has seen these tools (whole
            # grammars are not reused, so the request is still converted, built and linked)
            start = time.perf_counter()
            Compiler(vocab).compile(Grammar.from_structural_tag(tag))
            cold.append(time.perf_counter() - start)
            shared.compile(Grammar.from_structural_tag(tag))
            start = time.perf_counter()
            shared.compile(Grammar.from_structural_tag(tag))
            warm.append(time.perf_counter() - start)
            start = time.perf_counter()
            xcompiler.compile_structural_tag(json.dumps(tag))
            theirs.append(time.perf_counter() - start)
        c, w, x = _median_ms(cold), _median_ms(warm), _median_ms(theirs)
        print(f"{size:>6} {c:>13.1f} {w:>13.1f} {x:>12.1f} {c / x:>9.2f} {w / x:>9.2f}")
    _agent_format_requests(args, tools, vocab, rng)
    _turns(args, tools, tok, vocab, rng)


def _agent_format_requests(args: Any, tools: List[Dict[str, Any]], vocab: Any, rng: random.Random) -> None:
    from agentgrammar import Compiler, formats
    from agentgrammar.registry.openai import tool_from_openai

    fmt = formats.get(args.format)
    # No reuse of whole compiled grammars, so each request's grammar is linked anew; the tools'
    # own grammars, compiled at first sight, are linked as parts.
    compiler = Compiler(vocab, reuse_grammars=False)
    print(f"\nAgentFormat {args.format!r} requests, tools seen before (medians of {args.requests}):")
    print(f"{'tools':>6} {'build ms':>9} {'compile ms':>11}")
    for size in args.sizes:
        builds: List[float] = []
        compiles: List[float] = []
        for _ in range(args.requests):
            subset = [tool_from_openai(t) for t in rng.sample(tools, min(size, len(tools)))]
            compiler.compile(fmt.grammar(subset))  # first sight of these tools
            start = time.perf_counter()
            grammar = fmt.grammar(subset)
            built = time.perf_counter()
            compiler.compile(grammar)
            builds.append(built - start)
            compiles.append(time.perf_counter() - built)
        print(f"{size:>6} {_median_ms(builds):>9.1f} {_median_ms(compiles):>11.1f}")


def _turns(args: Any, tools: List[Dict[str, Any]], tok: Any, vocab: Any, rng: random.Random) -> None:
    import numpy as np
    import xgrammar as xgr

    from agentgrammar import Compiler, Grammar, Matcher, allocate_token_bitmask

    subset = rng.sample(tools, min(10, len(tools)))
    tag = xgr.get_model_structural_tag(args.model, tools=subset).model_dump()
    name = subset[0]["function"]["name"]
    text = f'Let me check.</think>\n\n<tool_call>\n{{"name": "{name}", "arguments": '
    ids = tok.encode(text, add_special_tokens=False)
    compiler = Compiler(vocab)
    bitmask = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
    print(f"\nturns: one 10-tool request three times, masks along the first {len(ids)} tokens of an answer:")
    for turn in range(1, 4):
        start = time.perf_counter()
        matcher = Matcher(compiler.compile(Grammar.from_structural_tag(tag)))
        built = time.perf_counter() - start
        masks: List[float] = []
        for token in ids:
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(bitmask)
            masks.append(time.perf_counter() - start)
            if not matcher.accept_token(token):
                raise SystemExit(f"the grammar rejected {tok.decode([token])!r}: the template changed?")
        print(
            f"  turn {turn}: build + compile {built * 1e3:.1f} ms; masks sum {sum(masks) * 1e3:.1f} ms, "
            f"median {np.median(masks) * 1e6:.0f} µs, max {max(masks) * 1e3:.2f} ms"
        )


if __name__ == "__main__":
    main()
