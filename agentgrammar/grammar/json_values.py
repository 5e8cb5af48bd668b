"""IR building blocks for JSON values: strings, integers, numbers, patterns and formats.

These are the leaves the JSON Schema front-end assembles. Every function returns one IR
expression (``agentgrammar.grammar.ir``) over the *JSON text* of the value, quotes included
for strings. The guarantee throughout is **soundness**: an expression never accepts JSON text
whose value violates the constraint. Where exactness is not achievable the expression
*under*-approximates (rejects some exotic but valid spellings), and the docstring says which.

Strings: a JSON string's characters are raw UTF-8 characters other than ``"``, ``\\`` and
U+0000..U+001F, or the escapes ``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``. Raw surrogate code
points (U+D800..U+DFFF, which are not valid UTF-8) are never accepted. Lengths and patterns are
about the *decoded* string, counted in code points: an escape is one code point, and a
surrogate-pair escape ``\\ud83d\\ude00`` is one code point. Lone surrogate escapes
(``"\\ud800"``) are never accepted: they decode to no Unicode text (xgrammar's JSON grammar
accepts them; this is a deliberate difference).

Numbers use exact decimal semantics (``0.1`` is one tenth, not a binary float); a float
bound is taken as the shortest decimal that round-trips (``repr``), i.e. the literal written
in the schema. A validator that parses instances as binary floats can disagree on numbers
that round (``1e-400`` parses as ``0.0``; ``1.00000000000000000001`` as ``1.0``).

Example:
    >>> from agentgrammar import Grammar
    >>> from agentgrammar.grammar.ir import Rule
    >>> g = Grammar.from_rules([Rule("root", integer_expr(minimum=-3, maximum=12))])
    >>> [g.accepts(s) for s in (b"-3", b"12", b"13", b"012", b"0", b"-0")]
    [True, True, False, False, True, False]
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy

from ..errors import GrammarError
from .ir import (
    EMPTY,
    MAX_CODE_POINT,
    ByteClass,
    CharClass,
    Choice,
    Expr,
    Literal,
    Repeat,
    RuleRef,
    Seq,
    choice,
    seq,
)
from .regex import parse_regex
from .utf8 import complement_ranges, normalize_ranges

__all__ = [
    "ANY_NUMBER",
    "JSON_STRING_CHAR",
    "JSON_STRING_CODE_POINT",
    "SUPPORTED_FORMATS",
    "UNSUPPORTED_SPEC_FORMATS",
    "format_chars",
    "format_string",
    "integer_expr",
    "json_char_of",
    "number_expr",
    "pattern_chars",
    "pattern_string",
    "repeat",
    "string_expr",
]

Number = Union[int, float, Decimal, Fraction, str]
Ranges = List[Tuple[int, int]]

# --------------------------------------------------------------------------- small helpers

_QUOTE = Literal(b'"')
# The public builders are pure and return immutable IR, so results are shared (typed=True keeps
# 1, 1.0 and True apart).
_cache = functools.lru_cache(maxsize=4096, typed=True)
_BLOCK = 256  # larger counted repeats are nested in blocks: the engine unrolls up to 256 copies
# of bytes and counts beyond; counting single characters would make every token that spans two
# of them uncertain in the mask cache, so the engine counts whole blocks instead
_MAX_DIGITS = 400  # bounds with more decimal digits than this are refused


def _cc(*ranges: Tuple[int, int]) -> CharClass:
    return CharClass(tuple(normalize_ranges(ranges)))


_DIGIT = _cc((0x30, 0x39))
_NONZERO = _cc((0x31, 0x39))
_HEXDIG = _cc((0x30, 0x39), (0x41, 0x46), (0x61, 0x66))


def _opt(e: Expr) -> Expr:
    return Repeat(e, 0, 1)


def _repeat(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    """``item{lo,hi}`` with large bounds nested as blocks, so that the engine counts blocks, not items."""
    if hi is not None and hi < lo:
        raise GrammarError(f"invalid repetition {{{lo},{hi}}}")
    if lo <= _BLOCK and (hi is None or hi <= _BLOCK):
        if lo == 1 and hi == 1:
            return item
        return Repeat(item, lo, hi)
    if hi is None:  # item{lo} item*
        return seq([_exactly(item, lo), Repeat(item, 0, None)])
    if lo > 0:  # item{lo} item{0,hi-lo}
        return seq([_exactly(item, lo), _repeat(item, 0, hi - lo)])
    # item{0,hi}, hi = q*B + r: (B-blocks){0,q-1} item{0,B-1} | (B-blocks){q} item{0,r}
    q, r = divmod(hi, _BLOCK)
    block = Repeat(item, _BLOCK, _BLOCK)
    first = seq([_repeat(block, 0, q - 1), Repeat(item, 0, _BLOCK - 1)])
    second = seq([_exactly(block, q), Repeat(item, 0, r)])
    out = choice([first, second])
    assert out is not None
    return out


def repeat(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    """``item{lo,hi}``, large bounds nested in blocks (see ``_BLOCK``)."""
    return _repeat(item, lo, hi)


def _exactly(item: Expr, n: int) -> Expr:
    if n <= _BLOCK:
        return EMPTY if n == 0 else item if n == 1 else Repeat(item, n, n)
    q, r = divmod(n, _BLOCK)
    return seq([_exactly(Repeat(item, _BLOCK, _BLOCK), q), _exactly(item, r)])


# --------------------------------------------------------------------------- JSON string characters

_HEX_CHAR_RANGES = {  # digit value -> characters spelling it (both cases)
    v: ((0x30 + v, 0x30 + v),) if v < 10 else ((0x41 + v - 10, 0x41 + v - 10), (0x61 + v - 10, 0x61 + v - 10))
    for v in range(16)
}


def _hex_class(lo: int, hi: int) -> Expr:
    """One hex digit (either case) with value in [lo, hi]: a table of the 136 ranges, made at
    the first call (every ``\\uXXXX`` spelling of a pattern's classes asks for several)."""
    if not _HEX_CLASSES:
        _HEX_CLASSES.update(((a, b), _make_hex_class(a, b)) for a in range(16) for b in range(a, 16))
    return _HEX_CLASSES[lo, hi]


_HEX_CLASSES: Dict[Tuple[int, int], Expr] = {}


def _make_hex_class(lo: int, hi: int) -> Expr:
    if lo == 0 and hi == 15:
        return _HEXDIG
    if lo == hi and lo < 10:
        return Literal(bytes([0x30 + lo]))
    return _cc(*[r for v in range(lo, hi + 1) for r in _HEX_CHAR_RANGES[v]])


def _fixed_width(lo: int, hi: int, width: int, base: int) -> List[List[Tuple[int, int]]]:
    """Strings of exactly ``width`` base-``base`` digits (leading zeros allowed) with value in
    ``[lo, hi]``, as disjoint products of per-position digit ranges."""
    if width == 0:
        return [[]]
    p = base ** (width - 1)
    dlo, rlo = divmod(lo, p)
    dhi, rhi = divmod(hi, p)
    if dlo == dhi:
        return [[(dlo, dlo)] + t for t in _fixed_width(rlo, rhi, width - 1, base)]
    out: List[List[Tuple[int, int]]] = []
    start, end = dlo, dhi
    if rlo != 0:
        out += [[(dlo, dlo)] + t for t in _fixed_width(rlo, p - 1, width - 1, base)]
        start = dlo + 1
    tail: List[List[Tuple[int, int]]] = []
    if rhi != p - 1:
        tail = [[(dhi, dhi)] + t for t in _fixed_width(0, rhi, width - 1, base)]
        end = dhi - 1
    if start <= end:
        out.append([(start, end)] + [(0, base - 1)] * (width - 1))
    return out + tail


def _positions(pos: Sequence[Tuple[int, int]], cls) -> Expr:  # type: ignore[no-untyped-def]
    """Per-position digit ranges to IR, runs of equal positions as counted repeats."""
    items: List[Expr] = []
    i = 0
    while i < len(pos):
        j = i
        while j < len(pos) and pos[j] == pos[i]:
            j += 1
        items.append(_exactly(cls(*pos[i]), j - i))
        i = j
    return seq(items)


def _hex4(lo: int, hi: int) -> Expr:
    """Four hex digits (either case) with value in [lo, hi]."""
    out = choice([_positions(p, _hex_class) for p in _fixed_width(lo, hi, 4, 16)])
    assert out is not None
    return out


_SHORT_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x2F: b"\\/", 0x08: b"\\b", 0x0C: b"\\f", 0x0A: b"\\n",
                  0x0D: b"\\r", 0x09: b"\\t"}  # fmt: skip
