"""``format`` strings as shared base rules (``json_format_<name>``) and as automata."""

from __future__ import annotations

from functools import lru_cache
from typing import (
    Any,
    Dict,
    Mapping,
    Optional,
    Tuple,
)

from .. import json_values
from ..char_dfa import CharDFA
from ..ir import (
    CharClass,
    Choice,
    Expr,
    Literal,
    Repeat,
    Rule,
    Seq,
)
from ..normalize import normalize_rules
from .keywords import _INTERNAL_KW

#: The base rule of each supported format's JSON string (``json_format_date_time``, ...).
_FORMAT_RULES = {f: "json_format_" + f.replace("-", "_") for f in json_values.SUPPORTED_FORMATS}


_FORMAT_OF_RULE = {rule: f for f, rule in _FORMAT_RULES.items()}


# Their bodies, and those of the rules their counted repeats use, by rule name (_format_rule_body).
_FORMAT_BODIES: Dict[str, Expr] = {}


def _format_rule_body(name: str) -> Expr:
    """The body of format rule ``name`` (``_FORMAT_RULES``) or of one of its repeat rules.

    A format's string is large (``date-time``: exact month lengths and leap years) and the
    same in every schema, so it is a base rule: its checks and serialized nodes are derived
    once, however many properties and schemas use it. It is normalized here, once: its counted
    repeats' items become rules of their own (``<name>_repeat_<n>``, base rules too), which
    the normalization of every grammar using it would otherwise redo and serialize anew.
    """
    if name not in _FORMAT_BODIES:  # a format's own rule (its repeat rules come with it)
        body = json_values.format_string(_FORMAT_OF_RULE[name])
        assert body is not None
        for r in normalize_rules([Rule(name, body)], use_pieces=False):
            _FORMAT_BODIES[r.name] = r.body
    return _FORMAT_BODIES[name]


@lru_cache(maxsize=None)
def format_dfa(name: str) -> CharDFA:
    """The automaton of the characters of format ``name`` (a supported one), built once."""
    expr = json_values.format_chars(name)
    assert expr is not None
    return CharDFA.from_expr(expr)


# Each format's range of lengths (format_lengths): constants of the format, kept for the process
# like its rule bodies.
_FORMAT_LENGTHS: Dict[str, Tuple[int, Optional[int]]] = {}


def format_lengths(name: str) -> Tuple[int, Optional[int]]:
    """At most the fewest and at least the most characters (None: no bound) of a string of
    format ``name`` (a supported one), read from its regex: bounds around this range constrain
    nothing, and the format's own small string serves (its automaton under the bounds took
    15-30 ms to build for an ``email`` or a ``hostname``).

    Example:
        >>> format_lengths("uuid"), format_lengths("uri")[1]
        ((36, 36), None)
    """
    found = _FORMAT_LENGTHS.get(name)
    if found is None:
        chars = json_values.format_chars(name)
        assert chars is not None
        found = _FORMAT_LENGTHS[name] = regex_lengths(chars)
    return found


def lengths_hold(name: str, lo: int, hi: Optional[int]) -> bool:
    """Whether every string of format ``name`` has ``lo`` to ``hi`` characters (``format_lengths``
    within the bounds): the bounds then constrain nothing.

    Example:
        >>> lengths_hold("uuid", 0, 36), lengths_hold("uuid", 0, 35), lengths_hold("uri", 1, None)
        (True, False, True)
    """
    return lengths_within(format_lengths(name), lo, hi)


def lengths_within(lengths: Tuple[int, Optional[int]], lo: int, hi: Optional[int]) -> bool:
    """Whether a range of lengths (``regex_lengths``: at most the fewest, at least the most)
    lies within ``lo`` to ``hi`` (None: no bound)."""
    shortest, longest = lengths
    return lo <= shortest and (hi is None or (longest is not None and hi >= longest))


def sole_format(schema: Mapping[str, Any]) -> Optional[str]:
    """The format of a string schema when it is its only character constraint (a supported
    format, no pattern, no internal keyword), else None."""
    fmt = schema.get("format")
    if fmt not in json_values.SUPPORTED_FORMATS or "pattern" in schema:
        return None
    return None if any(schema.get(k) for k in _INTERNAL_KW) else fmt


def regex_lengths(e: Expr) -> Tuple[int, Optional[int]]:
    """The fewest and most characters of the strings of regex IR ``e``, from its structure: never
    above the fewest nor below the most, as a part that matches nothing still counts.

    Example:
        >>> from agentgrammar.grammar.regex import parse_regex
        >>> regex_lengths(parse_regex("[0-9]{3}(-[0-9]{4})?")), regex_lengths(parse_regex("a+"))
        ((3, 8), (1, None))
    """
    if isinstance(e, Literal):
        n = len(e.value.decode("utf-8", "replace"))
        return n, n
    if isinstance(e, CharClass):
        return 1, 1
    if isinstance(e, Seq):
        lo, hi = 0, 0
        for x in e.items:
            a, b = regex_lengths(x)
            lo, hi = lo + a, None if hi is None or b is None else hi + b
        return lo, hi
    if isinstance(e, Choice):  # (a KeyTrie is never made by the regex parser)
        pairs = [regex_lengths(x) for x in e.items]
        highs = [b for _, b in pairs]
        return min((a for a, _ in pairs), default=0), None if None in highs else max(highs, default=0)
    if isinstance(e, Repeat):
        a, b = regex_lengths(e.item)
        high = None if b is None or (e.max is None and b > 0) else b * (0 if e.max is None else e.max)
        return a * e.min, high
    return 0, None  # anything else: no bound known
