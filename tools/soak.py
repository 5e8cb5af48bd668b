"""Soak test: many requests on one shared Compiler, watching the process's memory.

Each request picks a model format (``agentgrammar.formats.get``) and a few tools from a small
registry, compiles ``fmt.grammar(tools, ...)`` on one shared ``Compiler``, generates text by a
random walk (random allowed tokens until the matcher terminates or a cap), and, when the walk
terminated, parses the text with ``fmt.parse(text, tools=tools)``. Any exception fails the run.

RSS is read from ``/proc/self/status`` (else ``resource``) every ``--report-every`` requests.
After warm-up (``--warmup`` requests, default 10% of the run) the RSS may not grow by more than
``--max-growth-mb`` over its post-warm-up value; if it does, the run fails (exit 1).

``--distinct-schemas`` gives every request a tool whose schema no other request has (so each
request converts, compiles and caches a new argument grammar) and ``--cache-limit-mb`` sets the
compiler's ``cache_limit_bytes``: RSS must then stay flat, the Python-side caches included
(``docs/limits.md``, "Python-side caches").

    python tools/soak.py --requests 100000 --report-every 5000
    python tools/soak.py --requests 2000 --vocab llama32      # the real 128k Llama-3.2 vocabulary
    python tools/soak.py --requests 5000 --distinct-schemas --cache-limit-mb 64 --report-every 500
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from agentgrammar import Compiler, Matcher, Tool, Vocabulary  # noqa: E402
from agentgrammar.formats import get  # noqa: E402

FORMATS = ["hermes", "qwen3", "qwen3_coder", "llama3", "deepseek_r1", "mistral", "harmony", "tags"]

TOOLS = [
    Tool(
        "get_weather",
        "The weather in a city.",
        {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["c", "f"]}},
            "required": ["city"],
        },
    ),
    Tool(
        "add",
        "Add two integers.",
        {
            "type": "object",
            "properties": {"a": {"type": "integer", "minimum": -99, "maximum": 99}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    ),
    Tool("now", "The time.", {"type": "object", "properties": {}}),
    Tool(
        "search",
        "Search the web.",
        {
            "type": "object",
            "properties": {
                "q": {"type": "string", "maxLength": 16},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 2},
                "exact": {"type": "boolean"},
            },
            "required": ["q"],
        },
    ),
]


def rss_mb() -> float:
    """Resident set size in MiB (``VmRSS``; the peak from ``resource`` where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def small_vocab() -> Vocabulary:
    """The 256 bytes, common JSON / markup pieces and every preset's markers, plus a stop token."""
    words = [" the", " and", "ing", '{"', '":', '": "', '", "', '"}', "name", "arguments", "true", "false"]
    markers: List[str] = []
    for name in FORMATS:
        fmt = get(name)
        markers += [m for m in fmt.markers() if m]
        markers += [s for s in getattr(fmt, "stop", ()) if s]
    tokens = [bytes([b]) for b in range(256)] + [w.encode() for w in dict.fromkeys(words + markers)]
    tokens.append(b"</s>")
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


def load_vocab(name: str) -> Vocabulary:
    if name == "small":
        return small_vocab()
    from agentgrammar.engine.tokenizers import load_llama32_tokenizer

    return Vocabulary.from_huggingface(load_llama32_tokenizer())


def walk(matcher: Matcher, vocab: Vocabulary, rng: random.Random, cap: int, mask: Any) -> Tuple[bytes, bool]:
    """A random walk: random allowed tokens (stop tokens less likely) until termination or ``cap``."""
    n = vocab.vocab_size
    out: List[bytes] = []
    stops = set(vocab.stop_token_ids)
    for _ in range(cap):
        if matcher.is_terminated():
            break
        jump = matcher.find_jump_forward_bytes() if rng.random() < 0.5 else b""
        if jump:
            ok = matcher.accept_string(jump)
            if not ok:
                raise AssertionError(f"the jump-forward bytes {jump!r} were rejected")
            out.append(jump)
            continue
        matcher.fill_next_token_bitmask(mask)
        allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:n])
        if len(allowed) == 0:
            raise AssertionError("no token is allowed before termination")
        tok = int(allowed[rng.randrange(len(allowed))])
        for _ in range(3):  # mostly printable ASCII, fewer stops: walks that end and parse
            b = vocab.token_bytes[tok]
            if (tok not in stops or rng.random() < 0.3) and all(32 <= c < 127 or c in (9, 10) for c in b):
                break
            tok = int(allowed[rng.randrange(len(allowed))])
        if not matcher.accept_token(tok):
            raise AssertionError(f"allowed token {tok} was rejected")
        if tok not in stops:
            out.append(vocab.token_bytes[tok])
    return b"".join(out), matcher.is_terminated()


