"""Tests for the regex front-end (agentgrammar/grammar/regex.py)."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar.errors import GrammarError
from agentgrammar.grammar import Grammar
from agentgrammar.grammar.ir import EMPTY, CharClass, Choice, Literal, Repeat, Rule, Seq
from agentgrammar.grammar.regex import parse_regex, regex_rules
from tests.grammar._grammar_ir_matcher import IRMatcher

L = Literal
DIGIT = CharClass(((48, 57),))


def matcher(pattern: str) -> IRMatcher:
    return IRMatcher(regex_rules(pattern))


# --------------------------------------------------------------------------- IR results


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("", EMPTY),
        ("abc", L(b"abc")),
        ("é😀", L("é😀".encode())),
        ("ab*", Seq((L(b"a"), Repeat(L(b"b"), 0, None)))),
        ("(ab)+", Repeat(L(b"ab"), 1, None)),
        ("a|bc|", Choice((L(b"a"), L(b"bc"), EMPTY))),
        ("(?:a|b)c", Seq((Choice((L(b"a"), L(b"b"))), L(b"c")))),
        ("(?P<x>a)(?<y>b)", L(b"ab")),
        ("a{3}", Repeat(L(b"a"), 3, 3)),
        ("a{2,}", Repeat(L(b"a"), 2, None)),
        ("a{,2}", Repeat(L(b"a"), 0, 2)),
        ("a{,}", Repeat(L(b"a"), 0, None)),
        ("a{1,3}", Repeat(L(b"a"), 1, 3)),
        (
            "a*?b+?c??d{2,3}?",
            Seq(
                (
                    Repeat(L(b"a"), 0, None),
                    Repeat(L(b"b"), 1, None),
                    Repeat(L(b"c"), 0, 1),
                    Repeat(L(b"d"), 2, 3),
                )
            ),
        ),
        ("a{x}", L(b"a{x}")),
        ("a{1, 2}", L(b"a{1, 2}")),
        ("a{", L(b"a{")),
        ("}]", L(b"}]")),
        (".", CharClass(((10, 10),), negated=True)),
        ("\\d", DIGIT),
        ("\\D", CharClass(((0, 47), (58, 0x10FFFF)))),
        ("\\w", CharClass(((48, 57), (65, 90), (95, 95), (97, 122)))),
        (
            "\\s",
            CharClass(
                (
                    (9, 13),
                    (32, 32),
                    (0xA0, 0xA0),
                    (0x1680, 0x1680),
                    (0x2000, 0x200A),
                    (0x2028, 0x2029),
                    (0x202F, 0x202F),
                    (0x205F, 0x205F),
                    (0x3000, 0x3000),
                    (0xFEFF, 0xFEFF),
                )
            ),
        ),
        ("[a-c_]", CharClass(((95, 95), (97, 99)))),
        ("[^a-c]", CharClass(((97, 99),), negated=True)),
        ("[]a]", CharClass(((93, 93), (97, 97)))),
        ("[^]a]", CharClass(((93, 93), (97, 97)), negated=True)),
        ("[a-]", CharClass(((45, 45), (97, 97)))),
        ("[-a]", CharClass(((45, 45), (97, 97)))),
        ("[\\d.]", CharClass(((46, 46), (48, 57)))),
        ("[\\]\\-\\\\]", CharClass(((45, 45), (92, 93)))),
        ("[\\b]", CharClass(((8, 8),))),
        ("[\\x00-\\x1f]", CharClass(((0, 31),))),
        ("\\x41\\u00e9\\u{1F600}\\U0001F600", L("Aé😀😀".encode())),
        ("\\n\\t\\r\\f\\v\\a\\e\\0\\012\\cJ", L(b"\n\t\r\f\v\a\x1b\x00\n\n")),
        ("\\N{EM DASH}", L("—".encode())),
        ("\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\\\/\\-\\ ", L(b".*+?()[]{}|^$\\/- ")),
        ("^abc$", L(b"abc")),
        ("\\Aabc\\Z", L(b"abc")),
        ("^a$|^b$", Choice((L(b"a"), L(b"b")))),
        ("(^a|b$)", Choice((L(b"a"), L(b"b")))),
        ("(^a)?b", Seq((Repeat(L(b"a"), 0, 1), L(b"b")))),
        ("^", EMPTY),
        ("^$", EMPTY),
        ("(?#comment)a", L(b"a")),
    ],
)
def test_parse_regex(pattern, expected):
    assert parse_regex(pattern) == expected


def test_regex_rules_wraps_one_rule():
    assert regex_rules("a", name="start") == [Rule("start", L(b"a"))]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "pattern, message, column",
    [
        ("(a)\\1", "backreference '\\1'", 4),
        ("(?P<n>a)(?P=n)", "backreference (?P=name)", 9),
        ("(?<n>a)\\k<n>", "backreference '\\k<name>'", 8),
        ("a(?=b)", "lookahead '(?='", 2),
        ("a(?!b)", "lookahead '(?!'", 2),
        ("(?<=a)b", "lookbehind '(?<='", 1),
        ("(?<!a)b", "lookbehind '(?<!'", 1),
        ("(?>a)", "atomic group", 1),
        ("(?i)a", "inline flags", 1),
        ("(?(1)a|b)", "conditional", 1),
        ("\\bword\\b", "word boundary '\\b'", 1),
        ("a\\B", "word boundary '\\B'", 2),
        ("\\Ga", "anchor '\\G'", 1),
        ("\\p{L}", "Unicode property escape '\\p'", 1),
        ("a*+", "possessive quantifier '*+'", 2),
        ("a{2}+", "possessive quantifier '{2}+'", 2),
        ("a**", "multiple repeat", 3),
        ("a{2}{3}", "multiple repeat", 5),
        ("*a", "nothing to repeat", 1),
        ("a|+", "nothing to repeat", 3),
        ("{2}", "nothing to repeat", 1),
        ("^*", "cannot be repeated", 2),
        ("a{3,2}", "minimum is larger than the maximum", 2),
        ("a{99999999999}", "too large", 2),
        ("a^b", "anchor '^' is only supported at the start", 2),
        ("a$b", "anchor '$' is only supported at the end", 2),
        ("(^a)*", "anchor '^' is only supported at the start", 2),
        ("a\\Ab", "anchor '\\A' is only supported at the start", 2),
        ("a)", "unmatched ')'", 2),
        ("(a", "missing ')'", 1),
        ("ab[cd", "unterminated character class", 3),
        ("[z-a]", "the start is after the end", 4),
        ("[\\d-z]", "bad character range", 2),
        ("a\\", "lone backslash", 2),
        ("\\q", "unknown escape '\\q'", 1),
        ("[\\A]", "unknown escape '\\A' in a character class", 2),
        ("\\x4", "expected 2 hex digits", 1),
        ("\\u12", "expected 4 hex digits", 1),
        ("\\u{}", "1 to 6 hex digits", 1),
        ("\\u{110000}", "beyond U+10FFFF", 1),
        ("\\N{NO SUCH CHARACTER}", "unknown character name", 1),
        ("\\c1", "expected a letter", 1),
        ("(?P<1>a)", "invalid group name", 1),
        ("(?#abc", "unterminated comment", 1),
    ],
)
def test_errors(pattern, message, column):
    with pytest.raises(GrammarError) as info:
        parse_regex(pattern)
    assert message in str(info.value)
    assert (info.value.line, info.value.column) == (1, column), str(info.value)


def test_error_excerpt():
    with pytest.raises(GrammarError) as info:
        parse_regex("ab(?=c)")
    assert str(info.value) == "lookahead '(?=' is not supported at line 1, column 3:\n  ab(?=c)\n    ^"


def test_nesting_limit():
    assert parse_regex("(" * 150 + "a" + ")" * 150) == L(b"a")
    with pytest.raises(GrammarError, match="nested more than"):
        parse_regex("(" * 300 + "a" + ")" * 300)


def test_non_string_input():
    with pytest.raises(TypeError):
        parse_regex(b"a")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- language vs Python's re


@pytest.mark.parametrize(
    "pattern, accepted, rejected",
    [
        (".", ["a", "é", "😀", "\r", "\x00"], ["\n", "", "ab"]),
        (
            "\\s",
            [" ", "\t", "\n", "\v", "\f", "\r", "\u00a0", "\u2003", "\u3000", "\ufeff", "\u2028"],
            ["a", "\x1c", "\u0085", "\u180e"],
        ),
        ("\\S", ["a", "\x1c", "\u0085", "\u180e"], [" ", "\u00a0", "\u1680", "\u202f", "\u205f"]),
        ("\\w+", ["a_Z9"], ["é", "a-b"]),
        ("\\W", ["é", "-"], ["a", "_"]),
        ("[^\\W\\d]", ["a", "_"], ["1", "é"]),
        ("-?\\d+(\\.\\d+)?", ["-1.5", "0", "12"], ["1.", ".5", "--1"]),
        ("[\\u{1F600}-\\u{1F64F}]+", ["😀🙏"], ["a"]),
    ],
)
def test_language_examples(pattern, accepted, rejected):
    m = matcher(pattern)
    for s in accepted:
        assert m.matches(s), s
    for s in rejected:
        assert not m.matches(s), s


@st.composite
def regexes(draw, depth=0):
    """Random patterns over a small alphabet, rendered as text (Python-compatible)."""
    atoms = [
        "a",
        "b",
        "é",
        "-",
        "\\.",
        "\\*",
        ".",
        "\\d",
        "\\w",
        "\\s",
        "\\D",
        "\\W",
        "\\S",
        "[ab]",
        "[^a]",
        "[a-c]",
        "[\\d_]",
        "[^\\s]",
        "[-a]",
        "[]a]",
        "\\x61",
        "\\u00e9",
        "[^\\W\\d]",
    ]
    kind = "atom"
    if depth >= 2:
        node = draw(st.sampled_from(atoms))
    else:
        kind = draw(st.sampled_from(["atom", "atom", "atom", "seq", "alt", "group"]))
        if kind == "atom":
            node = draw(st.sampled_from(atoms))
        elif kind == "seq":
            node = "".join(draw(st.lists(regexes(depth + 1), min_size=2, max_size=3)))
        elif kind == "alt":
            node = "(?:" + "|".join(draw(st.lists(regexes(depth + 1), min_size=2, max_size=3))) + ")"
        else:
            opener = draw(st.sampled_from(["(", "(?:", "(?P<NAME>", "(?<NAME>"]))
            node = opener + draw(regexes(depth + 1)) + ")"
    quant = draw(
        st.sampled_from(
            ["", "", "", "*", "+", "?", "{2}", "{1,}", "{0,2}", "{,1}", "*?", "+?", "??", "{1,2}?"]
        )
    )
    if quant and kind == "seq":
        node = "(?:" + node + ")"
    return node + quant


def _name_groups(pattern: str) -> str:
    count = iter(range(1000))
    return re.sub("NAME", lambda _: f"g{next(count)}", pattern)


ALPHABET = ["a", "b", "c", "é", "-", ".", "*", "1", "_", " ", "\n", "\t"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    regexes(),
    st.sampled_from(["", "^", "\\A"]),
    st.sampled_from(["", "$", "\\Z"]),
    st.randoms(use_true_random=False),
)
def test_same_language_as_python_re(body, start, end, rng):
    pattern = start + _name_groups(body) + end
    compiled = re.compile(pattern.replace("(?<g", "(?P<g"), re.ASCII)  # Python spells named groups (?P<..>)
    m = matcher(pattern)
    for _ in range(25):
        s = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6)))
        assert m.matches(s) == (compiled.fullmatch(s) is not None), (pattern, s)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["[ab]", "ab", "a|b", "(a|bc)"]),
    st.integers(0, 3),
    st.one_of(st.none(), st.integers(0, 4)),
)
def test_counted_repeats_match_python_re(item, lo, hi):
    if hi is not None and hi < lo:
        lo, hi = hi, lo
    pattern = f"(?:{item}){{{lo},{'' if hi is None else hi}}}"
    compiled = re.compile(pattern)
    m = matcher(pattern)
    rng = random.Random(pattern)
    for _ in range(40):
        s = "".join(rng.choice("abc") for _ in range(rng.randint(0, 9)))
        assert m.matches(s) == (compiled.fullmatch(s) is not None), (pattern, s)


# --------------------------------------------------------------------------- against xgrammar


@pytest.mark.parametrize(
    "pattern",
    [
        "-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?",
        "[A-Za-z_]\\w*",
        "(ab|c){2,3}",
        "\\s*\\S+\\s*",
        "[^\\d\\s]+",
        "^(a|b)*c?$",
        "\\x41[\\u00e9-\\u00ff]",
    ],
)
def test_same_language_as_xgrammar(pattern):
    """xgrammar's regex converter agrees (patterns without '.', whose meaning differs:
    xgrammar's '.' also matches '\\n')."""
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    theirs = xgr.Grammar.from_regex(pattern)
    ours = matcher(pattern)
    rng = random.Random(pattern)
    alphabet = ["a", "b", "c", "A", "_", "1", "2", ".", "e", "-", "+", " ", "\n", "\u00a0", "é", "ÿ"]
    for _ in range(200):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
        assert ours.matches(s) == _is_grammar_accept_string(theirs, s), (pattern, s)


def test_space_shorthands_match_xgrammar_on_every_bmp_code_point():
    """``\\s`` / ``\\S`` are ECMAScript's, as in xgrammar 0.2.9: compared over the BMP."""
    xgr = pytest.importorskip("xgrammar")
    testing = pytest.importorskip("xgrammar.testing")
    ours = Grammar.from_regex(r"[\s]")
    theirs = xgr.Grammar.from_regex(r"[\s]")
    # Every code point that is space in either, plus a sample of the rest of the BMP.
    candidates = [cp for cp in range(0x3100) if not 0xD800 <= cp <= 0xDFFF] + [0xFEFF, 0xFFFD, 0x180E]
    differ = [
        hex(cp)
        for cp in candidates
        if ours.accepts(chr(cp)) != testing._is_grammar_accept_string(theirs, chr(cp))
    ]
    assert differ == []
