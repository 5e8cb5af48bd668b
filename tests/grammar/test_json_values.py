"""Behaviour tests for agentgrammar/grammar/json_values/, run through the real engine.

Each expression is compiled as the root of a grammar over a byte vocabulary and whole JSON
texts are fed with ``accept_string``; acceptance is compared with Python's own notion of the
constraint (exact ``Fraction`` comparison, ``len``, ``re.search``, ``ipaddress``, ``uuid``,
``datetime``, ``rfc3339_validator``, the JSON-Schema-Test-Suite's format cases).
"""

from __future__ import annotations

import datetime
import ipaddress
import itertools
import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Optional, Union

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary
from agentgrammar.errors import GrammarError
from agentgrammar.grammar.char_dfa import CharDFA
from agentgrammar.grammar.ir import Expr, Literal, Repeat, Rule, Seq
from agentgrammar.grammar.json_values import (
    ANY_NUMBER,
    JSON_STRING_CHAR,
    JSON_STRING_CODE_POINT,
    SUPPORTED_FORMATS,
    UNSUPPORTED_SPEC_FORMATS,
    format_string,
    integer_expr,
    json_char_of,
    number_expr,
    pattern_string,
    string_expr,
)
from agentgrammar.grammar.json_values.patterns import pattern_chars
from agentgrammar.grammar.regex import parse_regex

VOCAB = Vocabulary([bytes([b]) for b in range(256)] + [b"</s>"], stop_token_ids=[256])
COMPILER = Compiler(VOCAB)
FAST = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


_COMPILED = {}  # id(expr) -> (expr, compiled); by identity: hashing a large IR tree is slow


def _compiled(expr: Expr):  # type: ignore[no-untyped-def]
    hit = _COMPILED.get(id(expr))
    if hit is None or hit[0] is not expr:
        hit = _COMPILED[id(expr)] = (expr, COMPILER.compile(Grammar.from_rules([Rule("root", expr)], "root")))
    return hit[1]


def accepts(expr: Expr, text: Union[str, bytes]) -> bool:
    """True iff ``text`` is a complete sentence of ``expr``."""
    m = Matcher(_compiled(expr))
    return m.accept_string(text) and m.is_completed()


def dumps_both(s: str):  # type: ignore[no-untyped-def]
    return {json.dumps(s), json.dumps(s, ensure_ascii=False)}


# --------------------------------------------------------------------------- string characters

_BUILTIN_ANY = Grammar.builtin_json(any_value=True)
_STRING = Seq((Literal(b'"'), Repeat(JSON_STRING_CHAR, 0, None), Literal(b'"')))
_PIECES = ["a", "é", "😀", '\\"', "\\\\", "\\/", "\\n", "\\t", "\\b", "\\u00e9", "\\uD83D", "\\uDe00",
           "\\x", "\\u12", "\\U0041", '"', "\n", "\x1f", "\x7f", "\\"]  # fmt: skip


@FAST
@given(st.lists(st.sampled_from(_PIECES), max_size=6))
def test_string_char_matches_the_builtin_json_string(pieces):
    text = '"' + "".join(pieces) + '"'
    m = Matcher(COMPILER.compile(_BUILTIN_ANY))
    expected = m.accept_string(text) and m.is_completed()
    assert accepts(_STRING, text) == expected


def test_string_char_rejects_raw_surrogates_and_controls():
    assert not accepts(_STRING, b'"\xed\xa0\x80"')  # U+D800 as (invalid) UTF-8
    assert not accepts(_STRING, '"\x00"')
    assert not accepts(_STRING, '"\\ud800"')  # no Unicode text (xgrammar accepts it; we differ)
    assert accepts(_STRING, '"\U0010ffff\x7f"')
    one = Seq((Literal(b'"'), JSON_STRING_CODE_POINT, Literal(b'"')))
    assert accepts(one, '"\\ud83d\\ude00"') and accepts(one, '"\\uD83D\\uDE00"')
    assert not accepts(one, '"\\ud800"') and not accepts(one, '"\\ude00\\ud83d"')


# --------------------------------------------------------------------------- string lengths