_SURROGATES = (0xD800, 0xDFFF)
#: Code points that may appear raw (unescaped) in a JSON string.
_RAW_RANGES: Ranges = complement_ranges([(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C), _SURROGATES])


def _intersect(a: Sequence[Tuple[int, int]], b: Sequence[Tuple[int, int]]) -> Ranges:
    out: Ranges = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo, hi = max(lo1, lo2), min(hi1, hi2)
            if lo <= hi:
                out.append((lo, hi))
    return normalize_ranges(out)


def _unicode_escapes(ranges: Ranges) -> Optional[Expr]:
    """``\\uXXXX`` spellings (surrogate pairs for astral code points) of the code points in ranges
    (surrogate code points themselves are skipped)."""
    alts: List[Optional[Expr]] = []
    for lo, hi in _intersect(ranges, complement_ranges([_SURROGATES], 0xFFFF)):
        alts.append(seq([Literal(b"\\u"), _hex4(lo, hi)]))
    for lo, hi in _intersect(ranges, [(0x10000, MAX_CODE_POINT)]):
        hl, ll = 0xD800 + ((lo - 0x10000) >> 10), 0xDC00 + ((lo - 0x10000) & 0x3FF)
        hh, lh = 0xD800 + ((hi - 0x10000) >> 10), 0xDC00 + ((hi - 0x10000) & 0x3FF)

        def pair(h1: int, h2: int, l1: int, l2: int) -> Expr:
            return seq([Literal(b"\\u"), _hex4(h1, h2), Literal(b"\\u"), _hex4(l1, l2)])

        if hl == hh:
            alts.append(pair(hl, hl, ll, lh))
            continue
        alts.append(pair(hl, hl, ll, 0xDFFF))
        if hl + 1 <= hh - 1:
            alts.append(pair(hl + 1, hh - 1, 0xDC00, 0xDFFF))
        alts.append(pair(hh, hh, 0xDC00, lh))
    return choice(alts)


def _json_char_of(ranges: Sequence[Tuple[int, int]]) -> Optional[Expr]:
    """Every JSON spelling of one code point from ``ranges``: raw, short escape or ``\\uXXXX``
    (surrogate pair for astral characters). None when no code point has a spelling."""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1] < 0x80:
        return _ascii_spellings()[ranges[0][0]]
    return _json_char_of_cached(tuple(normalize_ranges(ranges)))


_ASCII_SPELLINGS: List[Optional[Expr]] = []


def _ascii_spellings() -> List[Optional[Expr]]:
    """``_json_char_of`` of each ASCII code point, all made at the first call. A pattern's
    literal characters are nearly all ASCII, each of them a few dozen IR nodes to build (its
    ``\\u00XX`` spellings in either case); they depend on nothing else, so, like the base
    rules of the JSON Schema converter, they are made once for the process."""
    if not _ASCII_SPELLINGS:
        _ASCII_SPELLINGS.extend(_json_char_of_cached.__wrapped__(((c, c),)) for c in range(0x80))
    return _ASCII_SPELLINGS


@functools.lru_cache(maxsize=1024)
def _json_char_of_cached(ranges_t: Tuple[Tuple[int, int], ...]) -> Optional[Expr]:
    ranges = list(ranges_t)
    alts: List[Optional[Expr]] = []
    raw = _intersect(ranges, _RAW_RANGES)
    if raw:
        alts.append(CharClass(tuple(raw)))
    short = [esc for cp, esc in sorted(_SHORT_ESCAPES.items()) if _intersect(ranges, [(cp, cp)])]
    if len(short) == 1:
        alts.append(Literal(short[0]))
    elif short:  # "\\" followed by a class of the escape letters
        alts.append(seq([Literal(b"\\"), _cc(*[(e[1], e[1]) for e in short])]))
    alts.append(_unicode_escapes(ranges))
    return choice(alts)


#: One *code point* of a JSON string: a raw UTF-8 character other than ``"``, ``\\`` and
#: U+0000..U+001F (raw surrogates, invalid UTF-8, excluded), a short escape, or a ``\\uXXXX``
#: escape, where a surrogate must be a high+low pair (one astral code point). Used for every
#: JSON string, counted or not.
JSON_STRING_CODE_POINT: Expr = Choice(
    (
        CharClass(tuple(_RAW_RANGES)),
        Seq(
            (
                Literal(b"\\"),
                Choice(
                    (
                        _cc(*[(c, c) for c in b'"\\/bfnrt']),
                        Seq((Literal(b"u"), _hex4(0, 0xD7FF))),
                        Seq((Literal(b"u"), _hex4(0xE000, 0xFFFF))),
                        Seq((Literal(b"u"), _hex4(0xD800, 0xDBFF), Literal(b"\\u"), _hex4(0xDC00, 0xDFFF))),
                    )
                ),
            )
        ),
    )
)

