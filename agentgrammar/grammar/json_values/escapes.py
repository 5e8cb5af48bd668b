"""JSON string characters in every spelling: raw UTF-8, short escapes and ``\\uXXXX`` (surrogate
pairs as one character), and strings counted in code points."""

from __future__ import annotations

import functools
from typing import Dict, List, Optional, Sequence, Tuple

from ...errors import GrammarError
from ..ir import (
    MAX_CODE_POINT,
    CharClass,
    Choice,
    Expr,
    Literal,
    Repeat,
    Seq,
    seq,
)
from ..utf8 import complement_ranges, normalize_ranges
from .repeats import _HEXDIG, _QUOTE, Ranges, _cache, _cc, _exactly, repeat_chars

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


def _fixed_width(lo: int, hi: int, width: int, base: int) -> List[Tuple[Tuple[int, int], ...]]:
    """Strings of exactly ``width`` base-``base`` digits (leading zeros allowed) with value in
    ``[lo, hi]``, as disjoint products of per-position digit ranges."""
    if width <= 1:
        return [((lo, hi),)] if width else [()]
    p = base ** (width - 1)
    dlo, rlo = divmod(lo, p)
    dhi, rhi = divmod(hi, p)
    if rlo == 0 and rhi == p - 1:  # whole blocks: what the recursion below comes to
        return [((dlo, dhi),) + ((0, base - 1),) * (width - 1)]
    if dlo == dhi:
        return [((dlo, dlo),) + t for t in _fixed_width(rlo, rhi, width - 1, base)]
    out: List[Tuple[Tuple[int, int], ...]] = []
    start, end = dlo, dhi
    if rlo != 0:
        out += [((dlo, dlo),) + t for t in _fixed_width(rlo, p - 1, width - 1, base)]
        start = dlo + 1
    tail: List[Tuple[Tuple[int, int], ...]] = []
    if rhi != p - 1:
        tail = [((dhi, dhi),) + t for t in _fixed_width(0, rhi, width - 1, base)]
        end = dhi - 1
    if start <= end:
        out.append(((start, end),) + ((0, base - 1),) * (width - 1))
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


@_cache
def _hex4(lo: int, hi: int) -> Expr:
    """Four hex digits (either case) with value in [lo, hi]. Remembered: the escapes of every
    class that reaches past U+FFFF (a key or pattern class left open, its complement) spell
    the same surrogate ranges, and those of U+E000..U+FFFF."""
    # no product is a choice, and none equals another (their values are disjoint)
    out = _distinct_choice([_hex_product(p) for p in _fixed_width(lo, hi, 4, 16)])
    assert out is not None
    return out


def _distinct_choice(alts: List[Expr]) -> Optional[Expr]:
    """What ``ir.choice`` makes of ``alts`` when none of them is a choice and no two are equal
    (disjoint spellings, as the callers know): None, the one, or their ``Choice``, without its
    checks."""
    return None if not alts else alts[0] if len(alts) == 1 else Choice(tuple(alts))


@_cache
def _hex_product(pos: Tuple[Tuple[int, int], ...]) -> Expr:
    """``_positions`` of hex digit ranges, remembered: the ranges of one conversion's classes
    (every character but one key letter, ...) differ at their ends, and their ``\\uXXXX``
    spellings share most of their products (``[1-c]XXX``, ``d[0-7]XX``)."""
    if not _HEX_CLASSES:
        _hex_class(0, 15)
    items: List[Expr] = []
    run, count = pos[0], 0
    for p in pos:  # runs of equal positions as counted repeats (``_positions``), inlined
        if p == run:
            count += 1
            continue
        items.append(_HEX_CLASSES[run] if count == 1 else Repeat(_HEX_CLASSES[run], count, count))
        run, count = p, 1
    items.append(_HEX_CLASSES[run] if count == 1 else Repeat(_HEX_CLASSES[run], count, count))
    return seq(items)


_SHORT_ESCAPES = {0x22: b'\\"', 0x5C: b"\\\\", 0x2F: b"\\/", 0x08: b"\\b", 0x0C: b"\\f", 0x0A: b"\\n",
                  0x0D: b"\\r", 0x09: b"\\t"}  # fmt: skip


_SHORT_BY_CODE_POINT = sorted(_SHORT_ESCAPES.items())


_SURROGATES = (0xD800, 0xDFFF)


#: The code points a single ``\\uXXXX`` escape spells: the BMP but surrogates.
_BMP_RANGES: Ranges = complement_ranges([_SURROGATES], 0xFFFF)


#: Code points that may appear raw (unescaped) in a JSON string.
_RAW_RANGES: Ranges = complement_ranges([(0x00, 0x1F), (0x22, 0x22), (0x5C, 0x5C), _SURROGATES])


