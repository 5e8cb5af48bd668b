"""Convert a JSON Schema into grammar IR: the JSON texts that are instances of the schema.

Entry point: ``json_schema_rules(schema, ...) -> (rules, root_name)``; ``Grammar.from_json_schema``
wraps it. ``schema`` is a dict, a JSON string, or a Pydantic model class.

One concern per module: ``schema_rules`` (the entry points), ``convert`` (the converter's state
and its dispatch), ``resolve`` (``$ref``), ``merge`` (``allOf``), ``negate`` (``not``),
``combinators`` (``anyOf`` / ``oneOf`` / ``if``), ``enums``, ``strings``, ``numbers``,
``objects``, ``arrays``, ``formats``, ``base_rules`` (the helper rules all conversions share),
``unevaluated``, ``layout``, ``lexical`` (string spellings), ``key_trie``, ``keywords``, ``instances``
and ``excludes`` (xgrammar's substring filter on strings, the ``excludes`` option).

Semantics follow draft 2020-12 (with the older spellings ``definitions``, ``items`` as an array +
``additionalItems`` and draft-4 boolean ``exclusiveMinimum`` / ``exclusiveMaximum``).

Supported: boolean schemas; ``type`` (a name or a list); ``enum`` / ``const`` (each value in
its JSON serialization with the chosen layout; strings in both their raw-UTF-8 and their
``ensure_ascii`` spellings); ``properties`` (in schema order), ``required``,
``additionalProperties`` (true / false / a schema; default true unless ``strict=True``; extra
members come after the declared ones and their keys can never spell a declared name, escapes
included), ``patternProperties`` (up to four patterns: keys are split by the set of patterns they
match, each class an automaton), ``propertyNames`` (string constraints on keys),
``minProperties`` / ``maxProperties`` (members counted, one rule per position and count); ``items``, ``prefixItems``, older ``items: [...]`` + ``additionalItems``,
``minItems`` / ``maxItems``, ``uniqueItems: false``, ``contains`` with ``minContains`` /
``maxContains`` (without ``prefixItems`` or item counts; ``contains`` must be negatable); ``minLength`` / ``maxLength`` (code points:
a surrogate-pair escape counts as one, lone surrogate escapes are not generated);
``pattern`` / ``format`` and numeric bounds through ``json_values``, and any combination of
``pattern``, ``format``, lengths and negated patterns or values through ``char_dfa`` (refused
past ``char_dfa.PRODUCT_LIMIT`` states or ``char_dfa.MAX_WORK`` steps); ``anyOf``; ``oneOf`` when the branches are provably
disjoint (by type, or by a required property with disjoint constants) or when each branch can
be negated (each branch and not the others); ``allOf`` (merged into one schema, siblings of
``$ref`` / ``anyOf`` / ``oneOf`` too); ``not`` of the common forms (``type``, ``enum`` / ``const`` of scalars, ``required``, ``properties``,
length / item / property / numeric bounds, ``pattern``, ``anyOf``, nested ``not``);
``if`` / ``then`` / ``else`` when ``if`` can be negated; ``dependentRequired``,
``dependentSchemas`` and draft-7 ``dependencies``; ``unevaluatedProperties`` /
``unevaluatedItems`` rewritten into ``additionalProperties`` / ``items`` where what the other
keywords evaluate is known from the schema (``unevaluated.py``); ``$ref`` to ``#``, ``#/$defs/..``,
``#/definitions/..`` and any JSON pointer (``~0`` ``~1`` and %-escapes), recursion included
(each referenced schema becomes one shared rule); ``nullable``.

Keywords outside every draft's vocabulary (``x-...``, draft-4 ``id``, tool extensions) and
formats the specification does not define are annotations: they constrain nothing. Anything
else raises ``SchemaError`` naming the keyword and its JSON pointer (member counts needing more
than 4,096 rules, ``uniqueItems: true``,
fractional ``multipleOf``, ``unevaluated*`` whose evaluated members depend on the instance,
``$dynamicRef``, the ``regex`` / ``idn-*`` formats, external or anchor ``$ref``s, negations and
``oneOf``s beyond the forms above, ...); with ``lenient=True`` a warning is issued instead and the constraint is
over-approximated (ignored, or for ``oneOf`` treated as ``anyOf``) so that no valid instance is
lost. Unsatisfiable schemas raise ``SchemaError``.

Soundness comes first: no text is accepted whose value is not valid. The known
under-approximations (valid values in spellings or orders that are rejected): declared
property names and string constants only in their raw-UTF-8 and ``ensure_ascii`` spellings;
additional members only after the declared ones (declared ones in schema order); where an
additional key could still spell a declared name, ``\\u`` escapes of printable ASCII are not
generated; integers only as ``-?(0|[1-9][0-9]*)`` (not ``1.0``); numbers under ``multipleOf``
only in that integer spelling, and numbers under a negated ``integer`` type or a negated numeric
``enum`` / ``const`` only without exponent or trailing fraction zeros; numeric constants in their
``json.dumps`` spelling (and ``2`` for ``2.0``); lone surrogate escapes only in strings without
length constraints. ``format`` is asserted (the spec makes it an annotation by default).

Layout: ``whitespace="flexible"`` allows JSON whitespace ``[ \\t\\n\\r]*`` between tokens
(at most ``max_whitespace`` characters per run when given), ``"compact"`` exactly ``separators``
(default ``(", ", ": ")``, as ``json.dumps``), ``indent=N`` the ``json.dumps(indent=N)`` layout
(separators default ``(",", ": ")``); past ``INDENT_DEPTH_LIMIT`` levels of nesting the
indented layout falls back to flexible whitespace (recursive schemas nest without bound).
No whitespace is allowed before or after the top-level value.

Example:
    >>> rules, root = json_schema_rules({"type": "object", "properties": {"a": {"type": "boolean"}},
    ...                                  "required": ["a"], "additionalProperties": False},
    ...                                 whitespace="compact")
    >>> root, [r.name for r in rules]
    ('root', ['root'])
"""

from __future__ import annotations

# The package's bounded caches, named in its namespace: the compiler counts the lru_caches it
# finds here with the memos (engine/compiler.py, _register_converter_caches).
from .key_trie import _key_not_in as _key_not_in
from .key_trie import _other_char as _other_char
from .keywords import MAX_COUNT
from .layout import INDENT_DEPTH_LIMIT
from .lengths import pattern_lengths as pattern_lengths
from .lexical import _char_not_in as _char_not_in
from .lexical import _string_literal as _string_literal
from .lexical import choice
from .objects import ANY_ORDER_LIMIT
from .schema_rules import MAX_SCHEMA_DEPTH, json_schema_rules, schema_rules_and_parts
from .strings import _pattern_dfa as _pattern_dfa

__all__ = [
    "ANY_ORDER_LIMIT",
    "INDENT_DEPTH_LIMIT",
    "MAX_COUNT",
    "MAX_SCHEMA_DEPTH",
    "choice",
    "json_schema_rules",
    "schema_rules_and_parts",
]
