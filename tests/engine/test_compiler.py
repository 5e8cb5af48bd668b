"""The Compiler's caches: reuse by content, byte accounting, LRU eviction within cache_limit_bytes."""

from __future__ import annotations

import gc
import random
from typing import List

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
from agentgrammar.engine._native import lib
from tests.engine.test_threads import make_vocab


def _shared_bytes(compiler: Compiler) -> int:
    return int(lib.ag_vocab_shared_cache_bytes(compiler._vocab_handle))


def _walk(compiled, seed: int, steps: int = 30) -> List[bytes]:
    """Masks along a random walk of allowed tokens."""
    m = Matcher(compiled)
    n = compiled.vocabulary.vocab_size
    mask = allocate_token_bitmask(1, n, backend="numpy")
    rng = random.Random(seed)
    out = []
    for _ in range(steps):
        if m.is_terminated():
            break
        m.fill_next_token_bitmask(mask)
        out.append(mask.tobytes())
        allowed = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:n])
        if not len(allowed):
            break
        assert m.accept_token(int(allowed[rng.randrange(len(allowed))]))
    return out


def _schema(i: int) -> Grammar:
    return Grammar.from_json_schema(
        {
            "type": "object",
            "properties": {f"k{i}": {"type": "string", "maxLength": 3 + i % 7}, "n": {"type": "integer"}},
            "required": [f"k{i}"],
        }
    )


def test_cache_size_counts_live_grammars_and_returns_to_the_shared_floor() -> None:
    compiler = Compiler(make_vocab(), background=False)
    floor = compiler.cache_size_bytes
    assert floor == _shared_bytes(compiler) == 0
    compiled = compiler.compile(_schema(1))
    after_compile = compiler.cache_size_bytes
    assert after_compile > 0
    _walk(compiled, 0)
    assert compiler.cache_size_bytes > after_compile  # masks filled just in time count too
    compiler.clear_cache()
    assert compiler.cache_size_bytes > _shared_bytes(compiler)  # still held by `compiled`
    del compiled
    gc.collect()
    assert compiler.cache_size_bytes == _shared_bytes(compiler)


def test_lru_keeps_the_compiler_within_its_limit() -> None:
    limit = 400_000
    # without background work, which adds to the count while the assertion reads it
    compiler = Compiler(make_vocab(), cache_limit_bytes=limit, background=False)
    sizes = []
    for i in range(60):
        compiled = compiler.compile(_schema(i))
        # After a compile the count is within the limit, unless the newest entry alone (or
        # what a live grammar holds) passes it.
        assert compiler.cache_size_bytes <= limit or len(compiler._lru) == 1
        _walk(compiled, i)
        sizes.append(compiler.cache_size_bytes)
    del compiled
    assert max(sizes) > limit // 4  # the cache did fill up
    assert len(compiler._recent) < 60  # and old grammars were dropped
    assert _shared_bytes(compiler) <= limit // 4
    # A grammar dropped from the cache is compiled again, with the same masks as before.
    again = compiler.compile(_schema(0))
    fresh = Compiler(make_vocab()).compile(_schema(0))
    assert _walk(again, 5) == _walk(fresh, 5)


def test_recent_grammar_is_moved_to_the_front_on_reuse() -> None:
    compiler = Compiler(make_vocab(), cache_limit_bytes=10**9)
    first = compiler.compile(_schema(0))
    for i in range(1, 4):
        compiler.compile(_schema(i))
    assert compiler.compile(_schema(0)) is first
    assert list(compiler._lru)[-1] == (False, next(k for k, v in compiler._recent.items() if v is first))


def test_shared_cache_is_capped_at_a_quarter_of_the_limit_and_masks_stay_exact() -> None:
    limit = 40_000
    small = Compiler(make_vocab(), cache_limit_bytes=limit)
    big = Compiler(make_vocab())
    # Many distinct byte-only automata: each would be one shared entry.
    for k in range(2, 40):
        pattern = f"[a-z]{{{k}}}x[0-9]{{1,{k}}}"
        a = _walk(small.compile_regex(pattern), k)
        b = _walk(big.compile_regex(pattern), k)
        assert a == b
    assert 0 < _shared_bytes(small) <= limit // 4
    assert _shared_bytes(big) > limit // 4