def _intersect(a: Sequence[Tuple[int, int]], b: Sequence[Tuple[int, int]]) -> Ranges:
    """The code points in both; ``a`` and ``b`` normalized (sorted, disjoint, not adjacent),
    as is the result: one merge over both."""
    out: Ranges = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        lo1, hi1 = a[i]
        lo2, hi2 = b[j]
        lo = lo1 if lo1 > lo2 else lo2
        if hi1 < hi2:
            if lo <= hi1:
                out.append((lo, hi1))
            i += 1
        else:
            if lo <= hi2:
                out.append((lo, hi2))
            j += 1
    return out


@_cache
def _short_escape_class(short: Tuple[bytes, ...]) -> Expr:
    """``\\`` followed by a class of the escape letters of ``short``. Remembered: the classes
    of a conversion that hold every control character (a complement) all have the same eight."""
    return seq([Literal(b"\\"), _cc(*[(e[1], e[1]) for e in short])])


def _short_escapes(ranges: Sequence[Tuple[int, int]]) -> List[bytes]:
    """The short escapes of the code points in ``ranges`` (normalized), in code point order:
    one merge of the two sorted lists."""
    out: List[bytes] = []
    i, n = 0, len(ranges)
    for cp, esc in _SHORT_BY_CODE_POINT:
        while i < n and ranges[i][1] < cp:
            i += 1
        if i == n:
            break
        if ranges[i][0] <= cp:
            out.append(esc)
    return out


def _unicode_escapes(ranges: Ranges) -> Optional[Expr]:
    """``\\uXXXX`` spellings (surrogate pairs for astral code points) of the code points in ranges
    (surrogate code points themselves are skipped)."""
    alts: List[Expr] = [_bmp_escape(lo, hi) for lo, hi in _intersect(ranges, _BMP_RANGES)]
    for lo, hi in _intersect(ranges, _ASTRAL_RANGES):
        alts.extend(_astral_escapes(lo, hi))
    # each is a sequence that starts with ``\\u`` (no choice), and none equals another (their
    # code points are disjoint)
    return _distinct_choice(alts)


_ASTRAL_RANGES: Ranges = [(0x10000, MAX_CODE_POINT)]


# The escapes of one range are remembered: most classes of a conversion end with the same
# ranges (U+E000..U+FFFF, the astral planes), whose spellings are then built once.
@_cache
def _bmp_escape(lo: int, hi: int) -> Expr:
    """``\\uXXXX`` of the code points lo..hi (in the BMP, no surrogates)."""
    return seq([Literal(b"\\u"), _hex4(lo, hi)])


@_cache
def _astral_escapes(lo: int, hi: int) -> Tuple[Expr, ...]:
    """The surrogate pairs of the astral code points lo..hi: the alternatives, in order."""
    hl, ll = 0xD800 + ((lo - 0x10000) >> 10), 0xDC00 + ((lo - 0x10000) & 0x3FF)
    hh, lh = 0xD800 + ((hi - 0x10000) >> 10), 0xDC00 + ((hi - 0x10000) & 0x3FF)

    def pair(h1: int, h2: int, l1: int, l2: int) -> Expr:
        return seq([Literal(b"\\u"), _hex4(h1, h2), Literal(b"\\u"), _hex4(l1, l2)])

    if hl == hh:
        return (pair(hl, hl, ll, lh),)
    alts = [pair(hl, hl, ll, 0xDFFF)]
    if hl + 1 <= hh - 1:
        alts.append(pair(hl + 1, hh - 1, 0xDC00, 0xDFFF))
    alts.append(pair(hh, hh, 0xDC00, lh))
    return tuple(alts)


def _json_char_of(ranges: Sequence[Tuple[int, int]]) -> Optional[Expr]:
    """Every JSON spelling of one code point from ``ranges``: raw, short escape or ``\\uXXXX``
    (surrogate pair for astral characters). None when no code point has a spelling."""
    if len(ranges) == 1:
        lo, hi = ranges[0]
        if lo == hi < 0x80:
            return _ascii_spellings()[lo]
        return _json_char_of_cached(((lo, hi),)) if lo <= hi else None
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
    alts: List[Expr] = []
    raw = _intersect(ranges, _RAW_RANGES)
    if raw:
        alts.append(CharClass(tuple(raw)))
    short = _short_escapes(ranges)
    if len(short) == 1:
        alts.append(Literal(short[0]))
    elif short:
        alts.append(_short_escape_class(tuple(short)))
    escapes = _unicode_escapes(ranges)
    # the escapes' alternatives flattened in; no two are equal (raw, short and ``\\u``
    # spellings differ in their first byte or two)
    if type(escapes) is Choice:
        alts.extend(escapes.items)
    elif escapes is not None:
        alts.append(escapes)
    return _distinct_choice(alts)


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
    return seq([_QUOTE, repeat_chars(JSON_STRING_CODE_POINT, min_length, max_length), _QUOTE])


def json_char_of(ranges: Sequence[Tuple[int, int]]) -> Optional[Expr]:
    """Every JSON spelling of one code point from ``ranges`` (raw, short escape, ``\\uXXXX``);
    None when none has a spelling."""
    return _json_char_of(ranges)