@FAST
@given(
    st.text(max_size=12),
    st.integers(0, 8),
    st.one_of(st.none(), st.integers(0, 10)),
)
def test_string_length_bounds(s, lo, extra):
    hi = None if extra is None else lo + extra
    expr = string_expr(lo, hi)
    expected = lo <= len(s) and (hi is None or len(s) <= hi)
    for text in dumps_both(s):
        assert accepts(expr, text) == expected, (text, lo, hi)


def test_string_length_escapes_count_as_one():
    expr = string_expr(2, 2)
    assert accepts(expr, '"\\n\\u00e9"')
    assert accepts(expr, json.dumps("😀x"))  # "\ud83d\ude00x": a pair is one code point
    assert not accepts(expr, json.dumps("😀"))
    assert not accepts(expr, '"\\ud800\\ud800"')  # lone surrogates are not counted
    assert not accepts(string_expr(), '"\\ud800"')  # nor where nothing is counted


def test_string_large_bounds_are_nested_not_unrolled():
    expr = string_expr(300, 10**6)
    assert not accepts(expr, json.dumps("a" * 299))
    assert accepts(expr, json.dumps("a" * 300))
    assert accepts(expr, json.dumps("é" * 5000))
    exact = string_expr(1000, 1000)
    assert accepts(exact, json.dumps("x" * 1000)) and not accepts(exact, json.dumps("x" * 1001))
    assert not accepts(string_expr(0, 513), json.dumps("x" * 514))
    assert accepts(string_expr(0, 513), json.dumps("x" * 513))


def _escapes(cp: int) -> list:
    """Every ``\\uXXXX`` spelling of ``cp`` in lower and upper case (a pair past U+FFFF)."""
    units = [cp] if cp < 0x10000 else [0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)]
    return ["".join(f"\\u{u:04x}" for u in units), "".join(f"\\u{u:04X}" for u in units)]


_CODE_POINTS = st.one_of(
    st.integers(0, 0x7F),
    st.sampled_from([0x7FF, 0x800, 0xD7FF, 0xD800, 0xDFFF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]),
    st.integers(0, 0x10FFFF),
)


