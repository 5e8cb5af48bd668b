"""One command for every performance workload: agentgrammar against xgrammar and llguidance.

    python tools/bench.py /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl ../shared/data/maskbench

    python tools/bench.py WHEEL MASKBENCH_DIR [--workloads agentic maskbench hf] [--sizes 10 100 500]
        [--requests N] [--maskbench-sample N] [--json]

Everything runs in one process, one thread (``torch.set_num_threads(1)``, xgrammar
``max_threads=1``, llguidance's single-threaded mask fill, ``RAYON_NUM_THREADS=1``), on the
Llama-3.2 128k vocabulary, every engine on the same inputs and interleaved, so machine noise
hits all alike. Engines: ``ours`` (agentgrammar), ``xgr`` (xgrammar 0.2.x, default eager
``GrammarCompiler``: every token mask precomputed at compile time), ``xgr-jit`` (the same with
``enable_dynamic_compilation=True``: masks built on first use; xgrammar's on-demand mode) and
``llg`` (llguidance, lazy by design). Workloads:

1. ``agentic``: a registry of the first ``--registry`` (500) BFCL tools both grammar engines
   accept (loaded by ``tools/bench_request.py``); per request a random subset of each size.
   The request is the Qwen-3 format with reasoning: ours ``formats.get("qwen3").grammar(
   registry.select(subset))`` + ``Compiler.compile``; xgrammar ``get_model_structural_tag(
   "qwen_3", tools=subset)`` (its think tag given the ``<think>`` opener ours expects, so both
   read the same text) + ``compile_structural_tag``; llguidance a Lark grammar with the same
   structure (lazy think / trigger lexemes and ``%json`` arguments, as ``llguidance.StructTag``
   writes them) + ``LLMatcher``. *cold*: a fresh compiler (made outside the timing), our
   per-tool caches cleared (as ``bench_request`` does); xgrammar's fresh compiler keeps its
   default, empty cache (``cache_enabled=False``, as in ``bench_request``, also drops the
   sharing of identical rules inside one grammar: about 4x slower at 100 tools); *warm*: one compiler per engine kept for the
   whole run, every tool already compiled once (the full registry as a warm-up), a new subset;
   ours is timed warm before cold, and the full registry is built again (untimed) after each
   cold request, whose clearing of our process-wide per-tool caches no serving process does;
   what the rebuild leaves alive is frozen out of the cyclic collector's reach, as setup is.
   Times are build + compile, and build + compile + first mask ("ttfm"). Then, along a
   realistic output (think text, a sentence, two tool calls with valid arguments made from the
   tools' schemas, a closing response, the stop token) tokenized by the Llama tokenizer, the
   time of ``fill_next_token_bitmask`` + ``accept_token`` per token (mean, p50, p99, max).
2. ``maskbench``: ``--maskbench-sample`` (200) MaskBench files drawn with a fixed seed; per
   schema, cold (fresh compilers, our caches of schemas and tools cleared; what depends on no
   schema, such as the converter's helper rules for strings and numbers and the grammar of
   any value, whose automata are loaded once per process, stays converted, as in any process
   after its first schema; a fresh compiler of ours has empty caches over the
   vocabulary's token tables, built once per ``Vocabulary`` as the peers' tokenizer info is
   once per tokenizer), time to first mask (compile + first mask: ``--maskbench-repeats`` (3)
   cold compiles per schema and engine, the engines' order rotated from one to the next, the
   fastest kept, as ``timeit`` keeps the run the machine disturbed least) and,
   walking each valid instance
   (``json.dumps``, tokenized, then the stop token), time between masks. Only schemas every
   engine compiles and instances every engine accepts are compared; the rest are counted.
3. ``hf``: per-step logits-processor time in the same ``generate()`` loop (tiny random
   ``LlamaForCausalLM``), ours ``GrammarLogitsProcessor`` against xgrammar's HF processor: run by
   ``tools/bench_hf.py`` (its JSON-schema and tool-call grammars).
4. ``batch``: the one multi-threaded workload: a serving batch of ``--batch-rows`` agentic
   requests walked in lock step, one batch fill per step, ours ``BatchMatcher`` against
   xgrammar's ``BatchGrammarMatcher``, with 1 and ``--batch-threads`` threads.

The agentic workload also runs ours alone in a child process to report peak RSS for its
largest size and the compiler's own cache count (``Compiler.cache_size_bytes``).

Each table shows medians (and the distribution columns named) and "ours/best", our figure
over the best peer's. ``--json`` prints every figure as JSON instead of the tables.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from tools.bench_request import load_bfcl_tools  # noqa: E402
from tools.maskbench import percentile  # noqa: E402

ENGINES = ("ours", "xgr", "xgr-jit", "llg")
PEERS = ENGINES[1:]

# --------------------------------------------------------------------------- statistics


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


def _fmt(value: float, digits: int = 1) -> str:
    return "n/a" if value != value else f"{value:.{digits}f}"


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    line = "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(f"\n{title}\n{line}\n{'-' * len(line)}")
    for r in cells:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


# --------------------------------------------------------------------------- valid arguments


def instance(schema: Any, depth: int = 0) -> Any:
    """A small value valid for a (BFCL-style, ``$ref``-free) JSON schema: required properties
    in schema order, the first enum value, bounds respected. Raises ``ValueError`` for what it
    cannot fill (patterns, formats, ``$ref``)."""
    if depth > 8 or not isinstance(schema, dict):
        raise ValueError("too deep")
    if "$ref" in schema or "pattern" in schema or "format" in schema or "not" in schema:
        raise ValueError("not filled: $ref / pattern / format / not")
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance(schema[key][0], depth + 1)
    t = schema.get("type", "string")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return {k: instance(v, depth + 1) for k, v in props.items() if k in required}
    if t == "array":
        items = schema.get("items", {"type": "string"})
        return [instance(items, depth + 1) for _ in range(max(1, int(schema.get("minItems", 1))))]
    if t == "string":
        text = "San Francisco, CA"
        lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
        text = text.ljust(lo, "x")
        return text[: int(hi)] if hi is not None else text
    if t in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        value = 3 if t == "integer" else 2.5
        if lo is not None and value <= lo:
            value = int(lo) + 1 if t == "integer" else lo + 0.5
        if hi is not None and value >= hi:
            value = int(hi) - 1 if t == "integer" else hi - 0.5
        return value
    if t == "boolean":
        return True
    if t == "null":
        return None
    raise ValueError(f"type {t!r}")


# --------------------------------------------------------------------------- shared setup


class Setup:
    """The tokenizer, our vocabulary, xgrammar's tokenizer info and llguidance's tokenizer."""

    def __init__(self) -> None:
        import llguidance.hf
        import xgrammar as xgr

        from agentgrammar import Vocabulary, allocate_token_bitmask
        from agentgrammar.engine.tokenizers import load_llama32_tokenizer
        from agentgrammar.errors import VocabularyError

        try:
            self.tok = load_llama32_tokenizer()
        except VocabularyError as e:
            raise SystemExit(str(e)) from None
        self.vocab = Vocabulary.from_huggingface(self.tok)
        self.stop_ids = list(self.vocab.stop_token_ids)
        self.stop = self.stop_ids[0]
        self.info = xgr.TokenizerInfo.from_huggingface(
            self.tok, vocab_size=self.vocab.vocab_size, stop_token_ids=self.stop_ids
        )
        self.llg_tok = llguidance.hf.from_tokenizer(
            self.tok, n_vocab=self.vocab.vocab_size, eos_token=self.stop
        )
        self.bitmask = allocate_token_bitmask(1, self.vocab.vocab_size, backend="numpy")
        self.xbitmask = xgr.allocate_token_bitmask(1, self.info.vocab_size)
        import llguidance.numpy

        self.lbitmask = llguidance.numpy.allocate_token_bitmask(1, self.llg_tok.vocab_size)

    def xcompiler(self, jit: bool, cache: bool) -> Any:
        import xgrammar as xgr

        return xgr.GrammarCompiler(
            self.info, max_threads=1, cache_enabled=cache, enable_dynamic_compilation=jit
        )

    def encode(self, text: str) -> List[int]:
        return [*self.tok.encode(text, add_special_tokens=False), self.stop]


class Walker:
    """A matcher of one engine with a uniform ``fill`` / ``accept``."""

    def __init__(self, setup: Setup, engine: str, compiled: Any) -> None:
        self.engine = engine
        self.setup = setup
        if engine == "ours":
            from agentgrammar import Matcher

            self.m = Matcher(compiled)
        elif engine.startswith("xgr"):
            import xgrammar as xgr

            self.m = xgr.GrammarMatcher(compiled)
        else:
            import llguidance

            self.m = llguidance.LLMatcher(setup.llg_tok, compiled)
            if self.m.is_error():
                raise ValueError(self.m.get_error())

    def fill(self) -> None:
        if self.engine == "ours":
            self.m.fill_next_token_bitmask(self.setup.bitmask)
        elif self.engine == "llg":
            import llguidance.numpy

            llguidance.numpy.fill_next_token_bitmask(self.m, self.setup.lbitmask, 0)
        else:
            self.m.fill_next_token_bitmask(self.setup.xbitmask)

    def accept(self, token: int) -> bool:
        if self.engine == "llg":
            return bool(self.m.consume_token(token)) and not self.m.is_error()
        return bool(self.m.accept_token(token))


def walk(
    setup: Setup, engine: str, compiled: Any, ids: Sequence[int], forward_s: float = 0.0
) -> Optional[List[float]]:
    """Seconds of mask + accept per token along ``ids``; None when the engine rejects a token.
    ``forward_s``: an untimed pause before each mask, the model's forward pass."""
    w = Walker(setup, engine, compiled)
    times: List[float] = []
    for token in ids:
        if forward_s:
            time.sleep(forward_s)
        start = time.perf_counter()
        w.fill()
        ok = w.accept(token)
        times.append(time.perf_counter() - start)
        if not ok:
            return None
    return times


