"""Reading the ``pythonic`` layout's keyword arguments back (``read_arguments``): a small reader
of Python literals, written here so that nothing of the model's text is ever evaluated (no
``eval``; not even ``ast``, whose parser recurses on hostile nesting).

It reads what the grammar writes and the other ways Python spells the same literals: strings in
double or single quotes with Python's escapes (``\\xhh``, ``\\uXXXX``, ``\\UXXXXXXXX``, octal;
an unknown escape keeps its backslash, as in Python, except ``\\/``, which is JSON's ``/``; a
``\\uD83D\\uDE00`` surrogate pair is one character, as in JSON), integers and floats in decimal
(no ``0x``, ``_`` or ``j``), ``True`` / ``False`` / ``None``, lists, dicts with string keys,
whitespace between tokens and a trailing comma. Anything else (a name, a call, an operator, a
tuple, a set, a prefixed or triple-quoted string) is a ``PythonLiteralError`` naming it and its
offset, as are the values a tool must never get (JSON's limits: ``NaN`` / ``inf``, floats past
the float range, integers of more than ``MAX_INT_DIGITS`` digits, nesting past
``MAX_JSON_DEPTH``, lone surrogates), a key or an argument given twice and a positional
argument.

Example:
    >>> read_arguments('city="Oslo", days=3, tags=[\\'a\\', None])', 0)
    ({'city': 'Oslo', 'days': 3, 'tags': ['a', None]}, 37)
    >>> read_arguments("city=open('x')", 0)
    Traceback (most recent call last):
    ...
    agentgrammar.formats.pythonic_parse.PythonLiteralError: the name 'open', which is not a literal (nothing is evaluated) (at offset 5)
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Tuple

from ..errors import AgentGrammarError
from .arguments import MAX_INT_DIGITS, MAX_JSON_DEPTH

__all__ = ["PythonLiteralError", "read_arguments"]

_WS = re.compile(r"[ \t\r\n]*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_WORDS = {"True": True, "False": False, "None": None}
_NOT_NUMBERS = ("NaN", "nan", "Infinity", "inf")
_SIMPLE_ESCAPES = {
    "\\": "\\",
    "'": "'",
    '"': '"',
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "/": "/",
}


class PythonLiteralError(AgentGrammarError, ValueError):
    """Text that is not the keyword arguments of a pythonic call. ``problem`` says what (without
    the offset); ``offset`` is the character offset in the text read.

    Example:
        >>> err = PythonLiteralError("a positional argument", offset=4)
        >>> str(err), err.problem, err.offset
        ('a positional argument (at offset 4)', 'a positional argument', 4)
    """

    def __init__(self, problem: str, *, offset: int) -> None:
        super().__init__(f"{problem} (at offset {offset})")
        self.problem = problem
        self.offset = offset


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _show(text: str, pos: int) -> str:
    return repr(text[pos : pos + 20]) if pos < len(text) else "the end of the text"


def read_arguments(text: str, pos: int) -> Tuple[Dict[str, Any], int]:
    """The keyword arguments at ``pos`` (``key=value, ...``, possibly none) and the offset of the
    ``)`` that ends them (not consumed). ``PythonLiteralError`` for anything else.

    Example:
        >>> read_arguments("now()", 4)
        ({}, 4)
    """
    args: Dict[str, Any] = {}
    pos = _skip(text, pos)
    while pos < len(text) and text[pos] != ")":
        name = _NAME.match(text, pos)
        after = _skip(text, name.end()) if name is not None else pos
        if name is None or not text.startswith("=", after) or text.startswith("==", after):
            raise PythonLiteralError(
                f"expected a keyword argument NAME=VALUE, found {_show(text, pos)} (a positional "
                "argument or not an argument)",
                offset=pos,
            )
        key = name.group()
        if key in args:
            raise PythonLiteralError(f"the argument {key!r} is given twice", offset=pos)
        args[key], pos = _value(text, _skip(text, after + 1), 1, MAX_JSON_DEPTH - 1)
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif pos < len(text) and text[pos] != ")":
            raise PythonLiteralError(
                f"expected ',' or ')' after an argument, found {_show(text, pos)}", offset=pos
            )
    if pos >= len(text):
        raise PythonLiteralError("the call's arguments are not closed with ')'", offset=pos)
    return args, pos


def _value(text: str, pos: int, depth: int, max_depth: int) -> Tuple[Any, int]:
    """The literal at ``pos`` (inside ``depth`` containers) and the offset after it."""
    c = text[pos : pos + 1]
    if c in ('"', "'"):
        return _string(text, pos)
    if c == "[" or c == "{":
        if depth > max_depth:
            raise PythonLiteralError(
                f"arrays or objects nested more than {max_depth} levels deep", offset=pos
            )
        return (_list if c == "[" else _dict)(text, pos, depth, max_depth)
    name = _NAME.match(text, pos + (c == "-"))
    if name is not None:
        word = text[pos : name.end()]
        if word in _WORDS:
            return _WORDS[word], name.end()
        if name.group() in _NOT_NUMBERS:
            raise PythonLiteralError(f"{word}, which is not a JSON number nor a literal", offset=pos)
        if c != "-" and text.startswith(("'", '"'), name.end()):
            raise PythonLiteralError(f"a {word!r}-prefixed string (only plain strings are read)", offset=pos)
        raise PythonLiteralError(
            f"the name {name.group()!r}, which is not a literal (nothing is evaluated)", offset=pos
        )
    number = _NUMBER.match(text, pos)
    if number is not None:
        return _number(text, number.group(), pos)
    if c == "(":
        raise PythonLiteralError("a tuple or parenthesized expression (only literals are read)", offset=pos)
    raise PythonLiteralError(f"expected a literal, found {_show(text, pos)}", offset=pos)


def _number(text: str, token: str, pos: int) -> Tuple[Any, int]:
    end = pos + len(token)
    if end < len(text) and (text[end].isalnum() or text[end] in "_."):
        raise PythonLiteralError(
            f"the number {text[pos : end + 1]!r}... is not a decimal literal this reader takes", offset=pos
        )
    digits = token.lstrip("-")
    if not any(ch in token for ch in ".eE"):
        if len(digits) > 1 and digits[0] == "0" and digits.strip("0"):
            raise PythonLiteralError(f"the integer {token!r} has a leading zero", offset=pos)
        if len(digits) > MAX_INT_DIGITS:
            raise PythonLiteralError(f"an integer with more than {MAX_INT_DIGITS} digits", offset=pos)
        return int(token), end
    value = float(token)
    if not math.isfinite(value):
        shown = token if len(token) <= 24 else token[:21] + "..."
        raise PythonLiteralError(f"the number {shown}, too large for a float", offset=pos)
    return value, end


def _list(text: str, pos: int, depth: int, max_depth: int) -> Tuple[List[Any], int]:
    out: List[Any] = []
    pos = _skip(text, pos + 1)
    while not text.startswith("]", pos):
        if pos >= len(text):
            raise PythonLiteralError("a list that is not closed", offset=pos)
        item, pos = _value(text, pos, depth + 1, max_depth)
        out.append(item)
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith("]", pos):
            raise PythonLiteralError(f"expected ',' or ']' in a list, found {_show(text, pos)}", offset=pos)
    return out, pos + 1


def _dict(text: str, pos: int, depth: int, max_depth: int) -> Tuple[Dict[str, Any], int]:
    out: Dict[str, Any] = {}
    pos = _skip(text, pos + 1)
    while not text.startswith("}", pos):
        if pos >= len(text):
            raise PythonLiteralError("a dict that is not closed", offset=pos)
        if text[pos] not in ('"', "'"):
            raise PythonLiteralError(
                f"a dict key that is not a string (or a set), found {_show(text, pos)}", offset=pos
            )
        key, after = _string(text, pos)
        if key in out:
            raise PythonLiteralError(f"a dict that names the key {key!r} twice", offset=pos)
        after = _skip(text, after)
        if not text.startswith(":", after):
            raise PythonLiteralError(
                f"expected ':' after a dict key, found {_show(text, after)}", offset=after
            )
        out[key], pos = _value(text, _skip(text, after + 1), depth + 1, max_depth)
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith("}", pos):
            raise PythonLiteralError(f"expected ',' or '}}' in a dict, found {_show(text, pos)}", offset=pos)
    return out, pos + 1


def _string(text: str, pos: int) -> Tuple[str, int]:
    """The string literal at ``pos`` (its quote) and the offset after it."""
    quote = text[pos]
    if text.startswith(quote * 3, pos):
        raise PythonLiteralError("a triple-quoted string (only one-line strings are read)", offset=pos)
    plain = re.compile(r"[^\\\r\n" + quote + "]+")
    out: List[str] = []
    i = pos + 1
    while True:
        run = plain.match(text, i)
        if run is not None:
            out.append(run.group())
            i = run.end()
        c = text[i : i + 1]
        if c == quote:
            break
        if c != "\\":
            raise PythonLiteralError("a string that is not closed on its line", offset=pos)
        ch, i = _escape(text, i)
        out.append(ch)
    return "".join(out), i + 1


def _hex(text: str, at: int, n: int, start: int) -> int:
    digits = text[at : at + n]
    if len(digits) != n or not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise PythonLiteralError(f"a truncated escape {text[start : at + n]!r}", offset=start)
    return int(digits, 16)


def _escape(text: str, i: int) -> Tuple[str, int]:
    """The character that the escape at ``i`` (its backslash) stands for, and the offset after."""
    c = text[i + 1 : i + 2]
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c], i + 2
    if c and c in "01234567":
        m = re.compile("[0-7]{1,3}").match(text, i + 1)
        assert m is not None
        return chr(int(m.group(), 8)), m.end()
    if c == "x":
        return chr(_hex(text, i + 2, 2, i)), i + 4
    if c in ("u", "U"):
        width = 4 if c == "u" else 8
        code = _hex(text, i + 2, width, i)
        end = i + 2 + width
        if code > 0x10FFFF:
            raise PythonLiteralError(f"the escape {text[i:end]!r} is past the last code point", offset=i)
        if 0xD800 <= code <= 0xDBFF and text.startswith("\\u", end):
            low = _hex(text, end + 2, 4, end)
            if 0xDC00 <= low <= 0xDFFF:  # a pair: one astral character, as JSON reads it
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), end + 6
        if 0xD800 <= code <= 0xDFFF:
            raise PythonLiteralError(
                f"the lone surrogate {text[i:end]!r} in a string (not Unicode text)", offset=i
            )
        return chr(code), end
    if c in ("", "\n", "\r", "N"):
        what = "a line continuation" if c in ("\n", "\r") else "a named escape" if c == "N" else "an escape"
        raise PythonLiteralError(f"{what} in a string (not read)", offset=i)
    return "\\" + c, i + 2  # an unknown escape keeps its backslash, as in Python