@FAST
@given(
    st.lists(st.tuples(_CODE_POINTS, st.integers(0, 0x400)), min_size=1, max_size=5),
    st.lists(_CODE_POINTS, max_size=8),
)
def test_json_char_of_spells_exactly_the_code_points_of_its_ranges(spans, probes):
    ranges = [(lo, min(lo + n, 0x10FFFF)) for lo, n in spans]
    expr = json_char_of(ranges)
    inside = [cp for lo, hi in ranges for cp in (lo, hi, (lo + hi) // 2) if not 0xD800 <= cp <= 0xDFFF]
    if expr is None:  # only surrogates: nothing has a spelling
        assert not inside
        return
    for cp in inside + probes:
        expected = any(lo <= cp <= hi for lo, hi in ranges) and not 0xD800 <= cp <= 0xDFFF
        spellings = _escapes(cp)
        if not 0xD800 <= cp <= 0xDFFF:
            spellings += [json.dumps(chr(cp))[1:-1], json.dumps(chr(cp), ensure_ascii=False)[1:-1]]
        for text in spellings:
            assert accepts(expr, text) == expected, (ranges, hex(cp), text)


def test_string_bad_bounds():
    with pytest.raises(GrammarError):
        string_expr(3, 2)
    with pytest.raises(GrammarError):
        string_expr(-1)


# --------------------------------------------------------------------------- integers


def _in_range(v: Fraction, lo, hi, xlo, xhi) -> bool:  # type: ignore[no-untyped-def]
    def f(x):  # type: ignore[no-untyped-def]
        return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)

    return (
        (lo is None or v >= f(lo))
        and (hi is None or v <= f(hi))
        and (xlo is None or v > f(xlo))
        and (xhi is None or v < f(xhi))
    )


_BOUND = st.one_of(
    st.none(),
    st.integers(-2000, 2000),
    st.integers(-(10**25), 10**25),
    st.sampled_from([0, 0.0, 1.5, -1.5, 0.25, 99.9, 10**30]),
)


@FAST
@given(_BOUND, _BOUND, _BOUND, _BOUND, st.lists(st.integers(-3000, 3000), max_size=8))
def test_integer_ranges(lo, hi, xlo, xhi, samples):
    try:
        expr = integer_expr(lo, hi, xlo, xhi)
    except GrammarError:
        # empty: no integer near the bounds is in the range
        cands = [int(b) + d for b in (lo, hi, xlo, xhi, 0) if b is not None for d in (-1, 0, 1)]
        assert not any(_in_range(Fraction(c), lo, hi, xlo, xhi) for c in cands)
        return
    near = [int(b) + d for b in (lo, hi, xlo, xhi) if b is not None for d in (-2, -1, 0, 1, 2)]
    for v in samples + near + [0]:
        assert accepts(expr, json.dumps(v)) == _in_range(Fraction(v), lo, hi, xlo, xhi), v
    assert not accepts(expr, "-0")  # never generated, as in xgrammar
    for text in ("00", "01", "-01", "1.0", "1e2", "+1", "-", ""):
        assert not accepts(expr, text)


def test_integer_edges():
    e = integer_expr(minimum=1, maximum=10**30)
    assert accepts(e, "1") and accepts(e, str(10**30)) and not accepts(e, str(10**30 + 1))
    assert accepts(e, "9" * 30) and not accepts(e, "0") and not accepts(e, "1" + "0" * 31)
    e = integer_expr(minimum=-(10**30))
    assert accepts(e, "-" + "9" * 30) and accepts(e, "7" * 80) and not accepts(e, "-" + "1" * 31)
    e = integer_expr(minimum=1.5, exclusive_maximum=3.0)
    assert [accepts(e, s) for s in ("1", "2", "3")] == [False, True, False]
    assert not accepts(integer_expr(), "-0") and accepts(integer_expr(), "123456789012345678901234567890")
    assert not accepts(integer_expr(minimum=1), "-0")
    with pytest.raises(GrammarError, match="no integer"):
        integer_expr(minimum=1.2, maximum=1.8)
    with pytest.raises(GrammarError):
        integer_expr(minimum=True)
    with pytest.raises(GrammarError):
        integer_expr(minimum=float("inf"))
    assert accepts(integer_expr(minimum=float("-inf")), "-5")


# --------------------------------------------------------------------------- numbers

_NUM_BOUND = st.one_of(
    st.none(),
    st.integers(-100, 100),
    st.decimals(-100, 100, places=2).map(lambda d: float(d)),
    st.sampled_from([0, 0.5, -0.5, 1e-3, 12.75, 1e20]),
)
_SPELLING = st.from_regex(r"\A-?(0|[1-9][0-9]{0,3})(\.[0-9]{1,4})?([eE][+-]?[0-9]{1,2})?\Z")


@FAST
@given(_NUM_BOUND, _NUM_BOUND, _NUM_BOUND, _NUM_BOUND, st.lists(_SPELLING, max_size=10),
       st.lists(st.floats(-200, 200), max_size=5))  # fmt: skip
def test_number_ranges_are_sound(lo, hi, xlo, xhi, spellings, floats):
    try:
        expr = number_expr(lo, hi, xlo, xhi)
    except GrammarError:
        los = [Fraction(repr(x)) if isinstance(x, float) else Fraction(x) for x in (lo, xlo) if x is not None]
        his = [Fraction(repr(x)) if isinstance(x, float) else Fraction(x) for x in (hi, xhi) if x is not None]
        assert los and his
        assert not _in_range((max(los) + min(his)) / 2, lo, hi, xlo, xhi)
        assert not _in_range(max(los), lo, hi, xlo, xhi)
        return
    bounds = [b for b in (lo, hi, xlo, xhi) if b is not None]
    texts = spellings + [json.dumps(f) for f in floats] + [json.dumps(b) for b in bounds]
    texts += [json.dumps(b) + "1" for b in bounds if isinstance(b, float)]  # 1.51 next to 1.5
    for text in texts:
        ok = _in_range(Fraction(text), lo, hi, xlo, xhi)
        got = accepts(expr, text)
        if got:
            assert ok, text  # never outside the range
        elif "e" not in text.lower() or not bounds:
            assert not ok, text  # exact without exponent


@pytest.mark.parametrize(
    "kw, check",
    [
        ({}, lambda v: True),
        ({"minimum": 0}, lambda v: v >= 0),
        ({"exclusive_minimum": 0}, lambda v: v > 0),
        ({"maximum": 0}, lambda v: v <= 0),
        ({"exclusive_maximum": 0.0}, lambda v: v < 0),
        ({"minimum": 0, "maximum": 0}, lambda v: v == 0),
    ],
)
def test_number_bounds_at_zero_are_exact(kw, check):
    expr = number_expr(**kw)
    texts = ["0", "-0", "0.0", "-0.000", "0e5", "-0E-3", "1", "-1", "0.001", "-0.001", "1e-9", "-1e-9",
             "2.5E+10", "-2.5e10", "0.0e0", "123.456e-2", "-0.5e0"]  # fmt: skip
    for text in texts:
        assert accepts(expr, text) == check(Fraction(text)), text
    for text in ("01", "1.", ".5", "-", "1e", "+1", "1e+", "--1", "0x1", "NaN", "Infinity"):
        assert not accepts(expr, text), text


def test_number_exponents_and_fractions():
    e = number_expr(minimum=1.5)
    assert accepts(e, "1.5") and accepts(e, "1.50") and accepts(e, "1.5e3") and accepts(e, "2E+0")
    assert not accepts(e, "1.4999") and not accepts(e, "1.5e-1") and not accepts(e, "15e-1")
    e = number_expr(exclusive_minimum=-2.25, maximum=10)
    assert accepts(e, "-2.2499") and not accepts(e, "-2.25") and not accepts(e, "-2.250")
    assert accepts(e, "10") and accepts(e, "10.000") and not accepts(e, "10.0001")
    assert accepts(e, "5e-3") and accepts(e, "-2e-1") and accepts(e, "9.9e0")
    assert not accepts(e, "1e1") or Fraction("1e1") <= 10  # sound either way
    assert not accepts(e, "2e1")
    e = number_expr(minimum=0.1, maximum=0.2)
    assert accepts(e, "0.1") and accepts(e, "0.15") and accepts(e, "0.2000") and not accepts(e, "0.2001")
    assert not accepts(e, "0.09") and not accepts(e, "0")
    e = number_expr(minimum=5, maximum=5)
    assert accepts(e, "5") and accepts(e, "5.00") and accepts(e, "5e0") and not accepts(e, "5.01")
    assert accepts(ANY_NUMBER, "-0.0e-0") and not accepts(ANY_NUMBER, "00")
    big = number_expr(minimum=-(10**20), exclusive_maximum=1e20)
    assert accepts(big, "-100000000000000000000") and not accepts(big, "100000000000000000000")
    assert accepts(big, "99999999999999999999.999")
    with pytest.raises(GrammarError, match="no number"):
        number_expr(minimum=2, exclusive_maximum=2)
    with pytest.raises(GrammarError):
        number_expr(minimum=float("nan"))


# --------------------------------------------------------------------------- patterns

_ALPHABET = [
    "a",
    "b",
    '"',
    "\\",
    "\n",
    "\r",
    "\u2028",
    "\xa0",
    "\t",
    "\ufeff",
    "\x1c",
    "é",
    "٣",
    "😀",
    "-",
    " ",
]
# (atom, the same atom for Python's re with ECMA-262's meaning: pattern_string follows ECMA-262)
_ATOMS = [(a, a) for a in ["a", "b", '"', r"\\", r"\n", "é", "😀", "[ab]", "[^a]", '[a"\\\\]', "-"]]
# \d and \w are ASCII; \s is ECMA white space and line terminators (U+FEFF in, U+001C out)
_ECMA_SPACE = "\t\n\v\f\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_ATOMS += [(r"\d", "[0-9]"), (r"\D", "[^0-9]"), (r"[^\d]", "[^0-9]"), (r"\w", "[A-Za-z0-9_]"),
           (r"\W", "[^A-Za-z0-9_]"), (r"\s", f"[{_ECMA_SPACE}]"), (r"\S", f"[^{_ECMA_SPACE}]"),
           (r"[^\s]", f"[^{_ECMA_SPACE}]"), (r"[\S]", f"[^{_ECMA_SPACE}]")]  # fmt: skip