# --------------------------------------------------------------------------- 1. agentic


def _llg_call_body(tool: Dict[str, Any]) -> str:
    fn = tool["function"]
    begin = f'\n{{"name": "{fn["name"]}", "arguments": '
    return f"{json.dumps(begin)} %json {json.dumps(fn['parameters'])} {json.dumps(chr(125) + chr(10) + '</tool_call>')}"


def llg_lark(tools: Sequence[Dict[str, Any]]) -> str:
    """A Lark grammar for llguidance equivalent to the Qwen-3 request: a think block, then
    free text with any number of ``<tool_call>`` blocks (lazy lexemes, as ``StructTag`` writes
    them; unlike the structural tag, the free text may contain ``<think>``)."""
    bodies = "\n".join(f"body_{i}: {_llg_call_body(t)}" for i, t in enumerate(tools))
    options = " | ".join(f"body_{i}" for i in range(len(tools)))
    return (
        "%llguidance {}\n"
        'start: think "\\n\\n" call* TEXT\n'
        'think[lazy]: "<think>" TEXT "</think>"\n'
        'trig[lazy]: TEXT "<tool_call>"\n'
        f"call: trig ({options})\n"
        "TEXT: /(.|\\n)*/\n"
        f"{bodies}\n"
    )


def _process_tables() -> Tuple[Any, ...]:
    """The converters' caches that no schema is an argument of, kept by ``clear_ours`` as by a
    process after its first schema: the Unicode ranges of Python's ``\\d``, ``\\w`` and ``\\s``
    (found once per process by running ``re`` over every code point, about 25 ms a letter)
    and the automata of canonical numbers and fractions."""
    import agentgrammar.grammar.json_schema.numbers as js_numbers
    import agentgrammar.grammar.json_values.patterns as jv_patterns

    return (
        jv_patterns._python_shorthand_ranges,
        jv_patterns._wide_ranges,
        jv_patterns._not_wide_ranges,
        js_numbers._canonical_number_dfa,
        js_numbers._fraction_dfa,
    )


