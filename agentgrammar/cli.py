"""The ``agentgrammar`` command line.

``agentgrammar sample`` compiles a grammar against a real tokenizer's vocabulary and
prints a constrained random sample with the time spent compiling and masking::

    agentgrammar sample                       # a tool-call-shaped demo grammar
    agentgrammar sample --regex '[a-z]{3,8}@example\\.com'
    agentgrammar sample --ebnf-file my.gbnf --max-tokens 200 --seed 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np

DEMO_GRAMMAR = r"""
# A tool call whose shape is fixed and whose values are bounded, so every sample ends.
root ::= "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" city "\", \"days\": " days ", \"unit\": " unit "}}"
city ::= [A-Z] [a-z]{2,12} (" " [A-Z] [a-z]{2,12})?
days ::= [1-9] | "1" [0-4]
unit ::= "\"celsius\"" | "\"fahrenheit\""
"""


def _load_vocabulary(tokenizer: Optional[str]):  # type: ignore[no-untyped-def]
    from .engine.tokenizers import builtin_vocabulary, vocabulary_from_path

    if tokenizer:
        return vocabulary_from_path(tokenizer), tokenizer
    return builtin_vocabulary()


def _grammar_from_args(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from .grammar import Grammar

    if args.regex is not None:
        return Grammar.from_regex(args.regex)
    if args.ebnf is not None:
        return Grammar.from_ebnf(args.ebnf)
    if args.ebnf_file is not None:
        return Grammar.from_ebnf(Path(args.ebnf_file).read_text(encoding="utf-8"))
    if args.json:
        return Grammar.builtin_json()
    return Grammar.from_ebnf(DEMO_GRAMMAR)


def _sample(matcher, vocab_size: int, rng: np.random.Generator, max_tokens: int, stop_ids: Sequence[int]):  # type: ignore[no-untyped-def]
    """Random-logit sampling under the grammar; leans to stopping as the budget runs out."""
    from .engine.bitmask import allocate_token_bitmask, apply_token_bitmask_inplace

    bitmask = allocate_token_bitmask(1, vocab_size, backend="numpy")
    tokens: List[int] = []
    mask_times: List[float] = []
    for step in range(max_tokens):
        if matcher.is_terminated():
            break
        t0 = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        mask_times.append(time.perf_counter() - t0)
        logits = rng.standard_normal((1, vocab_size)).astype(np.float32)
        logits[0, list(stop_ids)] += 4.0 * step / max_tokens
        apply_token_bitmask_inplace(logits, bitmask)
        token = int(np.argmax(logits[0]))
        if not np.isfinite(logits[0, token]):
            break
        matcher.accept_token(token)
        tokens.append(token)
    return tokens, mask_times


def cmd_sample(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from .engine import Compiler, Matcher
    from .errors import AgentGrammarError

    console = Console(stderr=False)
    try:
        t0 = time.perf_counter()
        vocab, vocab_name = _load_vocabulary(args.tokenizer)
        t_vocab = time.perf_counter() - t0
        grammar = _grammar_from_args(args)
        compiler = Compiler(vocab)
        t0 = time.perf_counter()
        compiled = compiler.compile(grammar)
        t_compile = time.perf_counter() - t0
        matcher = Matcher(compiled)
        rng = np.random.default_rng(args.seed)
        tokens, mask_times = _sample(matcher, vocab.vocab_size, rng, args.max_tokens, vocab.stop_token_ids)
    except (AgentGrammarError, OSError) as exc:
        console.print(f"[bold red]error:[/] {exc}")
        return 2
    text = vocab.decode([t for t in tokens if t not in set(vocab.stop_token_ids)]).decode("utf-8", "replace")
    summary = {
        "vocabulary": vocab_name,
        "vocab_size": vocab.vocab_size,
        "tokens": len(tokens),
        "completed": matcher.is_completed() or matcher.is_terminated(),
        "vocab_load_ms": round(t_vocab * 1e3, 2),
        "compile_ms": round(t_compile * 1e3, 3),
        "mask_mean_us": round(statistics.fmean(mask_times) * 1e6, 1) if mask_times else None,
        "mask_max_us": round(max(mask_times) * 1e6, 1) if mask_times else None,
        "text": text,
    }
    if args.json_output:
        print(json.dumps(summary))
        return 0
    console.rule("[bold]grammar")
    console.print(str(grammar), markup=False, highlight=False, soft_wrap=True)
    console.rule("[bold]constrained sample")
    console.print(text, markup=False, style="green")
    table = Table(show_header=False, box=None)
    for key in (
        "vocabulary",
        "vocab_size",
        "tokens",
        "completed",
        "compile_ms",
        "mask_mean_us",
        "mask_max_us",
    ):
        table.add_row(key, str(summary[key]))
    console.rule("[bold]summary")
    console.print(table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentgrammar", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sample = sub.add_parser("sample", help="compile a grammar and print a constrained random sample")
    src = sample.add_mutually_exclusive_group()
    src.add_argument("--ebnf", help="EBNF grammar text (root rule 'root')")
    src.add_argument("--ebnf-file", help="a file with an EBNF grammar")
    src.add_argument("--regex", help="a regular expression the whole output must match")
    src.add_argument("--json", action="store_true", help="any JSON value (the builtin JSON grammar)")
    sample.add_argument("--tokenizer", help="a tokenizer.json file or a Hugging Face tokenizer folder")
    sample.add_argument("--max-tokens", type=int, default=128)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--json-output", action="store_true", help="print a machine-readable summary")
    sample.set_defaults(func=cmd_sample)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
