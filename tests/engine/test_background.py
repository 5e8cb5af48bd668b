"""Background classification (``engine/background.py``): masks equal those of a compiler
without it, along random walks of several grammars, whether the worker has finished or still
runs; a mask never waits for the worker (held at its gate, the masks still come); a grammar
freed while its worker is in a slice, or while its work is queued, or a pool freed with work
queued, frees everything once, and nothing else (``bash tools/sanitize.sh
tests/engine/test_background.py`` runs these under ASan/UBSan; the TSan driver of
``test_threads.py`` runs the worker too)."""

from __future__ import annotations

import gc
import random
import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Tuple

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, GrammarError, Matcher, ToolRegistry, formats
from agentgrammar.engine._native import ffi, lib, new_error
from agentgrammar.engine.background import classify_in_background
from agentgrammar.errors import AgentGrammarError
from tests.engine.test_threads import make_vocab
from tests.mask_oracle import PROPERTY_SETTINGS, cached_and_direct

VOCAB = make_vocab()


def _tool(name: str, parameters: Any) -> dict:
    return {"type": "function", "function": {"name": name, "description": name, "parameters": parameters}}


TOOLS = [
    _tool(
        "get_weather",
        {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    ),
    _tool("set_mode", {"type": "object", "properties": {"mode": {"enum": ["on", "off", 1]}}}),
    _tool(
        "search",
        {
            "type": "object",
            "properties": {
                "q": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "opts": {"type": "object", "properties": {"exact": {"type": "boolean"}}},
            },
            "required": ["q"],
        },
    ),
]
CALL = '<think>\nok\n</think>\n\n<tool_call>\n{"name": "%s", "arguments": '

#: (grammar, the text each walk starts with): a request of linked tool parts, a JSON Schema,
#: EBNF with rule references, a structural tag
GRAMMARS: List[Tuple[Callable[[], Grammar], List[str]]] = [
    (
        lambda: formats.get("qwen3").grammar(ToolRegistry.from_openai(TOOLS)),
        [CALL % t["function"]["name"] for t in TOOLS] + ["<think>\n"],
    ),
    (lambda: Grammar.from_json_schema(TOOLS[2]["function"]["parameters"]), ["", '{"q": "a", "tags": ["']),
    (
        lambda: Grammar.from_ebnf('root ::= "{" pair ("," pair)* "}"\npair ::= "\\"" [a-z]+ "\\":" [0-9]+'),
        [""],
    ),
    (
        lambda: Grammar.from_structural_tag(
            {"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"}
        ),
        ["", "<a>"],
    ),
]


def _phase(compiled: Any) -> Tuple[int, int]:
    """(0 none, 1 queued, 2 in a slice, 3 finished; states the worker classified)."""
    classified = ffi.new("int32_t *")
    phase = lib.ag_compiled_testing_background(compiled._handle, classified)
    return int(phase), int(classified[0])


def _until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.001)


def _pool() -> Any:
    out = ffi.new("ag_pool **")
    assert lib.ag_pool_new(2, out, new_error()) == lib.AG_OK
    return ffi.gc(out[0], lib.ag_pool_free)


@contextmanager
def held_worker(pool: Any) -> Iterator[None]:
    """The pool's worker held at its gate (once it takes a task) until the block ends, even
    when the block fails: a worker left held would stall every later test on the pool."""
    lib.ag_pool_testing_hold(pool, 1)
    try:
        yield
    finally:
        lib.ag_pool_testing_hold(pool, 0)


def at_gate(pool: Any) -> None:
    """Wait until the held worker has taken a task and stopped at its gate."""
    _until(lambda: lib.ag_pool_testing_at_gate(pool) == 1, "the worker at its gate")


_POOL = _pool()


def _walk(compiled: Any, prefix: str, seed: int, steps: int = 40, oracle: bool = False) -> List[bytes]:
    """Every mask along a random walk of allowed tokens (with rollbacks) after ``prefix``; with
    ``oracle``, each mask checked against the direct walk's."""
    matcher = Matcher(compiled)
    assert matcher.accept_string(prefix)
    rng = random.Random(seed)
    masks: List[bytes] = []
    n = VOCAB.vocab_size
    for _ in range(steps):
        if matcher.is_terminated():
            break
        if oracle:
            np.testing.assert_array_equal(*cached_and_direct(matcher, n))
        allowed = matcher.allowed_token_ids()
        masks.append(np.asarray(allowed, dtype=np.int32).tobytes())
        if rng.random() < 0.1 and matcher.num_accepted_steps:
            matcher.rollback(rng.randint(1, matcher.num_accepted_steps))
            continue
        if not allowed:
            break
        assert matcher.accept_token(rng.choice(allowed))
    return masks


