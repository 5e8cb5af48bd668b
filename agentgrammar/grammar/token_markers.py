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

A token may also be named by its id (xgrammar's ``{"type": "token", "token": 151657}``), which
a grammar cannot turn into text before it meets a vocabulary: ``token_marker(151657)`` is the
id's own spelling (0xFF, 0xFD, the id's decimal digits as above, 0xFE), and
``Vocabulary.with_token_markers([151657])`` gives that token this spelling.

Example:
    >>> s = "x" + token_marker("<tool_call>") + "\\n"
    >>> encode_text(s) == b"x" + marker_bytes("<tool_call>") + b"\\n"
    True
    >>> plain_text(s), markers_in_text(s)
    ('x<tool_call>\\n', ['<tool_call>'])
"""

from __future__ import annotations

from typing import Iterable, List, Set, Union

__all__ = [
    "MARKER_CLOSE",
    "MARKER_ID",
    "MARKER_OPEN",
    "Marker",
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
#: After ``MARKER_OPEN``: the marker names a token by its id (the byte 0xFD in its spelling).
MARKER_ID = "\udcfd"
_OPEN_BYTE = b"\xff"
_CLOSE_BYTE = b"\xfe"
_ID_BYTE = b"\xfd"

#: A token marker: the token's text, or its id.
Marker = Union[str, int]
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


def _check_text(text: Marker) -> None:
    if isinstance(text, int) and not isinstance(text, bool):
        if not 0 <= text < 2**31:
            raise ValueError(f"a token marker's id must be in [0, 2**31), got {text}")
        return
    if not isinstance(text, str) or not text:
        raise ValueError(f"a token marker's text must be a non-empty str, got {text!r}")
    if MARKER_OPEN in text or MARKER_CLOSE in text:
        raise ValueError(f"a token marker's text cannot hold another marker: {text!r}")


def token_marker(text: Marker) -> str:
    """``text`` as a token marker in a Python string: the token whose text it is (or whose id,
    for an int), and only it.

    Example:
        >>> token_marker("<|call|>") == "\\udcff<|call|>\\udcfe"
        True
        >>> token_marker(7) == "\\udcff\\udcfd7\\udcfe"
        True
    """
    _check_text(text)
    if isinstance(text, int):
        return MARKER_OPEN + MARKER_ID + str(text) + MARKER_CLOSE
    return MARKER_OPEN + text + MARKER_CLOSE


def marker_bytes(text: Marker) -> bytes:
    """The private spelling of token marker ``text`` (see the module docstring).

    Example:
        >>> marker_bytes("<")  # "<" is 0x3C, octal 074
        b'\\xff\\xf5\\xfc\\xf9\\xfe'
        >>> marker_bytes(7)  # "7" is 0x37, octal 067
        b'\\xff\\xfd\\xf5\\xfb\\xfc\\xfe'
    """
    _check_text(text)
    if isinstance(text, int):
        return _OPEN_BYTE + _ID_BYTE + _spell(str(text).encode("ascii"))[1:]
    return _spell(text.encode("utf-8"))


def _marker_of(inner: str) -> Marker:
    """The marker whose text between ``MARKER_OPEN`` and ``MARKER_CLOSE`` is ``inner``."""
    if inner.startswith(MARKER_ID):
        digits = inner[1:]
        if not digits.isascii() or not digits.isdigit():
            raise ValueError(f"a token marker by id holds {digits!r}, not an id")
        return int(digits)
    return inner


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
        try:
            out += marker_bytes(_marker_of(inner))
        except ValueError:
            raise UnicodeEncodeError(
                "utf-8", s, start, end + 1, "a token marker by id that names no id"
            ) from None
        pos = end + 1


def plain_text(s: str) -> str:
    """``s`` with its token markers written as their text (what the model's tokens decode to);
    a marker by id, whose text the grammar does not know, is left out.

    Example:
        >>> plain_text(token_marker("<a>") + "b" + token_marker(3))
        '<a>b'
    """
    if MARKER_ID in s:
        first, *rest = s.split(MARKER_OPEN + MARKER_ID)
        s = first + "".join(part.split(MARKER_CLOSE, 1)[-1] for part in rest)
    return s.replace(MARKER_OPEN, "").replace(MARKER_CLOSE, "")


def markers_in_text(s: str) -> List[Marker]:
    """The texts (ids, for markers by id) of the token markers in ``s``, in order.

    Example:
        >>> markers_in_text("x" + token_marker("<a>") + token_marker(9))
        ['<a>', 9]
    """
    out: List[Marker] = []
    pos = 0
    while True:
        start = s.find(MARKER_OPEN, pos)
        end = s.find(MARKER_CLOSE, start + 1) if start >= 0 else -1
        if end < 0:
            return out
        inner = s[start + 1 : end]
        if inner and MARKER_OPEN not in inner:  # else not a marker: encode_text refuses it
            try:
                out.append(_marker_of(inner))
            except ValueError:
                pass  # encode_text refuses it
        pos = end + 1


def markers_in_bytes(chunks: Iterable[bytes]) -> Set[Marker]:
    """The texts (ids, for markers by id) of the token markers spelled in grammar literals
    ``chunks``.

    Example:
        >>> sorted(markers_in_bytes([b"a" + marker_bytes("<x>"), b"plain"]))
        ['<x>']
        >>> markers_in_bytes([marker_bytes(12)])
        {12}
    """
    out: Set[Marker] = set()
    for chunk in chunks:
        pos = chunk.find(_OPEN_BYTE)
        while pos >= 0:
            end = chunk.find(_CLOSE_BYTE, pos + 1)
            if end < 0:
                break
            if chunk[pos + 1 : pos + 2] == b"\xc0":
                pass  # a one-token item (``one_token``), no marker
            elif chunk[pos + 1 : pos + 2] == _ID_BYTE:
                digits = _unspell(chunk[pos + 2 : end])
                if digits.isdigit():
                    out.add(int(digits))
            else:
                out.add(_unspell(chunk[pos + 1 : end]).decode("utf-8", "replace"))
            pos = chunk.find(_OPEN_BYTE, end + 1)
    return out