def clear_ours() -> None:
    """Forget every per-tool / per-schema piece our converters cache: a cold start. What
    depends on no schema (the JSON converter's helper rules, kept with what was derived from
    them, and ``_process_tables``) stays, as it does in a process that has converted any
    schema before."""
    import agentgrammar.formats.tools as ftools
    import agentgrammar.grammar.json_schema.key_trie as js_key_trie
    import agentgrammar.grammar.structural_tag  # noqa: F401  (its caches are cleared below)
    from agentgrammar.grammar.memo import clear_memos

    kept = _process_tables()
    clear_memos()  # per-tool pieces, converted tags, serialized chunks
    ftools._PIECES.cache_clear()
    converters = (
        "agentgrammar.grammar.structural_tag",
        "agentgrammar.grammar.json_values",
        "agentgrammar.grammar.json_schema",
    )
    for name, module in sorted(sys.modules.items()):  # the converters' modules, and their packages' modules
        if not name.startswith(converters):
            continue
        for value in vars(module).values():
            # caches, not classes, nor the process-wide tables
            if hasattr(value, "cache_clear") and not isinstance(value, type) and value not in kept:
                value.cache_clear()
    js_key_trie._TRIE_EXPRS.clear()  # subtries of the key names that other keys must not spell


class Agentic:
    """Registry, request builders and output texts of the agentic workload."""

    def __init__(self, setup: Setup, bfcl: Path, registry_size: int, seed: int) -> None:
        import xgrammar as xgr
        from xgrammar.testing import _is_grammar_accept_string

        from agentgrammar import Grammar, ToolRegistry, formats

        self.setup = setup
        self.rng = random.Random(seed)
        tools: List[Dict[str, Any]] = []
        self.callable: Dict[str, Dict[str, Any]] = {}  # name -> valid arguments
        fmt = formats.get("qwen3")
        for tool in load_bfcl_tools(bfcl):  # the tools both grammar engines accept
            tag = xgr.get_model_structural_tag("qwen_3", tools=[tool]).model_dump()
            try:
                Grammar.from_structural_tag(tag)
                xg = xgr.Grammar.from_structural_tag(json.dumps(tag))
            except Exception:
                continue
            tools.append(tool)
            try:
                args = instance(tool["function"]["parameters"])
            except ValueError:
                args = None
            if args is not None:
                call = self._call_text(tool["function"]["name"], args)
                text = f"</think>\n\n{call}"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ok = fmt.grammar([tool]).accepts("<think>" + text) and _is_grammar_accept_string(xg, text)
                if ok:
                    self.callable[tool["function"]["name"]] = args
            if len(tools) >= registry_size:
                break
        if not tools:
            raise SystemExit(f"no usable BFCL tool in {bfcl}: is agentgrammar importable and built?")
        self.tools = tools
        self.by_name = {t["function"]["name"]: t for t in tools}
        self.registry = ToolRegistry.from_openai(tools)

    @staticmethod
    def _call_text(name: str, args: Any) -> str:
        return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(args)}}}\n</tool_call>'

    def subset(self, size: int) -> List[str]:
        """Random tool names, at least two of them callable with generated arguments."""
        names = self.rng.sample(list(self.by_name), min(size, len(self.by_name)))
        if sum(n in self.callable for n in names) < 2:
            extra = [n for n in self.rng.sample(sorted(self.callable), 2) if n not in names]
            names = extra + names[: len(names) - len(extra)]
        return names

    def output(self, names: Sequence[str]) -> str:
        calls = [n for n in names if n in self.callable][:2]
        think = (
            "<think>\nThe user wants two things. Let me check which tools fit: "
            f"{calls[0]} looks right for the first part, and {calls[-1]} for the second. "
            "I will call both, then summarize the results.\n</think>\n\n"
        )
        body = "Let me look that up.\n" + "\n".join(self._call_text(n, self.callable[n]) for n in calls)
        return think + body + "\nHere is what I found: both calls went through, details below."

    # -- builders: each returns a compiled object for ``Walker``

    def clear_ours(self) -> None:
        clear_ours()

    def build_ours(self, compiler: Any, names: Sequence[str]) -> Any:
        from agentgrammar import formats

        return compiler.compile(formats.get("qwen3").grammar(self.registry.select(names)))

    def xgr_tag(self, names: Sequence[str]) -> str:
        import xgrammar as xgr

        tag = xgr.get_model_structural_tag("qwen_3", tools=[self.by_name[n] for n in names]).model_dump()
        think = tag["format"]["elements"][0]["elements"][0]
        assert think["type"] == "tag" and think["end"] == "</think>", think
        think["begin"] = "<think>"  # the opener is in the prompt in xgrammar's template; ours generates it
        return json.dumps(tag)

    def build_xgr(self, compiler: Any, names: Sequence[str]) -> Any:
        return compiler.compile_structural_tag(self.xgr_tag(names))

    def build_llg(self, names: Sequence[str]) -> Any:
        import llguidance

        return llguidance.LLMatcher.grammar_from_lark(llg_lark([self.by_name[n] for n in names]))


