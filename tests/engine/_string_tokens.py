"""Tokens of JSON string text that a count of characters must get right, shared by the tests of
counted repeats and counted text: two-, three- and four-byte characters whole, repeated and cut
short, and escapes whole and cut short (a ``\\u`` pair is one character)."""

from __future__ import annotations

CHARACTER_PIECES = [
    "é".encode(),
    "é".encode() * 3,
    "€".encode(),
    "a€b".encode(),
    "😀".encode(),
    "😀".encode()[:2],
    "😀".encode()[2:],
    "é".encode()[:1],
    "é".encode()[1:],
    b"\\n",
    b"\\",
    b"\\u00e9",
    b"\\u00",
    b"e9",
    b"\\ud83d\\ude00",
    b"\\ud83d",
]
