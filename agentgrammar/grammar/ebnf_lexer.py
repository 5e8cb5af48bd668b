"""The EBNF front-end's lexer: tokens of xgrammar-style EBNF (names, strings, character
classes, byte strings, numbers, punctuation), with positions for error messages.

Example:
    >>> [t.kind for t in _Lexer('root ::= "a" [b-c]*').tokens()][:4]
    ['name', '::=', 'string', 'class']
"""

from __future__ import annotations

import bisect
from typing import Dict, List, NoReturn, Optional, Tuple

from .ir import (
    MAX_CODE_POINT,
    ByteClass,
    CharClass,
    Literal,
)
from .source_text import (
    error_at,
    is_surrogate,
    line_starts,
    surrogate_message,
)

_WHITESPACE = " \t\n\r"
_NAME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.")
_NAME_CHARS = _NAME_FIRST | frozenset("0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")

# Escapes valid in strings and classes (xgrammar's C escapes, plus GBNF's \[ and \]).
_ESCAPES: Dict[str, int] = {
    "'": 0x27,
    '"': 0x22,
    "?": 0x3F,
    "\\": 0x5C,
    "/": 0x2F,
    "a": 0x07,
    "b": 0x08,
    "f": 0x0C,
    "n": 0x0A,
    "r": 0x0D,
    "t": 0x09,
    "v": 0x0B,
    "0": 0x00,
    "e": 0x1B,
    "[": 0x5B,
    "]": 0x5D,
}
# Extra escapes valid inside a character class (xgrammar's regex metacharacters).
_CLASS_ESCAPES: Dict[str, int] = dict(_ESCAPES, **{c: ord(c) for c in "^$.*+?(){}|-"})
_CLASS_SHORTHANDS = frozenset("dDsSwW")
# --------------------------------------------------------------------------- lexer

# Token kinds.
_NAME, _RULENAME, _STRING, _CLASS, _BYTES, _INT = "name", "rule name", "string", "class", "bytes", "int"
_LPAREN, _LOOKAHEAD, _RPAREN, _LBRACE, _RBRACE = "(", "(=", ")", "{", "}"
_COMMA, _STAR, _PLUS, _QUESTION, _PIPE, _ASSIGN, _EOF = ",", "*", "+", "?", "|", "::=", "end of input"
_AMP, _TILDE = "&", "~"  # intersection and complement (ebnf_automata)
_EQ = "="  # only inside a macro's arguments: TagDispatch(..., excludes=("x"))

_QUANTIFIERS = (_STAR, _PLUS, _QUESTION, _LBRACE)