#: One character inside a JSON string: xgrammar's built-in JSON grammar has
#: ``[^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})``; this is the same except
#: that raw surrogate code points (invalid UTF-8) and lone surrogate escapes, which decode to
#: no Unicode text, are refused: the same expression as :data:`JSON_STRING_CODE_POINT`.
JSON_STRING_CHAR: Expr = JSON_STRING_CODE_POINT


@_cache
def string_expr(min_length: int = 0, max_length: Optional[int] = None) -> Expr:
    """A quoted JSON string whose decoded value has ``min_length..max_length`` code points.

    Exact for every spelling; lone surrogate escapes (``"\\ud800"``), which are no Unicode
    text, are refused (with no bounds this is xgrammar's JSON string but for them). Large
    bounds are fine (they are nested, not unrolled).

    Example:
        >>> from agentgrammar import Grammar
        >>> from agentgrammar.grammar.ir import Rule
        >>> g = Grammar.from_rules([Rule("root", string_expr(1, 2))])
        >>> [g.accepts(s) for s in (b'""', b'"a"', b'"\\\\n\\\\u00e9"', b'"abc"')]
        [False, True, True, False]
    """
    for name, v in (("min_length", min_length), ("max_length", max_length)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise GrammarError(f"{name} must be a non-negative integer, got {v!r}")
    if max_length is not None and max_length < min_length:
        raise GrammarError(f"string length range is empty: minLength {min_length} > maxLength {max_length}")
    if min_length == 0 and max_length is None:
        return Seq((_QUOTE, Repeat(JSON_STRING_CHAR, 0, None), _QUOTE))
    return seq([_QUOTE, _repeat(JSON_STRING_CODE_POINT, min_length, max_length), _QUOTE])


# --------------------------------------------------------------------------- numbers: bounds


def _to_fraction(x: Number, name: str) -> Optional[Fraction]:
    """An exact bound; None for +-infinity (the caller decides what that means)."""
    if isinstance(x, bool):
        raise GrammarError(f"{name} must be a number, got {x!r}")
    if isinstance(x, float):
        if math.isnan(x):
            raise GrammarError(f"{name} is NaN")
        if math.isinf(x):
            return None
        return Fraction(repr(x))  # the shortest decimal: what the schema's author wrote
    if isinstance(x, Decimal):
        if not x.is_finite():
            if x.is_nan():
                raise GrammarError(f"{name} is NaN")
            return None
        return Fraction(x)
    if isinstance(x, (int, Fraction)):
        f = Fraction(x)
    elif isinstance(x, str):
        try:
            f = Fraction(x)
        except (ValueError, ZeroDivisionError):
            raise GrammarError(f"{name} must be a number, got {x!r}") from None
    else:
        raise GrammarError(f"{name} must be a number, got {type(x).__name__}")
    d = f.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d != 1:
        raise GrammarError(f"{name} = {x!r} has no finite decimal expansion")
    return f


_Bound = Optional[Tuple[Fraction, bool]]  # (value, inclusive) or None (unbounded)


def _bounds(
    minimum: Optional[Number],
    maximum: Optional[Number],
    exclusive_minimum: Optional[Number],
    exclusive_maximum: Optional[Number],
) -> Tuple[_Bound, _Bound, bool]:
    """The tightest lower and upper bound and whether the range is certainly empty (an infinite
    bound on the wrong side)."""
    lo: _Bound = None
    hi: _Bound = None
    empty = False
    for value, inclusive, is_lower, name in (
        (minimum, True, True, "minimum"),
        (exclusive_minimum, False, True, "exclusiveMinimum"),
        (maximum, True, False, "maximum"),
        (exclusive_maximum, False, False, "exclusiveMaximum"),
    ):
        if value is None:
            continue
        f = _to_fraction(value, name)
        if f is None:  # infinite
            positive = float(value) > 0  # type: ignore[arg-type]
            if positive == is_lower:
                empty = True
            continue
        if is_lower:
            if lo is None or f > lo[0] or (f == lo[0] and not inclusive):
                lo = (f, inclusive)
        elif hi is None or f < hi[0] or (f == hi[0] and not inclusive):
            hi = (f, inclusive)
    if lo is not None and hi is not None:
        if lo[0] > hi[0] or (lo[0] == hi[0] and not (lo[1] and hi[1])):
            empty = True
    return lo, hi, empty


def _describe(lo: _Bound, hi: _Bound) -> str:
    left = "(-inf" if lo is None else ("[" if lo[1] else "(") + _fmt(lo[0])
    right = "+inf)" if hi is None else _fmt(hi[0]) + ("]" if hi[1] else ")")
    return f"{left}, {right}"


def _fmt(f: Fraction) -> str:
    if f.denominator == 1:
        return str(f.numerator)
    ip, digits = _split(abs(f))
    return ("-" if f < 0 else "") + f"{ip}.{digits}"


def _check_digits(f: Fraction) -> None:
    ip, digits = _split(abs(f))
    if len(str(ip)) + len(digits) > _MAX_DIGITS:
        raise GrammarError(f"a numeric bound with more than {_MAX_DIGITS} digits is not supported")


def _split(f: Fraction) -> Tuple[int, str]:
    """A non-negative finite decimal as (integer part, fraction digits without trailing zeros)."""
    ip = f.numerator // f.denominator
    rest = f - ip
    if rest == 0:
        return ip, ""
    d, k = rest.denominator, 0  # d = 2**a * 5**b: 10**max(a, b) clears it
    for p in (2, 5):
        n = 0
        while d % p == 0:
            d //= p
            n += 1
        k = max(k, n)
    return ip, str(int(rest * 10**k)).rjust(k, "0").rstrip("0")


# --------------------------------------------------------------------------- integers


def _nat(a: int, b: Optional[int]) -> Optional[Expr]:
    """Canonical decimal spellings (no leading zeros) of the integers in [a, b] (a >= 0)."""
    if b is not None and b < a:
        return None
    na = len(str(a))
    digit = lambda lo, hi: Literal(bytes([0x30 + lo])) if lo == hi else _cc((0x30 + lo, 0x30 + hi))  # noqa: E731
    alts: List[Optional[Expr]] = []

    def width(n: int) -> None:
        lo = max(a, 10 ** (n - 1) if n > 1 else 0)
        hi = 10**n - 1 if b is None else min(b, 10**n - 1)
        if lo <= hi:
            alts.extend(_positions(p, digit) for p in _fixed_width(lo, hi, n, 10))

    if b is None:
        width(na)
        alts.append(seq([_NONZERO, _repeat(_DIGIT, na, None)]))  # every longer integer
    else:
        nb = len(str(b))
        width(na)
        if nb - 1 >= na + 1:  # full widths na+1 .. nb-1
            alts.append(seq([_NONZERO, _repeat(_DIGIT, na, nb - 2)]))
        if nb > na:
            width(nb)
    return choice(alts)


@_cache
def integer_expr(
    minimum: Optional[Number] = None,
    maximum: Optional[Number] = None,
    exclusive_minimum: Optional[Number] = None,
    exclusive_maximum: Optional[Number] = None,
) -> Expr:
    """Exactly the JSON integer literals (``-?(0|[1-9][0-9]*)``) whose value is in the range.

    Bounds may be int, float, Decimal, Fraction (finite decimal) or numeric strings, of any
    size; a fractional bound rounds inward (``minimum=1.5`` -> integers >= 2). ``-0`` is not
    generated (nor by xgrammar; ``json.dumps`` never writes it for an int). Spellings of integral values with a fraction or exponent
    (``1.0``, ``1e2``), which JSON Schema also counts as integers, are not accepted
    (an under-approximation). An empty range raises GrammarError.

    Example:
        >>> from agentgrammar import Grammar
        >>> from agentgrammar.grammar.ir import Rule
        >>> g = Grammar.from_rules([Rule("root", integer_expr(exclusive_minimum=1.5, maximum=10**20))])
        >>> [g.accepts(s) for s in (b"1", b"2", b"100000000000000000000", b"100000000000000000001")]
        [False, True, True, False]
    """
    lo, hi, empty = _bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    ilo = None if lo is None else (math.ceil(lo[0]) if lo[1] else math.floor(lo[0]) + 1)
    ihi = None if hi is None else (math.floor(hi[0]) if hi[1] else math.ceil(hi[0]) - 1)
    for b in (ilo, ihi):
        if b is not None and len(str(abs(b))) > _MAX_DIGITS:
            raise GrammarError(f"an integer bound with more than {_MAX_DIGITS} digits is not supported")
    if empty or (ilo is not None and ihi is not None and ilo > ihi):
        raise GrammarError(f"no integer lies in the range {_describe(lo, hi)}")
    alts: List[Optional[Expr]] = []
    if ihi is None or ihi >= 0:
        alts.append(_nat(max(ilo, 0) if ilo is not None else 0, ihi))
    if ilo is None or ilo < 0:
        mag = _nat(max(-ihi, 1) if ihi is not None else 1, -ilo if ilo is not None else None)
        if mag is not None:
            alts.append(seq([Literal(b"-"), mag]))
    out = choice(alts)
    assert out is not None
    return out


# --------------------------------------------------------------------------- numbers

_DIGITS = Repeat(_DIGIT, 1, None)
_ZEROS = Repeat(Literal(b"0"), 1, None)
_E = _cc((0x45, 0x45), (0x65, 0x65))
_SIGN = _cc((0x2B, 0x2B), (0x2D, 0x2D))
#: Exponents by the sign of their value: any, zero only, >= 0, <= 0.
_EXP_ANY = Seq((_E, _opt(_SIGN), _DIGITS))
_EXP_ZERO = Seq((_E, _opt(_SIGN), _ZEROS))
_EXP_NONNEG = Seq((_E, Choice((Seq((_opt(Literal(b"+")), _DIGITS)), Seq((Literal(b"-"), _ZEROS))))))
_EXP_NONPOS = Seq((_E, Choice((Seq((Literal(b"-"), _DIGITS)), Seq((_opt(Literal(b"+")), _ZEROS))))))
_ZERO_MANTISSA = Seq((Literal(b"0"), _opt(Seq((Literal(b"."), _ZEROS)))))
_ANY_FRACTION = _opt(Seq((Literal(b"."), _DIGITS)))

#: Any JSON number (RFC 8259): ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?``.
ANY_NUMBER: Expr = Seq(
    (
        _opt(Literal(b"-")),
        Choice((Literal(b"0"), Seq((_NONZERO, Repeat(_DIGIT, 0, None))))),
        _ANY_FRACTION,
        _opt(_EXP_ANY),
    )
)

_FracLang = Tuple[List[Expr], bool]  # (non-empty digit-string alternatives, empty string allowed)


def _digit_cls(lo: int, hi: int) -> Optional[Expr]:
    if lo > hi:
        return None
    return Literal(bytes([0x30 + lo])) if lo == hi else _cc((0x30 + lo, 0x30 + hi))


def _frac_ge(alpha: str, incl: bool) -> _FracLang:
    """Digit strings s with 0.s >= 0.alpha (> when not incl)."""
    any_digits = Repeat(_DIGIT, 0, None)
    if not alpha:
        if incl:
            return [_DIGITS], True
        return [seq([Repeat(Literal(b"0"), 0, None), _NONZERO, any_digits])], False
    alts: List[Expr] = []
    for k, ch in enumerate(alpha):
        cls = _digit_cls(int(ch) + 1, 9)
        if cls is not None:
            alts.append(seq([Literal(alpha[:k].encode()), cls, any_digits]))
    if incl:
        alts.append(seq([Literal(alpha.encode()), any_digits]))
    else:
        alts.append(seq([Literal(alpha.encode()), Repeat(Literal(b"0"), 0, None), _NONZERO, any_digits]))
    return alts, False


def _frac_le(beta: str, incl: bool) -> _FracLang:
    """Digit strings s with 0.s <= 0.beta (< when not incl)."""
    if not beta:
        return ([_ZEROS], True) if incl else ([], False)
    any_digits = Repeat(_DIGIT, 0, None)
    alts: List[Expr] = [Literal(beta[:j].encode()) for j in range(1, len(beta))]
    for k, ch in enumerate(beta):
        cls = _digit_cls(0, int(ch) - 1)
        if cls is not None:
            alts.append(seq([Literal(beta[:k].encode()), cls, any_digits]))
    if incl:
        alts.append(seq([Literal(beta.encode()), Repeat(Literal(b"0"), 0, None)]))
    return alts, True


def _frac_between(alpha: str, incl_a: bool, beta: str, incl_b: bool) -> _FracLang:
    """Digit strings s with 0.alpha <= 0.s <= 0.beta (strict where not incl); alpha <= beta."""
    if alpha == beta:
        if not (incl_a and incl_b):
            return [], False
        if not alpha:
            return [_ZEROS], True
        return [seq([Literal(alpha.encode()), Repeat(Literal(b"0"), 0, None)])], False
    i = 0
    while i < len(beta) and (alpha[i] if i < len(alpha) else "0") == beta[i]:
        i += 1
    assert i < len(beta)
    a_p = int(alpha[i]) if i < len(alpha) else 0
    b_p = int(beta[i])
    common = beta[:i]
    alts: List[Expr] = []
    if incl_a:  # s = a prefix of `common` that spells alpha exactly
        alts += [Literal(beta[:j].encode()) for j in range(max(len(alpha), 1), i + 1)]

    def cont(prefix: str, lang: _FracLang) -> None:
        rest, empty_ok = lang
        tail = choice(rest)
        if tail is not None:
            alts.append(seq([Literal(prefix.encode()), _opt(tail) if empty_ok else tail]))
        elif empty_ok:
            alts.append(Literal(prefix.encode()))

    cont(common + str(a_p), _frac_ge(alpha[i + 1 :], incl_a))
    mid = _digit_cls(a_p + 1, b_p - 1)
    if mid is not None:
        alts.append(seq([Literal(common.encode()), mid, Repeat(_DIGIT, 0, None)]))
    cont(common + str(b_p), _frac_le(beta[i + 1 :], incl_b))
    return alts, not alpha and incl_a


def _fraction_part(lang: _FracLang) -> Optional[Expr]:
    """``(("." s)?`` for the digit strings s of lang; None when nothing is allowed."""
    alts, empty_ok = lang
    body = choice(alts)
    parts: List[Optional[Expr]] = []
    if empty_ok:
        parts.append(EMPTY)
    if body is not None:
        parts.append(seq([Literal(b"."), body]))
    return choice(parts)


def _magnitude(lo: Fraction, lo_incl: bool, hi: Optional[Fraction], hi_incl: bool) -> Optional[Expr]:
    """Exponent-free spellings ``I ("." F)?`` (no sign) of values in the range, lo >= 0."""
    big_a, alpha = _split(lo)
    alts: List[Optional[Expr]] = []

    def with_int(ip: int, frac: Optional[Expr]) -> None:
        if frac is not None:
            alts.append(seq([Literal(str(ip).encode()), frac]))

    if hi is None:
        with_int(big_a, _fraction_part(_frac_ge(alpha, lo_incl)))
        rest = _nat(big_a + 1, None)
        assert rest is not None
        alts.append(seq([rest, _ANY_FRACTION]))
        return choice(alts)
    big_b, beta = _split(hi)
    if big_a == big_b:
        with_int(big_a, _fraction_part(_frac_between(alpha, lo_incl, beta, hi_incl)))
        return choice(alts)
    with_int(big_a, _fraction_part(_frac_ge(alpha, lo_incl)))
    middle = _nat(big_a + 1, big_b - 1)
    if middle is not None:
        alts.append(seq([middle, _ANY_FRACTION]))
    with_int(big_b, _fraction_part(_frac_le(beta, hi_incl)))
    return choice(alts)


def _exponent(grow: bool, shrink: bool) -> Expr:
    if grow and shrink:
        return _EXP_ANY
    return _EXP_NONNEG if grow else _EXP_NONPOS if shrink else _EXP_ZERO


@_cache
def number_expr(
    minimum: Optional[Number] = None,
    maximum: Optional[Number] = None,
    exclusive_minimum: Optional[Number] = None,
    exclusive_maximum: Optional[Number] = None,
) -> Expr:
    """JSON numbers (RFC 8259 syntax) whose exact decimal value lies in the range.

    Guarantees: never accepts a number outside the range (exact decimal arithmetic). Accepts:

    * with no bound, every JSON number;
    * every spelling *without exponent* of every number in the range (``-0``, ``0.50`` and
      ``12.000`` included);
    * spellings with an exponent when the exponent cannot move the value out of the range:
      a mantissa (the part before ``e``) in the range, and an exponent of value 0 always, of
      value > 0 when the range is unbounded in the mantissa's direction (``1.5e3`` for
      ``minimum: 1``), of value < 0 when the range contains every value between the mantissa
      and 0 (``5e-3`` for ``maximum: 10``). A zero mantissa takes any exponent.

    So bounds at 0 (``minimum: 0``, ``exclusiveMinimum: 0``, ``maximum: 0`` ...) are handled
    exactly, exponents included; other bounds reject some valid exponent spellings whose
    mantissa is outside the range (``2e2`` for ``minimum: 150``, ``0.5e1`` for
    ``maximum: 5``): an under-approximation. An empty range raises GrammarError.

    Example:
        >>> from agentgrammar import Grammar
        >>> from agentgrammar.grammar.ir import Rule
        >>> g = Grammar.from_rules([Rule("root", number_expr(exclusive_minimum=0, maximum=1.5))])
        >>> [g.accepts(s) for s in (b"0", b"0.001", b"1.50", b"1.51", b"15e-1", b"1e-9")]
        [False, True, True, False, False, True]
    """
    lo, hi, empty = _bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
    if empty:
        raise GrammarError(f"no number lies in the range {_describe(lo, hi)}")
    if lo is None and hi is None:
        return ANY_NUMBER
    for b in (lo, hi):
        if b is not None:
            _check_digits(b[0])
    zero = Fraction(0)

    def contains(v: Fraction) -> bool:
        return (lo is None or v > lo[0] or (v == lo[0] and lo[1])) and (
            hi is None or v < hi[0] or (v == hi[0] and hi[1])
        )

    alts: List[Optional[Expr]] = []
    if contains(zero):
        alts.append(seq([_opt(Literal(b"-")), _ZERO_MANTISSA, _opt(_EXP_ANY)]))
    if hi is None or hi[0] > 0:  # positive values
        plo, plo_incl = lo if lo is not None and lo[0] > 0 else (zero, False)
        mag = _magnitude(plo, plo_incl, None if hi is None else hi[0], hi is not None and hi[1])
        if mag is not None:
            exp = _exponent(grow=hi is None, shrink=lo is None or lo[0] <= 0)
            alts.append(seq([mag, _opt(exp)]))
    if lo is None or lo[0] < 0:  # negative values, as magnitudes
        nlo, nlo_incl = (-hi[0], hi[1]) if hi is not None and hi[0] < 0 else (zero, False)
        mag = _magnitude(nlo, nlo_incl, None if lo is None else -lo[0], lo is not None and lo[1])
        if mag is not None:
            exp = _exponent(grow=lo is None, shrink=hi is None or hi[0] >= 0)
            alts.append(seq([Literal(b"-"), mag, _opt(exp)]))
    out = choice(alts)
    if out is None:
        raise GrammarError(f"no number lies in the range {_describe(lo, hi)}")
    return out


# --------------------------------------------------------------------------- patterns


def _to_json_content(e: Expr) -> Optional[Expr]:
    """Rewrite a regex IR over decoded characters into IR over JSON string content (every
    spelling of each character). None when e matches nothing encodable."""
    if isinstance(e, CharClass):
        ranges = complement_ranges(e.ranges) if e.negated else list(e.ranges)
        return _json_char_of(ranges)
    if isinstance(e, Literal):
        text = e.value.decode("utf-8", "surrogatepass")
        items: List[Expr] = []
        for ch in text:
            spelled = _json_char_of([(ord(ch), ord(ch))])
            if spelled is None:
                return None
            items.append(spelled)
        return seq(items)
    if isinstance(e, Seq):
        parts = []
        for item in e.items:
            p = _to_json_content(item)
            if p is None:
                return None
            parts.append(p)
        return seq(parts)
    if isinstance(e, Choice):
        return choice([_to_json_content(x) for x in e.items])
    if isinstance(e, Repeat):
        body = _to_json_content(e.item)
        if body is None:
            return EMPTY if e.min == 0 else None
        return _repeat(body, e.min, e.max)
    if isinstance(e, (ByteClass, RuleRef)):  # pragma: no cover - parse_regex produces neither
        raise GrammarError(f"cannot encode {type(e).__name__} as JSON string content")
    raise TypeError(f"not an IR expression: {e!r}")


def _split_alternatives(pattern: str) -> Optional[List[str]]:
    """The top-level ``|`` alternatives of pattern; None when its structure is malformed."""
    out: List[str] = []
    depth, start, i, n = 0, 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            if j >= n:
                return None
            i = j + 1
            continue
        if c == "(":
            if pattern.startswith("(?#", i):
                j = pattern.find(")", i)
                if j < 0:
                    return None
                i = j + 1
                continue
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return None
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    if depth != 0:
        return None
    out.append(pattern[start:])
    return out


_ANY_TEXT = r"[\s\S]*"
# ECMA-262's "." (no dotAll flag): anything but line terminators.
_ECMA_DOT = r"[^\n\r\u2028\u2029]"
_ECMA_SPACE: Ranges = [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                       (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
                       (0xFEFF, 0xFEFF)]  # fmt: skip
#: White space for both ECMA-262 and Python (U+FEFF is not white space to Python).
_NARROW_SPACE: Ranges = _ECMA_SPACE[:-1]


@functools.lru_cache(maxsize=None)
def _wide_ranges(letter: str) -> Tuple[Tuple[int, int], ...]:
    """The union of ECMA-262's and Python's ``\\d`` / ``\\w`` / ``\\s`` (Python's are Unicode-wide)."""
    ranges: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)] if letter == "w" else []
    if letter == "s":
        ranges += _ECMA_SPACE
    ranges += _python_shorthand_ranges(letter)
    return tuple(normalize_ranges(ranges))


