"""Classes of a byte-only state under another FOLLOW set, derived from its "any follow" entry.

The same string automaton in grammars where different bytes follow it (a tool's last string
argument before ``}``, a list item before ``,`` or ``]``) has one key per FOLLOW set; the engine
keeps the state's classes with any byte following and derives each FOLLOW set's from them,
walking again only the tokens that pass the string's end. These tests check that the derivation
happens (``cache_stats.derived``) and that every mask along random paths is bit-identical to the
direct walk, whichever grammar is compiled first.
"""

from __future__ import annotations

import itertools
import random
from typing import List

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
from tests.mask_oracle import cached_and_direct

S = {"type": "string"}
# Each schema's grammar has the shared JSON string rule with another FOLLOW set: ',' and '}' in
# an object, ',' and ']' in an array, ':' (and ',' '}') when strings are also keys, anything
# when the string is the whole document.
SCHEMAS = {
    "object": {"type": "object", "properties": {"a": S, "b": S}, "required": ["a", "b"]},
    "array": {"type": "array", "items": S},
    "map": {"type": "object", "additionalProperties": S},
    "string": S,
}


def _vocabulary() -> Vocabulary:
    """Enough plain tokens that the few crossing the string's end are a small share."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(w) for n, k in ((2, 12), (3, 6)) for w in itertools.product(letters[:k], repeat=n)]
    punct = list('{}[],: "')
    quoted = ['",', '"}', '"]', '":', '"x', '"a"', 'ab"', 'ab",', '"a":']  # some pass a string's end
    tokens = list(letters) + words + punct + quoted
    return Vocabulary(tokens + ["</s>"], stop_token_ids=[len(tokens)])


def _grammar(name: str) -> Grammar:
    return Grammar.from_json_schema(SCHEMAS[name], whitespace="compact")


def _walk_and_compare(compiler: Compiler, name: str, rnd: random.Random, steps: int = 14) -> None:
    vocab = compiler.vocabulary
    matcher = Matcher(compiler.compile(_grammar(name)))
    for _ in range(steps):
        cached, direct = cached_and_direct(matcher, vocab.vocab_size)
        assert np.array_equal(cached, direct), (name, matcher.allowed_token_ids())
        allowed = [i for i in matcher.allowed_token_ids() if i not in vocab.stop_token_ids]
        if not allowed or matcher.is_terminated():
            break
        assert matcher.accept_token(rnd.choice(allowed))


def test_a_string_state_under_another_follow_set_is_derived() -> None:
    compiler = Compiler(_vocabulary(), reuse_grammars=False, background=False)
    first = compiler.compile(_grammar("object"))
    m = Matcher(first)
    assert m.accept_string('{"a": "ab')  # inside the string: walked with any byte following, then derived
    m.fill_next_token_bitmask(allocate_token_bitmask(1, compiler.vocabulary.vocab_size, backend="numpy"))
    assert first.cache_stats.walked == 1, first.cache_stats
    second = compiler.compile(_grammar("array"))
    m = Matcher(second)
    assert m.accept_string('["ab')
    allowed = set(m.allowed_token_ids())
    assert second.cache_stats.derived >= 1, second.cache_stats
    vocab = compiler.vocabulary
    ids = {bytes(t).decode(): i for i, t in enumerate(vocab.token_bytes)}
    # the string may close before ',' or ']' here, never before '}' (the object's) or a letter
    assert {ids['",'], ids['"]'], ids['"'], ids["ab"], ids['ab"'], ids['ab",']} <= allowed
    assert not {ids['"}'], ids['":'], ids['"x'], ids['"a"'], ids['"a":']} & allowed


@pytest.mark.parametrize("order", list(itertools.permutations(SCHEMAS)))
@pytest.mark.parametrize("seed", range(4))
def test_masks_equal_the_direct_walk_in_any_order(order: List[str], seed: int) -> None:
    compiler = Compiler(_vocabulary(), reuse_grammars=False, background=False)
    rnd = random.Random(seed)
    for name in order:
        for _ in range(3):
            _walk_and_compare(compiler, name, rnd)
