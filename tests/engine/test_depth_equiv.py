"""States equivalent up to a depth share their token classes (``csrc/ag_depth_equiv.c``).

Two states of a rule that agree on every string of up to L bytes classify every token of at
most L bytes alike, so the mask cache derives the classes of the second from the first and
walks only the longer tokens again. The positions of a length-bounded string are the case that
matters: before, each one cost a walk of the whole vocabulary. These tests check that the
derivation happens (``CompiledGrammar.cache_stats``) and that its masks are bit-identical to
the uncached walk, near the bound as well, with rule references inside the repeated item
(nullable and not), with rollbacks, and from several threads at once.
"""

from __future__ import annotations

import random
import threading
from typing import List

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
from tests.mask_oracle import PROPERTY_SETTINGS as SETTINGS
from tests.mask_oracle import cached_and_direct

ALPHABET = 'abcde"\\ ,}u0'


def make_vocab() -> Vocabulary:
    """Single characters, many short tokens and a tail of long ones up to 48 bytes (about an
    eighth longer than 6 bytes): states equivalent to 6 bytes or more derive, walking that
    tail again."""
    rng = random.Random(7)
    tokens = list(dict.fromkeys(ALPHABET))
    seen = set(tokens)
    while len(tokens) < 400:
        length = rng.choice([2] * 15 + [3] * 15 + [4] * 15 + [6, 8, 12, 16, 24, 32, 48])
        tok = "".join(rng.choice(ALPHABET) for _ in range(length))
        if tok not in seen:
            seen.add(tok)
            tokens.append(tok)
    tokens.append("</s>")
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


VOCAB = make_vocab()


def masks(matcher: Matcher):
    return cached_and_direct(matcher, VOCAB.vocab_size)


def walk_and_compare(compiled, rng: random.Random, steps: int = 60, rollback: float = 0.0) -> int:
    """Random tokens along the grammar; every cached mask equals the direct one. Returns the
    number of masks compared."""
    matcher = Matcher(compiled)
    compared = 0
    for _ in range(steps):
        cached, direct = masks(matcher)
        assert np.array_equal(cached, direct), f"step {compared}: {compiled.grammar}"
        compared += 1
        allowed = [i for i in matcher.allowed_token_ids() if i not in VOCAB.stop_token_ids]
        if not allowed or matcher.is_terminated():
            break
        if rollback and matcher.num_accepted_steps and rng.random() < rollback:
            matcher.rollback(rng.randint(1, min(3, matcher.num_accepted_steps)))
            continue
        # mostly short tokens without a quote: the walk goes deep into bounded repeats
        short = [i for i in allowed if len(VOCAB.token_bytes[i]) <= 2 and b'"' not in VOCAB.token_bytes[i]]
        assert matcher.accept_token(rng.choice(short if short and rng.random() < 0.9 else allowed))
    return compared


def test_positions_of_a_bounded_string_are_derived() -> None:
    compiled = Compiler(VOCAB, background=False).compile(
        Grammar.from_ebnf('root ::= "\\"" [a-e ,]{0,120} "\\"" ","')
    )
    matcher = Matcher(compiled)
    for step in range(40):  # one character at a time: a new position of the chain each step
        cached, direct = masks(matcher)
        assert np.array_equal(cached, direct), f"position {step}"
        assert matcher.accept_string("a" if step else '"')
    stats = compiled.cache_stats
    assert stats.derived >= 30, stats  # all but the first positions
    assert stats.walked <= 5, stats


def test_positions_of_a_bounded_string_with_escapes_are_derived() -> None:
    # A JSON string pattern's character: itself or an escape, six bytes for each position.
    # Within the deepest level of a position lie a few hundred states: within the work one
    # lookup may do, which a bound of 1024 classes was not. The escape may take a comma after
    # it, so the character is not prefix-free and the repeat stays unrolled (a prefix-free
    # one this large is counted in its own automaton: test_counted_repeat.py).
    source = 'root ::= "\\"" ([a-e ,] | "\\\\u" [0-9A-Fa-f]{4} ","?){3,60} "\\""'
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf(source))
    matcher = Matcher(compiled)
    for step in range(40):
        cached, direct = masks(matcher)
        assert np.array_equal(cached, direct), f"position {step}"
        assert matcher.accept_string("a" if step else '"')
    stats = compiled.cache_stats
    assert stats.derived >= 25, stats
    assert stats.walked <= 10, stats