_ATOMS += [(".", "[^\n\r\u2028\u2029]")]


@st.composite
def _regexes(draw):  # type: ignore[no-untyped-def]
    alts, python_alts = [], []
    for _ in range(draw(st.integers(1, 2))):
        parts, python_parts = [], []
        for atom, python_atom in draw(st.lists(st.sampled_from(_ATOMS), min_size=1, max_size=3)):
            q = draw(st.sampled_from(["", "", "*", "+", "?", "{1,2}"]))
            parts.append(atom + q)
            python_parts.append(python_atom + q)
        s, ps = "".join(parts), "".join(python_parts)
        if draw(st.booleans()):
            s, ps = "^" + s, "^" + ps
        # ECMA-262 "$" (no multiline flag) is the end of input; Python's "$" also matches
        # before a final newline, so the reference uses "\Z".
        end = draw(st.booleans())
        alts.append(s + "$" if end else s)
        python_alts.append(ps + "\\Z" if end else ps)
    return "|".join(alts), "|".join(python_alts)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(_regexes(), st.lists(st.lists(st.sampled_from(_ALPHABET), max_size=5).map("".join), max_size=8))
def test_pattern_search_semantics(patterns, strings):
    pattern, python_pattern = patterns
    expr = pattern_string(pattern)
    rx = re.compile(python_pattern)
    for s in strings:
        expected = rx.search(s) is not None
        for text in dumps_both(s):
            assert accepts(expr, text) == expected, (pattern, s, text)