def _timed_request(setup: Setup, engine: str, build: Callable[[], Any]) -> Tuple[float, float, Any]:
    """(build + compile seconds, + first mask seconds, compiled)."""
    start = time.perf_counter()
    compiled = build()
    if engine == "llg":  # llguidance compiles when the matcher is made: count it in the build
        w = Walker(setup, engine, compiled)
    built = time.perf_counter()
    if engine != "llg":
        w = Walker(setup, engine, compiled)
    w.fill()
    return built - start, time.perf_counter() - start, compiled


_AGENTIC: Dict[Tuple[int, int], "Agentic"] = {}


def agentic_registry(setup: Setup, args: Any) -> "Agentic":
    """The agentic registry, built once per run (checking 500 tools takes a while)."""
    key = (args.registry, args.seed)
    if key not in _AGENTIC:
        _AGENTIC[key] = Agentic(setup, args.bfcl, args.registry, args.seed)
    return _AGENTIC[key]


def run_agentic(setup: Setup, args: Any) -> Dict[str, Any]:
    from agentgrammar import Compiler

    ag = agentic_registry(setup, args)
    print(
        f"[agentic] registry of {len(ag.tools)} BFCL tools ({len(ag.callable)} with generated arguments); "
        f"{args.requests} requests per size",
        file=sys.stderr,
    )
    warm = {
        "ours": Compiler(setup.vocab, background=args.background),
        "xgr": setup.xcompiler(jit=False, cache=True),
        "xgr-jit": setup.xcompiler(jit=True, cache=True),
    }
    everything = list(ag.by_name)
    start = time.perf_counter()
    ag.build_ours(warm["ours"], everything)  # warm-up: every tool seen once by every warm compiler
    ag.build_xgr(warm["xgr"], everything)
    ag.build_xgr(warm["xgr-jit"], everything)
    print(f"[agentic] warm-up (full registry) {time.perf_counter() - start:.1f} s", file=sys.stderr)
    gc.collect()  # the registry and the warm-up are setup too: out of the collector's reach (see main)
    gc.freeze()

    results: Dict[str, Any] = {}
    for size in args.sizes:
        rec: Dict[str, Dict[str, List[float]]] = {
            e: {k: [] for k in ("cold", "cold_ttfm", "warm", "warm_ttfm", "tokens")} for e in ENGINES
        }
        rejected: Dict[str, int] = dict.fromkeys(ENGINES, 0)
        n_tokens: List[int] = []
        for _ in range(args.requests):
            names = ag.subset(size)
            ids = setup.encode(ag.output(names))
            n_tokens.append(len(ids))
            compiled: Dict[str, Any] = {}
            for engine in ENGINES:  # interleaved per request
                if engine == "ours":
                    # Warm first: the cold request clears our process-wide front-end caches
                    # (clear_ours), which a process serving requests never does; the full
                    # registry, built again untimed on the warm compiler, puts them back.
                    hot = _timed_request(setup, engine, partial(ag.build_ours, warm["ours"], names))
                    # walked at once: what background classification has done by then counts
                    ours_times = walk(setup, engine, hot[2], ids, args.forward_ms / 1e3)
                    ag.clear_ours()
                    cold = _timed_request(
                        setup,
                        engine,
                        partial(ag.build_ours, Compiler(setup.vocab, background=args.background), names),
                    )
                    ag.build_ours(warm["ours"], everything)
                    # The rebuilt registry is setup like the first one: out of the collector's
                    # reach. Each rebuild leaves the cleared caches' objects alive in the warm
                    # compiler, so the heap grows by a registry per request, and without this
                    # the full collections it triggers (30-80 ms at 500 tools) land in whichever
                    # request comes next.
                    gc.collect()
                    gc.freeze()
                elif engine == "llg":  # no compiler object, nothing kept between requests
                    cold = _timed_request(setup, engine, partial(ag.build_llg, names))
                    hot = _timed_request(setup, engine, partial(ag.build_llg, names))
                else:
                    cold = _timed_request(
                        setup,
                        engine,
                        partial(ag.build_xgr, setup.xcompiler(engine == "xgr-jit", True), names),
                    )
                    hot = _timed_request(setup, engine, partial(ag.build_xgr, warm[engine], names))
                rec[engine]["cold"].append(cold[0])
                rec[engine]["cold_ttfm"].append(cold[1])
                rec[engine]["warm"].append(hot[0])
                rec[engine]["warm_ttfm"].append(hot[1])
                compiled[engine] = hot[2]
            for engine in ENGINES:
                if engine == "ours":
                    times = ours_times
                else:
                    times = walk(setup, engine, compiled[engine], ids, args.forward_ms / 1e3)
                if times is None:
                    rejected[engine] += 1
                else:
                    rec[engine]["tokens"].extend(times)
        results[str(size)] = {
            "tokens_per_output": statistics.median(n_tokens),
            "rejected_outputs": rejected,
            "engines": {
                e: {
                    "cold_ms": median_ms(rec[e]["cold"]),
                    "cold_ttfm_ms": median_ms(rec[e]["cold_ttfm"]),
                    "warm_ms": median_ms(rec[e]["warm"]),
                    "warm_ttfm_ms": median_ms(rec[e]["warm_ttfm"]),
                    "per_token_us": dist_us(rec[e]["tokens"]),
                }
                for e in ENGINES
            },
        }
        print(f"[agentic] size {size} done", file=sys.stderr)
    memory = _ours_memory_in_child(args)
    return {
        "registry": len(ag.tools),
        "callable": len(ag.callable),
        "requests": args.requests,
        "sizes": results,
        "memory": memory,
        "llg_note": "Lark equivalent of the Qwen-3 structural tag (free text may contain <think>)",
    }