@functools.lru_cache(maxsize=3)
def _python_shorthand_ranges(letter: str) -> Ranges:
    """The code point ranges Python's ``re`` puts in ``\\d``, ``\\w`` or ``\\s`` (what Python
    validators run): found by running ``re`` over every code point at once, one letter at a time
    (a schema's pattern rarely needs more than one), the text of all code points made by numpy
    (a third of the time of an ``array`` over ``range``)."""
    codes = numpy.arange(MAX_CODE_POINT + 1, dtype="<u4").tobytes()
    text = codes.decode("utf-32-le", "surrogatepass")
    return [(m.start(), m.end() - 1) for m in re.finditer("\\" + letter + "+", text)]


@functools.lru_cache(maxsize=None)
def _not_wide_ranges(letter: str) -> Tuple[Tuple[int, int], ...]:
    """Characters in neither dialect's shorthand. For ``w`` (hundreds of small gaps between
    Unicode letters) only the gaps below U+0800 and runs of 32+ characters are kept: a subset,
    which is still sound."""
    out = complement_ranges(_wide_ranges(letter))
    if letter == "w":
        out = [(lo, hi) for lo, hi in out if lo < 0x800 or hi - lo >= 31]
    return tuple(out)


def _class_text(ranges: Sequence[Tuple[int, int]]) -> str:
    return "".join(f"\\u{{{lo:x}}}" + ("" if lo == hi else f"-\\u{{{hi:x}}}") for lo, hi in ranges)


