"""Counted repetition: ``x{m,n}`` too large to unroll is a counter in the parser's items.

Past a small size the C core no longer unrolls a repeat into its rule's automaton; it makes a
hidden counted rule whose Earley items carry how many copies they have matched. These tests
check that the language is exactly the same (against Python's ``re`` and the unrolling
reference matcher), that masks stay exact and bit-identical to the uncached walk along random
token paths with rollbacks, that linked grammars keep their rule numbering, and that a bound of
10^6 costs a handful of automaton states.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
from typing import List

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary, allocate_token_bitmask
from agentgrammar.engine._native import lib
from agentgrammar.grammar.ir import Choice, Embed, Literal, Repeat, Rule, RuleRef, Seq, flatten_embeds
from tests.engine._string_tokens import CHARACTER_PIECES

try:
    from tests.reference_matcher import ReferenceMatcher
except ImportError:  # pytest run without the repository root on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.reference_matcher import ReferenceMatcher

SETTINGS = settings(
    deadline=None,
    max_examples=int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def num_states(compiled) -> int:
    return int(lib.ag_grammar_num_states(compiled._grammar_handle))


def has_counted_rules(grammar: Grammar) -> bool:
    """Whether the core made hidden rules (counted repeats) for the grammar."""
    compiled = Compiler(byte_vocab(), cache_limit_bytes=0).compile(grammar)
    return int(lib.ag_grammar_num_rules(compiled._grammar_handle)) > len(grammar.normalized_rules)


def byte_vocab() -> Vocabulary:
    return Vocabulary([bytes([b]) for b in range(256)], stop_token_ids=[])


# ---- no unrolling ------------------------------------------------------------------------------

BIG = [
    'root ::= "a"{0,BOUND}',
    'root ::= ("ab"){3,BOUND}',
    'root ::= [a-z]{BOUND} "!"',
    'root ::= x{BOUND} "!"\nx ::= [a-z] | "\\\\" y\ny ::= "u" [0-9a-f]{4}',
    'root ::= x{BOUND,} "!"\nx ::= "a" | "bc" | [d-f]+',
    'root ::= ("x" ("a"{0,BOUND}) "y"){2,BOUND}',
    'root ::= "[" (item ("," item){0,BOUND})? "]"\nitem ::= [0-9]+ | "\\"" [a-z]{0,BOUND} "\\""',
]


def test_nested_one_or_more_is_one_copy_a_level() -> None:
    """``x+`` is built as one looping copy of x, not ``x x*``: 30 nested levels (a structural
    tag of nested ``plus``, found by the fuzzer) took two seconds to fail at the limit of NFA
    states, and now build a small automaton whose language is Python's ``re``'s."""
    ebnf, regex = '"a"', "a"
    for level in range(30):
        ebnf, regex = (
            f'("<" {ebnf} ">")+' if level % 2 else f'("[" {ebnf} "]"?)+',
            (f"(?:<{regex}>)+" if level % 2 else f"(?:\\[{regex}\\]?)+"),
        )
    compiled = Compiler(byte_vocab(), cache_limit_bytes=0).compile(Grammar.from_ebnf(f"root ::= {ebnf}"))
    assert num_states(compiled) < 200
    pattern = re.compile(regex)
    inner = "<[" * 15 + "a"  # the outermost level is "<...>", the innermost "[a]?"
    valid = [inner + ">" * 15, inner + "]>" * 15, inner + "][a]" + ">" * 15]
    valid.append(valid[0] + valid[1])  # the outermost level twice
    assert all(pattern.fullmatch(t) for t in valid)
    rng = random.Random(5)
    texts = (
        valid
        + ["a", "[a]", inner + ">" * 14, inner + "]]" + ">" * 15]
        + ["".join(rng.choice("[]<>a") for _ in range(rng.randint(1, 40))) for _ in range(300)]
    )
    texts += [t[:k] + rng.choice("[]<>a") + t[k:] for t in valid for k in range(0, len(t), 3)]
    accepted = 0
    for text in texts:
        m = Matcher(compiled)
        got = m.accept_string(text) and m.is_completed()
        assert got == bool(pattern.fullmatch(text)), text
        accepted += got
    assert accepted >= len(valid)


@pytest.mark.parametrize("source", BIG)
def test_states_do_not_grow_with_the_bound(source: str) -> None:
    compiler = Compiler(byte_vocab(), cache_limit_bytes=0)
    small = num_states(compiler.compile(Grammar.from_ebnf(source.replace("BOUND", "1000"))))
    big = num_states(compiler.compile(Grammar.from_ebnf(source.replace("BOUND", "1000000"))))
    assert big == small <= 40


def test_int32_bounds_are_accepted() -> None:
    g = Grammar.from_ebnf('root ::= "a"{0,2147483647} "b"{2147483647,} "c"{2147483646,2147483647}')
    compiled = Compiler(byte_vocab()).compile(g)
    m = Matcher(compiled)
    assert m.accept_string(b"a" * 1000 + b"b" * 100)
    assert not m.is_completed()
    assert not m.accept_string(b"c")  # two billion b's first


# ---- the language is exact --------------------------------------------------------------------


def counted(child: str, lo: int, hi, suffix: str = ""):
    """An oracle for ``(child){lo,hi} suffix`` by dynamic programming over the counts reachable
    at each position: Python's backtracking ``re`` is exponential on an ambiguous child."""
    child_re, suffix_re = re.compile(child), re.compile(suffix)
    cap = hi if hi is not None else lo

    def accepts(text: str) -> bool:
        if child_re.fullmatch(""):
            return counted(child, 0, hi, suffix)(text) if lo else _counts(text, 0)
        return _counts(text, lo)

    def _counts(text: str, need: int) -> bool:
        reach = [set() for _ in range(len(text) + 1)]
        reach[0].add(0)
        for i in range(len(text) + 1):
            if not reach[i]:
                continue
            if suffix_re.fullmatch(text[i:]) and any(c >= need for c in reach[i]):
                return True
            for j in range(i + 1, len(text) + 1):
                if child_re.fullmatch(text[i:j]):
                    reach[j] |= {
                        min(c + 1, cap) if hi is None else c + 1 for c in reach[i] if hi is None or c < hi
                    }
        return False

    return accepts