def _rss_mib(field: str = "VmRSS") -> float:
    """This process's resident set now (``VmHWM``: its peak), from /proc; 0 where there is none.

    Not ``getrusage().ru_maxrss``: Linux carries a parent's peak into a forked child, so a
    child of this (large) process would report the parent's peak as its own."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _ours_memory(args: Any) -> Dict[str, float]:
    """Ours alone: the 500-tool agentic workload on one warm compiler; peak RSS, and the
    compiler's own count of its caches (``Compiler.cache_size_bytes``) against its limit."""
    from agentgrammar import Compiler

    setup = Setup()
    ag = Agentic(setup, args.bfcl, args.registry, args.seed)
    base = _rss_mib()
    compiler = Compiler(setup.vocab, background=args.background)
    ag.build_ours(compiler, list(ag.by_name))
    size = max(args.sizes)
    for _ in range(args.requests):
        names = ag.subset(size)
        walk(setup, "ours", ag.build_ours(compiler, names), setup.encode(ag.output(names)))
    peak = _rss_mib("VmHWM")
    return {
        "tools": size,
        "requests": args.requests,
        "rss_after_setup_mib": round(base, 1),
        "peak_rss_mib": round(peak, 1),
        "workload_mib": round(peak - base, 1),
        "cache_mib": round(compiler.cache_size_bytes / 2**20, 1),
        "cache_limit_mib": round(compiler.cache_limit_bytes / 2**20, 1),
    }