def distinct_tool(i: int) -> Tool:
    """A tool whose name and schema no other request has: ``--distinct-schemas`` makes every
    request convert, compile and cache a new argument grammar (the memory soak of issue 38)."""
    props: Dict[str, Any] = {
        f"q{i}": {"type": "string", "maxLength": 4 + i % 29},
        "n": {"type": "integer", "minimum": -(i % 97), "maximum": 100 + i},
        "mode": {"enum": [f"m{i}", "auto", "off"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3 + i % 5}, "maxItems": 1 + i % 3},
    }
    return Tool(
        f"tool_{i}", f"Distinct tool {i}.", {"type": "object", "properties": props, "required": [f"q{i}"]}
    )


def request(
    compiler: Compiler,
    vocab: Vocabulary,
    rng: random.Random,
    cap: int,
    mask: Any,
    stats: Dict[str, int],
    index: int = 0,
    distinct: bool = False,
) -> None:
    fmt = get(rng.choice(FORMATS))
    tools = rng.sample(TOOLS, rng.randint(1, len(TOOLS)))
    if distinct:  # one tool whose schema is new in every request
        tools = [distinct_tool(index), *tools[: rng.randint(0, 2)]]
    choice = rng.choice(["auto", "auto", "required", "none", tools[0].name])
    grammar = fmt.grammar(
        tools,
        tool_choice=choice,
        parallel_tool_calls=rng.random() < 0.5,
        reasoning=rng.choice(["enabled", "disabled", "auto"]),
    )
    matcher = Matcher(compiler.compile(grammar))
    text, terminated = walk(matcher, vocab, rng, cap, mask)
    if not terminated:
        stats["capped"] += 1
        return
    stats["terminated"] += 1
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        stats["not_utf8"] += 1  # free text may be any bytes, as in xgrammar
        return
    out = fmt.parse(decoded, tools=tools)
    stats["calls"] += len(out.tool_calls)
    stats["parsed"] += 1


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--report-every", type=int, default=None, help="default: requests / 20")
    p.add_argument("--warmup", type=int, default=None, help="requests before the RSS baseline (default 10%%)")
    p.add_argument("--max-growth-mb", type=float, default=64.0, help="allowed RSS growth after warm-up")
    p.add_argument("--cap", type=int, default=200, help="the most steps of one walk")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab", choices=["small", "llama32"], default="small")
    p.add_argument("--max-seconds", type=float, default=None, help="stop (successfully) after this long")
    p.add_argument("--json", action="store_true", help="print the figures as JSON at the end")
    p.add_argument(
        "--distinct-schemas", action="store_true", help="every request offers a tool with a schema of its own"
    )
    p.add_argument(
        "--cache-limit-mb", type=float, default=None, help="the Compiler's cache_limit_bytes, in MiB"
    )
    args = p.parse_args(argv)
    every = args.report_every or max(1, args.requests // 20)
    warmup = args.warmup if args.warmup is not None else max(1, args.requests // 10)

    warnings.simplefilter("ignore")
    vocab = load_vocab(args.vocab)
    compiler = (
        Compiler(vocab)
        if args.cache_limit_mb is None
        else Compiler(vocab, cache_limit_bytes=int(args.cache_limit_mb * 1024 * 1024))
    )
    mask = np.zeros((1, (vocab.vocab_size + 31) // 32), dtype=np.int32)
    rng = random.Random(args.seed)
    stats = {"terminated": 0, "capped": 0, "parsed": 0, "calls": 0, "not_utf8": 0}
    samples: List[Dict[str, float]] = []
    baseline: Optional[float] = None
    start = time.perf_counter()
    print(
        f"soak: {args.requests} requests, vocab {args.vocab} ({vocab.vocab_size} tokens), start RSS {rss_mb():.1f} MiB",
        flush=True,
    )
    for i in range(1, args.requests + 1):
        try:
            request(compiler, vocab, rng, args.cap, mask, stats, i, args.distinct_schemas)
        except Exception:
            print(f"soak: request {i} failed:\n{traceback.format_exc()}", flush=True)
            return 1
        if i == warmup:
            gc.collect()
            baseline = rss_mb()
        out_of_time = args.max_seconds is not None and time.perf_counter() - start > args.max_seconds
        if i % every == 0 or i == args.requests or out_of_time:
            gc.collect()
            rss = rss_mb()
            took = time.perf_counter() - start
            samples.append({"requests": i, "rss_mb": round(rss, 1), "seconds": round(took, 1)})
            grow = f" (+{rss - baseline:.1f} MiB since warm-up)" if baseline is not None else " (warming up)"
            print(
                f"soak: {i:>7} requests  {i / took:7.1f} req/s  RSS {rss:8.1f} MiB{grow}  {stats}", flush=True
            )
            if baseline is not None and rss - baseline > args.max_growth_mb:
                print(
                    f"soak: FAIL: RSS grew by {rss - baseline:.1f} MiB after warm-up (bound {args.max_growth_mb} MiB)"
                )
                return 1
        if out_of_time:
            break
    if args.json:
        print(json.dumps({"requests": i, "baseline_mb": baseline, "samples": samples, "stats": stats}))
    print(
        f"soak: OK: {i} requests in {time.perf_counter() - start:.0f} s, RSS after warm-up {baseline:.1f} MiB, final {samples[-1]['rss_mb']} MiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
