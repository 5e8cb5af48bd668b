"""How many characters the strings of a pattern or a format have, read from their regex: length
bounds that every such string meets constrain nothing, and are dropped before the automaton
of the constraints is paired with a count.

Example:
    >>> bounds_implied("^[a-z]+$", None, 1, None), bounds_implied(None, "uuid", 0, 35)
    (True, False)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Dict, Optional, Tuple

from .. import json_values
from ..ir import CharClass, Choice, Expr, Literal, Repeat, Seq

Lengths = Tuple[int, Optional[int]]


def regex_lengths(e: Expr) -> Lengths:
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


def lengths_within(lengths: Lengths, lo: int, hi: Optional[int]) -> bool:
    """Whether a range of lengths (``regex_lengths``: at most the fewest, at least the most)
    lies within ``lo`` to ``hi`` (None: no bound)."""
    shortest, longest = lengths
    return lo <= shortest and (hi is None or (longest is not None and hi >= longest))


# Each format's range of lengths (format_lengths): constants of the format, kept for the process
# like its rule bodies.
_FORMAT_LENGTHS: Dict[str, Lengths] = {}


def format_lengths(name: str) -> Lengths:
    """At most the fewest and at least the most characters (None: no bound) of a string of
    format ``name`` (a supported one): bounds around this range constrain nothing, and the
    format's own small string serves instead of its automaton under the bounds.

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


@lru_cache(maxsize=512)
def pattern_lengths(pattern: str) -> Lengths:
    """``regex_lengths`` of the strings that ``pattern`` matches (unanchored, a side is any text)."""
    return regex_lengths(json_values.pattern_chars(pattern))


def _pattern_lengths_hold(pattern: str, lo: int, hi: Optional[int]) -> bool:
    """Whether every string that ``pattern`` matches has ``lo`` to ``hi`` characters
    (``"minLength": 1`` beside ``^[a-z]+$``, the usual case)."""
    try:
        return lengths_within(pattern_lengths(pattern), lo, hi)
    except Exception:  # a pattern that does not convert: the usual path says why
        return False


def bounds_implied(pattern: Optional[str], fmt: Optional[str], lo: int, hi: Optional[int]) -> bool:
    """Whether length bounds ``lo..hi`` (some) constrain nothing: every string of the format
    (a supported one), or that the pattern matches, has that many characters, and the other
    string constraints only narrow them."""
    return bool(lo or hi is not None) and (
        (fmt is not None and lengths_hold(fmt, lo, hi))
        or (pattern is not None and _pattern_lengths_hold(pattern, lo, hi))
    )
