"""Counted text: a pattern's string under length bounds, its characters counted in the pattern's
own automaton (``ir.CountedText``, csrc/ag_counted_text.c) instead of a product that grows with
the bounds.

The language is checked against Python's ``re`` and ``len`` on the decoded value, raw and
escaped; masks against the uncached walk and against the product the converter builds for the
same schema when told not to count, along random token paths that reach both bounds, with
rollbacks; and the automaton's size against the bound.
"""

from __future__ import annotations

import json
import os
import random
import re
from typing import List, Optional

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgrammar.grammar.json_schema.strings as strings
from agentgrammar import Compiler, Grammar, GrammarError, Matcher, Vocabulary, allocate_token_bitmask
from agentgrammar.engine._native import lib
from agentgrammar.grammar.ir import CharClass, CountedText, Literal, Repeat, Rule, RuleRef, Seq
from tests.engine._string_tokens import CHARACTER_PIECES
from tests.mask_oracle import cached_and_direct

SETTINGS = settings(
    deadline=None,
    max_examples=max(1, int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")) // 4),
    suppress_health_check=[HealthCheck.too_slow],
)

# (pattern, minLength, maxLength): each pattern's product with the count would pass the
# converter's threshold, and its states count exactly (an email's, a CURIE's, found-anywhere
# words with and without a minimum).
CASES = [
    (".+@.+[.].+", 5, 300),
    ("^[a-z0-9-]+:[a-z.]+$", 3, 280),
    ("ab", 0, 300),
    ("ab", 290, 300),
    ("^a.*b", 4, 400),
    ("[@].+[.]x", 10, 260),
    ("^(.*é.*)$", 0, 5000),
]


def schema(pattern: str, lo: int, hi: Optional[int]) -> dict:
    s: dict = {"type": "string", "pattern": pattern, "minLength": lo}
    if hi is not None:
        s["maxLength"] = hi
    return s


def counted_texts(grammar: Grammar) -> List[CountedText]:
    found: List[CountedText] = []
    stack = [r.body for r in grammar.rules]
    while stack:
        e = stack.pop()
        if type(e) is CountedText:
            found.append(e)
        stack.extend(getattr(e, "items", ()))
        if type(e) is Repeat:
            stack.append(e.item)
    return found


def product_grammar(pattern: str, lo: int, hi: Optional[int]) -> Grammar:
    old = strings._COUNTED_PAIRS
    strings._COUNTED_PAIRS = 10**9
    try:
        return Grammar.from_json_schema(schema(pattern, lo, hi))
    finally:
        strings._COUNTED_PAIRS = old


@pytest.mark.parametrize("pattern,lo,hi", CASES)
def test_the_converter_counts_large_products(pattern: str, lo: int, hi: int) -> None:
    grammar = Grammar.from_json_schema(schema(pattern, lo, hi))
    (text,) = counted_texts(grammar)
    assert (text.min, text.max) == (lo, hi)


def test_small_products_stay_products() -> None:
    assert not counted_texts(Grammar.from_json_schema(schema(".+@.+[.].+", 5, 20)))


def test_a_minimum_with_gaps_stays_a_product() -> None:
    """``^(ab)+$`` has only even lengths: with a minimum, no count of one state tells whether
    the minimum is still reachable, so the converter builds the product."""
    grammar = Grammar.from_json_schema(schema("^(ab)+$", 101, 300))
    assert not counted_texts(grammar)
    assert grammar.accepts(json.dumps("ab" * 51)) and not grammar.accepts(json.dumps("ab" * 50))


def test_size_does_not_grow_with_the_bound() -> None:
    vocab = Vocabulary([bytes([b]) for b in range(256)], stop_token_ids=[])
    sizes = set()
    for hi in (300, 5000, 100_000):
        compiled = Compiler(vocab).compile(Grammar.from_json_schema(schema(".+@.+[.].+", 5, hi)))
        sizes.add(int(lib.ag_grammar_num_states(compiled._grammar_handle)))
    assert len(sizes) == 1, sizes


def _value(rnd: random.Random, n: int) -> str:
    alphabet = 'ab@.é😀-:zx\n"\\'
    return "".join(rnd.choice(alphabet) for _ in range(n))


@pytest.mark.parametrize("pattern,lo,hi", CASES)
@SETTINGS
@given(seed=st.integers(0, 2**32), n=st.integers(-3, 3))
def test_language_is_the_patterns_within_the_bounds(
    pattern: str, lo: int, hi: int, seed: int, n: int
) -> None:
    rnd = random.Random(seed)
    grammar = Grammar.from_json_schema(schema(pattern, lo, hi))
    regex = re.compile(pattern.replace("$", r"\Z"))  # ECMA-262's `$`: not before a final newline
    for length in {lo + n, hi + n, rnd.randint(0, 12)}:
        if length < 0:
            continue
        value = _value(rnd, length)
        if rnd.random() < 0.5:  # most random values miss the pattern: plant a match
            match = {".+@.+[.].+": "a@b.c", "ab": "ab", "^a.*b": "ab", "[@].+[.]x": "@é.x"}.get(pattern, "")
            value = (
                (match + value)[:length]
                if pattern.startswith("^")
                else (value + match)[-length:]
                if length
                else ""
            )
        expected = bool(regex.search(value)) and lo <= len(value) <= hi
        for ensure_ascii in (True, False):
            assert grammar.accepts(json.dumps(value, ensure_ascii=ensure_ascii)) == expected, (pattern, value)


TOKENS = [
    b'"',
    b'",',
    b'a"',
    b"a",
    b"b",
    b"ab",
    b"x",
    b"@",
    b"a@b",
    b".",
    b".x",
    b"a.b",
    b":",
    b"-",
    b"z",
    b"abc",
    b"a" * 8,
    b"ab" * 20,
    b"x" * 16,
    *CHARACTER_PIECES,
    b"@.",
    b"",
]


@pytest.mark.parametrize("pattern,lo,hi", [c for c in CASES if c[2] <= 400])
@SETTINGS
@given(seed=st.integers(0, 2**32))
def test_masks_equal_the_products_near_both_bounds(pattern: str, lo: int, hi: int, seed: int) -> None:
    """Along random paths to each bound, with rollbacks: the counted masks equal the uncached
    walk's and the product's (the same language, built the other way)."""
    rnd = random.Random(seed)
    vocab = Vocabulary(TOKENS, stop_token_ids=[len(TOKENS) - 1])
    counted = Matcher(Compiler(vocab).compile(Grammar.from_json_schema(schema(pattern, lo, hi))))
    product = Matcher(Compiler(vocab).compile(product_grammar(pattern, lo, hi)))
    prefix = {".+@.+[.].+": "a@b.c", "^[a-z0-9-]+:[a-z.]+$": "a:", "^a.*b": "a"}.get(pattern, "")
    fill = "x" if pattern != "^[a-z0-9-]+:[a-z.]+$" else "b"
    target = max(0, (lo if lo > 40 else hi) - 40 - rnd.randint(0, 20))
    start = '"' + prefix + fill * max(0, target - len(prefix))
    assert counted.accept_string(start) and product.accept_string(start)
    for _ in range(70):
        cached, direct = cached_and_direct(counted, vocab.vocab_size)
        assert np.array_equal(cached, direct), (pattern, counted.num_accepted_steps)
        other = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
        product.fill_next_token_bitmask(other)
        assert np.array_equal(cached, other), (pattern, counted.num_accepted_steps)
        allowed = [t for t in counted.allowed_token_ids() if t not in vocab.stop_token_ids]
        if counted.num_accepted_steps > 1 and (not allowed or rnd.random() < 0.1):
            k = rnd.randint(1, min(counted.num_accepted_steps - 1, 3))
            counted.rollback(k)
            product.rollback(k)
            continue
        if not allowed or counted.is_terminated():
            break
        inside = [t for t in allowed if b'"' not in TOKENS[t]]
        token = rnd.choice(inside if inside and rnd.random() < 0.85 else allowed)
        assert counted.accept_token(token) and product.accept_token(token)


# ---- what the core refuses --------------------------------------------------------------------

CHAR = CharClass(((0x20, 0x21), (0x23, 0x5B), (0x5D, 0x10FFFF)))


def _compile(rules: List[Rule]) -> None:
    vocab = Vocabulary([bytes([b]) for b in range(256)], stop_token_ids=[])
    Compiler(vocab).compile(Grammar.from_rules(rules))


def test_a_minimum_over_lengths_with_gaps_is_refused() -> None:
    body = Repeat(Literal(b"ab"), 1, None)
    with pytest.raises(GrammarError, match="loops on one character"):
        _compile([Rule("root", CountedText(body, RuleRef("ch"), 3, 300)), Rule("ch", CHAR)])
    _compile([Rule("root", CountedText(body, RuleRef("ch"), 0, 300)), Rule("ch", CHAR)])  # no minimum


def test_a_body_that_is_not_one_byte_automaton_is_refused() -> None:
    nested = Seq((Literal(b"("), RuleRef("nested"), Literal(b")")))  # a reference before the end
    rules = [
        Rule("root", CountedText(RuleRef("nested"), RuleRef("ch"), 0, 300)),
        Rule("nested", Repeat(Seq((Literal(b"x"), nested)), 0, 1)),
        Rule("ch", CHAR),
    ]
    with pytest.raises(GrammarError, match="body must be bytes"):
        _compile(rules)


def test_a_character_that_is_not_prefix_free_is_refused() -> None:
    chars = Repeat(Literal(b"a"), 1, 2)  # "a" and "aa": where does a copy end?
    with pytest.raises(GrammarError, match="prefix-free"):
        _compile([Rule("root", CountedText(Repeat(Literal(b"a"), 0, None), chars, 0, 10))])


def test_more_than_255_characters_needed_is_refused() -> None:
    body = Seq((Literal(b"a" * 300), Repeat(Literal(b"b"), 0, None)))
    with pytest.raises(GrammarError, match="more than 255"):
        _compile([Rule("root", CountedText(body, RuleRef("ch"), 0, 1000)), Rule("ch", CHAR)])


def test_bounds_that_leave_nothing_make_the_text_derive_nothing() -> None:
    body = Seq((Literal(b"abcdef"), Repeat(Literal(b"b"), 0, None)))
    text = CountedText(body, RuleRef("ch"), 0, 3)  # every string has six characters or more
    with pytest.raises(GrammarError, match="derives no finite string"):
        _compile([Rule("root", text), Rule("ch", CHAR)])
    rules = [Rule("root", Seq((Repeat(text, 0, 1), Literal(b"!")))), Rule("ch", CHAR)]
    grammar = Grammar.from_rules(rules)
    assert grammar.accepts("!") and not grammar.accepts("abcdef!")
