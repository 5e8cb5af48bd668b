"""Shared by the EBNF and regex parsers: errors that point into the grammar's source text (line,
column and an excerpt), the limits both parsers enforce, and the surrogate code points neither
accepts as a literal.

Example:
    >>> print(error_at('root ::= "a" |', 14, "expected an alternative"))
    expected an alternative at line 1, column 15:
      root ::= "a" |
                    ^
"""

from __future__ import annotations

import bisect
import re
from typing import Iterable, List, Optional

from ..errors import GrammarError

__all__ = [
    "MAX_NESTING",
    "MAX_REPEAT",
    "SURROGATES",
    "error_at",
    "is_surrogate",
    "line_starts",
    "quote_names",
    "surrogate_message",
]

#: The largest repetition bound (the C core stores bounds as int32).
MAX_REPEAT = 2**31 - 1

#: The deepest nesting of parentheses accepted (keeps recursion well inside Python's limit).
MAX_NESTING = 200

_NEWLINE = re.compile(r"\r\n|\r|\n")
_EXCERPT_WIDTH = 100  # longer lines are shown as a window around the error
_SURROGATE_CHARS = re.compile("[\ud800-\udfff]")
#: The UTF-16 surrogate code points: no UTF-8 text holds one (encoded, they are the invalid bytes
#: ED A0 80 .. ED BF BF), so a grammar never writes one as a literal.
SURROGATES = (0xD800, 0xDFFF)


def is_surrogate(cp: int) -> bool:
    """Whether code point ``cp`` is a UTF-16 surrogate (U+D800..U+DFFF), never valid UTF-8 text.

    Example:
        >>> is_surrogate(0xD800), is_surrogate(0xE000)
        (True, False)
    """
    return SURROGATES[0] <= cp <= SURROGATES[1]


def surrogate_message(cp: int, where: str) -> str:
    """The message of a lone surrogate refused in a grammar literal (EBNF and regex).

    Example:
        >>> surrogate_message(0xD800, "a string")
        'a lone surrogate U+D800 in a string: not a character of UTF-8 text (it would be the invalid bytes ED A0 80); write the character itself (\\\\U0001F600, not the pair \\\\uD83D\\\\uDE00)'
    """
    raw = " ".join(f"{b:02X}" for b in chr(cp).encode("utf-8", "surrogatepass"))
    return (
        f"a lone surrogate U+{cp:04X} in {where}: not a character of UTF-8 text (it would be the "
        f"invalid bytes {raw}); write the character itself (\\U0001F600, not the pair \\uD83D\\uDE00)"
    )


# --------------------------------------------------------------------------- error formatting


def line_starts(text: str) -> List[int]:
    """Offsets where each line of ``text`` starts (``\\n``, ``\\r\\n`` and a lone ``\\r`` end lines)."""
    return [0] + [m.end() for m in _NEWLINE.finditer(text)]


def error_at(text: str, offset: int, message: str, starts: Optional[List[int]] = None) -> GrammarError:
    """A GrammarError for ``text[offset]``: message, 1-based line and column, and an excerpt.

    Example:
        >>> print(error_at('root ::= ("a"', 13, "expected ')'"))
        expected ')' at line 1, column 14:
          root ::= ("a"
                       ^
    """
    if starts is None:
        starts = line_starts(text)
    offset = max(0, min(offset, len(text)))
    idx = bisect.bisect_right(starts, offset) - 1
    start = starts[idx]
    end = starts[idx + 1] if idx + 1 < len(starts) else len(text)
    # a lone surrogate cannot be printed (or encoded): one replacement character each, so that
    # the caret still lines up
    line_text = _SURROGATE_CHARS.sub("\ufffd", text[start:end].rstrip("\r\n"))
    column = offset - start + 1
    before = line_text[: column - 1]
    after = line_text[column - 1 :]
    if len(line_text) > _EXCERPT_WIDTH:
        keep = _EXCERPT_WIDTH // 2
        if len(before) > keep:
            before = "..." + before[-keep:]
        if len(after) > keep:
            after = after[:keep] + "..."
        line_text = before + after
    # Keep tabs in the caret line so it lines up with the excerpt.
    pad = "".join("\t" if ch == "\t" else " " for ch in before)
    full = f"{message} at line {idx + 1}, column {column}:\n  {line_text}\n  {pad}^"
    return GrammarError(full, line=idx + 1, column=column)


def quote_names(names: Iterable[str], limit: int = 10) -> str:
    """``'a', 'b', 'c'``, shortened after ``limit`` names."""
    names = list(names)
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")
