"""States shared across grammars by their class key (``ag_class_key.c``).

A state of a rule with rule references is classified with the Earley parser where a token
passes a reference, so such states are not shared across grammars. A state from which no
reference can be reached (what follows a JSON object's last value, a call's closing tag) walks
as a state of bytes alone does: it is keyed by its automaton and FOLLOW set and shared with
every grammar that has the same. These tests check that the second grammar finds such states
(``cache_stats.shared``), that a state before a reference is not shared, and that every mask
stays bit-identical to the direct walk.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from tests.mask_oracle import cached_and_direct

TAIL = '"}\\n</end>"'
# Recursive rules are never inlined: each root keeps a rule edge, and its tail after it.
FIRST = f'root ::= "a" x {TAIL}\nx ::= [0-9] | "(" x ")"'
SECOND = f'root ::= "bb" y {TAIL}\ny ::= [a-c] | "[" y "]"'


def _vocabulary() -> Vocabulary:
    pieces = ["a", "b", "bb", "c", "0", "1", "(", ")", "[", "]", "}", "\n", "<", "/", "e", "n", "d", ">"]
    pieces += ["}\n", "</", "end", "end>", "</end>", "}\n</", "1)", "a]", ")}", "]}"]
    return Vocabulary([*pieces, "</s>"], stop_token_ids=[len(pieces)])


def _walk(compiled, text: str) -> None:
    """Accept ``text`` one byte at a time, checking every mask against the direct walk."""
    m = Matcher(compiled)
    for ch in text:
        cached, direct = cached_and_direct(m, compiled.vocabulary.vocab_size)
        np.testing.assert_array_equal(cached, direct)
        assert m.accept_string(ch), ch
    cached, direct = cached_and_direct(m, compiled.vocabulary.vocab_size)
    np.testing.assert_array_equal(cached, direct)
    assert m.is_completed()


def test_states_past_the_last_reference_are_shared_across_grammars() -> None:
    compiler = Compiler(_vocabulary(), reuse_grammars=False, background=False)
    first = compiler.compile(Grammar.from_ebnf(FIRST))
    _walk(first, "a(1)}\n</end>")
    assert first.cache_stats.shared == 0, first.cache_stats
    second = compiler.compile(Grammar.from_ebnf(SECOND))
    _walk(second, "bb[a]}\n</end>")
    # the 8 states of the tail '}\n</end>' come from the first grammar's walks
    assert second.cache_stats.shared == 8, second.cache_stats


def test_states_before_a_reference_are_not_shared() -> None:
    """``"a" x`` and ``"a" y`` have the same bytes up to the reference, but tokens passing it
    are decided by the rule behind it: the second grammar walks its own."""
    compiler = Compiler(_vocabulary(), reuse_grammars=False, background=False)
    first = compiler.compile(Grammar.from_ebnf('root ::= "a" x\nx ::= [0-9] | "(" x ")"'))
    m = Matcher(first)
    m.allowed_token_ids()
    second = compiler.compile(Grammar.from_ebnf('root ::= "a" y\ny ::= [a-c] | "[" y "]"'))
    m = Matcher(second)
    ids = {bytes(t).decode(): i for i, t in enumerate(compiler.vocabulary.token_bytes)}
    assert ids["a"] in m.allowed_token_ids() and ids["a]"] not in m.allowed_token_ids()
    assert second.cache_stats.shared == 0, second.cache_stats


@pytest.mark.parametrize("seed", range(6))
def test_masks_equal_the_direct_walk_along_random_paths(seed: int) -> None:
    """Both grammars walked in turn on one compiler, the shared tail reached from either."""
    compiler = Compiler(_vocabulary(), reuse_grammars=False, background=False)
    rnd = random.Random(seed)
    grammars = [compiler.compile(Grammar.from_ebnf(text)) for text in (FIRST, SECOND)]
    stop = compiler.vocabulary.stop_token_ids
    for _ in range(4):
        compiled = rnd.choice(grammars)
        m = Matcher(compiled)
        for _ in range(30):
            cached, direct = cached_and_direct(m, compiled.vocabulary.vocab_size)
            np.testing.assert_array_equal(cached, direct)
            allowed = [i for i in m.allowed_token_ids() if i not in stop]
            if not allowed or m.is_terminated():
                break
            assert m.accept_token(rnd.choice(allowed))


@pytest.mark.parametrize("states", [50, 70, 300])
def test_automata_past_the_small_order_map_are_keyed_too(states: int) -> None:
    """A key orders the automaton's states in a map of 64 on the stack, and again in one of
    1,024 when it has more. A literal of 50, 70 or 300 bytes and the tail's 8, in a second
    grammar, finds every state the first grammar's walk classified, whichever map it took."""
    rng = random.Random(states)
    text = "".join(rng.choice("abc01") for _ in range(states))
    compiler = Compiler(_vocabulary(), reuse_grammars=False, background=False)
    first = compiler.compile(Grammar.from_ebnf(f'root ::= "{text}" {TAIL}'))
    _walk(first, text + "}\n</end>")
    assert first.cache_stats.shared == 0, first.cache_stats
    second = compiler.compile(Grammar.from_ebnf(f'root ::= "x" | "{text}" {TAIL}'))
    m = Matcher(second)
    assert m.accept_string(text[0])
    _walk_from(m, text[1:] + "}\n</end>")
    walked = len(text) + 7  # every state after the first byte, up to the end of the tail
    assert second.cache_stats.shared == walked, second.cache_stats


def _walk_from(m: Matcher, text: str) -> None:
    for ch in text:
        cached, direct = cached_and_direct(m, m.compiled_grammar.vocabulary.vocab_size)
        np.testing.assert_array_equal(cached, direct)
        assert m.accept_string(ch), ch