def regex(pattern: str):
    compiled = re.compile(pattern)
    return lambda text: compiled.fullmatch(text) is not None


# Repeats of bytes are counted past 256 copies; repeats of a child with rule references (here
# "y ::= ..." rules that reference another rule) past 16 copies.
# (EBNF, oracle, units that strings are built from). Regexes here are unambiguous: Python's
# backtracking would take exponential time on failing strings otherwise.
LANGUAGES = [
    ('root ::= "a"{0,100000}', regex(r"a{0,100000}"), ["a"]),
    ('root ::= "a"{257,300}', regex(r"a{257,300}"), ["a"]),
    ('root ::= ("ab"){3,1000000}', regex(r"(?:ab){3,1000000}"), ["ab", "a", "b"]),
    ('root ::= ("ab"){260,290} "c"', regex(r"(?:ab){260,290}c"), ["ab", "a", "c"]),
    (
        'root ::= x{20,40}\nx ::= "a" | "bc" | y\ny ::= [d-f]+ z?\nz ::= "!"',
        counted(r"a|bc|[d-f]+!?", 20, 40),
        ["a", "bc", "d", "ef", "b", "!"],
    ),
    ('root ::= x{30,}\nx ::= "a" | y\ny ::= "a" z\nz ::= "a"', counted(r"a|aa", 30, None), ["a", "aa", "b"]),
    (
        'root ::= x{17,} "!"\nx ::= "ab" | y\ny ::= "a" | "a" z\nz ::= "b"',
        counted(r"ab|a", 17, None, "!"),
        ["a", "ab", "b", "!"],
    ),
    ('root ::= x{260,} "!"\nx ::= "a" | "aa"', counted(r"a|aa", 260, None, "!"), ["a", "aa", "b", "!"]),
    # nullable children: empty copies fill the minimum, only the maximum limits
    ('root ::= ("a"?){270,300} "b"', regex(r"a{0,300}b"), ["a", "b"]),
    ('root ::= x{100,1000000}\nx ::= "" | "ab"', regex(r"(?:ab){0,1000000}"), ["ab", "a"]),
    (
        'root ::= x{20,30} "."\nx ::= y*\ny ::= "a" | "b" z?\nz ::= "c"',
        counted(r"(?:a|bc?)*", 20, 30, r"\."),
        ["a", "b", "c", "."],
    ),
    (
        'root ::= x{20,30} "."\nx ::= y* "c"?\ny ::= "a" | "b"',
        counted(r"[ab]*c?", 20, 30, r"\."),
        ["a", "c", "b", "."],
    ),
    # nested counted repeats
    ('root ::= ("a"{2,270} "b"){17,30}', regex(r"(?:a{2,270}b){17,30}"), ["a", "aa", "b", "ab", "a" * 40]),
    ('root ::= ("x" "a"{0,300} "y"){0,1000000}', regex(r"(?:xa{0,300}y)*"), ["x", "a", "y", "xy"]),
    ('root ::= (("a"{0,300}){0,300} "b"){20}', regex(r"(?:a{0,90000}b){20}"), ["a", "b", "aa"]),
]


