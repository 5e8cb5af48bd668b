"""ECMA-262 ``pattern`` s: search semantics, ECMA-262's meaning where Python's ``re`` differs,
and the match spelled as JSON string content."""

from __future__ import annotations

import functools
import re
from typing import Dict, List, Optional, Tuple

import numpy

from ...errors import GrammarError
from ..ir import (
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
from ..regex import parse_regex
from ..utf8 import complement_ranges, normalize_ranges
from .escapes import _ascii_spellings, _json_char_of
from .repeats import _QUOTE, Ranges, _cache, _repeat


def json_content(e: Expr) -> Optional[Expr]:
    """Rewrite a regex IR over decoded characters into IR over JSON string content (every
    spelling of each character). None when e matches nothing encodable.

    Example:
        >>> from agentgrammar import Grammar
        >>> from agentgrammar.grammar.ir import Rule
        >>> g = Grammar.from_rules([Rule("root", json_content(parse_regex("a+")))])
        >>> [g.accepts(s) for s in ("aa", "a\\u0061", 'a"')]
        [True, True, False]
    """
    if isinstance(e, CharClass):
        ranges = complement_ranges(e.ranges) if e.negated else list(e.ranges)
        return _json_char_of(ranges)
    if isinstance(e, Literal):
        text = e.value.decode("utf-8", "surrogatepass")
        ascii_spellings = _ascii_spellings()
        items: List[Expr] = []
        for ch in text:
            cp = ord(ch)
            spelled = ascii_spellings[cp] if cp < 0x80 else _json_char_of([(cp, cp)])
            if spelled is None:
                return None
            items.append(spelled)
        return seq(items)
    if isinstance(e, Seq):
        parts = []
        for item in e.items:
            p = json_content(item)
            if p is None:
                return None
            parts.append(p)
        return seq(parts)
    if isinstance(e, Choice):
        return choice([json_content(x) for x in e.items])
    if isinstance(e, Repeat):
        body = json_content(e.item)
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


# Python's Unicode-wide \d \w \s, and their union with ECMA-262's: the converter no longer
# uses them (patterns are ECMA-262's, as JSON Schema says), but tools/bench.py names them among
# the process tables it keeps; they go when it stops naming them.
_ECMA_SPACE: Ranges = [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                       (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
                       (0xFEFF, 0xFEFF)]  # fmt: skip


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


# The pieces of a pattern that _portable copies whole (an escape, a comment, a class: a
# first "]" is a member, an escape inside is two characters, a trailing "\\" one) or rewrites
# (a "." outside them, group 1).
_PORTABLE_TOKENS = re.compile(
    r"\\[\s\S]|\(\?#[^)]*\)?|\[\^?(?:\\[\s\S]|[\s\S])?(?:\\[\s\S]|\\\Z|[^\]\\])*\]?|(\.)"
)


def _portable(pattern: str) -> str:
    """Rewrite pattern so that ``.`` excludes every ECMA-262 line terminator (``parse_regex``'s
    excludes only ``\\n``). The class escapes are ECMA-262's already in ``parse_regex``
    (``\\d`` ``[0-9]``, ``\\w`` ``[A-Za-z0-9_]``, ``\\s`` ECMA white space and line
    terminators, U+FEFF included and U+0085 not; ``\\D \\W \\S`` their complements).
    One ``re`` scan: escapes, comments and classes are copied, a ``.`` elsewhere replaced."""
    if "." not in pattern:
        return pattern
    return _PORTABLE_TOKENS.sub(_portable_token, pattern)


def _portable_token(m: "re.Match[str]") -> str:
    return _ECMA_DOT if m.group(1) else m.group(0)


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
    runs: List[Expr] = []
    for (start, end), bodies in groups.items():
        # Pad the unanchored sides textually: an anchor left inside a body is then not at
        # the pattern's edge and parse_regex reports it instead of silently ignoring it.
        body = bodies[0] if len(bodies) == 1 else "(?:" + "|".join(bodies) + ")"
        run = None if start else _run_search(body, end)
        if run is not None:
            runs.append(run)
        else:
            pieces.append(("" if start else _ANY_TEXT) + body + ("" if end else _ANY_TEXT))
    regex = pieces[0] if len(pieces) == 1 else "|".join(f"(?:{p})" for p in pieces)
    try:
        found = choice(runs + ([parse_regex(regex)] if pieces else []))
        assert found is not None  # (a group at least)
        return found
    except GrammarError:
        parse_regex(pattern)
        raise GrammarError(
            f"regex pattern {pattern!r}: an anchor ('^', '$', '\\A', '\\Z') is only supported at the "
            "start or end of a top-level alternative"
        ) from None


def _pattern_content(pattern: str) -> Expr:
    """JSON string content (no quotes) whose decoded text contains a match of pattern."""
    out = json_content(pattern_chars(pattern))
    if out is None:
        raise GrammarError(f"regex pattern {pattern!r} matches no valid string (only surrogate code points)")
    return out


@_cache
def pattern_string(pattern: str) -> Expr:
    """A quoted JSON string whose decoded value contains a match of ``pattern`` (JSON Schema /
    ECMA-262 ``RegExp.test`` search semantics).

    ``^`` at the start and ``$`` at the end of a top-level alternative anchor it; other sides
    match anywhere. Each character may be spelled any way JSON allows (raw, short escape, or
    ``\\uXXXX`` in either case, surrogate pairs for astral characters), so both
    ``json.dumps(s)`` and ``json.dumps(s, ensure_ascii=False)`` are accepted; lone surrogate
    escapes are rejected.

    The dialect is ECMA-262's, as JSON Schema specifies (and its test suite's
    ``ecmascript-regex`` cases check), where Python's ``re`` differs: ``.`` excludes ``\\n \\r
    \\u2028 \\u2029``; ``$`` is the very end (Python's ``$`` also matches before a final
    ``\\n``); ``\\d`` / ``\\w`` are ASCII and ``\\s`` is ECMA's white space (U+FEFF
    included, U+0085 not), with ``\\D \\W \\S`` their complements: ``"٣"`` matches ``\\D``,
    which a Python validator disagrees with. Unsupported regex syntax
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


def _run_search(body: str, end: bool) -> Optional[Expr]:
    """The strings that hold a run of ``m`` characters of a class X somewhere (at their end if
    ``end``), for a body X{m,n} or X (m = 1) found anywhere, as (X{0,m-1} Y)* X{m} any text
    (``end``: (X* Y)* X{m} X*), Y every character but X; else None. Padded with any text
    instead, a run may begin at every character, and the subset construction tracks each
    (quadratic in m: an unanchored ``[a-zA-Z0-9_-]{162}``)."""
    try:
        e = parse_regex(body)
    except GrammarError:
        return None
    if type(e) is Repeat and type(e.item) is CharClass and e.min >= 1:
        x, m = e.item, e.min
    elif type(e) is CharClass:
        x, m = e, 1
    else:
        return None
    y = CharClass(x.ranges, not x.negated)
    if end:
        return seq([Repeat(seq([Repeat(x, 0, None), y]), 0, None), Repeat(x, m, m), Repeat(x, 0, None)])
    short = [Repeat(x, 0, m - 1)] if m > 1 else []
    return seq([Repeat(seq([*short, y]), 0, None), Repeat(x, m, m), _any_text()])


@functools.lru_cache(maxsize=1)
def _any_text() -> Expr:
    return parse_regex(_ANY_TEXT)


def _anchored_string(regex: str) -> Expr:
    ir = json_content(parse_regex(regex))
    assert ir is not None
    return seq([_QUOTE, ir, _QUOTE])