def test_masks_near_the_bound_reject_long_tokens() -> None:
    """Close to the bound, tokens longer than the room left must go, though an equivalent
    state far from the bound accepted them: those are the tokens walked again."""
    compiled = Compiler(VOCAB, background=False).compile(
        Grammar.from_ebnf('root ::= [a-e ,u0"\\\\}]{0,60} "!"')
    )
    matcher = Matcher(compiled)
    for used in range(60):
        cached, direct = masks(matcher)
        assert np.array_equal(cached, direct), f"{used} bytes in"
        room = 60 - used
        lengths = {len(VOCAB.token_bytes[i]) for i in matcher.allowed_token_ids()} - {0}
        assert max(lengths) <= room, (used, max(lengths))
        assert matcher.accept_string("a")
    # positions with more room than the deepest level compared (32 bytes) would derive, but
    # their class's tokens (ag_class_tokens.c: up to the room left) make a walk cheaper
    stats = compiled.cache_stats
    assert stats.classed >= 60 - 32 - 2, stats


@pytest.mark.parametrize(
    "source",
    [
        # an item with rule references, unrolled (16 copies): non-nullable and nullable edges
        'root ::= "\\"" item{0,16} "\\"" tail\nitem ::= [a-e ,0] | "\\\\" esc | "u" opt\n'
        'esc ::= "u" [0-9a-e]{4} | ["\\\\]\nopt ::= ("0" opt)?\ntail ::= "," | "}"',
        # a bytes-only item too large to inline 255 times (AG_INLINE_BUDGET): later copies stay
        # rule edges
        'root ::= "\\"" item{0,255} "\\"" ","\nitem ::= [a-e ,0] | "\\\\" (["\\\\] | "u" '
        '([0-9a-c] [0-9a-e]{3} | "d" [0-7] [0-9a-e]{2} | "d" [89ab] [0-9a-e]{2} "\\\\u" "d" [c-e] [0-9a-e]{2}'
        ' | "e" [0-9a-e]{250}))',
    ],
)
def test_derived_masks_match_with_rule_edges_in_the_chain(source: str) -> None:
    """Rule edges compare by their target's class one level down, or by the target itself when
    the rule is nullable."""
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf(source))
    for seed in range(6):
        walk_and_compare(compiled, random.Random(seed), steps=50)
    assert compiled.cache_stats.derived > 0, compiled.cache_stats


@st.composite
def bounded_grammars(draw) -> str:
    """A rule with a length-bounded repeat, its item made of classes, literals and rule
    references (some nullable), followed by a tail, the whole maybe repeated."""
    char = draw(st.sampled_from(["[a-c]", "[a-e ,]", '[^"\\\\]', "[a-e0u]"]))
    lo = draw(st.integers(0, 3))
    hi = draw(st.integers(20, 70))
    extra = draw(st.sampled_from(["", ' | "\\\\" [u"\\\\]', " | sub", " | sub2", ' | "ab"']))
    tail = draw(st.sampled_from(['","', '"}"', '"," | "}" | "\\""', '("," [a-c]{0,3})?']))
    outer = draw(st.sampled_from(["{1}", "{1,2}", "*"]))
    return (
        f'root ::= ("\\"" item{{{lo},{hi}}} "\\"" ({tail})){outer}\n'
        f"item ::= {char}{extra}\n"
        'sub ::= "u" [0-9a-e]{2}\n'
        'sub2 ::= "0"? "e"?'
    )


@SETTINGS
@given(source=bounded_grammars(), seed=st.integers(0, 2**16))
def test_derived_masks_equal_the_direct_walk(source: str, seed: int) -> None:
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf(source))
    rng = random.Random(seed)
    for _ in range(2):  # the second walk meets the entries (and representatives) of the first
        walk_and_compare(compiled, rng, steps=50, rollback=0.15)


