"""The cyclic collector is paused for one grammar build and always given back."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator, List

import pytest

from agentgrammar import Compiler, Grammar, Vocabulary
from agentgrammar._gc_pause import gc_paused, pauses_gc


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_resumed_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_resumed_after_an_error() -> None:
    with pytest.raises(ValueError, match="boom"):
        with gc_paused():
            raise ValueError("boom")
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_pauses_resume_once_at_the_outermost() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause did not own it
    assert gc.isenabled()


def test_decorated_function_runs_paused_and_keeps_its_metadata() -> None:
    seen: List[bool] = []

    @pauses_gc
    def build(x: int) -> int:
        """Doubles x."""
        seen.append(gc.isenabled())
        return 2 * x

    assert build(21) == 42
    assert seen == [False]
    assert gc.isenabled()
    assert build.__name__ == "build" and build.__doc__ == "Doubles x."


def test_grammar_builders_and_compile_pause_it() -> None:
    """The public entry points that build grammars run paused and give the collector back,
    on success and on a bad schema."""
    seen: List[bool] = []
    original = Grammar.__init__

    def spy(self: Grammar, *args: object, **kwargs: object) -> None:
        seen.append(gc.isenabled())
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    Grammar.__init__ = spy  # type: ignore[method-assign]
    try:
        g = Grammar.from_json_schema({"type": "integer"})
        Grammar.from_ebnf('root ::= "a"')
        Grammar.from_regex("a+")
    finally:
        Grammar.__init__ = original  # type: ignore[method-assign]
    assert seen == [False, False, False]
    assert gc.isenabled()
    with pytest.raises(Exception, match="minimum"):
        Grammar.from_json_schema({"type": "integer", "minimum": "x"})
    assert gc.isenabled()
    Compiler(Vocabulary(["0", "1", "</s>"], stop_token_ids=[2])).compile(g)
    assert gc.isenabled()


def test_threads_leave_the_collector_enabled() -> None:
    """Builds in many threads at once: whichever paused the collector resumes it."""
    barrier = threading.Barrier(4)

    def work(_: int) -> None:
        barrier.wait()
        for i in range(50):
            with gc_paused():
                Grammar.from_json_schema({"type": "array", "maxItems": i % 5})

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))  # re-raises a worker's error here
    assert gc.isenabled()
