"""``cache_limit_bytes`` bounds the Python-side caches too (issue 38): the memos of IR pieces,
per-tool pieces, converted schemas and the converters' caches were bounded by count only, so a
compiler limited to a few MiB let them grow with every new schema. They now report an estimate
of their bytes (``grammar.memo``) and each compile trims them to ``cache_limit_bytes //
MEMO_SHARE``; grammars are counted once, however many caches reach them."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from typing import Any, Dict, List

import pytest

from agentgrammar import Compiler, Grammar, Tool, Vocabulary
from agentgrammar.engine.compiler import MEMO_SHARE
from agentgrammar.formats import get
from agentgrammar.grammar import memo


def _vocab() -> Vocabulary:
    words = ['{"', '":', '": "', '", "', '"}', "name", "arguments", "<tool_call>", "</tool_call>"]
    tokens = [bytes([b]) for b in range(256)] + [w.encode() for w in words] + [b"</s>"]
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


def _tool(i: int) -> Tool:
    props: Dict[str, Any] = {
        f"q{i}": {"type": "string", "maxLength": 4 + i % 29},
        "n": {"type": "integer", "minimum": -(i % 97), "maximum": 100 + i},
        "mode": {"enum": [f"m{i}", "auto"]},
    }
    return Tool(f"tool_{i}", "", {"type": "object", "properties": props, "required": [f"q{i}"]})


def _python_growth_after(n: int, limit: int) -> int:
    """The Python memory still allocated (tracemalloc) after compiling requests for ``n`` new
    tools on one compiler limited to ``limit`` bytes, nothing else held."""
    memo.clear_memos()
    fmt = get("hermes")
    compiler = Compiler(_vocab(), cache_limit_bytes=limit)
    compiler.compile(fmt.grammar([_tool(-1)]))  # the format's own constants, first
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            compiler.compile(fmt.grammar([_tool(i)]))
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        memo.clear_memos()


def test_python_caches_stay_within_the_compilers_limit() -> None:
    limit = 4 << 20
    few = _python_growth_after(80, limit)
    many = _python_growth_after(280, limit)
    # Bounded by count only, 200 more schemas kept 2.8 MB more (about 14 KB each, 1.8 MB after
    # 100 and 6 MB after 400); bounded in bytes, the caches stop growing at their share.
    assert many - few < 1536 << 10, (few, many)
    assert many < limit, many


def test_each_compile_trims_the_memos_to_their_share() -> None:
    memo.clear_memos()
    limit = 2 << 20
    fmt = get("qwen3")
    compiler = Compiler(_vocab(), cache_limit_bytes=limit)
    for i in range(150):
        compiler.compile(fmt.grammar([_tool(i), _tool(i + 1000)]))
        assert memo.memo_size_bytes() <= limit // MEMO_SHARE + (256 << 10)
    assert compiler.memo_size_bytes == memo.memo_size_bytes() > 0
    assert memo.memo_entries()["tool pieces"] < 150  # the oldest tools' pieces were dropped
    memo.clear_memos()


def test_a_grammar_that_many_entries_reach_counts_once() -> None:
    memo.clear_memos()
    g = Grammar.from_regex("[a-z]+x")  # no parts: the ledger holds it alone
    g.to_bytes()
    first: memo.IdentityMemo[Any] = memo.IdentityMemo("test first", limit=8)
    second: memo.IdentityMemo[Any] = memo.IdentityMemo("test second", limit=8)
    keys = [object(), object()]
    first.put(keys[0], {"grammar": g})
    second.put(keys[1], ("x", g))
    sizes = memo.memo_bytes()
    assert sizes["grammars"] == memo.grammar_bytes(g)
    assert 0 < sizes["test first"] < memo.grammar_bytes(g)  # the grammar is not in the entry's bytes
    first.discard(keys[0])
    assert memo.memo_bytes()["grammars"] == memo.grammar_bytes(g)  # still reached by `second`
    second.discard(keys[1])
    assert memo.memo_bytes()["grammars"] == 0
    memo.clear_memos()


def test_trim_drops_the_oldest_entries_first() -> None:
    memo.clear_memos()
    cache: memo.IdentityMemo[Any] = memo.IdentityMemo("test trim", limit=1000)
    keys = [object() for _ in range(100)]
    for k in keys:
        cache.put(k, "x" * 10_000)
    total = memo.memo_size_bytes()
    assert total >= 100 * 10_000
    memo.trim_memos(total // 2)
    assert memo.memo_size_bytes() <= total // 2
    assert cache.get(keys[-1]) is not None and cache.get(keys[0]) is None
    memo.clear_memos()
    assert len(cache) == 0 and memo.memo_size_bytes() == 0


def test_a_trim_far_under_its_limit_reuses_the_last_look_for_a_few_calls() -> None:
    from agentgrammar.grammar.memo.sizes import _MEASURE_BATCH, _QUICK_TRIMS

    memo.clear_memos()
    looks: List[int] = []
    kept = {"a": 1}

    def size() -> int:  # read by every full look at the caches
        looks.append(1)
        return 100 * len(kept)

    memo.register_cache(
        "test quick trims",
        size=size,
        shrink=lambda f: kept.clear(),
        clear=lambda: None,
        length=lambda: len(kept),
    )
    try:
        looks.clear()
        # emptied: the estimate is 0, far under, and served for a few trims without a look
        assert [memo.trim_memos(10**12) for _ in range(_QUICK_TRIMS)] == [0] * _QUICK_TRIMS
        assert not looks
        first = memo.trim_memos(10**12)  # then a full look
        assert looks and first >= 100
        looks.clear()
        kept.update({str(i): i for i in range(50)})  # grows unseen by the quick answers
        answers = [memo.trim_memos(10**12) for _ in range(_QUICK_TRIMS)]
        assert answers == [first] * _QUICK_TRIMS and not looks
        assert memo.trim_memos(10**12) >= 5_100 and looks
        looks.clear()
        cache: memo.IdentityMemo[Any] = memo.IdentityMemo("test quick entries", limit=1000)
        for _ in range(_MEASURE_BATCH):
            cache.put(object(), "x")
        memo.trim_memos(10**12)  # many new entries: a full look at once
        assert looks
        looks.clear()
        estimate = memo.trim_memos(10**12)
        memo.trim_memos(estimate * 4)  # a limit near the estimate: a full look at once
        assert looks
        kept.update({str(i): i for i in range(10_000)})
        assert memo.trim_memos(estimate * 4) < estimate * 4 and not kept  # and the trim
    finally:
        memo.unregister_cache("test quick trims")
        memo.clear_memos()


def test_bounded_cache_is_least_recently_used_first_out() -> None:
    cache: memo.BoundedCache[int] = memo.BoundedCache("test lru", limit=100)
    for i in range(10):
        cache.put(i, i)
    assert cache.get(0) == 0  # now the most recent
    cache.shrink(0.5)
    assert cache.get(0) == 0 and cache.get(1) is None and cache.get(9) == 9
    memo.clear_memos()
    assert len(cache) == 0


class _Slotted:
    """A stand-in for this package's slotted objects (its module is renamed below)."""

    __slots__ = ("other", "payload")

    def __init__(self, payload: Any) -> None:
        self.payload = payload