def test_pattern_spellings_and_anchors():
    e = pattern_string("^a\\\\b$")
    assert accepts(e, json.dumps("a\\b")) and accepts(e, '"\\u0061\\\\b"') and accepts(e, '"a\\u005Cb"')
    assert not accepts(e, json.dumps("xa\\b"))
    e = pattern_string("é")  # ensure_ascii spelling and raw UTF-8 both work
    assert accepts(e, '"x\\u00e9"') and accepts(e, '"xé"') and accepts(e, '"\\u00C9\\u00E9"')
    e = pattern_string("^[😀-😂]$")
    assert accepts(e, json.dumps("😁")) and accepts(e, json.dumps("😁", ensure_ascii=False))
    assert not accepts(e, json.dumps("😃"))
    e = pattern_string('^"')
    assert accepts(e, '"\\"x"') and not accepts(e, '"x\\""')
    e = pattern_string("x$")  # ECMA: "$" is the very end (Python's also matches before a final "\n")
    assert accepts(e, '"\\ny\\u0078"') and not accepts(e, '"x\\n"')
    assert accepts(pattern_string(""), '""') and accepts(pattern_string("^$"), '""')
    assert not accepts(pattern_string("^$"), '" "')
    assert accepts(pattern_string("a\\$"), '"xa$y"')  # an escaped $ is a literal
    assert accepts(pattern_string("[|]"), '"|"') and not accepts(pattern_string("[|]"), '"a"')


@pytest.mark.parametrize(
    "pattern",
    [
        "[ab]{3}",
        "[ab]{2,4}",
        "[^a]{2}",
        "[0-9]",
        "[ab]{3}$",
        "[ab]{2,}$",
        "[ab]{3}|c",
        "x|[ab]{2}",
        "^c|[ab]{2}$",
    ],
)
def test_pattern_with_a_run_found_anywhere_agrees_with_re(pattern: str) -> None:
    """A run of one class found anywhere is written as shorter runs, then the run, then any
    text (or the class to the end): the strings of the pattern padded with any text."""
    expr = pattern_string(pattern)
    rx = re.compile(pattern.replace("$", "\\Z"))
    for n in range(6):
        for t in itertools.product("abc0", repeat=n):
            s = "".join(t)
            assert accepts(expr, json.dumps(s)) == (rx.search(s) is not None), (pattern, s)


