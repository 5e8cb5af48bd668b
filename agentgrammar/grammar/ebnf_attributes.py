"""xgrammar's rule attributes, ``name[lazy, max_chars=8] ::= ...`` (parsed for ``ebnf.py``).

Two change the rule's language and are applied exactly (``ebnf_automata``):

* ``lazy``: the rule ends as soon as it can: of its strings, only those with no proper prefix
  that is also one of its strings (``[a-z]+`` matches one letter, ``[a-z]*`` only ``""``);
* ``max_chars=N``: a budget of N characters (code points). Once N are matched the rule ends at
  its first chance; where it cannot end exactly there, it goes on to its earliest end (xgrammar's
  relaxed budget): a string of the rule whose proper prefixes of N or more characters are none
  of the rule's strings.

Three only steer xgrammar's sampling or report spans, and are accepted and dropped like the
lookahead ``(= ...)``: ``capture`` / ``capture="name"``, ``temperature=0.7`` and ``no_forcing``.
The others (``max_tokens``, which counts model tokens; ``json_string_min_length`` /
``json_string_max_length``; the ``capture_hidden_*`` / ``stop_capture`` metadata that xgrammar
prints for itself) are refused as not supported.

Example:
    >>> parse_rule_attributes("lazy, max_chars=3")
    RuleAttributes(lazy=True, max_chars=3)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional, Tuple

from ..errors import GrammarError

__all__ = ["MAX_CHARS_LIMIT", "RuleAttributes", "parse_rule_attributes"]

#: The largest ``max_chars`` value xgrammar accepts (an int32).
MAX_CHARS_LIMIT = 2**31 - 1

# Dropped: they do not change which strings the grammar accepts.
_IGNORED = frozenset({"capture", "temperature", "no_forcing"})
_UNSUPPORTED = frozenset(
    {
        "max_tokens",
        "json_string_min_length",
        "json_string_max_length",
        "capture_hidden_suffix_bytes",
        "capture_hidden_stop_bytes",
        "capture_hidden_body_rule_id",
        "capture_hidden_marker_rule_id",
        "stop_capture",
    }
)
_ITEM = re.compile(r'\s*([A-Za-z_]+)\s*(?:=\s*("[^"\\\r\n]*"|[0-9A-Za-z_.+-]+))?\s*')


@dataclass(frozen=True)
class RuleAttributes:
    """The attributes of one rule that change its language."""

    lazy: bool = False
    max_chars: Optional[int] = None

    @property
    def changes_language(self) -> bool:
        return self.lazy or self.max_chars is not None


def parse_rule_attributes(text: str) -> RuleAttributes:
    """The attributes in ``text``, the inside of ``name[...]`` (comma-separated, each at most
    once). Raises GrammarError naming the attribute at fault.

    Example:
        >>> parse_rule_attributes('capture="x", temperature=0.5')
        RuleAttributes(lazy=False, max_chars=None)
    """
    seen = set()
    lazy = False
    max_chars: Optional[int] = None
    for key, value in _items(text):
        if key in seen:
            raise GrammarError(f"rule attribute {key!r} is given twice")
        seen.add(key)
        if key == "lazy":
            _no_value(key, value)
            lazy = True
        elif key == "max_chars":
            max_chars = _int_value(key, value)
        elif key == "capture":
            if value is not None and (not value.startswith('"') or value == '""'):
                raise GrammarError('capture takes a non-empty name in quotes, e.g. capture="answer"')
        elif key == "temperature":
            _temperature(value)
        elif key == "no_forcing":
            _no_value(key, value)
        elif key in _UNSUPPORTED:
            raise GrammarError(f"the rule attribute {key!r} is not supported")
        else:
            raise GrammarError(f"unknown rule attribute {key!r}")
    return RuleAttributes(lazy=lazy, max_chars=max_chars)


def _items(text: str) -> Tuple[Tuple[str, Optional[str]], ...]:
    out = []
    for part in _split(text):
        m = _ITEM.fullmatch(part)
        if m is None:
            raise GrammarError(f"malformed rule attribute {part.strip()!r} (expected name or name=value)")
        out.append((m.group(1), m.group(2)))
    return tuple(out)


def _split(text: str) -> Tuple[str, ...]:
    """``text`` cut at the commas outside quotes."""
    parts, start, quoted = [], 0, False
    for k, c in enumerate(text):
        if c == '"':
            quoted = not quoted
        elif c == "," and not quoted:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return tuple(parts)


def _no_value(key: str, value: Optional[str]) -> None:
    if value is not None:
        raise GrammarError(f"rule attribute {key!r} takes no value")


def _int_value(key: str, value: Optional[str]) -> int:
    if value is None or not value.isdigit():
        raise GrammarError(f"rule attribute {key!r} needs a non-negative integer, e.g. {key}=16")
    n = int(value)
    if n > MAX_CHARS_LIMIT:
        raise GrammarError(f"rule attribute {key}={n} is too large (at most {MAX_CHARS_LIMIT})")
    return n


def _temperature(value: Optional[str]) -> None:
    try:
        t = float(value) if value is not None else math.nan
    except ValueError:
        t = math.nan
    if not (math.isfinite(t) and t >= 0):
        raise GrammarError("rule attribute 'temperature' needs a finite non-negative number")