@st.composite
def near_bounds(draw, units: List[str]):
    """Strings of mostly valid units, with lengths around the interesting counts."""
    n = draw(
        st.sampled_from(
            [
                0,
                1,
                2,
                3,
                16,
                17,
                18,
                20,
                21,
                29,
                30,
                31,
                39,
                40,
                41,
                60,
                256,
                257,
                258,
                260,
                270,
                290,
                291,
                300,
                301,
                400,
            ]
        )
    )
    n += draw(st.integers(-2, 2))
    n = max(0, n)
    pieces = [draw(st.sampled_from(units[:2] if draw(st.integers(0, 9)) else units)) for _ in range(n)]
    text = "".join(pieces)
    if draw(st.booleans()):  # a likely end
        text += draw(st.sampled_from(["", "b", "c", "!", ".", "y", "xy"]))
    if text and draw(st.integers(0, 5)) == 0:  # a stray character somewhere
        i = draw(st.integers(0, len(text)))
        text = text[:i] + draw(st.sampled_from("abc!.xyz")) + text[i:]
    return text


@pytest.mark.parametrize("ebnf,oracle,units", LANGUAGES, ids=[x[0].replace("\n", "; ") for x in LANGUAGES])
@SETTINGS
@given(data=st.data())
def test_accepts_like_oracle(ebnf: str, oracle, units: List[str], data) -> None:
    grammar = Grammar.from_ebnf(ebnf)
    assert has_counted_rules(grammar)
    text = data.draw(near_bounds(units))
    want = oracle(text)
    assert grammar.accepts(text) == want, f"{ebnf!r} on {text!r} ({len(text)} chars)"


def test_bounds_at_large_counts() -> None:
    g = Grammar.from_ebnf('root ::= "a"{0,100000}')
    assert g.accepts("a" * 100000) and not g.accepts("a" * 100001)
    g = Grammar.from_ebnf('root ::= ("ab"){3,1000000} "c"')
    assert g.accepts("ab" * 1000000 + "c") and not g.accepts("ab" * 1000001 + "c")
    assert not g.accepts("ababc") and g.accepts("abababc")
    g = Grammar.from_ebnf('root ::= "a"{100000,}')
    assert not g.accepts("a" * 99999) and g.accepts("a" * 100000) and g.accepts("a" * 250000)


def test_ambiguous_child_counts_every_split() -> None:
    """x ::= "a" | "aa": after n a's every count from n/2 to n is live; all must be kept."""
    g = Grammar.from_ebnf('root ::= x{1000,1500} "!"\nx ::= "a" | "aa"')
    assert g.accepts("a" * 1000 + "!") and g.accepts("a" * 3000 + "!")
    assert not g.accepts("a" * 999 + "!") and not g.accepts("a" * 3001 + "!")


# ---- masks along token paths --------------------------------------------------------------------

TOKENS = [
    b"a",
    b"aa",
    b"aaaa",
    b"a" * 16,
    b"a" * 40,
    b"a" * 100,
    b"b",
    b"ab",
    b"ba",
    b"abab",
    b"bc",
    b"c",
    b"d",
    b"ef",
    b"!",
    b"x",
    b"y",
    b"xa",
    b"ay",
    b"yx",
    b".",
    b"",
    b"</s>",
]


