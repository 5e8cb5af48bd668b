"""Token markers: grammar text that only one vocabulary token can write.

A model family's markers (``<tool_call>``, ``<|channel|>``, ``<|call|>``) are single tokens of
its vocabulary, special or added. A byte-level grammar that writes ``<tool_call>`` as text lets
a model spell it with ``<``, ``tool``, ``_call``, ``>`` and cannot name a special or stop token
at all. A token marker is written in the grammar in a private spelling instead: the byte 0xFF, each
byte of the marker's UTF-8 text as three octal digits written as the bytes 0xF5-0xFC, the byte
0xFE. None of these bytes occurs in UTF-8 text, so no text of the grammar can produce the
spelling, and no word of free text (a trigger, an exclude: all text) can occur inside it; a
vocabulary marked for the marker
(``Vocabulary.with_token_markers``) gives that token the private spelling and bans every other
token holding 0xFF: the marker's token is then the only way to write it.

In Python strings (structural tags, format markers) the private spelling is the text between
the lone surrogates U+DCFF and U+DCFE (``token_marker``), which ``encode_text`` turns into those
bytes. Any other lone surrogate is refused.

Example:
    >>> s = "x" + token_marker("<tool_call>") + "\\n"
    >>> encode_text(s) == b"x" + marker_bytes("<tool_call>") + b"\\n"
    True
    >>> plain_text(s), markers_in_text(s)
    ('x<tool_call>\\n', ['<tool_call>'])
"""

from __future__ import annotations

from typing import Iterable, List, Set

__all__ = [
    "MARKER_CLOSE",
    "MARKER_OPEN",
    "encode_text",
    "marker_bytes",
    "markers_in_bytes",
    "markers_in_text",
    "plain_text",
    "token_marker",
]

#: The characters around a token marker's text in a Python string (lone surrogates, which no
#: text decoded from UTF-8 holds; ``encode_text`` turns them into the bytes 0xFF and 0xFE).
MARKER_OPEN = "\udcff"
MARKER_CLOSE = "\udcfe"
_OPEN_BYTE = b"\xff"
_CLOSE_BYTE = b"\xfe"
_DIGIT0 = 0xF5  # octal digit d is the byte 0xF5 + d


def _spell(data: bytes) -> bytes:
    out = bytearray(_OPEN_BYTE)
    for b in data:
        out += bytes((_DIGIT0 + (b >> 6), _DIGIT0 + ((b >> 3) & 7), _DIGIT0 + (b & 7)))
    out += _CLOSE_BYTE
    return bytes(out)


def _unspell(digits: bytes) -> bytes:
    d = [b - _DIGIT0 for b in digits]
    return bytes((d[k] << 6) | (d[k + 1] << 3) | d[k + 2] for k in range(0, len(d) - 2, 3))


def _check_text(text: str) -> None:
    if not isinstance(text, str) or not text:
        raise ValueError(f"a token marker's text must be a non-empty str, got {text!r}")
    if MARKER_OPEN in text or MARKER_CLOSE in text:
        raise ValueError(f"a token marker's text cannot hold another marker: {text!r}")


def token_marker(text: str) -> str:
    """``text`` as a token marker in a Python string: the token whose text it is, and only it.

    Example:
        >>> token_marker("<|call|>") == "\\udcff<|call|>\\udcfe"
        True
    """
    _check_text(text)
    return MARKER_OPEN + text + MARKER_CLOSE


def marker_bytes(text: str) -> bytes:
    """The private spelling of token marker ``text`` (see the module docstring).

    Example:
        >>> marker_bytes("<")  # "<" is 0x3C, octal 074
        b'\\xff\\xf5\\xfc\\xf9\\xfe'
    """
    _check_text(text)
    return _spell(text.encode("utf-8"))


def encode_text(s: str) -> bytes:
    """The bytes of grammar text ``s``: UTF-8, each token marker in its private spelling.
    ``UnicodeEncodeError`` for a lone surrogate that is not part of a whole marker.

    Example:
        >>> encode_text("a\\udcff<b>\\udcfec") == b"a" + marker_bytes("<b>") + b"c"
        True
        >>> encode_text("\\ud800")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        UnicodeEncodeError: 'utf-8' codec can't encode character '\\ud800' ...
    """
    if MARKER_OPEN not in s:
        return s.encode("utf-8")
    out = bytearray()
    pos = 0
    while True:
        start = s.find(MARKER_OPEN, pos)
        if start < 0:
            out += s[pos:].encode("utf-8")
            return bytes(out)
        end = s.find(MARKER_CLOSE, start + 1)
        inner = s[start + 1 : end] if end > start + 1 else ""
        if not inner or MARKER_OPEN in inner:
            raise UnicodeEncodeError("utf-8", s, start, start + 1, "a token marker that is not closed")
        out += s[pos:start].encode("utf-8")
        out += _spell(inner.encode("utf-8"))
        pos = end + 1


def plain_text(s: str) -> str:
    """``s`` with its token markers written as their text (what the model's tokens decode to).

    Example:
        >>> plain_text(token_marker("<a>") + "b")
        '<a>b'
    """
    return s.replace(MARKER_OPEN, "").replace(MARKER_CLOSE, "")


def markers_in_text(s: str) -> List[str]:
    """The texts of the token markers in ``s``, in order.

    Example:
        >>> markers_in_text("x" + token_marker("<a>") + token_marker("<b>"))
        ['<a>', '<b>']
    """
    out: List[str] = []
    pos = 0
    while True:
        start = s.find(MARKER_OPEN, pos)
        end = s.find(MARKER_CLOSE, start + 1) if start >= 0 else -1
        if end < 0:
            return out
        inner = s[start + 1 : end]
        if inner and MARKER_OPEN not in inner:  # else not a marker: encode_text refuses it
            out.append(inner)
        pos = end + 1


def markers_in_bytes(chunks: Iterable[bytes]) -> Set[str]:
    """The texts of the token markers spelled in grammar literals ``chunks``.

    Example:
        >>> sorted(markers_in_bytes([b"a" + marker_bytes("<x>"), b"plain"]))
        ['<x>']
    """
    out: Set[str] = set()
    for chunk in chunks:
        pos = chunk.find(_OPEN_BYTE)
        while pos >= 0:
            end = chunk.find(_CLOSE_BYTE, pos + 1)
            if end < 0:
                break
            out.add(_unspell(chunk[pos + 1 : end]).decode("utf-8", "replace"))
            pos = chunk.find(_OPEN_BYTE, end + 1)
    return out