def _portable(pattern: str) -> str:
    """Rewrite pattern so that it matches only what both ECMA-262 (u flag) and Python's ``re``
    match: ``.`` excludes every ECMA line terminator, ``\\s`` is the white space both agree on,
    and a shorthand used negatively (``\\D``, ``\\W``, ``\\S``, or ``\\d`` ``\\w`` ``\\s``
    inside ``[^...]``) excludes the characters that either dialect puts in the shorthand
    (Python's are Unicode-wide). ``\\d`` and ``\\w`` stay ASCII, as in ECMA-262."""
    out: List[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in "DWS":
                out.append(f"[{_class_text(_not_wide_ranges(e.lower()))}]")
            elif e == "s":
                out.append(f"[{_class_text(_NARROW_SPACE)}]")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == ".":
            out.append(_ECMA_DOT)
            i += 1
            continue
        if pattern.startswith("(?#", i):  # a comment, copied as is
            end = pattern.find(")", i)
            end = n if end < 0 else end + 1
            out.append(pattern[i:end])
            i = end
            continue
        if c != "[":
            out.append(c)
            i += 1
            continue
        j = i + 1
        negated = j < n and pattern[j] == "^"
        if negated:
            j += 1
        out.append(pattern[i:j])
        first = True
        while j < n and (pattern[j] != "]" or first):
            first = False
            if pattern[j] == "\\" and j + 1 < n:
                e = pattern[j + 1]
                if e in "dws" and negated:
                    out.append(_class_text(_wide_ranges(e)))
                elif e in "DWS" and not negated:
                    out.append(_class_text(_not_wide_ranges(e.lower())))
                elif e == "s":
                    out.append(_class_text(_NARROW_SPACE))
                else:
                    out.append(pattern[j : j + 2])
                j += 2
            else:
                out.append(pattern[j])
                j += 1
        out.append(pattern[j : j + 1])
        i = j + 1
    return "".join(out)


@functools.lru_cache(maxsize=1024)
def pattern_chars(pattern: str) -> Expr:
    """Regex IR over decoded characters: the strings that contain a match of ``pattern``
    (search semantics, the dialect rules of :func:`pattern_string`)."""
    if not isinstance(pattern, str):
        raise TypeError(f"a pattern must be a str, not {type(pattern).__name__}")
    # A syntax error is reported in the user's pattern: parsed on its own once the rewritten
    # regex fails (a second parse of every valid pattern was half the time of converting it).
    alternatives = _split_alternatives(_portable(pattern))
    if alternatives is None:
        parse_regex(pattern)
        raise GrammarError(f"malformed regex pattern {pattern!r}")  # pragma: no cover - parsed
    # Alternatives are grouped by their anchors, and each group padded once: ``.*(?:a|b).*``
    # rather than ``.*a.*|.*b.*``, the same language, whose automaton is the size of the words
    # (the other's subset construction tracks every alternative's own ``.*`` separately:
    # exponential in the number of alternatives).
    groups: Dict[Tuple[bool, bool], List[str]] = {}
    for alt in alternatives:
        start = alt.startswith("^")
        body = alt[1:] if start else alt
        trailing_bs = len(body[:-1]) - len(body[:-1].rstrip("\\")) if body.endswith("$") else 1
        end = body.endswith("$") and trailing_bs % 2 == 0
        if end:
            body = body[:-1]
        groups.setdefault((start, end), []).append("(?:" + body + ")")
    pieces: List[str] = []
    for (start, end), bodies in groups.items():
        # Pad the unanchored sides textually: an anchor left inside a body is then not at
        # the pattern's edge and parse_regex reports it instead of silently ignoring it.
        body = bodies[0] if len(bodies) == 1 else "(?:" + "|".join(bodies) + ")"
        pieces.append(("" if start else _ANY_TEXT) + body + ("" if end else _ANY_TEXT))
    regex = pieces[0] if len(pieces) == 1 else "|".join(f"(?:{p})" for p in pieces)
    try:
        return parse_regex(regex)
    except GrammarError:
        parse_regex(pattern)
        raise GrammarError(
            f"regex pattern {pattern!r}: an anchor ('^', '$', '\\A', '\\Z') is only supported at the "
            "start or end of a top-level alternative"
        ) from None


def format_chars(name: str) -> Optional[Expr]:
    """Regex IR over decoded characters for format ``name``; None when it is not supported."""
    regex = _FORMAT_REGEX.get(name)
    return None if regex is None else parse_regex(regex)


def _pattern_content(pattern: str) -> Expr:
    """JSON string content (no quotes) whose decoded text contains a match of pattern."""
    out = _to_json_content(pattern_chars(pattern))
    if out is None:
        raise GrammarError(f"regex pattern {pattern!r} matches no valid string (only surrogate code points)")
    return out


def json_char_of(ranges: Sequence[Tuple[int, int]]) -> Optional[Expr]:
    """Every JSON spelling of one code point from ``ranges`` (raw, short escape, ``\\uXXXX``);
    None when none has a spelling."""
    return _json_char_of(ranges)


@_cache
def pattern_string(pattern: str) -> Expr:
    """A quoted JSON string whose decoded value contains a match of ``pattern`` (JSON Schema /
    ECMA-262 ``RegExp.test`` search semantics).

    ``^`` at the start and ``$`` at the end of a top-level alternative anchor it; other sides
    match anywhere. Each character may be spelled any way JSON allows (raw, short escape, or
    ``\\uXXXX`` in either case, surrogate pairs for astral characters), so both
    ``json.dumps(s)`` and ``json.dumps(s, ensure_ascii=False)`` are accepted; lone surrogate
    escapes are rejected.

    Where ECMA-262 (``u`` flag) and Python's ``re`` (what Python validators run) disagree, only
    what *both* match is accepted: ``.`` excludes ``\\n \\r \\u2028 \\u2029``; ``$`` is the
    very end (Python's ``$`` also matches before a final ``\\n``); ``\\d`` / ``\\w`` are ASCII;
    ``\\s`` is ECMA's white space less U+FEFF; ``\\D \\W \\S`` (and ``\\d \\w \\s`` inside
    ``[^...]``) exclude both dialects' digits / word characters / white space (for ``\\W``,
    only the gaps below U+0800 and long runs above it are kept). Unsupported regex syntax
    (``\\p{..}``, lookaround, backreferences, ...) raises GrammarError from parse_regex, as
    does an anchor elsewhere than at the edge of a top-level alternative (e.g. ``(^a)``).

    Example:
        >>> from agentgrammar import Grammar
        >>> from agentgrammar.grammar.ir import Rule
        >>> g = Grammar.from_rules([Rule("root", pattern_string("^a+$|b"))])
        >>> [g.accepts(s) for s in (b'"aa"', b'"xbx"', b'"ax"', b'"\\\\u0061"')]
        [True, True, False, True]
    """
    return seq([_QUOTE, _pattern_content(pattern), _QUOTE])


def _anchored_string(regex: str) -> Expr:
    ir = _to_json_content(parse_regex(regex))
    assert ir is not None
    return seq([_QUOTE, ir, _QUOTE])


# --------------------------------------------------------------------------- formats

_YEAR = r"(?:[1-9]\d{3}|0[1-9]\d{2}|00[1-9]\d|000[1-9])"  # 0001-9999 (Python's date range)
_LEAP_YEAR = r"(?:\d{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)"
    r"|02-(?:0[1-9]|1\d|2[0-8]))"
)
_DATE = rf"(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
_TIME = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)"
_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DURATION = rf"P(?:(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)(?:{_DUR_TIME})?|{_DUR_TIME}|\d+W)"
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = (
    "(?:"
    + "|".join(
        [
            rf"(?:{_H16}:){{6}}{_LS32}",
            rf"::(?:{_H16}:){{5}}{_LS32}",
            rf"(?:{_H16})?::(?:{_H16}:){{4}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,1}}{_H16})?::(?:{_H16}:){{3}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,2}}{_H16})?::(?:{_H16}:){{2}}{_LS32}",
            rf"(?:(?:{_H16}:){{0,3}}{_H16})?::{_H16}:{_LS32}",
            rf"(?:(?:{_H16}:){{0,4}}{_H16})?::{_LS32}",
            rf"(?:(?:{_H16}:){{0,5}}{_H16})?::{_H16}",
            rf"(?:(?:{_H16}:){{0,6}}{_H16})?::",
        ]
    )
    + ")"
)
_HEX = "[0-9A-Fa-f]"
_UUID = rf"{_HEX}{{8}}-(?:{_HEX}{{4}}-){{3}}{_HEX}{{12}}"