class _Foreign:
    def __init__(self, payload: Any) -> None:
        self.payload = payload


class _Text(str):
    pass


def test_approx_bytes_enters_the_packages_objects_and_counts_each_object_once() -> None:
    _Slotted.__module__ = "agentgrammar.tests_stand_in"  # walked like this package's objects
    text = "y" * 50_000
    one = _Slotted([text, text])
    entered = memo.approx_bytes([one])
    assert 50_000 <= entered < 2 * 50_000  # the slot's list and its string, counted once
    assert memo.approx_bytes([[one, one, one]]) == entered + sys.getsizeof([one, one, one])
    assert memo.approx_bytes([_Foreign([text])]) < 1_000  # a foreign object: its own size only
    assert memo.approx_bytes([(_Text(text),)]) >= 50_000  # a str subclass is counted too
    found: list = []
    g = Grammar.from_regex("[a-z]+")
    assert memo.approx_bytes([{"g": g, "k": _Slotted(g)}], grammars=found) < 1_000
    assert found == [g]  # a grammar is reported (once), not entered


def test_a_compiles_new_entries_are_sampled_and_walked_when_asked() -> None:
    memo.clear_memos()
    cache: memo.IdentityMemo[Any] = memo.IdentityMemo("test sampled", limit=1000)
    keys = [object() for _ in range(200)]
    for k in keys:
        cache.put(k, "x" * 10_000)
    estimate = memo.trim_memos(10**12)  # as a compile does, far under its limit: sampled
    assert len(cache._estimated) >= 100  # most entries were counted, not walked
    exact = memo.memo_size_bytes()  # walks every entry
    assert not cache._estimated
    assert exact >= 200 * 10_000 and abs(estimate - exact) < exact // 20
    for k in keys[:100]:
        cache.discard(k)
    assert 100 * 10_000 <= memo.memo_size_bytes() < exact * 3 // 4
    for _ in range(100):
        cache.put(object(), "y" * 10_000)  # new entries, sampled again, then dropped by a trim
    memo.trim_memos(10**12)
    total = memo.memo_size_bytes()
    memo.trim_memos(total // 2)  # over: walked for real, then the oldest go
    assert memo.memo_size_bytes() <= total // 2 and not cache._estimated
    assert cache.get(keys[-1]) is None
    memo.clear_memos()
    assert len(cache) == 0 and memo.memo_size_bytes() == 0


@pytest.mark.parametrize("headroom, walked", [(16, 2), (2, 8)])  # far under its limit, near it
def test_a_compile_far_under_its_limit_walks_fewer_new_entries(headroom: int, walked: int) -> None:
    memo.clear_memos()
    cache: memo.IdentityMemo[Any] = memo.IdentityMemo("test sparse", limit=1000)
    try:
        for _ in range(128):
            cache.put(object(), "x" * 10_000)
        estimate = memo._total(cache.fresh())  # what a trim compares with its limit first
        memo._measure(limit=estimate * headroom)
        assert len(cache) - len(cache._estimated) == walked  # one in 64, or one in 16
    finally:
        memo.clear_memos()
        memo._MEMOS.remove(cache)


@pytest.mark.parametrize("entries", [1100, 2000])  # a sample's step of 8 (even) and of 15
def test_a_bounded_lru_cache_is_estimated_from_a_sample_near_its_walked_size(entries: int) -> None:
    import functools

    from agentgrammar.grammar.memo.sizes import approx_bytes

    @functools.lru_cache(maxsize=4096)
    def made(i: int) -> Any:
        return (i, "abc" * (i % 50), [i] * 5)

    memo.register_lru("test bounded lru", made)
    try:
        for i in range(entries):
            made(i)
        estimate = memo.memo_bytes()["test bounded lru"]  # about 256 keys and results walked
        skip = (type, type(made.__wrapped__))
        held = [r for r in gc.get_referents(made) if not isinstance(r, skip) and r is not made.__dict__]
        walked = approx_bytes(held, limit=10**7)  # the table, every key and every result
        assert abs(estimate - walked) < walked // 10
    finally:
        memo.unregister_cache("test bounded lru")


def test_a_bounded_lru_cache_is_counted_entry_by_entry_through_adds_and_clears() -> None:
    import functools

    from agentgrammar.grammar.memo.registered import _LruAccount

    @functools.lru_cache(maxsize=300)
    def made(i: int) -> int:
        return i * 2

    account = _LruAccount("test lru length", made, entry_bytes=100)
    assert account._table is not None  # read from the cache's own table, not cache_info
    sizes = []
    for n in (0, 5, 300, 400):  # past maxsize: the oldest go
        for i in range(n):
            made(i + 1000 * n)
        sizes.append((len(account), made.cache_info().currsize))
    made.cache_clear()
    sizes.append((len(account), made.cache_info().currsize))
    assert sizes == [(0, 0), (5, 5), (300, 300), (300, 300), (0, 0)]
    assert account.own_bytes() == 0


def test_a_new_schema_grammar_is_counted_without_a_scan_of_the_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Tools' argument grammars, one per schema: scanning every kept grammar each time new
    # entries were measured took 2 ms every few requests in a process that knew 1,500 tools.
    from agentgrammar.grammar.memo import caches, registered
    from agentgrammar.grammar.structural_tag.schemas import compact_schema_grammar

    memo.clear_memos()
    schemas = [{"type": "object", "properties": {f"p{i}": {"type": "integer"}}} for i in range(200)]
    grammars = [compact_schema_grammar(s, (", ", ": ")) for s in schemas]
    sizes = memo.memo_bytes()  # every entry walked once
    assert sizes["schema grammars"] > 200 * 64 and sizes["grammars"] >= sum(map(memo.grammar_bytes, grammars))
    counted: List[Any] = []  # the grammars whose count in the ledger was looked at
    for module in (caches, registered):
        real = module._acquire
        monkeypatch.setattr(module, "_acquire", lambda found, real=real: counted.extend(found) or real(found))
    compact_schema_grammar({"type": "object", "properties": {"new": {"type": "string"}}}, (", ", ": "))
    memo.memo_size_bytes()
    assert 1 <= len(counted) <= 4, len(counted)  # the new grammar (and its parts), not the 200 others
    assert compact_schema_grammar(schemas[0], (", ", ": ")) is grammars[0]
    memo.trim_memos(sizes["schema grammars"] // 4)  # a compiler's share: the least recently used go
    assert compact_schema_grammar(schemas[0], (", ", ": ")) is grammars[0]
    assert compact_schema_grammar(schemas[1], (", ", ": ")) is not grammars[1]
    memo.clear_memos()
