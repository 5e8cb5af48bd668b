"""``not``: a schema of exactly the instances another rejects, for the common forms."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List

from .instances import _type_of
from .keywords import (
    _ALL_TYPES,
    _MAX_LEVEL,
    _NOT_INTEGER,
    _NOT_NUMBERS,
    _NOT_PATTERNS,
    _NOT_STRINGS,
    _is_annotation,
    _ptr,
)
from .merge import deref, flatten_all_of

if TYPE_CHECKING:
    from .convert import Converter


def negate(conv: Converter, schema: Any, path: str) -> Any:
    """A schema of exactly the instances that ``schema`` rejects, for the common forms of
    ``not`` (type, enum / const of strings, booleans and null, required, properties,
    string / number / array / object bounds, pattern, anyOf, nested not); otherwise
    unsupported (lenient: ``true``, which over-approximates)."""
    conv.level += 1
    try:
        if conv.level > _MAX_LEVEL:
            raise conv.fail(f"'not' nests more than {_MAX_LEVEL} levels (a recursive schema?)", path)
        return _negate(conv, schema, path)
    finally:
        conv.level -= 1


def _negate(conv: Converter, schema: Any, path: str) -> Any:
    if isinstance(schema, dict):
        schema = deref(conv, schema, path)
    if isinstance(schema, dict):
        schema = flatten_all_of(conv, schema, path)
    if schema is True or (isinstance(schema, dict) and all(_is_annotation(k) for k in schema)):
        return False
    if schema is False:
        return True
    if not isinstance(schema, dict):
        raise conv.fail("a schema must be an object or a boolean", path)
    parts: List[Any] = []
    for k, v in schema.items():
        if _is_annotation(k):
            continue
        part = negate_keyword(conv, k, v, schema, path)
        if part is None:
            conv.unsupported(k, path, "inside 'not' cannot be negated exactly")
            return True
        if part is not False:
            parts.append(part)
    if not parts:
        return False
    return parts[0] if len(parts) == 1 else {"anyOf": parts}


def negate_keyword(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    """The instances that fail keyword ``k`` alone (False: none; None: not supported)."""
    negator = _NEGATORS.get(k)
    return None if negator is None else negator(conv, k, v, schema, path)


def _any_of(branches: List[Any]) -> Any:
    return False if not branches else branches[0] if len(branches) == 1 else {"anyOf": branches}


def _only(applies_to: str, *fails: Dict[str, Any]) -> Any:
    """The instances of type ``applies_to`` that fail the keyword in one of the ways ``fails``
    (instances of other types pass it)."""
    return _any_of([{"type": applies_to, **a} for a in fails])


def _negate_type(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    types = conv.types({"type": v}, path)
    rest = [t for t in _ALL_TYPES if t not in types and not (t == "number" and "integer" in types)]
    branches: List[Any] = [{"type": rest}] if rest else []
    if "integer" in types:  # numbers that are not integers (those written with a fraction)
        branches.append({"type": "number", _NOT_INTEGER: True})
    return _any_of(branches)


def _negate_values(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    vals = v if k == "enum" else [v]
    if not isinstance(vals, list):
        return None
    if {_type_of(x) for x in vals} - {"string", "null", "boolean", "integer", "number"}:
        return None  # objects and arrays have too many spellings to leave out
    strings = [x for x in vals if isinstance(x, str)]
    numbers = [x for x in vals if isinstance(x, (int, float)) and not isinstance(x, bool)]
    branches: List[Any] = [
        {"type": ["object", "array"]},
        {"type": "string", _NOT_STRINGS: strings} if strings else {"type": "string"},
        {"type": "number", _NOT_NUMBERS: numbers} if numbers else {"type": "number"},
    ]
    if None not in vals:
        branches.append({"type": "null"})
    bools = [b for b in (True, False) if not any(x is b for x in vals)]
    if bools:
        branches.append({"enum": bools})
    return {"anyOf": branches}


def _negate_not(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    return v


def _negate_any_of(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    if not isinstance(v, list):
        return None
    return {"allOf": [negate(conv, b, _ptr(path, "anyOf", i)) for i, b in enumerate(v)]}


def _negate_pattern(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    return _only("string", {_NOT_PATTERNS: [v]})


#: A size bound's type, the opposite bound, and the step from one to the other.
_SIZE_BOUNDS = {
    "minLength": ("string", "maxLength", -1),
    "maxLength": ("string", "minLength", 1),
    "minItems": ("array", "maxItems", -1),
    "maxItems": ("array", "minItems", 1),
    "minProperties": ("object", "maxProperties", -1),
    "maxProperties": ("object", "minProperties", 1),
}


def _negate_size(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    if not isinstance(v, int) or isinstance(v, bool):
        return None
    kind, opposite, step = _SIZE_BOUNDS[k]
    return _only(kind) if v + step < 0 else _only(kind, {opposite: v + step})


_OPPOSITE_NUMERIC = {
    "minimum": "exclusiveMaximum",
    "maximum": "exclusiveMinimum",
    "exclusiveMinimum": "maximum",
    "exclusiveMaximum": "minimum",
}


def _negate_numeric(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    if isinstance(v, bool) and k in ("exclusiveMinimum", "exclusiveMaximum"):
        return False if not v else None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    if isinstance(schema.get("exclusiveMinimum"), bool) or isinstance(schema.get("exclusiveMaximum"), bool):
        return None  # draft-4 booleans change the meaning of minimum / maximum
    return _only("number", {_OPPOSITE_NUMERIC[k]: v})


def _negate_required(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    if not isinstance(v, list):
        return None
    if not v:
        return False
    return _only("object", *({"properties": {name: False}} for name in v))


def _negate_properties(conv: Converter, k: str, v: Any, schema: Dict[str, Any], path: str) -> Any:
    if not isinstance(v, dict) or {"additionalProperties", "patternProperties"} & set(schema):
        return None
    branches = [
        {
            "type": "object",
            "required": [name],
            "properties": {name: negate(conv, s, _ptr(path, "properties", name))},
        }
        for name, s in v.items()
    ]
    return _any_of([b for b in branches if b["properties"][b["required"][0]] is not False])


_Negator = Callable[["Converter", str, Any, Dict[str, Any], str], Any]
#: How each keyword that can be negated is: its value ``v`` to a schema of the instances that
#: fail it (False: none; None: these values cannot be negated).
_NEGATORS: Dict[str, _Negator] = {
    "type": _negate_type,
    "enum": _negate_values,
    "const": _negate_values,
    "not": _negate_not,
    "anyOf": _negate_any_of,
    "pattern": _negate_pattern,
    **dict.fromkeys(_SIZE_BOUNDS, _negate_size),
    **dict.fromkeys(_OPPOSITE_NUMERIC, _negate_numeric),
    "required": _negate_required,
    "properties": _negate_properties,
}