# RFC 1123 host names: labels of 1-63 letters, digits and inner hyphens, no "--" in positions
# 3-4 (RFC 5891 reserves them), at most 253 characters in all. The total is enforced by tiers
# (<= 3 labels of <= 63 characters, <= 8 of <= 30, <= 32 of <= 6), a safe subset; every tier is
# parsed in parallel (the language is ambiguous), so fewer tiers make faster masks.
def _label(max_len: int) -> str:
    """A host name label of 1..max_len (>= 5) characters without "--" at positions 3-4."""
    a, m = "[A-Za-z0-9]", "[A-Za-z0-9-]"
    return rf"{a}(?:{a}|{m}{a}|{m}{m}{a}|{m}(?:{a}{m}|-{a}){m}{{0,{max_len - 5}}}{a})?"


def _hostname_regex() -> str:
    tiers = []
    for count, length in ((3, 63), (8, 30), (32, 6)):
        lab = _label(length)
        tiers.append(rf"{lab}(?:\.{lab}){{0,{count - 1}}}")
    return "(?:" + "|".join(tiers) + ")"


_HOSTNAME = _hostname_regex()
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_QUOTED_LOCAL = r'"(?:[ !#-\[\]-~]|\\[ -~])*"'
_EMAIL = rf"(?:{_ATEXT}+(?:\.{_ATEXT}+)*|{_QUOTED_LOCAL})@(?:{_HOSTNAME}|\[{_IPV4}\]|\[IPv6:{_IPV6}\])"
_PCT = r"%[0-9A-Fa-f]{2}"
_UNRESERVED_SUB = r"A-Za-z0-9\-._~!$&'()*+,;="
_PCHAR = rf"(?:[{_UNRESERVED_SUB}:@]|{_PCT})"
_SEGMENT_NZ_NC = rf"(?:[{_UNRESERVED_SUB}@]|{_PCT})+"
_AUTHORITY = (
    rf"(?:(?:[{_UNRESERVED_SUB}:]|{_PCT})*@)?"
    rf"(?:\[(?:{_IPV6}|[vV][0-9A-Fa-f]+\.[{_UNRESERVED_SUB}:]+)\]|(?:[{_UNRESERVED_SUB}]|{_PCT})*)"
    r"(?::\d*)?"
)
_PATH_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_PATH_ABSOLUTE = rf"/(?:{_PCHAR}+(?:/{_PCHAR}*)*)?"
_PATH_ROOTLESS = rf"{_PCHAR}+(?:/{_PCHAR}*)*"
_PATH_NOSCHEME = rf"{_SEGMENT_NZ_NC}(?:/{_PCHAR}*)*"
_QUERY_FRAGMENT = rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?"
_URI = (
    rf"[A-Za-z][A-Za-z0-9+\-.]*:(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_ROOTLESS}|)"
    + _QUERY_FRAGMENT
)
_RELATIVE_REF = rf"(?://{_AUTHORITY}{_PATH_ABEMPTY}|{_PATH_ABSOLUTE}|{_PATH_NOSCHEME}|){_QUERY_FRAGMENT}"
_JSON_POINTER = r"(?:/(?:[^/~]|~[01])*)*"

