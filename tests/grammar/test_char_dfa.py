"""Tests for the character automata of agentgrammar/grammar/char_dfa.py.

The reference for regex languages is Python's ``re.fullmatch``; for hand-built automata it is a
small simulator written here. ``to_ir`` output is checked through the C engine
(``Grammar.accepts``).
"""

from __future__ import annotations

import functools
import itertools
import re
from typing import Dict, List, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgrammar.errors import GrammarError
from agentgrammar.grammar import Grammar
from agentgrammar.grammar.char_dfa import ALPHABET, BYTES, MAX_STATES, CharDFA
from agentgrammar.grammar.ir import CharClass, Choice, Expr, Literal, Repeat, Rule, RuleRef, Seq
from agentgrammar.grammar.regex import parse_regex

PATTERNS = [
    "[a-c]+",
    "a(b|c)*d?",
    "(ab){2,3}",
    "[^a]x*",
    "x{0,3}y",
    "(a|b)*a(a|b){3}",
    "(xy|x)*y?",
    "[a-d]{2,4}|x+",
    "x[ab]|ya|yb",
    ".d*",
    "",
]
#: Small alphabet for random strings: letters the patterns use, one they don't, a newline (not
#: matched by ``.``) and a two-byte character (exercises negated classes and UTF-8 in to_ir).
CHARS = "abcdxy\né"
strings = st.text(alphabet=CHARS, max_size=10)
SETTINGS = settings(max_examples=60, deadline=None)


@functools.lru_cache(maxsize=None)
def dfa(pattern: str) -> CharDFA:
    return CharDFA.from_expr(parse_regex(pattern))


def full(pattern: str, s: str) -> bool:
    return re.fullmatch(pattern, s) is not None


# --------------------------------------------------------------------------- from_expr


@SETTINGS
@given(pattern=st.sampled_from(PATTERNS), s=strings)
def test_from_expr_agrees_with_re(pattern: str, s: str) -> None:
    assert dfa(pattern).matches(s) == full(pattern, s)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_from_expr_agrees_with_re_exhaustively_on_short_strings(pattern: str) -> None:
    d = dfa(pattern)
    for n in range(6):
        for chars in itertools.product("abcdxy", repeat=n):
            s = "".join(chars)
            assert d.matches(s) == full(pattern, s), (pattern, s)


