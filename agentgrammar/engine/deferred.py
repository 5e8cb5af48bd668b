"""A large grammar's automata built after its first mask (``Compiler(defer_min_words=...)``).

A first mask reads the few rules a first token can reach, while compiling builds every rule's
automaton: for a large schema (hundreds of definitions) the build is most of the time to the
first mask. So ``Compiler.compile`` compiles two small grammars that bound the large one's
first masks (``grammar.first_bounds``: the rules near the start kept, each other rule they name
replaced by one string of its language, then by any bytes). When their first masks and their
can-end agree, so do the large grammar's; the compiled grammar then is the smaller bound, which
stands for the large one (``ag_compiled_defer``): matchers fill their first masks with it, and
the first accept, rollback or jump-forward of any of them moves them to the large grammar's
start. With the compiler's background pool (``background=True``, the default), a worker starts
building the large grammar as soon as it is deferred, while the first mask is filled and the
model runs its first forward pass: the first accept finds it built, or waits for the rest of
that build. Without the pool the first accept builds it, once for every matcher.

Example:
    >>> from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
    >>> vocab = Vocabulary(["{", "}", '"', "a", ":", "1", "[", "]", "</s>"], stop_token_ids=[8])
    >>> items = {"type": "array", "items": {"type": "integer"}}
    >>> schema = {"type": "object", "properties": {"a_long_name": items}, "additionalProperties": False}
    >>> compiler = Compiler(vocab, background=False, defer_min_words=1)  # any grammar is large
    >>> m = Matcher(compiler.compile(Grammar.from_json_schema(schema, whitespace="compact")))
    >>> m.allowed_token_ids(), m.accept_string('{"a_long_name": [1]}'), m.allowed_token_ids()
    ([0], True, [8])
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from ..errors import GrammarError
from ..grammar import Grammar
from ._native import ffi, lib, new_error, raise_error
from .background import BACKGROUND_SECONDS, BACKGROUND_STATES
from .bitmask import allocate_token_bitmask

__all__ = [
    "DEFER_MAX_PARTS",
    "DEFER_MAX_SHARE",
    "DEFER_MIN_WORDS",
    "defer",
    "first_mask",
    "first_masks_agree",
]

#: The serialized size (int32 words) from which ``Compiler.compile`` builds a grammar's automata
#: after its first mask: a few times the median MaskBench schema's (about 1,200 words), below
#: which compiling the two bounds costs about what it saves.
DEFER_MIN_WORDS = 8192
#: The bounds are built instead of the whole only when they are at most 1/DEFER_MAX_SHARE of its
#: words (a large schema's are a tenth or so).
DEFER_MAX_SHARE = 4
#: Nor for a grammar linking more parts than this: a request over many tools, whose tools are
#: prebuilt parts and whose own rules (a dispatch, a call per tool) build fast: built later,
#: they only moved that time from the compile to the first accept, inside the masks' time
#: (docs/engine.md). A schema links one to three (its JSON values, its formats).
DEFER_MAX_PARTS = 8


def first_mask(compiled: Any) -> Tuple[np.ndarray, bool]:
    """The first mask with no stop token, and whether the grammar may end at once (a C matcher
    of its own: the Python one wraps the compiler that calls this)."""
    out, err = ffi.new("ag_matcher **"), new_error()
    status = lib.ag_matcher_new(compiled._handle, ffi.NULL, 0, 0, out, err)
    if status != lib.AG_OK:
        raise_error(status, err, GrammarError)
    matcher = ffi.gc(out[0], lib.ag_matcher_free)
    mask = allocate_token_bitmask(1, compiled.vocabulary.vocab_size, backend="numpy")
    flag = ffi.new("int *")
    status = lib.ag_matcher_fill_mask(matcher, ffi.from_buffer("uint32_t[]", mask), mask.shape[1], flag, err)
    if status != lib.AG_OK:
        raise_error(status, err, GrammarError)
    return mask, lib.ag_matcher_can_end(matcher) != 0


def first_masks_agree(under: Any, over: Any) -> bool:
    """Whether two compiled grammars' matchers start with the same mask and may both end at
    once or both not: then they do for every set of stop tokens (a stop token is allowed
    exactly where the grammar may end)."""
    mask_u, end_u = first_mask(under)
    mask_o, end_o = first_mask(over)
    return end_u == end_o and bool(np.array_equal(mask_u, mask_o))


def defer(first: Any, grammar: Grammar, parts: Sequence[Any], pool: Optional[Any]) -> bool:
    """Makes compiled grammar ``first`` (no matcher yet) stand for ``grammar``, linked to its
    compiled ``parts``: built at once by a worker of ``pool`` and classified there once built,
    or without a pool (None) when a matcher first needs it. False, and ``first`` left alone,
    when ``grammar`` holds token markers."""
    words = grammar.to_bytes()
    out = ffi.new("int *")
    err = new_error()
    status = lib.ag_compiled_defer(
        first._handle,
        ffi.from_buffer("int32_t[]", words),
        len(words) // 4,
        ffi.new("ag_grammar *[]", [p._grammar_handle for p in parts]),
        ffi.new("ag_compiled *[]", [p._handle for p in parts]),
        len(parts),
        pool if pool is not None else ffi.NULL,
        BACKGROUND_STATES,
        BACKGROUND_SECONDS,
        out,
        err,
    )
    if status != lib.AG_OK:
        raise_error(status, err, GrammarError)
    return out[0] == 1