def test_a_long_run_found_anywhere_is_not_padded_with_any_text() -> None:
    padded = CharDFA.from_expr(parse_regex(r"[\s\S]*(?:[a-z]{40})[\s\S]*"))
    chars = pattern_chars("[a-z]{40}")
    assert chars != parse_regex(r"[\s\S]*(?:[a-z]{40})[\s\S]*")
    runs = CharDFA.from_expr(chars)
    assert runs.minus(padded).is_empty() and padded.minus(runs).is_empty()


@pytest.mark.parametrize("bad", ["(?=a)", "a\\1", "(a", "a)", "(^a)", "a^b", "(a$)b", "[a"])
def test_pattern_errors(bad):
    with pytest.raises(GrammarError):
        pattern_string(bad)


# --------------------------------------------------------------------------- formats


@pytest.mark.parametrize(
    "pattern, portable",
    [
        ("a.b", "aDb"),
        ("[.]", "[.]"),
        ("\\..", "\\.D"),
        ("[]..]", "[]..]"),  # a first "]" is a member
        ("[^].]x.", "[^].]xD"),
        ("[a\\].]", "[a\\].]"),  # an escaped "]" does not close the class
        ("(?#a.b).", "(?#a.b)D"),
        ("(?#.", "(?#."),
        ("[.", "[."),
        (".\\", "D\\"),
        ("", ""),
    ],
)
def test_portable_rewrites_only_a_dot_outside_classes_escapes_and_comments(pattern, portable):
    from agentgrammar.grammar.json_values.patterns import _ECMA_DOT, _portable

    assert _portable(pattern) == portable.replace("D", _ECMA_DOT)


def test_unsupported_formats_are_none():
    for name in ("regex", "idn-hostname", "nonsense"):
        assert format_string(name) is None
    assert set(UNSUPPORTED_SPEC_FORMATS) >= {"regex", "idn-hostname"}
    assert set(SUPPORTED_FORMATS) >= {"date-time", "date", "time", "duration", "email", "hostname", "ipv4",
                                      "ipv6", "uuid", "uri", "uri-reference", "json-pointer", "uri-template"}  # fmt: skip


@FAST
@given(st.lists(st.integers(0, 300), min_size=4, max_size=4), st.sampled_from(["", "0", "00", " ", "."]))
def test_ipv4(octets, junk):
    text = ".".join(str(o) for o in octets)
    for s in (text, text + junk, junk + text):
        try:
            valid = bool(ipaddress.IPv4Address(s))
        except ValueError:
            valid = False
        assert accepts(format_string("ipv4"), json.dumps(s)) == valid, s


@FAST
@given(st.integers(0, 2**128 - 1), st.sampled_from(["compressed", "exploded", "mapped", "drop", "extra"]))
def test_ipv6(n, how):
    addr = ipaddress.IPv6Address(n)
    s = {"compressed": addr.compressed, "exploded": addr.exploded}.get(how, addr.compressed)
    if how == "mapped":
        s = "::ffff:" + str(ipaddress.IPv4Address(n % 2**32))
    elif how == "drop":
        s = s[:-1]
    elif how == "extra":
        s = s + ":1"
    try:
        ipaddress.IPv6Address(s)
        valid = True
    except ValueError:
        valid = False
    assert accepts(format_string("ipv6"), json.dumps(s)) == valid, s