def _ours_memory_in_child(args: Any) -> Dict[str, float]:
    """:func:`_ours_memory` in a fresh process, so the peers' memory is not in its peak."""
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(_ours_memory, (argparse.Namespace(**vars(args)),))


def print_agentic(res: Dict[str, Any]) -> None:
    build_rows, token_rows = [], []
    for size, r in res["sizes"].items():
        eng = r["engines"]
        for key, label in (
            ("cold_ms", "cold build+compile ms"),
            ("cold_ttfm_ms", "cold +1st mask ms"),
            ("warm_ms", "warm build+compile ms"),
            ("warm_ttfm_ms", "warm +1st mask ms"),
        ):
            row = {e: eng[e][key] for e in ENGINES}
            build_rows.append(
                [
                    size,
                    label,
                    *(_fmt(row[e]) for e in ENGINES),
                    _fmt(ratio_to_best(row), 2),
                    _fmt(ratio_to(row, ("xgr", "xgr-jit")), 2),
                ]
            )
        for key in ("mean", "p50", "p99", "max"):
            row = {e: eng[e]["per_token_us"][key] for e in ENGINES}
            token_rows.append(
                [
                    size,
                    f"per token {key} µs",
                    *(_fmt(row[e], 0) for e in ENGINES),
                    _fmt(ratio_to_best(row), 2),
                    _fmt(ratio_to(row, ("xgr",)), 2),
                ]
            )
        token_rows.append(
            [size, "rejected outputs", *(str(r["rejected_outputs"][e]) for e in ENGINES), "", ""]
        )
    head = ["tools", "measure", *ENGINES, "ours/best"]
    print_table(
        f"Agentic requests (qwen3 + reasoning, {res['registry']}-tool BFCL registry): medians of "
        f"{res['requests']} requests; ours/xgr: over xgrammar's better mode",
        [*head, "ours/xgr"],
        build_rows,
    )
    tokens = ", ".join(f"{s}: {r['tokens_per_output']:.0f}" for s, r in res["sizes"].items())
    print_table(
        f"Agentic masks: fill_next_token_bitmask + accept_token per token along the outputs (tokens per output {tokens}); "
        "ours/xgr: over xgrammar eager",
        [*head, "ours/xgr"],
        token_rows,
    )
    print(f"llg: {res['llg_note']}")
    mem = res.get("memory")
    if mem:
        print(
            f"Memory, ours alone in a child process ({mem['tools']}-tool requests, {mem['requests']} walks on "
            f"one warm compiler): peak RSS {mem['peak_rss_mib']} MiB, {mem['rss_after_setup_mib']} MiB of it "
            f"before any grammar (tokenizer, vocabulary, imports); compiler caches {mem['cache_mib']} MiB "
            f"(cache_limit_bytes {mem['cache_limit_mib']} MiB)"
        )


