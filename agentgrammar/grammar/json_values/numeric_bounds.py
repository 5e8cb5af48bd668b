"""Numeric bounds read exactly (decimal, not binary floats) and checked: the shared front of
the integer and number builders."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction
from typing import Optional, Tuple

from ...errors import GrammarError
from .repeats import _MAX_DIGITS, Number


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