@PROPERTY_SETTINGS
@given(
    which=st.integers(0, len(GRAMMARS) - 1),
    start=st.integers(0, 8),
    seed=st.integers(0, 2**30),
    wait=st.booleans(),
)
def test_masks_with_background_classification_equal_masks_without(
    which: int, start: int, seed: int, wait: bool
) -> None:
    make, prefixes = GRAMMARS[which]
    prefix = prefixes[start % len(prefixes)]
    if wait:  # on a pool of our own: the default one runs at idle priority, slow on a busy machine
        compiled = Compiler(VOCAB, background=False).compile(make())
        classify_in_background(compiled._handle, pool=_POOL)
    else:
        compiled = Compiler(VOCAB).compile(make())
    assert _phase(compiled)[0] in (1, 2, 3)
    if wait:  # the worker has classified what it plans to: the walk finds its classes
        _until(lambda: _phase(compiled)[0] == 3, "the background work")
        assert _phase(compiled)[1] > 0
    got = _walk(compiled, prefix, seed, oracle=True)
    want = _walk(Compiler(VOCAB, background=False).compile(make()), prefix, seed)
    assert got == want


def test_background_false_starts_nothing() -> None:
    compiled = Compiler(VOCAB, background=False).compile(GRAMMARS[0][0]())
    time.sleep(0.01)
    assert _phase(compiled) == (0, 0)
    assert compiled.cache_stats.walked == 1  # the tool names' branch, at compile (as before)


def test_after_background_work_the_worker_dozes_then_sleeps_and_posts_reach_it_either_way() -> None:
    """A post to a dozing worker links the task without waking it (the worker looks every
    tick); past the doze (1 s), the worker sleeps and a post wakes it."""
    pool = _pool()
    make, prefixes = GRAMMARS[2]
    compiler = Compiler(VOCAB, background=False)
    first = compiler.compile(make())
    classify_in_background(first._handle, pool=pool)
    _until(lambda: _phase(first)[0] == 3, "the background work")
    _until(lambda: lib.ag_pool_testing_dozing(pool) == 1, "the worker to doze")
    dozed = Compiler(VOCAB, background=False).compile(make())
    classify_in_background(dozed._handle, pool=pool)
    _until(lambda: _phase(dozed)[0] == 3 and _phase(dozed)[1] > 0, "the work posted to a dozing worker")
    _until(lambda: lib.ag_pool_testing_dozing(pool) == 0, "the doze to end", timeout=10.0)
    slept = Compiler(VOCAB, background=False).compile(make())
    classify_in_background(slept._handle, pool=pool)
    _until(lambda: _phase(slept)[0] == 3 and _phase(slept)[1] > 0, "the work posted to a sleeping worker")
    assert _walk(slept, prefixes[0], 2) == _walk(
        Compiler(VOCAB, background=False).compile(make()), prefixes[0], 2
    )


def test_masks_never_wait_for_the_worker() -> None:
    """The worker is held in a slice of the grammar's work (the task taken, nothing classified):
    masks still come, each state classified by the mask that needs it."""
    pool = _pool()
    make, prefixes = GRAMMARS[0]
    with held_worker(pool):
        compiled = Compiler(VOCAB, background=False).compile(make())
        classify_in_background(compiled._handle, pool=pool)
        at_gate(pool)
        assert _phase(compiled) == (2, 0)
        got: List[List[bytes]] = []
        walker = threading.Thread(
            target=lambda: got.append(_walk(compiled, prefixes[0], 7, steps=60)), daemon=True
        )
        walker.start()
        walker.join(120)
        assert not walker.is_alive(), "a mask waited for the held worker"
        assert _phase(compiled) == (2, 0)  # still held: every mask came without it
    assert got[0] == _walk(Compiler(VOCAB, background=False).compile(make()), prefixes[0], 7, steps=60)
    _until(lambda: _phase(compiled)[0] == 3, "the background work")


def _own_bytes(compiler: Compiler) -> int:
    """What live grammars hold beyond the vocabulary's shared cache."""
    return compiler.cache_size_bytes - int(lib.ag_vocab_shared_cache_bytes(compiler._vocab_handle))


def test_a_grammar_freed_while_its_worker_runs_is_freed_by_the_worker() -> None:
    pool = _pool()
    compiler = Compiler(VOCAB, reuse_grammars=False, background=False)
    with held_worker(pool):
        compiled = compiler.compile(GRAMMARS[1][0]())
        compiler.clear_cache()  # its part (any JSON value) goes with it
        assert _walk(compiled, "", 3, steps=5)
        classify_in_background(compiled._handle, pool=pool)
        at_gate(pool)
        del compiled
        gc.collect()
        time.sleep(0.01)
        assert _own_bytes(compiler) > 0  # the last reference is gone, but the slice is not over
    _until(lambda: _own_bytes(compiler) == 0, "the worker to free the grammar")


