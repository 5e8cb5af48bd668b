"""``Compiler.warm_up``: a format's warm-up grammar, classified on the background worker, leaves
the classes that every request shares with the compiler, so a new request's walk finds them
instead of walking the vocabulary; its masks are the same as an unwarmed compiler's (each
compiler keeps shared classes of its own)."""

from __future__ import annotations

import gc
from typing import Any, List, Tuple

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, ToolRegistry, formats
from agentgrammar.engine.compiler import MaskCacheStats
from tests.engine.test_background import CALL, TOOLS, _phase, _until
from tests.engine.test_threads import make_vocab

QWEN3 = formats.get("qwen3")
ARGUMENTS = '{"city": "Oslo", "days": 3}}\n</tool_call>'


def _warmed(compiler: Compiler, grammar: Grammar) -> Any:
    """``compiler`` warmed with ``grammar``, once its background work has ended."""
    compiler.warm_up(grammar)
    compiled = compiler._warm_ups[grammar.digest]
    assert _phase(compiled)[0] in (1, 2, 3)  # on the worker, though the compiler has background=False
    _until(lambda: _phase(compiled)[0] == 3, "the warm-up's background work")
    assert _phase(compiled)[1] > 0
    return compiled


def _walk_call(compiler: Compiler) -> Tuple[MaskCacheStats, List[bytes]]:
    """A new request of ``TOOLS``, a call of ``get_weather`` walked character by character: its
    cache statistics after the walk, and every mask along it."""
    compiled = compiler.compile(QWEN3.grammar(ToolRegistry.from_openai(TOOLS)))
    matcher = Matcher(compiled)
    masks: List[bytes] = []
    for ch in CALL % "get_weather" + ARGUMENTS:
        masks.append(np.asarray(matcher.allowed_token_ids(), dtype=np.int32).tobytes())
        assert matcher.accept_string(ch), ch
    return compiled.cache_stats, masks


def test_a_warmed_compiler_finds_what_a_new_request_shares_and_masks_the_same() -> None:
    cold = Compiler(make_vocab(), background=False)
    warm = Compiler(make_vocab(), background=False)
    _warmed(warm, QWEN3.warm_up_grammar())
    cold_stats, cold_masks = _walk_call(cold)
    warm_stats, warm_masks = _walk_call(warm)
    assert warm_masks == cold_masks
    # the think block, the free text and the argument values' classes come from the warm-up
    assert warm_stats.shared > cold_stats.shared
    assert warm_stats.walked < cold_stats.walked


def test_the_same_grammar_is_warmed_once() -> None:
    compiler = Compiler(make_vocab(), background=False)
    first = _warmed(compiler, QWEN3.warm_up_grammar())
    compiler.warm_up(QWEN3.warm_up_grammar())  # equal content, another object
    assert list(compiler._warm_ups.values()) == [first]
    compiler.warm_up('root ::= "a"+')  # EBNF text, as compile takes
    assert len(compiler._warm_ups) == 2


def test_warm_up_takes_a_grammar_or_ebnf_text() -> None:
    with pytest.raises(TypeError, match="warm_up\\(\\) takes a Grammar"):
        Compiler(make_vocab()).warm_up(3)  # type: ignore[arg-type]


def test_a_compiler_freed_while_it_warms_up_frees_its_work() -> None:
    """The warm-up grammar goes with its compiler: its work stops (the grammar is freed by
    whichever of the worker and the caller comes last; ASan runs this in tools/sanitize.sh)."""
    vocab = make_vocab()
    compiler = Compiler(vocab)
    compiler.warm_up(formats.get("glm4_5").warm_up_grammar())
    del compiler
    gc.collect()
    # the vocabulary serves the next compiler
    assert Matcher(Compiler(vocab).compile('root ::= "<a>" [a-z]*')).allowed_token_ids()
