"""How a state's classes are stored (``csrc/ag_mask_cache.c``).

A state that accepts at most ``AG_ACCEPTED_LIST_MAX`` (256) tokens keeps them as a list of
sorted positions; past that, a walk moves them into two bitsets over the vocabulary and goes
on there. These tests check the masks on both sides of the bound against the tokens the
grammar allows, computed here, and against the uncached walk; and that the list form is what
a state accepting a few tokens costs in memory, not two bitsets of the vocabulary.
"""

from __future__ import annotations

import random
from typing import List, Set

import numpy as np
import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from tests.mask_oracle import allowed_checked

_RNG = random.Random(11)
# 6,000 distinct words of 4 to 7 letters: the vocabulary's bitsets are 750 bytes each.
WORDS = sorted(
    {"".join(_RNG.choice("abcdefghijklmnop") for _ in range(_RNG.randint(4, 7))) for _ in range(6500)}
)[:6000]


def make_vocab() -> Vocabulary:
    tokens: List[bytes] = [bytes([b]) for b in range(256)] + [w.encode() for w in WORDS] + [b"</s>"]
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


VOCAB = make_vocab()
TOKENS = [bytes([b]) for b in range(256)] + [w.encode() for w in WORDS]


def allowed(matcher: Matcher) -> Set[int]:
    return allowed_checked(matcher, VOCAB.vocab_size)


def expected(rests: List[str]) -> Set[int]:
    """The tokens allowed when the rest of the text is one of `rests`: those that begin one."""
    texts = [r.encode() for r in rests]
    return {i for i, t in enumerate(TOKENS) if any(x.startswith(t) for x in texts)}


@pytest.mark.parametrize("count", [1, 40, 250, 256, 257, 600, 3000])
def test_masks_on_both_sides_of_the_list_bound(count: int) -> None:
    words = WORDS[::2][:count]  # whole-word tokens, each accepted at the start
    grammar = Grammar.from_ebnf("root ::= (" + " | ".join(f'"{w}"' for w in words) + ') "."')
    compiled = Compiler(VOCAB).compile(grammar)
    matcher = Matcher(compiled)
    assert allowed(matcher) == expected([w + "." for w in words])
    # along one word: the states after its letters accept a few tokens each
    word = words[len(words) // 2]
    for k, ch in enumerate(word):
        assert matcher.accept_string(ch)
        prefix = word[: k + 1]
        assert allowed(matcher) == expected([w[k + 1 :] + "." for w in words if w.startswith(prefix)])
    assert matcher.accept_string(".") and matcher.is_completed()


def test_a_state_that_accepts_a_few_tokens_costs_a_few_bytes() -> None:
    """The first visits of a 20-byte literal's states, over a vocabulary of 60,000 tokens:
    20 entries of a handful of tokens each, where bitsets would take 15 KB per entry."""
    rng = random.Random(2)
    words = {"".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(4, 9))) for _ in range(70000)}
    tokens = [bytes([b]) for b in range(256)] + sorted(w.encode() for w in words)[:60000]
    vocab = Vocabulary(tokens + [b"</s>"], stop_token_ids=[len(tokens)])
    text = "".join(rng.choice("abcdefghijklmnop") for _ in range(20))
    compiler = Compiler(vocab, background=False)
    compiled = compiler.compile(Grammar.from_ebnf(f'root ::= "{text}"'))
    before = compiler.cache_size_bytes + compiled.memory_size_bytes
    matcher = Matcher(compiled)
    mask = np.zeros((1, (vocab.vocab_size + 31) // 32), dtype=np.int32)
    for k in range(len(text)):
        matcher.fill_next_token_bitmask(mask)
        bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[: vocab.vocab_size]
        rest = text[k:].encode()
        assert set(np.flatnonzero(bits).tolist()) == {i for i, t in enumerate(tokens) if rest.startswith(t)}
        assert matcher.accept_string(text[k])
    grown = compiler.cache_size_bytes + compiled.memory_size_bytes - before
    bitsets = 2 * (vocab.vocab_size + 31) // 32 * 4
    assert 0 < grown < 20 * bitsets // 8
