"""The build cache (``engine/build_cache.py``, ``csrc/ag_build_cache.c``): the part of a key
trie's automaton that its names do not change, built by the first load and copied by later ones.

A grammar loaded with the cache must have the automata it has without: the same states and
edges up to numbering (``ag_grammar_testing_shape``), whether the load fills the cache or copies
from it. The cases vary what the copy rebuilds around the kept part (names that share prefixes,
names that are prefixes of others, one-letter names, a trie after a longer literal, or alone),
and a cache that is full keeps working without keeping more.

The cache also lends the memory a build works in (its vectors and hash tables) from one load to
the next: a load that starts in another grammar's memory must build what a fresh one builds.
"""

from __future__ import annotations

import gc
import json
import random
import threading
import weakref
from typing import Any, Dict, List, Sequence, Tuple

import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from agentgrammar.engine import _native as native
from agentgrammar.engine import build_cache as build_cache_module
from agentgrammar.engine._native import PerProcess, ffi, lib, new_error
from agentgrammar.grammar.ir import CharClass, Choice, KeyTrie, Literal, Repeat, Rule, RuleRef, Seq
from agentgrammar.grammar.json_schema import lexical

RAW = lexical._RAW_RANGES
HELPERS = [
    Rule("char", Choice((CharClass(RAW), Seq((Literal(b"\\"), CharClass(((0x22, 0x22), (0x6E, 0x6E)))))))),
    Rule("esc", Literal(b"\\n")),
]
TAIL = Seq((Repeat(RuleRef("char"), 0, None), Literal(b'"')))
BYTES = Vocabulary([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])


def new_cache() -> Any:
    out = ffi.new("ag_build_cache **")
    assert lib.ag_build_cache_new(out, new_error()) == lib.AG_OK
    return ffi.gc(out[0], lib.ag_build_cache_free)


def load(grammar: Grammar, cache: Any) -> Any:
    """``grammar`` loaded with ``cache`` (ffi.NULL: none), its parts (any JSON value) linked."""
    words = grammar.to_bytes()
    out = ffi.new("ag_grammar **")
    err = new_error()
    buffer = ffi.from_buffer("int32_t[]", words)
    if grammar.parts:
        parts = [load(part, ffi.NULL) for part in grammar.parts]
        handles = ffi.new("ag_grammar *[]", parts)
        status = lib.ag_grammar_link_cached(buffer, len(words) // 4, handles, len(parts), cache, out, err)
    else:
        status = lib.ag_grammar_load_cached(buffer, len(words) // 4, cache, out, err)
    assert status == lib.AG_OK, ffi.string(err.message)
    return ffi.gc(out[0], lib.ag_grammar_free)


def shape(handle: Any) -> Tuple[int, int]:
    return lib.ag_grammar_testing_shape(handle), lib.ag_grammar_num_states(handle)


def schema_of(names: Sequence[str]) -> Dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "integer"} for n in names}}


NAME_SETS: List[Tuple[str, ...]] = [
    ("a",),
    ("id", "user_id", "group_id"),
    ("len", "length", "lengths"),  # each a prefix of the next
    ("a", "b", "c", "ab", "abc"),
    ("name", "nickname", "surname", "xname"),  # shared suffixes
    ("x" * 40, "y"),
]


def test_the_same_automata_filling_and_copying() -> None:
    cache = new_cache()
    for names in NAME_SETS:
        g = Grammar.from_json_schema(schema_of(names))
        without = shape(load(g, ffi.NULL))
        assert shape(load(g, cache)) == without, names  # fills (first) or copies
        assert shape(load(g, cache)) == without, names  # copies
    assert lib.ag_build_cache_testing_size(cache) == 1  # every object's other keys: one piece