def vocab() -> Vocabulary:
    return Vocabulary(
        TOKENS,
        stop_token_ids=[len(TOKENS) - 1],
        special_token_ids=[len(TOKENS) - 2],
        vocab_size=len(TOKENS) + 3,
    )


def masks(matcher: Matcher, vocab_size: int):
    cached = allocate_token_bitmask(1, vocab_size, backend="numpy")
    matcher.fill_next_token_bitmask(cached)
    direct = allocate_token_bitmask(1, vocab_size, backend="numpy")
    matcher._fill_next_token_bitmask_direct(direct)
    return cached.copy(), direct.copy()


def ref_mask(ref: ReferenceMatcher, vocab_size: int) -> np.ndarray:
    words = (vocab_size + 31) // 32
    bits = np.zeros(words * 32, dtype=np.uint8)
    bits[ref.allowed_token_ids()] = 1
    return np.packbits(bits, bitorder="little").view(np.int32).reshape(1, words)


# Bounds just past the unroll limits, so the unrolling reference matcher stays quick.
REFERENCE_GRAMMARS = [
    'root ::= "a"{257,260} "b"',
    'root ::= x{17,20} "b"\nx ::= "a" | y\ny ::= "c"',
    'root ::= x{0,18} "c"?\nx ::= "ab" | y\ny ::= "a" z\nz ::= "b"',
    'root ::= x{17,20} "!"\nx ::= "a" | "bc" | y\ny ::= [d-f]+ z?\nz ::= "x"',
    'root ::= x{17,} "!"\nx ::= "a" | y\ny ::= "a" z\nz ::= "a"',
    'root ::= x{17,19} "b"\nx ::= y?\ny ::= "a" | z\nz ::= "c"',
    'root ::= ("x" y{0,17} "y"){1,17}\ny ::= "a" | z\nz ::= "c"',
    'root ::= x{17} | x{18,19} "b"\nx ::= "a" | y\ny ::= "c"',
]


