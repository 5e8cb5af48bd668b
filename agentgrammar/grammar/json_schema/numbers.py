"""Number and integer schemas: bounds, integer ``multipleOf`` and negated values."""

from __future__ import annotations

import math
from decimal import Decimal
from functools import lru_cache
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Tuple,
)

from ...errors import GrammarError, SchemaError
from .. import json_values
from ..char_dfa import CharDFA
from ..ir import (
    CharClass,
    Expr,
)
from ..regex import parse_regex
from .base_rules import base
from .keywords import _NOT_INTEGER, _NOT_NUMBERS

if TYPE_CHECKING:
    from .convert import Converter


_MAX_MODULUS = 2_000  # multipleOf k for integers is a DFA of k + 3 states


@lru_cache(maxsize=1)
def _canonical_number_dfa() -> CharDFA:
    return CharDFA.from_expr(parse_regex(r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?"))


def _number_spellings(v: Any) -> List[str]:
    """The spellings of number ``v`` in the canonical language (two for zero: ``0``, ``-0``)."""
    d = Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    if d == 0:
        return ["0", "-0"]
    text = format(d.normalize(), "f")
    return [text.rstrip("0").rstrip(".") if "." in text else text]


@lru_cache(maxsize=1)
def _fraction_dfa() -> CharDFA:
    return CharDFA.from_expr(parse_regex(r"-?(0|[1-9][0-9]*)\.[0-9]*[1-9][0-9]*"))


@lru_cache(maxsize=64)
def _remainder_dfa(k: int) -> CharDFA:
    """JSON integers ``0|-?[1-9][0-9]*`` that ``k`` divides: one state per remainder."""
    start, minus, zero = k, k + 1, k + 2  # remainders are states 0..k-1 (0 accepting)
    edges: List[List[Tuple[int, int, int]]] = [[] for _ in range(k + 3)]
    for r in range(k):
        edges[r] = [(0x30 + d, 0x30 + d, (r * 10 + d) % k) for d in range(10)]
    edges[start] = [(0x2D, 0x2D, minus), (0x30, 0x30, zero)] + [
        (0x30 + d, 0x30 + d, d % k) for d in range(1, 10)
    ]
    edges[minus] = [(0x30 + d, 0x30 + d, d % k) for d in range(1, 10)]
    accepting = [r == 0 for r in range(k)] + [False, False, True]
    order = [start, *range(k), minus, zero]  # the start must be state 0
    new = {old: i for i, old in enumerate(order)}
    remapped = [[(lo, hi, new[t]) for lo, hi, t in edges[old]] for old in order]
    return CharDFA(remapped, [accepting[old] for old in order]).minimized()


def number_schema(conv: Converter, schema: Dict[str, Any], path: str, *, integer: bool) -> Optional[Expr]:
    if integer and schema.get(_NOT_INTEGER):
        return None
    expr = number_in_bounds(conv, schema, path, integer=integer)
    if expr is None or not ("multipleOf" in schema or schema.get(_NOT_INTEGER) or schema.get(_NOT_NUMBERS)):
        return expr
    keyword = "multipleOf" if "multipleOf" in schema else "not"
    try:
        dfa = CharDFA.from_expr(expr)
        if "multipleOf" in schema:
            dfa = dfa.intersect(multiples(conv, schema["multipleOf"], path))
        if schema.get(_NOT_INTEGER):
            dfa = dfa.intersect(_fraction_dfa())
        if schema.get(_NOT_NUMBERS):
            # one spelling per value (no exponent, no trailing fraction zeros): then leaving
            # out the values' spellings leaves out the values
            dfa = dfa.intersect(_canonical_number_dfa()).minus(
                CharDFA.literal_set([sp for v in schema[_NOT_NUMBERS] for sp in _number_spellings(v)])
            )
    except GrammarError as e:
        conv.unsupported(keyword, path, f"cannot be expressed: {e}")
        return expr
    return dfa.to_ir(lambda ranges: CharClass(tuple(ranges)), conv.rules, conv.fresh, "number")


def multiples(conv: Converter, step: Any, path: str) -> CharDFA:
    """JSON integers that an integer ``step`` divides, by a remainder automaton over the
    digits. Numbers are limited to the integer spelling (``4.0`` and ``4e0`` are not
    generated): sound, and the same under exact and floating-point arithmetic. A fractional
    step is refused: validators that divide binary floats call ``3`` no multiple of ``0.1``,
    so no grammar can agree with them all."""
    # (a float past its range, as 1e400 is read, is infinite: no integer to divide by)
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not 0 < step < math.inf:
        raise conv.fail("'multipleOf' must be a finite number above 0", path, "multipleOf")
    if step != int(step):
        raise GrammarError(f"only integer steps are supported, not {step!r}")
    if step > _MAX_MODULUS:
        raise GrammarError(f"a step above {_MAX_MODULUS} needs too large an automaton")
    return _remainder_dfa(int(step))


def number_in_bounds(conv: Converter, schema: Dict[str, Any], path: str, *, integer: bool) -> Optional[Expr]:
    mn, mx = schema.get("minimum"), schema.get("maximum")
    emn, emx = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    for k, x in (("minimum", mn), ("maximum", mx), ("exclusiveMinimum", emn), ("exclusiveMaximum", emx)):
        if x is not None and not isinstance(x, (int, float)):
            raise conv.fail(f"'{k}' must be a number", path, k)
    # draft 4: boolean exclusive* qualify minimum / maximum
    if isinstance(emn, bool):
        emn, mn = (mn, None) if emn else (None, mn)
    if isinstance(emx, bool):
        emx, mx = (mx, None) if emx else (None, mx)
    if mn is None and mx is None and emn is None and emx is None:
        if "multipleOf" in schema or _NOT_INTEGER in schema or _NOT_NUMBERS in schema:
            # automata need the expression, not a rule
            return parse_regex(r"0|-?[1-9][0-9]*") if integer else json_values.ANY_NUMBER
        return base(conv, "json_integer" if integer else "json_number")
    fn = json_values.integer_expr if integer else json_values.number_expr
    try:
        return fn(mn, mx, emn, emx)
    except SchemaError:
        raise
    except GrammarError as e:
        if "lies in the range" in str(e) or "empty" in str(e):
            return None  # no number of this type is in range: this type contributes nothing
        kw = next(k for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in schema)
        raise conv.fail(f"'{kw}': {e}", path, kw) from None
