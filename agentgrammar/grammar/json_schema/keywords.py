"""The JSON Schema vocabulary the converter knows: which keywords constrain what, which are
annotations, which are refused, the internal keywords ``not`` is rewritten into, and the readers
of count keywords and JSON pointers."""

from __future__ import annotations

import re
from typing import (
    Any,
    Dict,
    List,
    Optional,
    Tuple,
    Union,
)

_MAX_LEVEL = 100  # nested sub-schema conversions (guards recursion through merged '$ref's)


_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "example",
        "$schema",
        "$id",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$defs",
        "definitions",
        "$anchor",
        "$vocabulary",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
        "discriminator",
        "xml",
        "externalDocs",
    }
)


_OBJECT_KW = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
    }
)


_ARRAY_KW = frozenset(
    {
        "items",
        "prefixItems",
        "additionalItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
    }
)


# Array keywords whose meaning depends on each other within one schema object.
_POSITIONAL_KW = frozenset({"items", "prefixItems", "additionalItems"})


def _has_positional(s: Dict[str, Any]) -> bool:
    return any(k in s for k in _POSITIONAL_KW)


def _positions(s: Dict[str, Any], conv: Any, path: str) -> Tuple[List[Any], Any]:
    """(schemas of the leading positions, schema of every later element) of one schema,
    accepting both the 2020-12 spelling and the older ``items: [...]`` + ``additionalItems``."""
    items = s.get("items", True)
    if isinstance(items, list):
        return list(items), s.get("additionalItems", True)
    prefix = s.get("prefixItems", [])
    if not isinstance(prefix, list):
        raise conv.fail("'prefixItems' must be an array", path, "prefixItems")
    return list(prefix), items


# Internal keywords that ``not`` is rewritten into: strings matching none of the patterns,
# strings equal to none of the values.
_NOT_PATTERNS = "$agentgrammar:notPatterns"


_NOT_STRINGS = "$agentgrammar:notStrings"


_AND_PATTERNS = "$agentgrammar:patterns"  # more patterns that must all match (from allOf merges)


_NOT_INTEGER = "$agentgrammar:notInteger"  # a number with a non-zero fraction (no exponent)


_NOT_NUMBERS = "$agentgrammar:notNumbers"  # numbers equal to none of these


_INTERNAL_KW = (_NOT_PATTERNS, _NOT_STRINGS, _AND_PATTERNS, _NOT_NUMBERS)


_STRING_KW = frozenset({"minLength", "maxLength", "pattern", "format", *_INTERNAL_KW})


_NUMBER_KW = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", _NOT_INTEGER, _NOT_NUMBERS}
)


_GENERIC_KW = frozenset({"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "nullable", "not"})


# Keywords rewritten into anyOf / allOf / not before conversion.
_REWRITTEN_KW = frozenset({"if", "then", "else", "dependencies", "dependentRequired", "dependentSchemas"})


# Rewritten into additionalProperties / items where exact (unevaluated.py).
_UNEVALUATED_KW = frozenset({"unevaluatedProperties", "unevaluatedItems"})
_KNOWN = (
    _UNEVALUATED_KW
    | _ANNOTATIONS
    | _OBJECT_KW
    | _ARRAY_KW
    | _STRING_KW
    | _NUMBER_KW
    | _GENERIC_KW
    | _REWRITTEN_KW
)


# Validation keywords of some draft that are not (or not yet) converted here: a schema that
# uses one raises SchemaError (or, lenient, warns). Keywords outside every draft's vocabulary
# ("x-...", "id" of draft 4, tool-specific extensions, typos) are annotations by the spec:
# they constrain nothing, so they are ignored.
_UNSUPPORTED = frozenset(
    {
        "divisibleBy",
        "$dynamicRef",
        "$recursiveRef",
        "disallow",
        "extends",
    }
)


#: The largest count a length or size keyword may give (larger ones could never be generated).
MAX_COUNT = 2**31 - 1


def _count(schema: Dict[str, Any], keyword: str, conv: Any, path: str) -> Optional[int]:
    """A count keyword's value (``2.0`` reads as 2); SchemaError unless a non-negative integer
    up to ``MAX_COUNT``."""
    x = schema.get(keyword)
    if isinstance(x, float) and x.is_integer():
        x = int(x)
    if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
        raise conv.fail(f"'{keyword}' must be a non-negative integer", path, keyword)
    if x is not None and x > MAX_COUNT:
        raise conv.fail(f"'{keyword}' is {x}; the largest supported is {MAX_COUNT}", path, keyword)
    return x


def _is_annotation(keyword: str) -> bool:
    """Whether ``keyword`` constrains nothing: a known annotation, or outside the vocabulary."""
    return keyword in _ANNOTATIONS or (keyword not in _KNOWN and keyword not in _UNSUPPORTED)


_TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")


_ALL_TYPES = ("null", "boolean", "object", "array", "string", "number")


def _ptr(path: str, *segments: Union[str, int]) -> str:
    for s in segments:
        path += "/" + _segment(s)
    return path


def _segment(s: Union[str, int]) -> str:
    """One JSON Pointer segment: ``~`` and ``/`` escaped (RFC 6901)."""
    s = str(s)
    return s.replace("~", "~0").replace("/", "~1") if "~" in s or "/" in s else s


def _show(path: str) -> str:
    return "#" + path


_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")


def _sanitize(s: str) -> str:
    if s.isascii() and s.isidentifier():  # the usual name: nothing to replace, no regex run
        return s
    return _UNSAFE_NAME_CHARS.sub("_", s) or "_"
