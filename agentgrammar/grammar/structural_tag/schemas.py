"""The grammars a structural tag embeds, converted once per process: JSON Schema arguments
(per schema text and options), EBNF text, and text tags that no trigger opens.

Example:
    >>> g = compact_schema_grammar({"type": "integer"}, (", ", ": "))
    >>> g.accepts("12")
    True
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Tuple

from .. import memo
from ..grammar import Grammar
from ..ir import Literal, Rule, RuleRef, TagDispatch, seq
from ..json_text import json_encoder

__all__ = ["compact_schema_grammar"]


class _SchemaGrammars:
    """``Grammar.from_json_schema`` once per schema text and options: the schema object given
    is converted (not the text parsed back). Requests reuse the same tools: each piece's
    grammar is built once, and the compiler links the same Grammar object into every request
    (its automata and token masks are shared). Kept in a ``memo.BoundedCache``, least recently
    used out first, so that a compiler's ``cache_limit_bytes`` bounds it too: each entry is
    measured once when it is new (a scan of every entry, as a registered mapping had, took 2 ms
    every few requests in a process that knew 1,500 tools)."""

    def __init__(self, limit: int) -> None:
        self._cache: "memo.BoundedCache[Grammar]" = memo.BoundedCache("schema grammars", limit=limit)

    def get(self, schema: Any, schema_json: str, options: Tuple[Tuple[str, Any], ...]) -> Grammar:
        return self._cache.get_or_make(
            (schema_json, options), lambda: Grammar.from_json_schema(schema, **dict(options))
        )

    def cache_clear(self) -> None:
        """Forget every grammar."""
        self._cache.cache_clear()


_schema_grammars = _SchemaGrammars(limit=4096)


# json.dumps with its default options: every tool of a cold request keys its schema by this
# text (a schema that contains itself raises RecursionError, which compact_schema_grammar takes)
_schema_json = json_encoder()


def compact_schema_grammar(schema: Any, separators: Tuple[str, str]) -> Grammar:
    """The grammar of JSON valid against ``schema`` in the compact layout (``separators``,
    strict, ``loose_lengths``: see ``schema_rules_and_parts``), one per distinct schema: tools
    with equal schemas share it, and with it their parts and token masks.

    Example:
        >>> g = compact_schema_grammar({"type": "integer"}, (", ", ": "))
        >>> g is compact_schema_grammar({"type": "integer"}, (", ", ": ")), g.accepts("12")
        (True, True)
    """
    options = (
        ("whitespace", "compact"),
        ("separators", separators),
        ("strict", True),
        ("loose_lengths", True),
    )
    try:
        key = _schema_json(schema)  # json.dumps(schema): key order is property order, not sorted
    except (TypeError, ValueError, RecursionError):  # not JSON: the converter says what is wrong
        return Grammar.from_json_schema(schema, **dict(options))
    return _schema_grammars.get(schema, key, options)


@lru_cache(maxsize=4096)
def _ebnf_grammar(text: str) -> Grammar:
    return Grammar.from_ebnf(text)


@lru_cache(maxsize=256)
def _text_tag(begin: bytes, text: TagDispatch) -> Grammar:
    """A tag around free text that no trigger opens (a think block) as a grammar of its own,
    which a request embeds: its begin, then ``text`` up to the first end. Every request of a
    format has the same one, so the Compiler compiles it once (a part), and the token classes
    of its states, the first masks of every output, are computed by the first request only:
    in the request's own rules they were walked again each time, as a token from them may
    reach rules (the tools) that differ between requests."""
    return Grammar.from_rules(
        [Rule("root", seq([Literal(begin), RuleRef("tag_text")])), Rule("tag_text", text)]
    )