@pytest.mark.parametrize("source", REFERENCE_GRAMMARS)
@settings(
    deadline=None,
    max_examples=max(1, int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")) // 6),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_masks_equal_reference_with_rollbacks(source: str, rnd: random.Random) -> None:
    grammar = Grammar.from_ebnf(source)
    assert has_counted_rules(grammar)
    v = vocab()
    vs = v.vocab_size
    compiled = Compiler(v).compile(grammar)
    ref = ReferenceMatcher(grammar, v.token_bytes, v.stop_token_ids, v.special_token_ids, vs)
    matcher = Matcher(compiled)
    path: List[int] = []
    for _ in range(40):
        cached, direct = masks(matcher, vs)
        want = ref_mask(ref, vs)
        assert np.array_equal(cached, want), f"{source!r} after {[TOKENS[t] for t in path]}"
        assert np.array_equal(direct, want)
        assert matcher.is_completed() == ref.is_completed()
        assert matcher.find_jump_forward_bytes() == ref.jump_forward_bytes()
        allowed = [t for t in ref.allowed_token_ids() if t not in v.stop_token_ids]
        if path and (not allowed or rnd.random() < 0.15):
            k = rnd.randint(1, min(len(path), 5))
            matcher.rollback(k)
            ref.rollback(k)
            del path[-k:]
            continue
        if not allowed:
            break
        t = rnd.choice(allowed)
        assert matcher.accept_token(t) and ref.accept_token(t)
        path.append(t)


# Large bounds: the uncached walk is the oracle.
LARGE_GRAMMARS = [
    'root ::= "a"{0,100000} "b"',
    'root ::= ("ab"){3,1000000} "c"',
    'root ::= x{100,1000000} "!"\nx ::= "a" | "bc" | [d-f]+',
    'root ::= x{17,40} "!"\nx ::= "a" | "bc" | y\ny ::= [d-f]+ z?\nz ::= "x"',
    'root ::= ("a"?){300,400} "b"',
    'root ::= ("x" "a"{0,300} "y"){2,1000000}',
    'root ::= "a"{300} | "a"{301,400} "b" | ("ab"){1000,}',
]


@pytest.mark.parametrize("source", LARGE_GRAMMARS)
@settings(
    deadline=None,
    max_examples=max(1, int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")) // 3),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_cached_masks_equal_direct_with_rollbacks(source: str, rnd: random.Random) -> None:
    v = vocab()
    vs = v.vocab_size
    assert has_counted_rules(Grammar.from_ebnf(source))
    compiled = Compiler(v).compile(Grammar.from_ebnf(source))
    for _ in range(2):  # the second matcher finds the cache filled
        matcher = Matcher(compiled)
        history = []
        for _ in range(60):
            cached, direct = masks(matcher, vs)
            assert np.array_equal(cached, direct), source
            history.append(cached)
            allowed = [t for t in matcher.allowed_token_ids() if t not in v.stop_token_ids]
            if matcher.num_accepted_steps and (not allowed or rnd.random() < 0.1):
                k = rnd.randint(1, min(matcher.num_accepted_steps, 6))
                matcher.rollback(k)
                del history[-k:]
                cached, _ = masks(matcher, vs)
                assert np.array_equal(cached, history[-1])  # the exact earlier mask
                history.pop()
                continue
            if not allowed:
                break
            assert matcher.accept_token(rnd.choice(allowed))


# ---- linked grammars keep their rule numbering --------------------------------------------------

PART_A = Grammar.from_ebnf('root ::= "a"{0,1000} "b"')
PART_B = Grammar.from_ebnf('root ::= ("x" w "y"){1,500}\nw ::= "a"{2,300} | "bc" | v\nv ::= "c" w')


def request() -> Grammar:
    rules = [
        Rule("root", Seq((Repeat(RuleRef("call"), 0, 200), Literal(b"!")))),
        Rule(
            "call",
            Choice((Embed(PART_A), Embed(PART_B), Seq((Literal(b"c"), Repeat(Literal(b"ab"), 0, 300))))),
        ),
    ]
    return Grammar.from_rules(rules)


@pytest.mark.parametrize("seed", range(6))
def test_linked_masks_equal_flattened(seed: int) -> None:
    grammar = request()
    flat = Grammar.from_rules(flatten_embeds(grammar.rules))
    assert len(grammar.parts) == 2 and not flat.parts
    v = vocab()
    compiler = Compiler(v)
    # Compile a part on its own first, as a request grammar would find it.
    compiler.compile(Grammar.from_rules([Rule("root", Embed(PART_B))]))
    linked, plain = Matcher(compiler.compile(grammar)), Matcher(Compiler(v).compile(flat))
    rnd = random.Random(seed)
    for _ in range(80):
        a, direct = masks(linked, v.vocab_size)
        b, _ = masks(plain, v.vocab_size)
        assert np.array_equal(a, b) and np.array_equal(a, direct)
        allowed = [t for t in plain.allowed_token_ids() if t not in v.stop_token_ids]
        if not allowed:
            break
        t = rnd.choice(allowed)
        assert linked.accept_token(t) and plain.accept_token(t)


def test_linked_bounds_are_exact() -> None:
    v = byte_vocab()
    grammar = Grammar.from_rules([Rule("root", Seq((Embed(PART_A), Literal(b"!"))))])
    m = Matcher(Compiler(v).compile(grammar))
    assert m.accept_string(b"a" * 1000 + b"b!") and m.is_completed()
    m.reset()
    assert not m.accept_string(b"a" * 1001)


# ---- a repeat counted in its child's own automaton ----------------------------------------------
# A repeat of a bytes-only, prefix-free child (a character, a literal) is one byte automaton whose
# items count the copies; its states are classified as an unbounded repeat's and the matcher keeps,
# near the max, only the tokens that begin few enough copies (csrc/ag_copies.h).

# Tokens of JSON string text: ASCII, two-, three- and four-byte characters, characters cut short,
# escapes (whole and cut), quotes that close the string, and a few long runs, so that tokens begin
# up to 40 copies and cross both bounds.
STRING_TOKENS = [
    b"a",
    b"b",
    b"ab",
    b"abc",
    b"hello",
    b" wor",
    b"a" * 8,
    b"ab" * 20,
    *CHARACTER_PIECES,
    b'"',
    b'",',
    b'a"',
    b'abc"}',
    b'"}',
    b"}",
    b'{"s": "',
    b'{"s": "ab',
    b"",
]


def string_vocab() -> Vocabulary:
    return Vocabulary(
        STRING_TOKENS, stop_token_ids=[len(STRING_TOKENS) - 1], vocab_size=len(STRING_TOKENS) + 2
    )


def string_schema(lo: int, hi: int) -> dict:
    return {
        "type": "object",
        "properties": {"s": {"type": "string", "minLength": lo, "maxLength": hi}},
        "required": ["s"],
    }


@pytest.mark.parametrize(
    "lo,hi", [(0, 300), (280, 300), (0, 5000), (300, 300), (0, 20), (5, 20), (13, 13), (4, 255)]
)
@SETTINGS
@given(text=st.text(alphabet='ab é€😀\n"\\', min_size=0, max_size=12), n=st.integers(-3, 3))
def test_json_string_lengths_are_exact(lo: int, hi: int, text: str, n: int) -> None:
    grammar = Grammar.from_json_schema(string_schema(lo, hi))
    assert has_counted_rules(grammar)
    for count in {lo + n, hi + n}:
        if count < 0:
            continue
        value = (text * (count // max(1, len(text)) + 1))[:count] if text else "x" * count
        for ensure_ascii in (True, False):
            doc = json.dumps({"s": value}, ensure_ascii=ensure_ascii)
            assert grammar.accepts(doc) == (lo <= len(value) <= hi), (lo, hi, len(value), ensure_ascii)


@pytest.mark.parametrize("lo,hi", [(0, 300), (270, 300), (290, 290), (0, 5000), (0, 20), (10, 20), (0, 255)])
@settings(
    deadline=None,
    max_examples=max(1, int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")) // 6),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_string_masks_equal_direct_near_both_bounds(lo: int, hi: int, rnd: random.Random) -> None:
    """Masks along random paths to each bound, with rollbacks: the uncached walk is the oracle."""
    v = string_vocab()
    vs = v.vocab_size
    compiled = Compiler(v).compile_json_schema(string_schema(lo, hi))
    matcher = Matcher(compiled)
    assert matcher.accept_string('{"s": "')
    # Fill most of the string with one-copy steps, to reach the bounds within a few tokens.
    target = max(0, min(lo, hi) - 30 - rnd.randint(0, 20)) if lo else max(0, hi - 60 - rnd.randint(0, 20))
    assert matcher.accept_string("x" * target)
    history = []
    for _ in range(80):
        cached, direct = masks(matcher, vs)
        assert np.array_equal(cached, direct), f"{lo, hi} at {matcher.num_accepted_steps} steps"
        history.append(cached)
        allowed = [t for t in matcher.allowed_token_ids() if t not in v.stop_token_ids]
        taken = len(history) - 1  # tokens accepted by this loop
        if taken and (not allowed or rnd.random() < 0.12):
            k = rnd.randint(1, min(taken, 4))
            matcher.rollback(k)
            del history[-k:]
            cached, _ = masks(matcher, vs)
            assert np.array_equal(cached, history[-1])
            history.pop()
            continue
        if not allowed:
            break
        # Prefer long tokens, which begin many copies and cross the bounds.
        long = [t for t in allowed if len(STRING_TOKENS[t]) >= 5]
        assert matcher.accept_token(rnd.choice(long if long and rnd.random() < 0.6 else allowed))


# Repeats counted in their child's automaton where what follows the repeat may continue it, so that
# a token read inside the repeat may also leave it within itself (an "exit"), and a start that
# accepts (min 0) or not.
EXIT_GRAMMARS = [
    'root ::= "a"{0,300} "a" "b"?',
    'root ::= "a"{290,300} ("a" | "ab")',
    'root ::= ("ab"){260,270} "a" "c"?',
    "root ::= [a-c]{280,300} [a-z]*",
    'root ::= ("x" | "yz"){0,300} "y"?',
    'root ::= [a-z]{0,300} "a" "!"?',
    # fewer copies of a child of many states, counted because unrolled they pass 4,096 states
    'root ::= ("ab" | "c" | "defghijklmnopqrstuvw"){0,220} "a" "c"?',
    'root ::= ("x" | "yz" | "yy" | "defghijklmnopqrstuvw"){0,220} "y"?',
]


@pytest.mark.parametrize("source", EXIT_GRAMMARS)
@settings(
    deadline=None,
    max_examples=max(1, int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")) // 6),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_exits_near_the_bound(source: str, rnd: random.Random) -> None:
    grammar = Grammar.from_ebnf(source)
    assert has_counted_rules(grammar)
    tokens = [
        b"a",
        b"aa",
        b"a" * 7,
        b"a" * 20,
        b"ab",
        b"abab",
        b"ab" * 9,
        b"aab",
        b"b",
        b"c",
        b"abc",
        b"x",
        b"yz",
        b"xyzy",
        b"z",
        b"xaa!",
        b"aaa!",
        b"",
    ]
    v = Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])
    compiled = Compiler(v).compile(grammar)
    matcher = Matcher(compiled)
    unit = "ab" if "ab" in source.split("{")[0] else "x" if '"x"' in source else "a"
    hi = int(re.search(r"\{\d+,(\d+)\}", source).group(1))  # the walk starts a few copies short
    assert matcher.accept_string(unit * min(250 + rnd.randint(0, 20) if unit != "ab" else 240, hi - 3))
    for _ in range(60):
        cached, direct = masks(matcher, v.vocab_size)
        assert np.array_equal(cached, direct), f"{source!r} at {matcher.num_accepted_steps} steps"
        allowed = [t for t in matcher.allowed_token_ids() if t not in v.stop_token_ids]
        if matcher.num_accepted_steps > 1 and (not allowed or rnd.random() < 0.1):
            matcher.rollback(rnd.randint(1, min(matcher.num_accepted_steps - 1, 3)))
            continue
        if not allowed:
            break
        assert matcher.accept_token(rnd.choice(allowed))


def test_max_length_5000_is_a_small_automaton() -> None:
    compiler = Compiler(byte_vocab(), cache_limit_bytes=0)
    sizes = {
        hi: num_states(
            compiler.compile_json_schema({"type": "string", "minLength": hi // 2, "maxLength": hi})
        )
        for hi in (300, 1000, 5000, 100000)
    }
    assert len(set(sizes.values())) == 1 and sizes[5000] <= 40, sizes
    unbounded = num_states(compiler.compile_json_schema({"type": "string"}))
    assert sizes[5000] <= unbounded + 16, (sizes, unbounded)


def test_repeats_of_many_states_are_counted_below_256_copies() -> None:
    """A repeat whose unrolled copies would pass 4,096 states is counted in its child's
    automaton, whatever its number of copies: a JSON string of 255 characters (about 20 states
    a character unrolled) has the states of one of 300. A shorter bound (an email format's
    labels, a string of 64) stays unrolled: its masks need no table of copies; and so does a
    child that is not prefix-free."""
    compiler = Compiler(byte_vocab(), cache_limit_bytes=0)

    def states(schema: dict) -> int:
        return num_states(compiler.compile_json_schema(schema))

    sizes = {hi: states({"type": "string", "minLength": 4, "maxLength": hi}) for hi in (255, 300)}
    assert len(set(sizes.values())) == 1, sizes
    assert states({"type": "string", "maxLength": 64}) > 20 * sizes[300]
    assert has_counted_rules(Grammar.from_ebnf('root ::= ("ab" | "c" | "defghijklmnopqrstuvw"){0,220}'))
    assert not has_counted_rules(Grammar.from_ebnf('root ::= ("ab" | "c"){0,200}'))  # 400 states
    assert not has_counted_rules(Grammar.from_ebnf("root ::= [a-z]{0,200}"))  # a state a copy
    assert not has_counted_rules(Grammar.from_ebnf('root ::= ("ab" | "a"){0,250}'))  # not prefix-free


# JSON Schema patterns and array lengths with large bounds: a pattern's class is counted in its
# own automaton, a longer item in blocks, array items by the counted rule of rule edges.
PATTERN_CASES = [
    ("^[a-z]{3,400}$", r"[a-z]{3,400}"),
    ("^x[0-9]{0,300}y$", r"x[0-9]{0,300}y"),
    ("^(ab|c){0,300}$", r"(?:ab|c){0,300}"),
]


@pytest.mark.parametrize("pattern,python", PATTERN_CASES)
@SETTINGS
@given(
    n=st.sampled_from([0, 1, 2, 3, 150, 298, 299, 300, 301, 399, 400, 401]),
    unit=st.sampled_from(["a", "ab", "c", "7", "é"]),
)
def test_pattern_bounds_are_exact(pattern: str, python: str, n: int, unit: str) -> None:
    grammar = Grammar.from_json_schema({"type": "string", "pattern": pattern})
    for value in (unit * n, "x" + unit * n + "y"):
        want = re.fullmatch(python, value) is not None
        assert grammar.accepts(json.dumps(value, ensure_ascii=False)) == want, (pattern, len(value))


@pytest.mark.parametrize("lo,hi", [(0, 300), (290, 300), (257, None)])
def test_array_lengths_are_exact(lo: int, hi) -> None:
    schema = {"type": "array", "items": {"type": "integer"}, "minItems": lo}
    if hi is not None:
        schema["maxItems"] = hi
    grammar = Grammar.from_json_schema(schema)
    for n in sorted({0, 1, lo - 1, lo, lo + 1, 299, 300, 301, 400}):
        if n >= 0:
            want = n >= lo and (hi is None or n <= hi)
            assert grammar.accepts(json.dumps(list(range(n)))) == want, (lo, hi, n)


OBJECT_TOKENS = [
    *STRING_TOKENS[:-1],
    b'", "b": "',
    b'", "c": ',
    b'", "',
    b"b",
    b'": "',
    b"c",
    b"1",
    b"12",
    b"}",
    b"",
]


@pytest.mark.parametrize("lo", [0, 280])
@settings(
    deadline=None,
    max_examples=max(1, int(os.environ.get("AG_PROPERTY_EXAMPLES", "60")) // 6),
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rnd=st.randoms(use_true_random=False))
def test_object_of_long_strings_masks_equal_direct(lo: int, rnd: random.Random) -> None:
    """Several long strings in one object, tokens that close one and open the next: the kept
    verdicts (keyed without a count that decides nothing) and the skipped looping bytes of a
    counted string stay exact, across strings and rollbacks."""
    string = {"type": "string", "minLength": lo, "maxLength": 300}
    schema = {
        "type": "object",
        "properties": {"a": string, "b": string, "c": {"type": "integer"}},
        "required": ["a"],
    }
    v = Vocabulary(OBJECT_TOKENS, stop_token_ids=[len(OBJECT_TOKENS) - 1])
    matcher = Matcher(Compiler(v).compile_json_schema(schema))
    assert matcher.accept_string('{"a": "')
    for _ in range(120):
        cached, direct = masks(matcher, v.vocab_size)
        assert np.array_equal(cached, direct), f"at {matcher.num_accepted_steps} steps"
        allowed = [t for t in matcher.allowed_token_ids() if t not in v.stop_token_ids]
        if matcher.num_accepted_steps > 1 and (not allowed or rnd.random() < 0.08):
            matcher.rollback(rnd.randint(1, min(matcher.num_accepted_steps - 1, 5)))
            continue
        if not allowed:
            break
        closing = [t for t in allowed if b'"' in OBJECT_TOKENS[t]]
        long = [t for t in allowed if len(OBJECT_TOKENS[t]) >= 5 and t not in closing]
        pick = rnd.random()
        pool = closing if closing and pick < 0.08 else long if long and pick < 0.7 else allowed
        assert matcher.accept_token(rnd.choice(pool))


def test_loop_bytes_are_skipped_only_where_the_set_stays() -> None:
    """At the start both a counted loop and another alternative are live: a byte of the loop
    leaves the other behind, so a token's loop bytes must not be skipped there (``a!.`` is
    rejected: after ``a`` only ``!?`` may end it)."""
    grammar = Grammar.from_ebnf('root ::= [a-y]{0,300} "!" "?"? | "z"* "!" "."')
    assert has_counted_rules(grammar)
    tokens = [b"a", b"z", b"!", b".", b"?", b"a!.", b"a!?", b"z!.", b"aa!?", b"aa!.", b"!.", b""]
    v = Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])
    matcher = Matcher(Compiler(v).compile(grammar))
    for path in ([], [b"a"], [b"z"], [b"a", b"a"]):
        matcher.reset()
        for t in path:
            assert matcher.accept_token(tokens.index(t))
        cached, direct = masks(matcher, v.vocab_size)
        assert np.array_equal(cached, direct), path
    matcher.reset()
    allowed = {tokens[t] for t in matcher.allowed_token_ids()}
    assert b"a!?" in allowed and b"!." in allowed and b"a!." not in allowed