class _Token:
    __slots__ = ("end", "kind", "start", "value")

    def __init__(self, kind: str, start: int, end: int, value: object = None) -> None:
        self.kind = kind
        self.start = start
        self.end = end
        self.value = value


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.starts = line_starts(text)
        #: rule name offset -> (the text inside its attribute brackets, the offset of the '[')
        self.attributes: Dict[int, Tuple[str, int]] = {}

    def fail(self, offset: int, message: str) -> NoReturn:
        raise error_at(self.text, offset, message, self.starts)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def tokens(self) -> List[_Token]:
        out: List[_Token] = []
        while True:
            tok = self.next()
            out.append(tok)
            if tok.kind == _EOF:
                return out

    def skip_space(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _WHITESPACE:
                self.pos += 1
            elif c == "#":
                while self.pos < n and text[self.pos] not in "\r\n":
                    self.pos += 1
            else:
                return

    def next(self) -> _Token:
        self.skip_space()
        text, start = self.text, self.pos
        if start >= len(text):
            return _Token(_EOF, start, start)
        c = text[start]
        if c == "(":
            if text.startswith("(=", start):
                self.pos += 2
                return _Token(_LOOKAHEAD, start, self.pos)
            self.pos += 1
            return _Token(_LPAREN, start, self.pos)
        if c in ")|{},*+?&~":
            self.pos += 1
            return _Token(c, start, self.pos)
        if c == ":":
            if text.startswith("::=", start):
                self.pos += 3
                return _Token(_ASSIGN, start, self.pos)
            self.fail(start, "unexpected ':' (a rule is defined with '::=')")
        if c == '"':
            return self.string()
        if c == "[":
            return self.char_class()
        if c == "%":
            return self.raw_bytes()
        if c in _NAME_FIRST:
            return self.name()
        if c.isdigit() and c.isascii():
            while self.pos < len(text) and text[self.pos].isascii() and text[self.pos].isdigit():
                self.pos += 1
            return _Token(_INT, start, self.pos, int(text[start : self.pos]))
        if c == "=":
            self.pos += 1
            return _Token(_EQ, start, self.pos)
        if c == "'":
            self.fail(start, 'unexpected "\'": strings are written in double quotes')
        self.fail(start, f"unexpected character {c!r}")

    def name(self) -> _Token:
        text, start = self.text, self.pos
        while self.pos < len(text) and text[self.pos] in _NAME_CHARS:
            self.pos += 1
        name = text[start : self.pos]
        if self.pos < len(text) and text[self.pos] == "[":
            # xgrammar's rule attributes: name[lazy, max_chars=3] ::= ... (on one line)
            window = text[self.pos : self.pos + 400]
            close = window.find("]")
            one_line = close >= 0 and "\n" not in window[:close] and "\r" not in window[:close]
            if one_line and window[close + 1 :].lstrip(" \t").startswith("::="):
                self.attributes[start] = (window[1:close], self.pos)
                self.pos += close + 1
        return _Token(_NAME, start, self.pos, name)

    def escape(self, table: Dict[str, int]) -> int:
        """Read the escape sequence at self.pos (a backslash) and return its code point."""
        text, start = self.text, self.pos
        if start + 1 >= len(text) or text[start + 1] in "\r\n":
            self.fail(start, "incomplete escape sequence")
        c = text[start + 1]
        if c in table:
            self.pos += 2
            return table[c]
        if c == "x":
            end = start + 2
            while end < len(text) and text[end] in _HEX:
                end += 1
            if end == start + 2:
                self.fail(start, "invalid escape '\\x': expected hex digits")
            digits = text[start + 2 : end]
        elif c in "uU":
            width = 4 if c == "u" else 8
            digits = text[start + 2 : start + 2 + width]
            if len(digits) != width or any(d not in _HEX for d in digits):
                self.fail(start, f"invalid escape '\\{c}': expected {width} hex digits")
            end = start + 2 + width
        else:
            self.fail(start, f"invalid escape sequence '\\{c}'")
        cp = int(digits, 16)
        if cp > MAX_CODE_POINT:
            self.fail(start, f"escape '{text[start:end]}' is beyond U+10FFFF")
        self.pos = end
        return cp

    def string(self) -> _Token:
        text, start = self.text, self.pos
        self.pos += 1
        out = bytearray()
        while True:
            if self.pos >= len(text) or text[self.pos] in "\r\n":
                self.fail(start, "unterminated string (strings cannot span lines)")
            c = text[self.pos]
            if c == '"':
                self.pos += 1
                return _Token(_STRING, start, self.pos, bytes(out))
            at = self.pos
            if c == "\\":
                cp = self.escape(_ESCAPES)
            else:
                cp = ord(c)
                self.pos += 1
            if is_surrogate(cp):
                self.fail(at, surrogate_message(cp, "a string"))
            out += _encode(cp)

    def char_class(self) -> _Token:
        text, start = self.text, self.pos
        self.pos += 1
        negated = False
        if self.pos < len(text) and text[self.pos] == "^":
            negated = True
            self.pos += 1
        # Items: (code point, offset) for characters, (None, offset) for an unescaped dash.
        items: List[Tuple[Optional[int], int]] = []
        while True:
            if self.pos >= len(text):
                self.fail(start, "unterminated character class")
            c = text[self.pos]
            if c == "]":
                break
            if c in "\r\n":
                self.fail(self.pos, "unterminated character class (classes cannot span lines)")
            if c == "-":
                items.append((None, self.pos))
                self.pos += 1
            elif c == "\\":
                if self.pos + 1 < len(text) and text[self.pos + 1] in _CLASS_SHORTHANDS:
                    self.fail(
                        self.pos,
                        f"class escape '\\{text[self.pos + 1]}' is not supported in EBNF (as in xgrammar); "
                        "write the ranges out, e.g. [0-9]",
                    )
                at = self.pos
                items.append((self.escape(_CLASS_ESCAPES), at))
            else:
                items.append((ord(c), self.pos))
                self.pos += 1
        self.pos += 1  # the closing ]
        ranges: List[Tuple[int, int]] = []
        i = 0
        while i < len(items):
            at = items[i][1]
            lo = items[i][0]
            lo = 0x2D if lo is None else lo
            if i + 2 < len(items) and items[i + 1][0] is None:
                hi = items[i + 2][0]
                hi = 0x2D if hi is None else hi
                if lo > hi:
                    self.fail(at, f"invalid range in character class: {chr(lo)!r} is after {chr(hi)!r}")
                i += 3
            else:
                hi = lo
                i += 1
            # a character (or range) of surrogates alone matches only invalid UTF-8; a range
            # across them (\x00-\uffff) or a negated class (which only excludes) is fine
            if not negated and is_surrogate(lo) and is_surrogate(hi):
                self.fail(at, surrogate_message(lo, "a character class"))
            ranges.append((lo, hi))
        return _Token(_CLASS, start, self.pos, CharClass(tuple(ranges), negated))

    def raw_bytes(self) -> _Token:
        text, start = self.text, self.pos

        def hex_byte() -> int:
            at = self.pos
            while self.pos < len(text) and text[self.pos] in _HEX and self.pos - at < 2:
                self.pos += 1
            if self.pos == at:
                self.fail(at, "expected hex digits in a raw byte (e.g. %xFF)")
            return int(text[at : self.pos], 16)

        if not text.startswith("%x", start):
            self.fail(start, "unexpected '%' (raw bytes are written %xHH, %xHH.HH or %xHH-HH)")
        self.pos += 2
        first = hex_byte()
        if self.pos < len(text) and text[self.pos] == "-":
            self.pos += 1
            hi = hex_byte()
            if first > hi:
                self.fail(start, f"invalid raw byte range: 0x{first:02X} is after 0x{hi:02X}")
            return _Token(_BYTES, start, self.pos, ByteClass(((first, hi),)))
        value = [first]
        while self.pos < len(text) and text[self.pos] == ".":
            self.pos += 1
            value.append(hex_byte())
        return _Token(_BYTES, start, self.pos, Literal(bytes(value)))


# --------------------------------------------------------------------------- parser