_FORMAT_REGEX: Dict[str, str] = {
    "date": _DATE,
    "time": _TIME,
    "date-time": rf"{_DATE}[Tt]{_TIME}",
    "duration": _DURATION,
    "email": _EMAIL,
    "hostname": _HOSTNAME,
    "ipv4": _IPV4,
    "ipv6": _IPV6,
    "uuid": _UUID,
    "uri": _URI,
    "uri-reference": f"(?:{_URI}|{_RELATIVE_REF})",
    "json-pointer": _JSON_POINTER,
    "relative-json-pointer": rf"(?:0|[1-9]\d*)(?:#|{_JSON_POINTER})",
    # Every URI is an IRI: ASCII-only IRIs are a sound subset.
    "iri": _URI,
    "iri-reference": f"(?:{_URI}|{_RELATIVE_REF})",
}

#: Formats the JSON Schema specification defines that :func:`format_string` does not support:
#: asserting them is beyond a regular grammar (``regex``) or not done yet. Other unknown
#: formats are annotations and constrain nothing.
UNSUPPORTED_SPEC_FORMATS = ("idn-email", "idn-hostname", "regex", "uri-template")

_format_cache: Dict[str, Expr] = {}

#: The formats :func:`format_string` supports.
SUPPORTED_FORMATS = tuple(sorted(_FORMAT_REGEX))


