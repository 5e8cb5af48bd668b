"""Small IR helpers of the JSON value builders: character classes, and counted repeats: of one
character whole (the engine counts them in the character's automaton), of other items with
large bounds nested in blocks (the engine unrolls up to 256 copies and counts beyond)."""

from __future__ import annotations

import functools
from decimal import Decimal
from fractions import Fraction
from typing import List, Optional, Tuple, Union

from ...errors import GrammarError
from ..ir import (
    EMPTY,
    CharClass,
    Expr,
    Literal,
    Repeat,
    choice,
    seq,
)
from ..utf8 import normalize_ranges

Number = Union[int, float, Decimal, Fraction, str]


Ranges = List[Tuple[int, int]]


_QUOTE = Literal(b'"')


# The public builders are pure and return immutable IR, so results are shared (typed=True keeps
# 1, 1.0 and True apart).
_cache = functools.lru_cache(maxsize=4096, typed=True)


_BLOCK = 256  # larger repeats of an arbitrary item are nested in blocks: the engine counts a
# repeat past 256 copies, and where the item is not one byte automaton whose copies it can tell
# apart (see repeat_chars), a token spanning two counted copies is uncertain in the mask cache
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


def repeat_chars(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    """``item{lo,hi}`` of one character (a byte class, a JSON string's character or escape):
    never split, whatever the bounds. The engine counts such a repeat inside the character's
    own automaton, so a bound of 5000 costs no more states than one of 300.

    >>> r = repeat_chars(_DIGIT, 2, 5000)
    >>> (r.min, r.max)
    (2, 5000)
    """
    if hi is not None and hi < lo:
        raise GrammarError(f"invalid repetition {{{lo},{hi}}}")
    return item if lo == 1 and hi == 1 else Repeat(item, lo, hi)


def repeat(item: Expr, lo: int, hi: Optional[int]) -> Expr:
    """``item{lo,hi}``, large bounds nested in blocks (see ``_BLOCK``)."""
    return _repeat(item, lo, hi)


def _exactly(item: Expr, n: int) -> Expr:
    if n <= _BLOCK:
        return EMPTY if n == 0 else item if n == 1 else Repeat(item, n, n)
    q, r = divmod(n, _BLOCK)
    return seq([_exactly(Repeat(item, _BLOCK, _BLOCK), q), _exactly(item, r)])