# --------------------------------------------------------------------------- 4. batch


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
            rows.append([n, f"per step {key} µs", _fmt(ours, 0), _fmt(theirs, 0), _fmt(ours / theirs, 2)])
    print_table(
        f"Batch masks: {res['rows']} rows, each its own {res['tools']}-tool request, one fill call per step "
        "(ours BatchMatcher, xgrammar eager BatchGrammarMatcher)",
        ["threads", "measure", "ours", "xgr", "ours/xgr"],
        rows,
    )


# --------------------------------------------------------------------------- 2. maskbench


def _ours_json_schema(compiler: Any, schema: Any) -> Any:
    from agentgrammar import Grammar

    return compiler.compile(Grammar.from_json_schema(schema))


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
                _, first[engine], compiled[engine] = _timed_request(setup, engine, builders[engine])
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
                    *(_fmt(row[e], 0) for e in ENGINES),
                    _fmt(ratio_to_best(row), 2),
                    _fmt(ratio_to(row, ("llg",)), 2),
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


# --------------------------------------------------------------------------- 3. hf


def run_hf(args: Any) -> Dict[str, Any]:
    try:
        from tools import bench_hf
    except ImportError as e:  # tools/bench_hf.py not there
        return {"source": "tools/bench_hf.py", "error": str(e), "results": []}

    return {
        "source": "tools/bench_hf.py",
        "results": [
            bench_hf.bench(kind, args.hf_repeats, args.hf_max_new_tokens, args.hf_prompt)
            for kind in ("json", "tools")
        ],
    }


def print_hf(res: Dict[str, Any]) -> None:
    if not res["results"]:
        print(f"\nHF generate(): n/a ({res.get('error')})")
        return
    rows = []
    for r in res["results"]:
        ours, xgr = r["rows"]["agentgrammar"], r["rows"]["xgrammar"]
        for key, label in (
            ("step_median_ms", "processor step p50 ms"),
            ("step_mean_ms", "processor step mean ms"),
            ("step_p90_ms", "processor step p90 ms"),
            ("generate_median_ms", "generate() ms"),
            ("overhead_per_token_ms", "overhead / token ms"),
        ):
            a, b = ours[key], xgr[key]
            ratio = a / b if a > 0 and b > 0 else float("nan")  # overheads under noise can be < 0
            rows.append([r["grammar"], label, f"{a:.3f}", f"{b:.3f}", _fmt(ratio, 2)])
        rows.append(
            [
                r["grammar"],
                "tokens / same output",
                str(ours["tokens"]),
                str(xgr["tokens"]),
                str(r["same_output"]),
            ]
        )
    r0 = res["results"][0]
    print_table(
        f"HF generate(): per-step logits-processor time, tiny random Llama, {r0['repeats']} runs of "
        f"{r0['max_new_tokens']} new tokens (via {res['source']})",
        ["grammar", "measure", "ours", "xgr", "ours/best"],
        rows,
    )


