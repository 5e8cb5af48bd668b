"""Workload 1, ``agentic``: Qwen-3 requests with reasoning over a BFCL registry, cold and warm
builds, then masks along a realistic output; ours alone in a child process for peak memory."""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
import warnings
from functools import partial
from pathlib import Path
from typing import AbstractSet, Any, Dict, List, Sequence, Tuple

from .caches import clear_ours
from .instances import instance
from .request import load_bfcl_tools
from .stats import dist_us, fmt, median_ms, print_table, ratio_to, ratio_to_best
from .walkers import ENGINES, Setup, timed_request, walk

QWEN3_MARKERS = ("<think>", "</think>", "<tool_call>", "</tool_call>")


def _llg_text(text: str, tokens: AbstractSet[str]) -> str:
    """A Lark literal: ``text`` quoted, or as llguidance's reference to a single added token
    when ``text`` is one in the vocabulary (llguidance reads added tokens as special tokens,
    never as their bytes)."""
    return text if text in tokens else json.dumps(text)


def _llg_call_body(tool: Dict[str, Any], tokens: AbstractSet[str]) -> str:
    fn = tool["function"]
    begin = f'\n{{"name": "{fn["name"]}", "arguments": '
    return f"{json.dumps(begin)} %json {json.dumps(fn['parameters'])} {json.dumps(chr(125) + chr(10))} {_llg_text('</tool_call>', tokens)}"


def llg_lark(tools: Sequence[Dict[str, Any]], tokens: AbstractSet[str] = frozenset()) -> str:
    """A Lark grammar for llguidance equivalent to the Qwen-3 request: a think block, then
    free text with any number of ``<tool_call>`` blocks (lazy lexemes, as ``StructTag`` writes
    them; unlike the structural tag, the free text may contain ``<think>``). ``tokens``: the
    markers that are single added tokens of the vocabulary (Qwen3's), written as token
    references, each ending the free text before it as ``StructTag`` writes a special trigger.

    >>> print(llg_lark([], frozenset(QWEN3_MARKERS)).splitlines()[2])
    think: <think> TEXT </think>
    """
    bodies = "\n".join(f"body_{i}: {_llg_call_body(t, tokens)}" for i, t in enumerate(tools))
    options = " | ".join(f"body_{i}" for i in range(len(tools))) or '""'
    think_lazy = "" if "</think>" in tokens else "[lazy]"
    trig_lazy = "" if "<tool_call>" in tokens else "[lazy]"
    return (
        "%llguidance {}\n"
        'start: think "\\n\\n" call* TEXT\n'
        f"think{think_lazy}: {_llg_text('<think>', tokens)} TEXT {_llg_text('</think>', tokens)}\n"
        f"trig{trig_lazy}: TEXT {_llg_text('<tool_call>', tokens)}\n"
        f"call: trig ({options})\n"
        "TEXT: /(.|\\n)*/\n"
        f"{bodies}\n"
    )


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

    def warm_up_ours(self, compiler: Any) -> None:
        """Warm ``compiler`` with the format's warm-up grammar, as an ``Agent`` does when made."""
        from agentgrammar import formats

        compiler.warm_up(formats.get("qwen3").warm_up_grammar())

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

        return llguidance.LLMatcher.grammar_from_lark(
            llg_lark([self.by_name[n] for n in names], self.setup.added_tokens(QWEN3_MARKERS))
        )


_AGENTIC: Dict[Tuple[int, int], "Agentic"] = {}


def agentic_registry(setup: Setup, args: Any) -> "Agentic":
    """The agentic registry, built once per run (checking 500 tools takes a while)."""
    key = (args.registry, args.seed)
    if key not in _AGENTIC:
        _AGENTIC[key] = Agentic(setup, args.bfcl, args.registry, args.seed)
    return _AGENTIC[key]


def run_agentic(setup: Setup, args: Any) -> Dict[str, Any]:
    from agentgrammar import Compiler
    from agentgrammar.grammar.memo import memo_size_bytes

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
    # As an Agent warms its compiler when made: the classes every request of the format shares
    # (think block, free text, argument values) classified by the background worker. xgrammar
    # eager classifies every state of each grammar in its compile.
    if args.background:
        ag.warm_up_ours(warm["ours"])
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
                    hot = timed_request(setup, engine, partial(ag.build_ours, warm["ours"], names))
                    # walked at once: what background classification has done by then counts
                    ours_times = walk(setup, engine, hot[2], ids, args.forward_ms / 1e3)
                    ag.clear_ours()
                    cold = timed_request(
                        setup,
                        engine,
                        partial(ag.build_ours, Compiler(setup.vocab, background=args.background), names),
                    )
                    ag.build_ours(warm["ours"], everything)
                    # Its compile is found in the warm compiler's cache, which returns before
                    # the memo accounting (Compiler._trim_memos) measures the registry's rebuilt
                    # entries: measured here, untimed, as the first build of the registry measured
                    # them in a serving process, instead of inside the next timed warm request
                    # (70-130 ms at 10 or 100 tools where the request alone takes 1-2 ms).
                    memo_size_bytes()
                    # The rebuilt registry is setup like the first one: out of the collector's
                    # reach. Each rebuild leaves the cleared caches' objects alive in the warm
                    # compiler, so the heap grows by a registry per request, and without this
                    # the full collections it triggers (30-80 ms at 500 tools) land in whichever
                    # request comes next.
                    gc.collect()
                    gc.freeze()
                elif engine == "llg":  # no compiler object, nothing kept between requests
                    cold = timed_request(setup, engine, partial(ag.build_llg, names))
                    hot = timed_request(setup, engine, partial(ag.build_llg, names))
                else:
                    cold = timed_request(
                        setup,
                        engine,
                        partial(ag.build_xgr, setup.xcompiler(engine == "xgr-jit", True), names),
                    )
                    hot = timed_request(setup, engine, partial(ag.build_xgr, warm[engine], names))
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

    setup = Setup(args.tokenizer)
    ag = Agentic(setup, args.bfcl, args.registry, args.seed)
    base = _rss_mib()
    compiler = Compiler(setup.vocab, background=args.background)
    if args.background:  # as the timed warm compiler
        ag.warm_up_ours(compiler)
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
                    *(fmt(row[e]) for e in ENGINES),
                    fmt(ratio_to_best(row), 2),
                    fmt(ratio_to(row, ("xgr", "xgr-jit")), 2),
                ]
            )
        for key in ("mean", "p50", "p99", "max"):
            row = {e: eng[e]["per_token_us"][key] for e in ENGINES}
            token_rows.append(
                [
                    size,
                    f"per token {key} µs",
                    *(fmt(row[e], 0) for e in ENGINES),
                    fmt(ratio_to_best(row), 2),
                    fmt(ratio_to(row, ("xgr",)), 2),
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
