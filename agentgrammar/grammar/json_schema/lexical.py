"""The spellings of JSON string characters and literals: raw, short escapes and ``\\u``
escapes (surrogate pairs as one character), and ``choice`` in linear time."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import (
    FrozenSet,
    Iterable,
    List,
    Optional,
    Sequence,
    Set,
    Tuple,
)

from ..ir import (
    EMPTY,
    CharClass,
    Choice,
    Expr,
    Literal,
    Repeat,
    Seq,
    seq,
)
from ..utf8 import cut_points, normalize_ranges


def choice(items: Sequence[Optional[Expr]]) -> Optional[Expr]:
    """``ir.choice`` (flattened, None dropped, equal leaves dropped), in linear time: an
    ``enum`` of ten thousand values is one choice, and a list scan per value is quadratic."""
    alts: List[Expr] = []
    leaves: Set[Expr] = set()
    for x in items:
        t = type(x)
        if t is not Choice and t is not Literal and t is not CharClass:  # (most items)
            if x is not None:
                alts.append(x)  # type: ignore[arg-type]
            continue
        for y in x.items if t is Choice else (x,):  # type: ignore[union-attr]
            if type(y) in (Literal, CharClass):
                try:
                    if y in leaves:
                        continue
                    leaves.add(y)
                except TypeError:  # unhashable (ranges not a tuple): compared the slow way
                    if y in alts:
                        continue
            alts.append(y)
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else Choice(tuple(alts))


_DQ = Literal(b'"')


_HEX_UPPER = {d: "0123456789ABCDEF"[d] for d in range(16)}


def _hex_digits(lo: int, hi: int) -> CharClass:
    """One hex digit with value in [lo, hi], either case."""
    ranges = []
    for d in range(lo, hi + 1):
        ranges.append((ord("0123456789abcdef"[d]),) * 2)
        if d >= 10:
            ranges.append((ord(_HEX_UPPER[d]),) * 2)
    return CharClass(tuple(normalize_ranges(ranges)))


def _minus(ranges: Sequence[Tuple[int, int]], points: Iterable[int]) -> List[Tuple[int, int]]:
    """``ranges`` without the code points ``points``."""
    return cut_points(normalize_ranges(ranges), points)


def _opt(e: Expr) -> Expr:
    return Repeat(e, 0, 1)


@lru_cache(maxsize=None)
def _hex_fixed(lo: int, hi: int, width: int) -> Expr:
    """``width`` hex digits (either case) spelling a number in [lo, hi]."""
    if width == 0:
        return EMPTY
    p = 16 ** (width - 1)
    lo_d, hi_d = divmod(lo, p)[0], divmod(hi, p)[0]
    if lo_d == hi_d:
        return seq([_hex_digits(lo_d, lo_d), _hex_fixed(lo % p, hi % p, width - 1)])
    alts: List[Optional[Expr]] = []
    first_full, last_full = lo_d, hi_d
    if lo % p:
        alts.append(seq([_hex_digits(lo_d, lo_d), _hex_fixed(lo % p, p - 1, width - 1)]))
        first_full += 1
    last = None
    if hi % p != p - 1:
        last = seq([_hex_digits(hi_d, hi_d), _hex_fixed(0, hi % p, width - 1)])
        last_full -= 1
    if first_full <= last_full:
        alts.append(seq([_hex_digits(first_full, last_full), _hex_fixed(0, p - 1, width - 1)]))
    alts.append(last)
    out = choice(alts)
    assert out is not None
    return out


def _hex4_in(ranges: Sequence[Tuple[int, int]]) -> Optional[Expr]:
    return choice([_hex_fixed(lo, hi, 4) for lo, hi in normalize_ranges(ranges)])


#: Characters a JSON string holds raw: not ``"``, ``\\``, a control character or a surrogate.
_RAW_RANGES = ((0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, 0x10FFFF))  # normalized


_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


_SHORT_ESCAPE_CLASS = tuple(normalize_ranges((ord(k), ord(k)) for k in _SHORT_ESCAPES))


#: After a backslash: ``u`` + high surrogate, ``\\u`` + low surrogate (one character).
_SURROGATE_PAIR_TAIL = Seq(
    (Literal(b"u"), _hex_fixed(0xD800, 0xDBFF, 4), Literal(b"\\u"), _hex_fixed(0xDC00, 0xDFFF, 4))
)


@lru_cache(maxsize=4096)
def _char_not_in(excluded: FrozenSet[str]) -> Expr:
    """One JSON string character (raw or escaped) whose decoded code point is not in ``excluded``.

    A surrogate-pair escape is one character; lone surrogate escapes are never generated. When
    ``excluded`` holds a character outside the BMP, surrogate-pair escapes are left out
    entirely (an under-approximation: keys spelled that way are rejected, never wrongly accepted).
    """
    cps = {ord(c) for c in excluded}
    alts: List[Optional[Expr]] = [CharClass(tuple(_minus(_RAW_RANGES, cps)))]
    shorts = [k for k, v in _SHORT_ESCAPES.items() if ord(v) not in cps]
    esc: List[Optional[Expr]] = []
    if shorts:
        esc.append(CharClass(tuple(normalize_ranges((ord(k), ord(k)) for k in shorts))))
    bmp = _minus([(0, 0xD7FF), (0xE000, 0xFFFF)], [c for c in cps if c <= 0xFFFF])
    h = _hex4_in(bmp)
    if h is not None:
        esc.append(seq([Literal(b"u"), h]))
    if not any(c > 0xFFFF for c in cps):
        esc.append(_SURROGATE_PAIR_TAIL)
    e = choice(esc)
    if e is not None:
        alts.append(seq([Literal(b"\\"), e]))
    out = choice(alts)
    assert out is not None
    return out


def _char_is(c: str) -> Expr:
    """Every spelling of the one JSON string character ``c`` (raw, short escape, ``\\u``)."""
    cp = ord(c)
    alts: List[Optional[Expr]] = []
    if any(lo <= cp <= hi for lo, hi in _RAW_RANGES):
        alts.append(Literal(c.encode("utf-8")))
    for k, v in _SHORT_ESCAPES.items():
        if v == c:
            alts.append(Literal(b"\\" + k.encode()))
    if cp <= 0xFFFF:
        alts.append(seq([Literal(b"\\u"), _hex_fixed(cp, cp, 4)]))
    else:
        v = cp - 0x10000
        hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
        alts.append(seq([Literal(b"\\u"), _hex_fixed(hi, hi, 4), Literal(b"\\u"), _hex_fixed(lo, lo, 4)]))
    out = choice(alts)
    assert out is not None
    return out


@lru_cache(maxsize=4096)
def _string_literal(s: str) -> Expr:
    """The JSON string ``s``: its raw-UTF-8 spelling and its ``ensure_ascii`` spelling."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return Literal(b'"' + s.encode("ascii") + b'"')  # one spelling, nothing escaped
    asc = json.dumps(s).encode("ascii")
    try:
        raw = json.dumps(s, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only the escaped spelling exists
        return Literal(asc)
    return Literal(raw) if raw == asc else Choice((Literal(raw), Literal(asc)))