@pytest.mark.parametrize("seed", range(6))
def test_nested_objects_random_names(seed: int) -> None:
    rng = random.Random(seed)

    def obj(depth: int) -> Dict[str, Any]:
        names = [
            "".join(rng.choice("abcx_") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 6))
        ]
        props = {
            n: (obj(depth + 1) if depth < 2 and rng.random() < 0.4 else {"type": "string"}) for n in names
        }
        return {"type": "object", "properties": props, "required": names[:1]}

    schema = obj(0)
    cache = new_cache()
    g = Grammar.from_json_schema(schema)
    without = shape(load(g, ffi.NULL))
    assert shape(load(g, cache)) == without
    copied = load(g, cache)
    assert shape(copied) == without
    # and what a compiled grammar (the process cache) accepts: the required keys, then another;
    # not a required string key holding a number

    def instance(s: Dict[str, Any]) -> Any:
        if s.get("type") == "string":
            return "v"
        return {k: instance(s["properties"][k]) for k in s["required"]}

    compiled = Compiler(BYTES).compile(g)
    good = {**instance(schema), "zz_other": [1, {"q": None}]}
    assert Matcher(compiled).accept_string(json.dumps(good))
    first = schema["required"][0]
    if schema["properties"][first] == {"type": "string"}:
        assert not Matcher(compiled).accept_string(json.dumps({**good, first: 5}))


@pytest.mark.parametrize("literal", [b'"', b'k="', None])
def test_a_trie_after_any_literal_or_alone(literal: Any) -> None:
    cache = new_cache()
    for names in NAME_SETS:
        trie = KeyTrie(names, TAIL, RuleRef("esc"), RuleRef("char"), RAW)
        body = trie if literal is None else Seq((Literal(literal), trie))
        g = Grammar([Rule("root", body), *HELPERS], _converted=True)
        without = shape(load(g, ffi.NULL))
        assert shape(load(g, cache)) == without, names
        assert shape(load(g, cache)) == without, names
    assert lib.ag_build_cache_testing_size(cache) == 1


def test_a_trie_inside_a_longer_body_is_built_the_general_way() -> None:
    cache = new_cache()
    trie = KeyTrie(("id",), TAIL, RuleRef("esc"), RuleRef("char"), RAW)
    g = Grammar(
        [Rule("root", Seq((Literal(b"{"), Literal(b'"'), trie, Literal(b"}")))), *HELPERS], _converted=True
    )
    assert shape(load(g, cache)) == shape(load(g, ffi.NULL))
    assert lib.ag_build_cache_testing_size(cache) == 0
    assert g.accepts('{"ix"}') and not g.accepts('{"id"}')


def test_a_full_cache_keeps_loading_alike() -> None:
    # Each raw class is another piece's key (a node's own edges are cut from it): 20 of them
    # pass the cache's 16 slots.
    cache = new_cache()
    shapes = []
    for k in range(20):
        raw = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x7E - k))
        trie = KeyTrie(("a", "b"), TAIL, RuleRef("esc"), RuleRef("char"), raw)
        g = Grammar([Rule("root", Seq((Literal(b'"'), trie))), *HELPERS], _converted=True)
        without = shape(load(g, ffi.NULL))
        shapes.append(without)
        assert shape(load(g, cache)) == without and shape(load(g, cache)) == without, k
    assert lib.ag_build_cache_testing_size(cache) == 16
    assert len(set(shapes)) == 20


# Grammars of other kinds and sizes than the key tries above, so that each load starts in
# the memory of a different one: objects, strings with bounds and patterns, numbers, arrays,
# enums, any value (a linked part), and EBNF with counted repeats, classes and recursion.
VARIED: List[Grammar] = [
    *(
        Grammar.from_json_schema(s)
        for s in [
            schema_of(("id", "user_id", "group_id")),
            {"type": "string", "maxLength": 300},
            {"type": "string", "pattern": "^[a-z]{2,5}-[0-9]+$"},
            {"type": "number", "minimum": -5, "maximum": 1000},
            {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 6},
            {"enum": ["red", "green", "blue", 7, None]},
            {"type": "object", "properties": {"x": {}}, "additionalProperties": {"type": "boolean"}},
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "format": "email"},
                    "tags": {"type": "array", "items": {"type": "string", "minLength": 1}},
                    "meta": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                },
                "required": ["name"],
            },
        ]
    ),
    Grammar.from_ebnf('root ::= item ("," item){0,40}\nitem ::= [a-f0-9]{2,8} | "(" root ")"'),
    Grammar.from_ebnf('root ::= ("ab" | "a" [^x-z] | [\u0100-\uffff])+ "!"'),
    Grammar.from_regex(r"(foo|bar|ba[rz]){3}\d{1,4}"),
]


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_a_load_in_another_grammars_memory_builds_what_a_fresh_one_builds(order: str) -> None:
    grammars = VARIED if order == "forward" else VARIED[::-1]
    fresh = [shape(load(g, ffi.NULL)) for g in grammars]  # no cache: a fresh builder each
    cache = new_cache()
    for _ in range(2):  # the second pass starts each load in the memory of the one before
        assert [shape(load(g, cache)) for g in grammars] == fresh