def test_a_grammar_freed_with_its_work_queued_is_freed_at_once() -> None:
    pool = _pool()
    compiler = Compiler(VOCAB, reuse_grammars=False, background=False)
    with held_worker(pool):
        running = compiler.compile(GRAMMARS[2][0]())
        classify_in_background(running._handle, pool=pool)
        at_gate(pool)
        held = _own_bytes(compiler)
        queued = compiler.compile(GRAMMARS[1][0]())
        compiler.clear_cache()
        classify_in_background(queued._handle, pool=pool)
        assert _phase(queued) == (1, 0) and _own_bytes(compiler) > held
        del queued
        gc.collect()
        assert _own_bytes(compiler) == held  # freed now; the pool frees its task when it meets it
    _until(lambda: _phase(running)[0] == 3, "the background work")
    assert _walk(running, "", 1) == _walk(Compiler(VOCAB, background=False).compile(GRAMMARS[2][0]()), "", 1)


def test_a_pool_freed_with_work_queued_drops_it_and_the_grammars_live_on() -> None:
    pool = _pool()
    compiler = Compiler(VOCAB, reuse_grammars=False, background=False)
    lib.ag_pool_testing_hold(pool, 1)
    grammars = [compiler.compile(GRAMMARS[k][0]()) for k in (1, 2, 3)]
    for compiled in grammars:
        classify_in_background(compiled._handle, pool=pool)
    at_gate(pool)
    ffi.release(pool)  # lets the held worker go, joins it, drops the queued work
    assert [_phase(c)[0] for c in grammars].count(3) == len(grammars)
    for compiled, k in zip(grammars, (1, 2, 3)):
        prefix = GRAMMARS[k][1][-1]
        assert _walk(compiled, prefix, 5) == _walk(
            Compiler(VOCAB, background=False).compile(GRAMMARS[k][0]()), prefix, 5
        )
    compiler.clear_cache()
    del grammars, compiled
    gc.collect()
    assert _own_bytes(compiler) == 0


def test_a_second_start_and_a_pool_without_a_worker_are_refused() -> None:
    compiled = Compiler(VOCAB, background=False).compile(GRAMMARS[2][0]())
    out = ffi.new("ag_pool **")
    assert lib.ag_pool_new(1, out, new_error()) == lib.AG_OK
    alone = ffi.gc(out[0], lib.ag_pool_free)
    with pytest.raises(GrammarError, match="worker thread"):
        classify_in_background(compiled._handle, pool=alone)
    pool = _pool()
    classify_in_background(compiled._handle, pool=pool)
    with pytest.raises(AgentGrammarError, match="started already"):
        classify_in_background(compiled._handle, pool=pool)


def _stats_sum(compiled: Any) -> int:
    s = compiled.cache_stats
    return s.walked + s.derived + s.shared


def _enter_then_walk_arguments(enter_first: bool) -> int:
    """A request of 60 tools whose plan (a budget of about one part's states) reaches none of
    them deep; the worker held while a matcher names ``get_weather_7`` (its part entered, with
    ``enter_first``) or not. Then: the states the mask path classifies along its arguments."""
    tools = [
        _tool(f"{t['function']['name']}_{i}", t["function"]["parameters"]) for i in range(20) for t in TOOLS
    ]
    compiled = Compiler(VOCAB, background=False).compile(
        formats.get("qwen3").grammar(ToolRegistry.from_openai(tools))
    )
    largest = max(int(lib.ag_grammar_num_states(p._grammar_handle)) for p in compiled._parts)
    pool = _pool()
    matcher = Matcher(compiled)
    with held_worker(pool):
        classify_in_background(compiled._handle, max_states=largest + 8, max_seconds=60.0, pool=pool)
        at_gate(pool)
        assert matcher.accept_string(CALL % "get_weather_7")
        if enter_first:
            matcher.allowed_token_ids()  # a mask in the tool's part: the worker goes there next
    _until(lambda: _phase(compiled)[0] == 3, "the background work")
    before = _stats_sum(compiled)
    for ch in '{"city": "Oslo", "days": 3':
        assert matcher.allowed_token_ids()
        assert matcher.accept_string(ch)
    return _stats_sum(compiled) - before


def test_the_part_of_the_tool_a_matcher_entered_is_classified_first() -> None:
    """Each selected tool's argument states first: once a matcher is in a tool's part, the
    worker walks that part whole before the rest of its plan (or posts itself again from
    parked), so the masks along the arguments find every class ready."""
    assert _enter_then_walk_arguments(enter_first=True) == 0
    assert _enter_then_walk_arguments(enter_first=False) > 0  # the plan alone did not get there