def test_threads_deriving_at_once_agree_with_one_thread() -> None:
    source = 'root ::= ("\\"" item{0,64} "\\"" ","){1,3}\nitem ::= [a-e ,u0] | "\\\\" ["\\\\u]'
    paths: List[List[int]] = []
    reference = Compiler(VOCAB, background=False).compile(Grammar.from_ebnf(source))
    for seed in range(4):
        rng, m, path = random.Random(seed), Matcher(reference), []
        for _ in range(50):
            allowed = [i for i in m.allowed_token_ids() if i not in VOCAB.stop_token_ids]
            if not allowed:
                break
            path.append(rng.choice([i for i in allowed if len(VOCAB.token_bytes[i]) <= 2] or allowed))
            assert m.accept_token(path[-1])
        paths.append(path)
    expected = []
    for path in paths:
        m, row = Matcher(reference), []
        for tok in path:
            row.append(masks(m)[1])
            m.accept_token(tok)
        expected.append(row)

    shared = Compiler(VOCAB, background=False).compile(
        Grammar.from_ebnf(source)
    )  # fresh cache, filled concurrently
    failures: List[str] = []

    def run(k: int) -> None:
        m = Matcher(shared)
        for step, tok in enumerate(paths[k % len(paths)]):
            cached = allocate_token_bitmask(1, VOCAB.vocab_size, backend="numpy")
            m.fill_next_token_bitmask(cached)
            if not np.array_equal(cached, expected[k % len(paths)][step]):
                failures.append(f"thread {k} step {step}")
            m.accept_token(tok)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    assert shared.cache_stats.derived > 0


def bounded_string_matcher(bound: int):
    """A matcher inside the value of a "maxLength": bound string property, and its grammar."""
    schema = {
        "type": "object",
        "properties": {"h": {"type": "string", "maxLength": bound}},
        "required": ["h"],
    }
    compiled = Compiler(VOCAB, background=False).compile(Grammar.from_json_schema(schema))
    matcher = Matcher(compiled)
    assert matcher.accept_string('{"h": "')
    return compiled, matcher


@pytest.mark.parametrize("bound", [30, 255, 300])
def test_json_string_bounds_derive(bound: int) -> None:
    """The JSON Schema case: a "maxLength" string inside an object. Far from the bound every
    plain token fits, so a position is classified as plain (its walk visits the other tokens
    only) or derived: none costs a walk of the whole vocabulary. A repeat of the string's
    character that unrolled would pass 4,096 states (past about 200 characters) is counted in
    the character's own automaton: every position is one state."""
    compiled, matcher = bounded_string_matcher(bound)
    for step in range(30):
        cached, direct = masks(matcher)
        assert np.array_equal(cached, direct), f"step {step}"
        assert matcher.accept_string("ab"[step % 2])
    stats = compiled.cache_stats
    if bound < 200:  # unrolled: a state per position
        assert stats.derived + stats.plain >= 28, stats
    else:
        assert stats.walked + stats.derived <= 4 and stats.plain >= 1, stats


@pytest.mark.parametrize("bound", [12, 40, 255])
def test_positions_near_a_json_string_bound_take_the_plain_tokens_that_fit(bound: int) -> None:
    """Within a token's length of "maxLength", a position takes the plain tokens of at most the
    room left (a plain token of n bytes has at most n characters) without walking them; the
    longer plain tokens are walked, and those with more characters than the room rejected.
    Twelve or forty characters are unrolled, a state per position, each classified as plain;
    255 are counted, one state whose plain tokens the matcher cuts to the room (ag_copies.h)."""
    compiled, matcher = bounded_string_matcher(bound)
    for used in range(bound):
        cached, direct = masks(matcher)
        assert np.array_equal(cached, direct), f"{used} characters in"
        plain = [VOCAB.token_bytes[i] for i in matcher.allowed_token_ids()]
        plain = [t for t in plain if b'"' not in t and b"\\" not in t]  # ASCII: a byte per character
        assert plain and max(map(len, plain)) <= bound - used, used
        assert matcher.accept_string("a")
    stats = compiled.cache_stats
    if bound < 200:
        assert stats.plain >= bound - 10, stats
    else:
        assert stats.plain >= 1 and stats.walked + stats.derived <= 4, stats
