"""The grammar item "exactly one token, any but a set" (xgrammar's ``exclude_token``).

A byte grammar cannot say where a token ends, so this item cannot be bytes the vocabulary's
tokens write. It is written as a private spelling instead, like a token marker
(``token_markers``): the byte 0xFF, the byte 0xC0, the excluded tokens (texts and ids, as JSON)
as octal digits in 0xF5-0xFC, the byte 0xFE. No token writes it (0xC0 occurs in no UTF-8 text,
and a marked vocabulary bans every token holding 0xFF but its markers, whose spelling goes on
with 0xF5-0xFD). The ``Matcher`` reads the spelling back: where the grammar could go on with it,
every token but the excluded ones is allowed, and accepting one advances over the spelling
(``engine/token_items.py``; docs/engine.md says why the engine works this way).

Example:
    >>> item = one_token_item(["<think>", 7])
    >>> one_token_items([b"a" + item + b"b"]) == {item: [7, "<think>"]}
    True
"""

from __future__ import annotations

import json
from typing import Dict, Iterable, List, Sequence

from .token_markers import Marker

__all__ = ["ONE_TOKEN_PREFIX", "one_token_item", "one_token_items"]

#: How the spelling of a one-token item begins.
ONE_TOKEN_PREFIX = b"\xff\xc0"
_CLOSE = 0xFE
_DIGIT0 = 0xF5


def one_token_item(excluded: Sequence[Marker]) -> bytes:
    """The grammar bytes of "one token, any but ``excluded``" (texts or ids).

    Example:
        >>> one_token_item([]).startswith(ONE_TOKEN_PREFIX)
        True
    """
    names = sorted(dict.fromkeys(excluded), key=lambda m: (isinstance(m, str), str(m)))
    data = json.dumps(names, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    out = bytearray(ONE_TOKEN_PREFIX)
    for b in data:
        out += bytes((_DIGIT0 + (b >> 6), _DIGIT0 + ((b >> 3) & 7), _DIGIT0 + (b & 7)))
    out.append(_CLOSE)
    return bytes(out)


def one_token_items(chunks: Iterable[bytes]) -> Dict[bytes, List[Marker]]:
    """The one-token items spelled in grammar literals ``chunks``: spelling -> excluded names.

    Example:
        >>> one_token_items([b"plain"])
        {}
    """
    out: Dict[bytes, List[Marker]] = {}
    for chunk in chunks:
        pos = chunk.find(ONE_TOKEN_PREFIX)
        while pos >= 0:
            end = chunk.find(bytes((_CLOSE,)), pos + 2)
            if end < 0:
                break
            d = [b - _DIGIT0 for b in chunk[pos + 2 : end]]
            data = bytes((d[k] << 6) | (d[k + 1] << 3) | d[k + 2] for k in range(0, len(d) - 2, 3))
            out[chunk[pos : end + 1]] = json.loads(data.decode("ascii"))
            pos = chunk.find(ONE_TOKEN_PREFIX, end + 1)
    return out
