"""JSON integers within bounds, as a grammar over their decimal digits."""

from __future__ import annotations

import math
from typing import List, Optional

from ...errors import GrammarError
from ..ir import (
    Expr,
    Literal,
    choice,
    seq,
)
from .escapes import _fixed_width, _positions
from .numeric_bounds import _bounds, _describe
from .repeats import _DIGIT, _MAX_DIGITS, _NONZERO, Number, _cache, _cc, repeat_chars


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
        alts.append(seq([_NONZERO, repeat_chars(_DIGIT, na, None)]))  # every longer integer
    else:
        nb = len(str(b))
        width(na)
        if nb - 1 >= na + 1:  # full widths na+1 .. nb-1
            alts.append(seq([_NONZERO, repeat_chars(_DIGIT, na, nb - 2)]))
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
