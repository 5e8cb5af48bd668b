"""``excludes``: substrings that no JSON string of a conversion may hold, as xgrammar's
``JSONSchemaFormat.excludes`` inside structural tags (``json_schema_rules(..., excludes=...)``).

The filter reads the string as it is written, before unescaping: the text between the quotes,
escapes included (with ``"nb"`` excluded, ``"\\nb"`` is refused; with ``"<"`` excluded,
``"\\u003c"`` is allowed), the quotes themselves never part of a match. It applies to every
string without ``pattern`` or ``format`` (values, any value's strings, additional keys); a
string with ``pattern`` or ``format`` is matched by that constraint alone; ``minLength`` /
``maxLength`` are dropped with a warning (xgrammar's rule: a length bound and the filter are
not applied together); declared property names and ``enum`` / ``const`` spellings holding an
excluded substring are left out.

Each filtered string is an automaton over the written characters: the JSON string body (every
spelling of every character) minus the texts that contain an excluded word.

Example:
    >>> from agentgrammar import Grammar
    >>> g = Grammar.from_json_schema({"type": "array", "items": {"type": "string"}}, excludes=["<|"])
    >>> g.accepts('["a<b", "\\\\u003c|"]'), g.accepts('["a<|b"]')
    (True, False)
"""

from __future__ import annotations

import json
import warnings
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Optional, Sequence, Tuple

from ...errors import SchemaError
from .. import json_values
from ..char_dfa import CharDFA
from ..ir import CharClass, Choice, Expr, Literal, Repeat, seq
from .lexical import _DQ, _char_is

if TYPE_CHECKING:
    from .convert import Converter

__all__ = [
    "check_excludes",
    "excluded",
    "filtered_key",
    "filtered_literal",
    "filtered_string",
    "warn_lengths_dropped",
]


def check_excludes(excludes: Any) -> Tuple[str, ...]:
    """``excludes`` as a tuple of non-empty strings (``SchemaError`` otherwise)."""
    if isinstance(excludes, (str, bytes)) or not all(isinstance(x, str) and x for x in excludes):
        raise SchemaError(f"'excludes' must be a list of non-empty strings, not {excludes!r}")
    return tuple(dict.fromkeys(excludes))


def excluded(written: str, excludes: Sequence[str]) -> bool:
    """Whether the written text of a string (between its quotes) holds an excluded word."""
    return any(x in written for x in excludes)


@lru_cache(maxsize=64)
def _body_dfa(excludes: Tuple[str, ...], names: Tuple[str, ...]) -> CharDFA:
    """The written bodies of JSON strings holding none of ``excludes`` and decoding to none of
    ``names``."""
    body = CharDFA.from_expr(Repeat(json_values.JSON_STRING_CHAR, 0, None))
    dfa = body.minus(CharDFA.containing(list(excludes)))
    if names:
        spellings = Choice(tuple(seq([_char_is(c) for c in n]) for n in names))
        dfa = dfa.minus(CharDFA.from_expr(spellings))
    return dfa.minimized()


def _raw(ranges: Sequence[Tuple[int, int]]) -> Expr:
    return CharClass(tuple(ranges))  # the automaton is over written characters: spelled as is


def filtered_string(conv: Converter, hint: str = "json_string") -> Expr:
    """A quoted JSON string none of whose written text holds one of ``conv.excludes`` (its
    automaton's rules go to ``conv.rules``)."""
    content = _body_dfa(conv.excludes, ()).to_ir(_raw, conv.rules, conv.fresh, f"{hint}_body")
    assert content is not None  # the empty string holds no (non-empty) exclude
    return seq([_DQ, content, _DQ])


def filtered_key(conv: Converter, names: Sequence[str], hint: str) -> Optional[Expr]:
    """A quoted key none of whose written text holds one of ``conv.excludes`` and that
    decodes to none of ``names`` (every spelling of a declared name refused)."""
    content = _body_dfa(conv.excludes, tuple(names)).to_ir(_raw, conv.rules, conv.fresh, f"{hint}_key")
    return None if content is None else seq([_DQ, content, _DQ])


def filtered_literal(s: str, excludes: Sequence[str]) -> Optional[Expr]:
    """The spellings of the JSON string ``s`` (raw UTF-8, ``ensure_ascii``) that hold no
    excluded word between their quotes; None when both do."""
    forms = [json.dumps(s).encode("ascii")]
    try:
        forms.append(json.dumps(s, ensure_ascii=False).encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: only the escaped spelling exists
        pass
    kept = [f for f in dict.fromkeys(forms) if not excluded(f[1:-1].decode("utf-8"), excludes)]
    if not kept:
        return None
    return Literal(kept[0]) if len(kept) == 1 else Choice(tuple(Literal(f) for f in kept))


def warn_lengths_dropped(path: str) -> None:
    """xgrammar's rule, with its warning: a filtered string has no length bounds."""
    warnings.warn(
        f"the length bounds of the string at {path or '#'} are ignored: they are not applied "
        "together with excludes (as in xgrammar)",
        UserWarning,
        stacklevel=4,
    )
