"""IR building blocks for JSON values: strings, integers, numbers, patterns and formats.

These are the leaves the JSON Schema front-end assembles. Every function returns one IR
expression (``agentgrammar.grammar.ir``) over the *JSON text* of the value, quotes included
for strings. The guarantee throughout is **soundness**: an expression never accepts JSON text
whose value violates the constraint. Where exactness is not achievable the expression
*under*-approximates (rejects some exotic but valid spellings), and the docstring says which.

Strings: a JSON string's characters are raw UTF-8 characters other than ``"``, ``\\`` and
U+0000..U+001F, or the escapes ``\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX``. Raw surrogate code
points (U+D800..U+DFFF, which are not valid UTF-8) are never accepted. Lengths and patterns are
about the *decoded* string, counted in code points: an escape is one code point, and a
surrogate-pair escape ``\\ud83d\\ude00`` is one code point. Lone surrogate escapes
(``"\\ud800"``) are never accepted: they decode to no Unicode text (xgrammar's JSON grammar
accepts them; this is a deliberate difference).

Numbers use exact decimal semantics (``0.1`` is one tenth, not a binary float); a float
bound is taken as the shortest decimal that round-trips (``repr``), i.e. the literal written
in the schema. A validator that parses instances as binary floats can disagree on numbers
that round (``1e-400`` parses as ``0.0``; ``1.00000000000000000001`` as ``1.0``).

One concern per module: ``escapes`` (string characters and lengths), ``numeric_bounds``,
``integers``, ``numbers``, ``patterns`` (ECMA regexes), ``formats`` (RFC formats) and
``repeats`` (counted repeats: of characters whole, of other items in blocks).

Example:
    >>> from agentgrammar import Grammar
    >>> from agentgrammar.grammar.ir import Rule
    >>> g = Grammar.from_rules([Rule("root", integer_expr(minimum=-3, maximum=12))])
    >>> [g.accepts(s) for s in (b"-3", b"12", b"13", b"012", b"0", b"-0")]
    [True, True, False, False, True, False]
"""

from __future__ import annotations

from .escapes import JSON_STRING_CHAR, JSON_STRING_CODE_POINT, json_char_of, string_expr

# The package's bounded caches, named in its namespace: the compiler counts the lru_caches it
# finds here with the memos (engine/compiler.py, _register_converter_caches).
from .escapes import _astral_escapes as _astral_escapes
from .escapes import _bmp_escape as _bmp_escape
from .escapes import _hex4 as _hex4
from .escapes import _hex_product as _hex_product
from .escapes import _json_char_of_cached as _json_char_of_cached
from .escapes import _short_escape_class as _short_escape_class
from .formats import (
    STRING_CONSTRAINTS,
    SUPPORTED_FORMATS,
    UNSUPPORTED_SPEC_FORMATS,
    format_chars,
    format_string,
)
from .integers import integer_expr
from .numbers import ANY_NUMBER, number_expr
from .patterns import json_content, pattern_chars, pattern_string
from .repeats import repeat, repeat_chars

__all__ = [
    "ANY_NUMBER",
    "JSON_STRING_CHAR",
    "JSON_STRING_CODE_POINT",
    "STRING_CONSTRAINTS",
    "SUPPORTED_FORMATS",
    "UNSUPPORTED_SPEC_FORMATS",
    "format_chars",
    "format_string",
    "integer_expr",
    "json_char_of",
    "json_content",
    "number_expr",
    "pattern_chars",
    "pattern_string",
    "repeat",
    "repeat_chars",
    "string_expr",
]