def test_the_cache_lends_a_builds_memory_unless_it_is_large() -> None:
    cache = new_cache()
    small = Grammar.from_json_schema(schema_of(("id", "name")))
    assert lib.ag_build_cache_testing_scratch_bytes(cache) == 0
    expected = shape(load(small, ffi.NULL))
    assert shape(load(small, cache)) == expected
    kept = lib.ag_build_cache_testing_scratch_bytes(cache)
    assert 0 < kept <= 1 << 20
    assert shape(load(small, cache)) == expected  # lent and given back, grown no further
    assert lib.ag_build_cache_testing_scratch_bytes(cache) == kept
    # 2^12 subsets of positions: megabytes of sets while determinizing, freed after the load
    large = Grammar.from_regex("[ab]*a[ab]{12}")
    assert shape(load(large, cache)) == shape(load(large, ffi.NULL))
    assert lib.ag_build_cache_testing_scratch_bytes(cache) == 0
    assert shape(load(small, cache)) == expected  # fresh memory again, then kept
    assert 0 < lib.ag_build_cache_testing_scratch_bytes(cache) <= kept  # (copies its key piece now)


def test_threads_share_one_cache() -> None:
    cache = new_cache()
    grammars = [Grammar.from_json_schema(schema_of(n)) for n in NAME_SETS] * 4
    expected = [shape(load(g, ffi.NULL)) for g in grammars]
    got: List[Any] = [None] * len(grammars)
    start = threading.Barrier(4)

    def work(k: int) -> None:
        start.wait()
        for i in range(k, len(grammars), 4):
            got[i] = shape(load(grammars[i], cache))  # cffi lets the loads run in parallel

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == expected
    assert lib.ag_build_cache_testing_size(cache) == 1


def test_the_process_cache_is_made_once_and_again_after_a_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    first = build_cache_module.build_cache()
    assert build_cache_module.build_cache() is first
    made = PerProcess(new_cache)  # the process cache's kind, on a cache of the test's own
    parent = made.get()
    assert made.get() is parent
    real = native.os.getpid
    monkeypatch.setattr(native.os, "getpid", lambda: real() + 1)  # as in a forked child
    child = made.get()
    assert child is not parent and made.get() is child
    # the parent's cache is never freed in the child, but kept: its memory stays reachable
    # (a leak checker would otherwise count it lost)
    parent_ref = weakref.ref(parent)
    del parent
    gc.collect()
    kept = parent_ref()
    assert kept is not None
    lib.ag_build_cache_free(kept)  # this test's own cache, not a real parent's: freed here


def test_compiled_grammars_use_the_process_cache() -> None:
    names = ("only_this_test_a", "only_this_test_b")
    compiled = Compiler(BYTES).compile(Grammar.from_json_schema(schema_of(names)))
    assert lib.ag_build_cache_testing_size(build_cache_module.build_cache()) >= 1
    m = Matcher(compiled)
    assert m.accept_string('{"only_this_test_c": [1, {"x": null}], "only_this_test_a": 3}') is False
    assert Matcher(compiled).accept_string('{"only_this_test_a": 3, "other": [1, {"x": null}]}')