# --------------------------------------------------------------------------- main


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bfcl", type=Path, help="the bfcl-eval wheel, or a folder holding its data files")
    parser.add_argument("maskbench", type=Path, help="a folder of MaskBench *.json files")
    parser.add_argument(
        "--workloads",
        nargs="+",
        choices=["agentic", "maskbench", "hf", "batch"],
        default=["agentic", "maskbench", "hf", "batch"],
    )
    parser.add_argument("--batch-rows", type=int, default=16, help="rows of the batch workload")
    parser.add_argument(
        "--batch-threads", type=int, default=min(8, os.cpu_count() or 1), help="threads of the batch workload"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--requests", type=int, default=5, help="random subsets (requests) per size")
    parser.add_argument("--registry", type=int, default=500, help="BFCL tools in the registry")
    parser.add_argument("--maskbench-sample", type=int, default=200)
    parser.add_argument(
        "--maskbench-repeats",
        type=int,
        default=3,
        help="cold compiles per schema and engine, engine order rotated; the fastest is kept",
    )
    parser.add_argument("--hf-repeats", type=int, default=5)
    parser.add_argument("--hf-max-new-tokens", type=int, default=64)
    parser.add_argument("--hf-prompt", default="Weather in Paris for the next three days, as JSON:")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--forward-ms",
        type=float,
        default=0.0,
        help="agentic: untimed pause before each mask (a forward pass)",
    )
    parser.add_argument(
        "--no-background",
        dest="background",
        action="store_false",
        help="ours without background classification (Compiler(background=False))",
    )
    parser.add_argument("--json", action="store_true", help="print every figure as JSON instead of tables")
    args = parser.parse_args(argv)
    if args.maskbench_repeats < 1:
        parser.error("--maskbench-repeats must be at least 1")

    import torch
    import xgrammar as xgr

    torch.set_num_threads(1)
    setup = Setup()
    # As a server would: what setup loaded (tokenizers, vocabularies, torch) is moved out of
    # the cyclic collector's reach, so a full collection (hundreds of ms with 128k-token
    # vocabularies in memory) does not land inside some engine's timed mask.
    gc.collect()
    gc.freeze()
    out: Dict[str, Any] = {
        "threads": 1,
        "vocab_size": setup.vocab.vocab_size,
        "xgrammar_jit": "GrammarCompiler(enable_dynamic_compilation=True)",
        "versions": {
            "xgrammar": getattr(xgr, "__version__", _version("xgrammar")),
            "llguidance": _version("llguidance"),
            "torch": torch.__version__,
        },
    }
    for name in args.workloads:
        start = time.perf_counter()
        if name == "agentic":
            out["agentic"] = run_agentic(setup, args)
        elif name == "maskbench":
            out["maskbench"] = run_maskbench(setup, args)
        elif name == "batch":
            out["batch"] = run_batch(setup, args)
        else:
            out["hf"] = run_hf(args)
        out.setdefault("wall_s", {})[name] = round(time.perf_counter() - start, 1)
        print(f"[{name}] {out['wall_s'][name]} s", file=sys.stderr)
    if args.json:
        print(json.dumps(out, indent=1, default=str))
        return out
    print(
        f"Single thread, Llama-3.2 vocabulary ({setup.vocab.vocab_size} tokens); xgrammar {out['versions']['xgrammar']} "
        f"(xgr = eager, xgr-jit = enable_dynamic_compilation=True), llguidance {out['versions']['llguidance']}; "
        "ours/best = ours over the best peer (< 1: ours faster)"
    )
    if "agentic" in out:
        print_agentic(out["agentic"])
    if "maskbench" in out:
        print_maskbench(out["maskbench"])
    if "hf" in out:
        print_hf(out["hf"])
    if "batch" in out:
        print_batch(out["batch"])
    return out


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    main()