def format_string(name: str) -> Optional[Expr]:
    """A quoted JSON string in format ``name``, or None for a format not supported.

    Each character may be spelled any way JSON allows. Sound (never accepts an invalid value)
    and exact except where noted:

    * ``date``, ``date-time``, ``time`` (RFC 3339): exact month lengths and leap years;
      years 0001-9999 (year 0000 rejected, as Python's ``date`` does); ``T``/``Z`` in either
      case; no leap seconds (``:60``) — as Python's ``rfc3339-validator``;
    * ``duration``: the RFC 3339 appendix A grammar (``P1Y2M``, ``PT1H``, ``P2W``);
    * ``email``: a practical subset of RFC 5321: a dot-atom or quoted (ASCII) local part (no
      length limits), ``@``, and a ``hostname`` (below), ``[IPv4]`` or ``[IPv6:...]``;
    * ``hostname``: RFC 1123 labels (1-63 chars, alphanumerics and inner hyphens, no ``--`` at
      positions 3-4, so no punycode ``xn--`` labels), no trailing dot, and a safe subset of the
      253-character limit (at most 3 labels of <= 63 characters, 8 of <= 30 or 32 of <= 6);
    * ``ipv4`` (dotted decimal, no leading zeros), ``ipv6`` (RFC 4291 text form, ``::``
      compression and embedded IPv4; no zone id), ``uuid`` (8-4-4-4-12 hex, either case): exact;
    * ``uri``, ``uri-reference``: the RFC 3986 grammar (ASCII only); ``iri``, ``iri-reference``:
      the same (ASCII IRIs only, a sound subset);
    * ``json-pointer`` (RFC 6901), ``relative-json-pointer``: exact.

    Example:
        >>> format_string("regex") is None
        True
    """
    regex = _FORMAT_REGEX.get(name)
    if regex is None:
        return None
    expr = _format_cache.get(name)
    if expr is None:
        expr = _format_cache[name] = _anchored_string(regex)
    return expr