def test_zero_limit_keeps_nothing_and_reuse_can_be_turned_off_alone() -> None:
    vocab = Vocabulary(["a", "b", "ab", "</s>"], stop_token_ids=[3])
    nothing = Compiler(vocab, cache_limit_bytes=0)
    assert nothing.compile('root ::= "a"') is not nothing.compile('root ::= "a"')
    assert not nothing._parts and not nothing._recent
    no_reuse = Compiler(vocab, reuse_grammars=False)
    assert no_reuse.compile('root ::= "a"') is not no_reuse.compile('root ::= "a"')
    with pytest.raises(ValueError, match="cache_limit_bytes"):
        Compiler(vocab, cache_limit_bytes=-1)


def test_evicted_part_still_serves_the_grammar_that_links_it() -> None:
    from agentgrammar import formats
    from agentgrammar.registry import ToolRegistry

    registry = ToolRegistry()

    @registry.tool
    def lookup(city: str, days: int = 1) -> str:
        """Look a city up."""
        return city

    fmt = formats.get("qwen3")
    compiler = Compiler(make_vocab(), cache_limit_bytes=1)  # only the newest entry stays
    compiled = compiler.compile(fmt.grammar(registry))
    assert compiled._parts and not any(p is q for p in compiled._parts for q in compiler._parts.values())
    reference = Compiler(make_vocab()).compile(fmt.grammar(registry))
    m = Matcher(compiled)
    r = Matcher(reference)
    text = '<think>\nok\n</think>\n\n<tool_call>\n{"name": "lookup", "arguments": {"city": "Oslo"}}\n</tool_call>'
    assert m.accept_string(text) and r.accept_string(text)
    assert m.allowed_token_ids() == r.allowed_token_ids()


def test_compilers_of_one_vocabulary_share_its_token_tables_but_not_their_caches() -> None:
    vocab = make_vocab()
    first = Compiler(vocab)
    tables = vocab._native_tables
    assert tables is not None
    second = Compiler(vocab)
    assert vocab._native_tables is tables  # built once, with the vocabulary
    walks = _walk(first.compile(_schema(1)), seed=3)
    assert _shared_bytes(first) > 0 and first.cache_size_bytes > 0
    # the second compiler's caches start empty: nothing the first one classified is shared
    assert _shared_bytes(second) == 0 and second.cache_size_bytes == 0
    assert _walk(second.compile(_schema(1)), seed=3) == walks
    # the tables outlive the vocabulary's own handle while a compiler uses them
    vocab._native_tables = None
    del first, tables
    gc.collect()
    assert _walk(second.compile(_schema(2)), seed=4) == _walk(
        Compiler(make_vocab()).compile(_schema(2)), seed=4
    )


def _tool(name: str) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }


def test_the_branch_of_a_requests_tool_names_is_classified_at_compile() -> None:
    """Every tool call visits the state where a trigger's tool names branch, and each request
    has a new trie of names: its classes are computed by compile(), and the mask there is
    the direct path's. A grammar without a trigger has nothing classified before use."""
    from agentgrammar import ToolRegistry, formats

    vocab = Vocabulary(
        [bytes([b]) for b in range(256)] + [b"get", b"get_", b"_time", b"search", b'"}', b"</s>"],
        stop_token_ids=[261],
    )
    reg = ToolRegistry.from_openai([_tool(n) for n in ("get_weather", "get_time", "search_web")])
    compiled = Compiler(vocab, background=False).compile(formats.get("qwen3").grammar(reg))
    assert compiled.cache_stats.walked == 1, compiled.cache_stats
    m = Matcher(compiled)
    assert m.accept_string('<think>\nok\n</think>\n\n<tool_call>\n{"name": "')
    mask = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
    direct = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
    m.fill_next_token_bitmask(mask)
    assert compiled.cache_stats.walked == 1, compiled.cache_stats  # found, not walked again
    m._fill_next_token_bitmask_direct(direct)
    assert np.array_equal(mask, direct)
    assert sorted(m.allowed_token_ids()) == sorted([ord("g"), ord("s"), 256, 257, 259])
    plain = Compiler(vocab, background=False).compile(Grammar.from_json_schema({"type": "string"}))
    assert plain.cache_stats.walked == 0