def test_ipv6_fixed():
    e = format_string("ipv6")
    for s in ("::", "::1", "1::", "1:2:3:4:5:6:7:8", "1::8", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8",
              "::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "fe80::1:2", "A:b::C"):  # fmt: skip
        assert accepts(e, json.dumps(s)), s
    for s in ("1:2:3:4:5:6:7:8:9", "1::2::3", ":1:2", "12345::", "::1.2.3", "1:2:3:4:5:6:7:1.2.3.4",
              "fe80::1%eth0", "", ":::"):  # fmt: skip
        assert not accepts(e, json.dumps(s)), s


@FAST
@given(st.uuids(), st.sampled_from(["", "upper", "nodash", "braces", "short"]))
def test_uuid(u, how):
    s = str(u)
    s = {"upper": s.upper(), "nodash": s.replace("-", ""), "braces": "{" + s + "}", "short": s[:-1]}.get(
        how, s
    )
    valid = how in ("", "upper")
    assert accepts(format_string("uuid"), json.dumps(s)) == valid


@FAST
@given(st.integers(0, 10000), st.integers(0, 13), st.integers(0, 32))
def test_date(y, mo, d):
    s = f"{y:04d}-{mo:02d}-{d:02d}"
    try:
        valid = bool(datetime.date.fromisoformat(s))
    except ValueError:
        valid = False
    assert accepts(format_string("date"), json.dumps(s)) == valid, s


@FAST
@given(st.integers(0, 25), st.integers(0, 61), st.integers(0, 61),
       st.sampled_from(["Z", "z", "+01:30", "-23:59", "+24:00", "", "+1:00", ".5Z", ".123456789-08:00"]))  # fmt: skip
def test_date_time(h, mi, sec, tz):
    from rfc3339_validator import validate_rfc3339

    s = f"2024-02-29T{h:02d}:{mi:02d}:{sec:02d}{tz}"
    assert accepts(format_string("date-time"), json.dumps(s)) == validate_rfc3339(s.upper()), s
    t = s[len("2024-02-29T") :]
    assert accepts(format_string("time"), json.dumps(t)) == validate_rfc3339("1970-01-01T" + t.upper()), t


def test_other_formats_fixed_cases():
    cases = {
        "duration": (["P1Y", "P1Y2M3DT4H5M6S", "PT1M", "P2W", "P1D", "PT36H", "P0D"],
                     ["P", "PT", "P1", "1Y", "P1H", "P1Y1W", "PT1D", "P1D2M", "P1.5D"]),
        "email": (["a@b.c", "first.last+tag@example.com", '"joe bloggs"@example.com', "x@[127.0.0.1]"],
                  ["a", "@x.com", "a@", "a..b@x.com", ".a@x.com", "a.@x.com", "a@-x.com", "a b@x.com"]),
        "hostname": (["localhost", "a-b.example.com", "xn-a.com", "a" * 63 + ".com", "1.2.3.4"],
                     ["", "-a.com", "a-.com", "a..com", "a_b.com", "a" * 64, "a.com.", "ab--c.com"]),
        "uri": (["http://example.com/a?b#c", "urn:isbn:0451450523", "mailto:a@b.c", "http://[::1]:80/",
                 "file:///etc/passwd", "x:", "http://a%20b@host"],
                ["//example.com", "/a/b", "http://ex ample.com", "1http://a", "http://a:8a/", "http://[::1/",
                 "\\\\WINDOWS\\share", "http://a/%zz"]),
        "uri-reference": (["//example.com", "/a/b", "a/b?c", "#frag", "", "http://x.y/z"],
                          ["\\\\WINDOWS", "a b", "#frag#x", "%x"]),
        "json-pointer": (["", "/", "/a/b", "/a~0b/c~1d", '/"x"/\\/é'], ["a", "/a~", "/~2", "#/a"]),
        "relative-json-pointer": (["0", "1/a", "2#", "10/a~1"], ["", "-1", "01", "/a", "0##"]),
    }  # fmt: skip
    for name, (good, bad) in cases.items():
        e = format_string(name)
        assert e is not None
        for s in good:
            assert accepts(e, json.dumps(s)) and accepts(e, json.dumps(s, ensure_ascii=False)), (name, s)
        for s in bad:
            assert not accepts(e, json.dumps(s)), (name, s)
    assert accepts(format_string("date"), '"2024-02-\\u00329"')  # any JSON spelling of the characters


_SUITE = Path(__file__).resolve().parents[3] / "shared" / "data" / "json-schema-test-suite" / "tests"
# Valid cases the formats deliberately reject (documented under-approximations).
_KNOWN_UNDER = re.compile(r"leap second|quoted string|xn--|punycode|Hangul|PVALID|MIDDLE DOT|KERAIA|GERESH"
                          r"|GERSHAYIM|Arabic-Indic|ZERO WIDTH", re.I)  # fmt: skip


@pytest.mark.skipif(not _SUITE.is_dir(), reason="JSON-Schema-Test-Suite not available")
@pytest.mark.parametrize("name", SUPPORTED_FORMATS)
def test_formats_against_the_json_schema_test_suite(name):
    path = _SUITE / "draft2020-12" / "optional" / "format" / f"{name}.json"
    if not path.exists():
        pytest.skip(f"no suite file for {name}")
    expr = format_string(name)
    assert expr is not None
    for group in json.loads(path.read_text(encoding="utf-8")):
        for case in group["tests"]:
            data = case["data"]
            if not isinstance(data, str):
                continue
            for text in dumps_both(data):
                got = accepts(expr, text)
                if case["valid"]:
                    ascii_only_iri = name.startswith("iri") and not data.isascii()  # a documented subset
                    assert got or ascii_only_iri or _KNOWN_UNDER.search(case["description"] + data), (
                        name,
                        data,
                    )
                else:
                    assert not got, (name, data, case["description"])


def test_formats_are_cached_and_compile():
    # (how long they take is measured by tools/bench/json_schema.py, not asserted here)
    for name in SUPPORTED_FORMATS:
        expr: Optional[Expr] = format_string(name)
        assert expr is not None and format_string(name) is expr  # cached
        compiled = COMPILER.compile(Grammar.from_rules([Rule("root", expr)], "root"))
        assert compiled.memory_size_bytes > 0, name


URI_TEMPLATES = [
    ("http://example.com/dictionary/{term:1}/{term}", True),
    ("http://example.com/dictionary/{term:1}/{term", False),
    ("dictionary/{term:1}/{term}", True),
    ("http://example.com/dictionary", True),
    ("{+path}/here{?q,lang}{#frag}", True),
    ("{var:3}{list*}{.dom}{/seg}{;p}{&x}", True),
    ("{a.b}{%41b}", True),
    ("{}", False),
    ("{var:0}", False),
    ("{var:10000}", False),
    ("{a..b}", False),
    ("a b", False),
    ("a{b}c}", False),
    ("caf\u00e9/{x}", True),
    ("100%25/{x}", True),
    ("100%/{x}", False),
    ("a'b", True),
    ("x\U0001f600{y}", True),
]


@pytest.mark.parametrize("text, valid", URI_TEMPLATES)
def test_uri_template_follows_rfc_6570(text: str, valid: bool) -> None:
    expr = format_string("uri-template")
    assert expr is not None
    assert accepts(expr, json.dumps(text)) == valid
    assert accepts(expr, json.dumps(text, ensure_ascii=False)) == valid


def test_uri_template_agrees_with_xgrammar() -> None:
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    theirs = xgr.Grammar.from_json_schema(json.dumps({"type": "string", "format": "uri-template"}))
    ours = format_string("uri-template")
    assert ours is not None
    compared = 0
    for text, _ in URI_TEMPLATES:
        if not text.isascii() or "'" in text:
            continue  # non-ASCII and apostrophe literals: xgrammar refuses them (docs/limits.md)
        quoted = json.dumps(text)
        assert accepts(ours, quoted) == _is_grammar_accept_string(theirs, quoted), text
        compared += 1
    assert compared >= 10


@pytest.mark.parametrize(
    "pattern, value, expected",
    [
        (r"^\d$", "٣", False),
        (r"^\D$", "٣", True),
        (r"^[^\d]$", "٣", True),
        (r"^\w$", "é", False),
        (r"^\W$", "é", True),
        (r"^\s$", "\ufeff", True),
        (r"^\s$", "\u0085", False),
        (r"^\S$", "\u0085", True),
        (r"^\S$", "\ufeff", False),
        (r"^[^\s,]$", "\x1c", True),
    ],
)
def test_pattern_class_escapes_are_ecmascripts(pattern: str, value: str, expected: bool) -> None:
    # JSON Schema patterns are ECMA-262 regexes (the test suite's optional ecmascript-regex
    # cases): ASCII \d and \w, and ECMA white space, where Python's re is Unicode-wide
    expr = pattern_string(pattern)
    for text in dumps_both(value):
        assert accepts(expr, text) == expected, text
