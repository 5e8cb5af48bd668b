"""JSON numbers within bounds (fractions and exponents included), exactly."""

from __future__ import annotations

from fractions import Fraction
from typing import List, Optional, Tuple

from ...errors import GrammarError
from ..ir import (
    EMPTY,
    Choice,
    Expr,
    Literal,
    Repeat,
    Seq,
    choice,
    seq,
)
from .integers import _nat
from .numeric_bounds import _bounds, _check_digits, _describe, _split
from .repeats import _DIGIT, _NONZERO, Number, _cache, _cc, _opt

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
