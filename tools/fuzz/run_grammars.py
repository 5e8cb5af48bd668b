"""Harness bodies for the grammar front-ends: build, then compile and walk a few tokens.

The grammars are compiled for a small byte vocabulary so that the C core sees them too.
"""

from __future__ import annotations

import random
import warnings
from typing import Any, Dict, Tuple

from .contract import Finding

_COMPILER: Any = None


def small_compiler() -> Any:
    """A compiler over the 256 bytes plus a few words and a stop token, shared by the harnesses."""
    global _COMPILER
    if _COMPILER is None:
        from agentgrammar import Compiler, Vocabulary

        tokens = [bytes([b]) for b in range(256)] + [
            b"ab",
            b"<a>",
            b"</a>",
            b'{"',
            b'":',
            b"\xc3\xa9",
            b"</s>",
        ]
        _COMPILER = Compiler(Vocabulary(tokens, stop_token_ids=[len(tokens) - 1]), reuse_grammars=False)
    return _COMPILER


def exercise(grammar: Any, seed: int, steps: int = 8) -> None:
    """Compile a grammar for the small vocabulary and walk a few allowed tokens."""
    import numpy as np

    from agentgrammar import Matcher

    compiler = small_compiler()
    matcher = Matcher(compiler.compile(grammar))
    rng = random.Random(seed)
    mask = np.zeros((1, (compiler.vocabulary.vocab_size + 31) // 32), dtype=np.int32)
    for _ in range(steps):
        if matcher.is_terminated():
            break
        matcher.fill_next_token_bitmask(mask)
        bits = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
        if len(bits) == 0:
            break
        tok = int(bits[rng.randrange(len(bits))])
        if not matcher.accept_token(tok):
            raise Finding(f"token {tok} allowed by the mask was rejected")
    matcher.find_jump_forward_string()


def run_ebnf(inp: str) -> None:
    from agentgrammar import Grammar

    g = Grammar.from_ebnf(inp)
    str(g)
    exercise(g, len(inp))


def run_regex(inp: str) -> None:
    from agentgrammar import Grammar

    g = Grammar.from_regex(inp)
    exercise(g, len(inp))


def run_json_schema(inp: Tuple[Any, Dict[str, Any]]) -> None:
    from agentgrammar import Grammar

    schema, opts = inp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = Grammar.from_json_schema(schema, **opts)
    exercise(g, 1)


def run_structural_tag(inp: Any) -> None:
    from agentgrammar import Grammar

    g = Grammar.from_structural_tag(inp)
    exercise(g, 2)