@st.composite
def regexes(draw: st.DrawFn, depth: int = 3) -> str:
    """Random small regexes over a-d that Python's ``re`` and ``parse_regex`` read alike."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(["a", "b", "c", "d", "[a-c]", "[^a]", "[bd]", "."]))
    kind = draw(st.sampled_from(["seq", "alt", "star", "plus", "opt", "count"]))
    a = draw(regexes(depth - 1))
    if kind == "seq":
        return f"(?:{a})(?:{draw(regexes(depth - 1))})"
    if kind == "alt":
        return f"(?:{a}|{draw(regexes(depth - 1))})"
    if kind == "count":
        lo = draw(st.integers(0, 2))
        return f"(?:{a}){{{lo},{lo + draw(st.integers(0, 2))}}}"
    suffix = {"star": "*", "plus": "+", "opt": "?"}[kind]
    return f"(?:{a}){suffix}"


@settings(max_examples=80, deadline=None)
@given(pattern=regexes(), data=st.data())
def test_random_regexes_agree_with_re(pattern: str, data: st.DataObject) -> None:
    d = CharDFA.from_expr(parse_regex(pattern))
    for s in data.draw(st.lists(st.text(alphabet="abcde\n", max_size=8), min_size=5, max_size=5)):
        assert d.matches(s) == full(pattern, s), (pattern, s)


def test_from_expr_is_minimal() -> None:
    assert dfa("[a-c]+").num_states == 2
    # the classic: "the fourth character from the end is an a" needs 2**4 states
    assert dfa("(a|b)*a(a|b){3}").num_states == 16
    # different spellings of one language give the same automaton size
    assert dfa("a(b|c)*d?").num_states == CharDFA.from_expr(parse_regex("a[bc]*(d|)")).num_states


def test_from_expr_is_minimal_when_ranges_are_split_differently() -> None:
    # start, after x|y, accept: 3 states; after "x" the move is [ab], after "y" it is a | b
    d = dfa("x[ab]|ya|yb")
    assert d.num_states == 3
    assert d.minimized().num_states == d.num_states


def test_from_expr_rejects_non_regular_ir() -> None:
    with pytest.raises(GrammarError):
        CharDFA.from_expr(Seq((CharClass(((97, 97),)), RuleRef("x"))))


# --------------------------------------------------------------------------- boolean operations


@SETTINGS
@given(p=st.sampled_from(PATTERNS), q=st.sampled_from(PATTERNS), s=strings)
def test_intersect_complement_minus(p: str, q: str, s: str) -> None:
    a, b = dfa(p), dfa(q)
    in_a, in_b = full(p, s), full(q, s)
    assert a.intersect(b).matches(s) == (in_a and in_b)
    assert a.complement().matches(s) == (not in_a)
    assert a.minus(b).matches(s) == (in_a and not in_b)
    # union by De Morgan
    assert a.complement().intersect(b.complement()).complement().matches(s) == (in_a or in_b)


def equivalent(a: CharDFA, b: CharDFA) -> bool:
    """Whether two automata accept the same language (exactly: neither minus the other)."""
    return a.minus(b).is_empty() and b.minus(a).is_empty()


@SETTINGS
@given(p=st.sampled_from(PATTERNS), q=st.sampled_from(PATTERNS), s=strings)
def test_union_agrees_with_re(p: str, q: str, s: str) -> None:
    assert dfa(p).union(dfa(q)).matches(s) == (full(p, s) or full(q, s))


@pytest.mark.parametrize("p, q", list(itertools.combinations(PATTERNS, 2)))
def test_union_is_de_morgans_union(p: str, q: str) -> None:
    a, b = dfa(p), dfa(q)
    by_de_morgan = a.complement().intersect(b.complement()).complement()
    u = a.union(b)
    assert equivalent(u, by_de_morgan)
    assert u.num_states == by_de_morgan.num_states  # both minimal
    assert equivalent(b.union(a), u)


@SETTINGS
@given(p=st.sampled_from(PATTERNS), q=st.sampled_from(PATTERNS), s=st.text(max_size=6))
def test_union_over_all_of_unicode(p: str, q: str, s: str) -> None:
    # moves that overlap partly, or cover every character (complements), on both sides
    a, b = dfa(p).complement(), dfa(q)
    assert a.union(b).matches(s) == ((not full(p, s)) or full(q, s))


def test_union_of_empty_and_universal_languages() -> None:
    nothing, anything = CharDFA.literal_set([]), CharDFA.length(0, None)
    d = dfa("a(b|c)*d?")
    assert equivalent(d.union(nothing), d)
    assert equivalent(nothing.union(d), d)
    assert equivalent(d.union(anything), anything)
    assert nothing.union(nothing).is_empty()


def test_union_size_bound() -> None:
    a, b = dfa("(a|b)*a(a|b){3}"), dfa("c(a|b)*")
    assert a.union(b).num_states == 16 + 2  # apart from the start, the two never meet
    with pytest.raises(GrammarError, match="more than 8 states"):
        a.union(b, limit=8)


@SETTINGS
@given(
    picked=st.lists(st.sampled_from(PATTERNS + [".*", "a.*", ".*a.*", ".*b.*"]), min_size=2, max_size=4),
    s=strings,
)
def test_exactly_one_agrees_with_re(picked: List[str], s: str) -> None:
    # ".*" and its kin end in a state that accepts everything: two of them never accept again
    assert CharDFA.exactly_one([dfa(p) for p in picked]).matches(s) == (sum(full(p, s) for p in picked) == 1)


@pytest.mark.parametrize("p, q", list(itertools.combinations(PATTERNS, 2)))
def test_exactly_one_of_two_is_the_symmetric_difference(p: str, q: str) -> None:
    a, b = dfa(p), dfa(q)
    one = CharDFA.exactly_one([a, b])
    assert equivalent(one, a.minus(b).union(b.minus(a)))
    assert one.num_states == a.minus(b).union(b.minus(a)).num_states  # both minimal


def test_exactly_one_of_three_words_anywhere() -> None:
    words = ["ab", "ba", "bb"]
    one = CharDFA.exactly_one([dfa(f".*{w}.*") for w in words])
    for n in range(7):
        for t in itertools.product("ab", repeat=n):
            s = "".join(t)
            assert one.matches(s) == (sum(w in s for w in words) == 1), s


def test_exactly_one_size_bound() -> None:
    a, b = dfa("(a|b)*a(a|b){3}"), dfa("c(a|b)*")
    with pytest.raises(GrammarError, match="more than 8 states"):
        CharDFA.exactly_one([a, b], limit=8)


@SETTINGS
@given(p=st.sampled_from(PATTERNS), s=st.text(max_size=6))
def test_complement_over_all_of_unicode(p: str, s: str) -> None:
    assert dfa(p).complement().matches(s) == (not full(p, s))
    assert dfa(p).complement().complement().matches(s) == full(p, s)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_complement_twice_is_no_bigger(pattern: str) -> None:
    d = dfa(pattern)
    assert d.complement().complement().num_states <= d.num_states


@pytest.mark.parametrize("pattern", PATTERNS + ["[\\s\\S]*", "a[\\s\\S]*", "[^a]", "a|[\\s\\S]{2,}"])
def test_complement_of_a_minimal_dfa_is_minimal(pattern: str) -> None:
    # read off the minimal DFA, or built and minimized from a copy not known to be minimal
    d = dfa(pattern)
    fast = d.complement()
    slow = CharDFA([list(row) for row in d.edges], list(d.accepting)).complement()
    assert d.minimal and fast.minimal
    assert fast.num_states == slow.num_states == fast.minimized().num_states
    for s in ["", "a", "b", "ab", "ba", "\n", "é", "aab", "xyz", "dddd"]:
        assert fast.matches(s) == slow.matches(s) == (not full(pattern, s))


@pytest.mark.parametrize(
    "p, q, empty",
    [
        ("[a-c]+", "x+", True),
        ("(ab){2,3}", "(ab){4}", True),
        ("x{0,3}y", "[^y]*", True),
        ("a*", "b*", False),  # both hold ""
        ("[a-c]+", "b", False),
        ("(a|b)*a(a|b){3}", "b*ab*", False),
    ],
)
def test_is_empty_of_intersection(p: str, q: str, empty: bool) -> None:
    assert dfa(p).intersect(dfa(q)).is_empty() is empty


@pytest.mark.parametrize("pattern", PATTERNS)
def test_is_empty_of_self_minus_self(pattern: str) -> None:
    d = dfa(pattern)
    assert not d.is_empty()
    assert d.minus(d).is_empty()
    assert d.intersect(d.complement()).is_empty()
    assert not d.complement().is_empty()


def test_empty_and_universal_languages() -> None:
    nothing = CharDFA.literal_set([])
    everything = nothing.complement()
    assert nothing.is_empty()
    assert not nothing.matches("")
    assert everything.num_states == 1
    for s in ("", "a", "é😀", "\x00", "\U0010ffff" * 3):
        assert everything.matches(s)
    assert CharDFA.length(0, None).complement().is_empty()


# --------------------------------------------------------------------------- length, literal_set


@SETTINGS
@given(lo=st.integers(0, 5), extra=st.one_of(st.none(), st.integers(0, 5)), s=st.text(max_size=12))
def test_length(lo: int, extra: Optional[int], s: str) -> None:
    hi = None if extra is None else lo + extra
    expected = lo <= len(s) and (hi is None or len(s) <= hi)
    assert CharDFA.length(lo, hi).matches(s) == expected


@SETTINGS
@given(p=st.sampled_from(PATTERNS), lo=st.integers(0, 3), extra=st.integers(0, 3), s=strings)
def test_pattern_with_length_bounds(p: str, lo: int, extra: int, s: str) -> None:
    d = dfa(p).intersect(CharDFA.length(lo, lo + extra))
    assert d.matches(s) == (full(p, s) and lo <= len(s) <= lo + extra)


@pytest.mark.parametrize(
    "pattern,shape",
    [
        ("[a-c]*", ([], "[a-c]")),
        ("[a-c]+", (["[a-c]"], "[a-c]")),
        ("[1-9][0-9]*", (["[1-9]"], "[0-9]")),
        ("ab[cd]*", (["a", "b"], "[cd]")),
        ("x|y", (["[xy]"], None)),
        ("", ([], None)),
        ("(ab)*", None),
        ("a+b", None),
        ("a?b*", None),
        ("[^a]x*", (["[^a]"], "x")),
        ("(xy|x)*y?", None),
    ],
)
def test_chain_then_loop(pattern: str, shape: Optional[Tuple[List[str], Optional[str]]]) -> None:
    """C1 .. Ck L* exactly: the classes, as the strings of one character they accept."""

    def chars(ranges: List[Tuple[int, int]]) -> str:
        return "".join(chr(c) for lo, hi in ranges for c in range(lo, min(hi, 0x3FF) + 1))

    found = dfa(pattern).chain_then_loop()
    if shape is None:
        assert found is None
        return
    assert found is not None
    chain, loop = found
    assert [chars(c) for c in chain] == [chars(_ranges(c)) for c in shape[0]]
    assert chars(loop) == ("" if shape[1] is None else chars(_ranges(shape[1])))


def _ranges(cls: str) -> List[Tuple[int, int]]:
    """The ranges of one-character pattern ``cls`` (its automaton's only edge class)."""
    return [(lo, hi) for lo, hi, _ in dfa(cls).edges[0]]


@SETTINGS
@given(
    p=st.sampled_from(PATTERNS),
    lo=st.integers(0, 3),
    extra=st.one_of(st.none(), st.integers(0, 3)),
    s=strings,
)
def test_with_length_is_the_product_with_the_length_bounds(
    p: str, lo: int, extra: Optional[int], s: str
) -> None:
    hi = None if extra is None else lo + extra
    d = dfa(p).with_length(lo, hi)
    assert d.matches(s) == (full(p, s) and lo <= len(s) and (hi is None or len(s) <= hi))


@pytest.mark.parametrize(
    "pattern,hi,refused",
    [
        ("[a-z]+(-[a-z]+)*", 5000, True),  # two states loop on themselves, each paired with 5,000 counts
        ("[a-z]+", 2998, False),  # one, at distance 1: 2,998 pairs, and the start's (0, 0)
        ("[a-z]+", 3001, True),
        ("x{0,3}y", 15000, False),  # no loop: the product stays small whatever the bound
        # the 41 states after the loop each pair with every count from their distance through it
        ("[a-z]+@[a-z]{40}", 100, True),
        ("[a-z]+@[a-z]{40}", 60, False),
    ],
)
def test_with_length_refuses_a_doomed_product_before_building_it(
    pattern: str, hi: int, refused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """States that loop on themselves give a lower bound on the product's states; past the
    limit the product is refused with its own error, without being built."""
    d = dfa(pattern)
    if refused:
        monkeypatch.setattr(CharDFA, "intersect", lambda *_: pytest.fail("the product was built"))
        with pytest.raises(
            GrammarError, match="combining the constraints needs an automaton of more than 3000"
        ):
            d.with_length(0, hi)
    else:
        sample = "xy" if "y" in pattern else "a@" + "b" * 40 if "@" in pattern else "a" * hi
        assert d.with_length(1, hi).matches(sample)


@SETTINGS
@given(words=st.lists(st.text(alphabet="abc", max_size=4), max_size=6), data=st.data())
def test_literal_set(words: List[str], data: st.DataObject) -> None:
    d = CharDFA.literal_set(words)
    probes = data.draw(st.lists(st.text(alphabet="abc", max_size=5), min_size=10, max_size=10))
    for s in probes + words:
        assert d.matches(s) == (s in words), (words, s)
    assert d.is_empty() == (not words)


def test_literal_set_non_ascii() -> None:
    d = CharDFA.literal_set(["é", "😀x", ""])
    assert [d.matches(s) for s in ("é", "😀x", "", "e", "😀", "éé")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]


@pytest.mark.parametrize(
    "words, alphabet",
    [
        (["ab", "b", "abc", "ac", ""], ALPHABET),
        (["name", "names", "id", "idx", "type", "types"], ALPHABET),
        (["x\ud800y", "xy"], ALPHABET),  # a lone surrogate: that word is no string of the alphabet
        (["é", "e"], BYTES),
    ],
)
def test_literal_set_is_the_minimal_dfa_of_the_words(
    words: List[str], alphabet: Tuple[Tuple[int, int], ...]
) -> None:
    d = CharDFA.literal_set(words, alphabet)
    by_subsets = CharDFA.from_expr(
        Choice(tuple(Literal(w.encode("utf-8", "surrogatepass")) for w in words)), alphabet
    )
    assert d.minimal and d.num_states == by_subsets.num_states
    for s in words + ["a", "abcd", "nam", "x", "xy", "ty"]:
        probe = s.encode("utf-8", "surrogatepass") if alphabet == BYTES else s
        assert d.matches(probe) == by_subsets.matches(probe)


# --------------------------------------------------------------------------- minimized


def _reference_matches(table: List[Dict[str, int]], accepting: List[bool], s: str) -> bool:
    state = 0
    for ch in s:
        if ch not in table[state]:
            return False
        state = table[state][ch]
    return accepting[state]


@st.composite
def random_dfas(draw: st.DrawFn) -> Tuple[List[Dict[str, int]], List[bool]]:
    """Random complete-or-partial DFAs over "abc", as {char: target} tables."""
    n = draw(st.integers(1, 7))
    table = [
        {ch: t for ch in "abc" if (t := draw(st.one_of(st.none(), st.integers(0, n - 1)))) is not None}
        for _ in range(n)
    ]
    accepting = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return table, accepting


def _build(table: List[Dict[str, int]], accepting: List[bool]) -> CharDFA:
    edges = [sorted((ord(ch), ord(ch), t) for ch, t in row.items()) for row in table]
    return CharDFA(edges, list(accepting))


@settings(max_examples=100, deadline=None)
@given(machine=random_dfas(), data=st.data())
def test_minimized_preserves_language_and_shrinks(
    machine: Tuple[List[Dict[str, int]], List[bool]], data: st.DataObject
) -> None:
    table, accepting = machine
    raw = _build(table, accepting)
    small = raw.minimized()
    assert small.num_states <= raw.num_states
    assert small.minimized().num_states == small.num_states  # already minimal
    # also the language seen by the other operations
    comp = raw.complement()
    for s in data.draw(st.lists(st.text(alphabet="abcd", max_size=8), min_size=10, max_size=10)):
        expected = _reference_matches(table, accepting, s)
        assert small.matches(s) == expected, s
        assert raw.trimmed().matches(s) == expected, s
        assert comp.matches(s) == (not expected), s


def test_minimized_merges_equivalent_states() -> None:
    # states 1 and 2 accept the same language (b*), so a{1}b* | a{2}b* needs 3 states, not 4
    a, b = ord("a"), ord("b")
    raw = CharDFA([[(a, a, 1)], [(a, a, 2), (b, b, 3)], [(b, b, 2)], [(b, b, 3)]], [False, True, True, True])
    small = raw.minimized()
    assert raw.num_states == 4
    assert small.num_states == 3
    for s in ("a", "ab", "aa", "aab", "abbb", "aabb"):
        assert small.matches(s)
    for s in ("", "b", "aaa", "aba", "abab"):
        assert not small.matches(s)


# --------------------------------------------------------------------------- surrogates, size bound


SURROGATE_STRINGS = ["\ud800", "\udfff", "a\udc00", "\udbff\udfff"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_complement_never_matches_a_surrogate(pattern: str) -> None:
    comp = dfa(pattern).complement()
    assert comp.matches("é😀")  # none of the patterns matches this
    for s in SURROGATE_STRINGS:
        assert not comp.matches(s)
        assert not dfa(pattern).matches(s)
    assert all(not (lo <= 0xD800 <= hi or lo <= 0xDFFF <= hi) for row in comp.edges for lo, hi, _ in row)


def test_nothing_matches_a_surrogate() -> None:
    for d in (CharDFA.literal_set([]).complement(), CharDFA.length(0, None), dfa("[^a]*"), dfa(".*")):
        assert d.matches("xyz")
        for s in SURROGATE_STRINGS:
            assert not d.matches(s)
    assert ALPHABET == ((0, 0xD7FF), (0xE000, 0x10FFFF))


def test_size_bound() -> None:
    CharDFA.length(0, MAX_STATES - 1)  # exactly MAX_STATES states: fine
    with pytest.raises(GrammarError, match="states"):
        CharDFA.length(0, MAX_STATES + 5)
    with pytest.raises(GrammarError, match="states"):
        CharDFA.length(MAX_STATES, None)


def test_size_bound_of_intersection() -> None:
    # 128 states times 251 lengths: a product past any limit on automaton size
    last_seven = dfa("(a|b)*a(a|b){6}")
    assert last_seven.num_states == 128
    with pytest.raises(GrammarError, match="states"):
        last_seven.intersect(CharDFA.length(0, 250))


def test_size_bound_from_regex() -> None:
    with pytest.raises(GrammarError, match="states"):
        CharDFA.from_expr(Repeat(CharClass(((97, 98),)), MAX_STATES + 1, MAX_STATES + 1))


# --------------------------------------------------------------------------- to_ir


def spell(ranges) -> Expr:  # type: ignore[no-untyped-def]
    return CharClass(tuple(ranges))


def ir_grammar(d: CharDFA, base: str = "s") -> Tuple[Optional[Grammar], Dict[str, Expr]]:
    rules: Dict[str, Expr] = {}
    counter = itertools.count()

    def fresh(name: str) -> str:
        return f"{name}_{next(counter)}"

    expr = d.to_ir(spell, rules, fresh, base)
    if expr is None:
        return None, rules
    assert "root" not in rules
    return Grammar.from_rules([Rule("root", expr), *[Rule(n, b) for n, b in rules.items()]]), rules


COMBINED: Dict[str, CharDFA] = {}


def combined(key: str) -> CharDFA:
    """Automata for to_ir: plain patterns and a few combinations."""
    if key not in COMBINED:
        if key.startswith("not "):
            COMBINED[key] = dfa(key[4:]).complement()
        elif " & len" in key:
            p, n = key.split(" & len")
            COMBINED[key] = dfa(p).intersect(CharDFA.length(int(n), int(n) + 2))
        elif " - " in key:
            p, q = key.split(" - ")
            COMBINED[key] = dfa(p).minus(dfa(q))
        else:
            COMBINED[key] = dfa(key)
    return COMBINED[key]


IR_KEYS = [
    *PATTERNS,
    "not a(b|c)*d?",
    "not x{0,3}y",
    "[a-d]{2,4}|x+ & len3",
    "[^a]x* & len2",
    "(xy|x)*y? - x*",
    "[a-c]+ - (ab){2,3}",
]


@functools.lru_cache(maxsize=None)
def ir_grammar_for(key: str) -> Grammar:
    g, _ = ir_grammar(combined(key))
    assert g is not None
    return g


@settings(max_examples=120, deadline=None)
@given(key=st.sampled_from(IR_KEYS), s=strings)
def test_to_ir_accepts_what_the_dfa_accepts(key: str, s: str) -> None:
    assert ir_grammar_for(key).accepts(s) == combined(key).matches(s)


@pytest.mark.parametrize("key", IR_KEYS)
def test_to_ir_exhaustively_on_short_strings(key: str) -> None:
    g, d = ir_grammar_for(key), combined(key)
    for n in range(4):
        for chars in itertools.product("abxy", repeat=n):
            s = "".join(chars)
            assert g.accepts(s) == d.matches(s), (key, s)


def test_to_ir_of_empty_language_is_none() -> None:
    rules: Dict[str, Expr] = {}
    assert dfa("[a-c]+").intersect(dfa("x+")).to_ir(spell, rules, lambda b: b + "_0", "s") is None
    assert rules == {}


def test_to_ir_names_rules_with_fresh() -> None:
    _, rules = ir_grammar(dfa("(a|b)*a(a|b){3}"), base="my_base")
    assert rules
    assert all(name.startswith("my_base_") for name in rules)


def test_to_ir_self_loops_do_not_nest() -> None:
    g, rules = ir_grammar(dfa("[a-z]+"))
    assert g is not None
    assert len(rules) == 1  # the start state; its self-loop is a repeat inside it
    (body,) = rules.values()
    assert any(
        isinstance(x, Repeat) and x.max is None for x in (body.items if isinstance(body, Seq) else (body,))
    )
    long = "abcdefghijklmnopqrstuvwxyz" * 77  # 2002 characters
    assert g.accepts(long)
    assert not g.accepts(long + "A")
    assert not g.accepts("")


def test_to_ir_long_chain_of_states() -> None:
    # a chain of 301 single-entry states: inlined up to a depth, then split into rules
    word = "ab" * 150
    g, rules = ir_grammar(CharDFA.literal_set([word, "x"]))
    assert g is not None
    assert g.accepts(word)
    assert g.accepts("x")
    assert not g.accepts(word[:-1])
    assert not g.accepts(word + "a")
    assert 1 < len(rules) < 50


def test_to_ir_spells_non_ascii_and_huge_ranges() -> None:
    g, _ = ir_grammar(dfa("abc").complement())
    assert g is not None
    for s in ("", "ab", "abcd", "é", "😀" * 3, "\U0010ffff", "abé"):
        assert g.accepts(s), s
    assert not g.accepts("abc")


def _expanded_size(e: Expr) -> int:
    """Nodes of ``e`` written out as a tree: a shared subexpression counts at every use."""
    kids = e.items if isinstance(e, (Seq, Choice)) else (e.item,) if isinstance(e, Repeat) else ()
    return 1 + sum(_expanded_size(k) for k in kids)


def _refs(e: Expr) -> List[str]:
    if isinstance(e, RuleRef):
        return [e.name]
    kids = e.items if isinstance(e, (Seq, Choice)) else (e.item,) if isinstance(e, Repeat) else ()
    return [name for k in kids for name in _refs(k)]


def test_to_ir_shares_small_states_that_several_reach() -> None:
    # Any word but these names: after the first character of a word that is none of them,
    # every state leads to "any string". That state is one expression, shared, not a rule:
    # a rule reference there is a rule edge in the C core, past which the mask cache asks
    # the Earley parser about every token (see _small_states).
    names = ["name", "namespace", "nodes", "doc", "avroName"]
    d = CharDFA.literal_set(names).complement()
    g, rules = ir_grammar(d)
    assert g is not None
    (start,) = rules.values()  # the start state's rule, the only one
    assert _refs(start) == []
    for s in [*names, "", "n", "nam", "names", "namespaces", "x", "docs", "avroNam", "do"]:
        assert g.accepts(s) == (s not in names), s


def test_to_ir_keeps_rules_where_sharing_would_blow_up() -> None:
    # (ab|ba){12}: each level is reached from two states, and writing it out at both
    # doubles its size per level. Past a small size, the level stays a rule.
    d = dfa("(ab|ba){12}")
    g, rules = ir_grammar(d)
    assert g is not None
    assert rules
    assert sum(_expanded_size(e) for e in [*rules.values(), g.rules[0].body]) < 4000
    assert g.accepts("ab" * 6 + "ba" * 6)
    assert g.accepts("ba" * 12)
    assert not g.accepts("ab" * 11)
    assert not g.accepts("ab" * 11 + "aa")


def test_to_ir_keeps_cycles_as_rules() -> None:
    # (ab)+: the two states lead to each other; neither can be written out in place.
    g, rules = ir_grammar(dfa("(ab)+c"))
    assert g is not None
    assert rules
    assert g.accepts("ababc")
    assert not g.accepts("abac")
