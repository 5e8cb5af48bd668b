"""``not``: a schema of exactly the instances another rejects, for the common forms."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
)

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

    def only(applies_to: str, *fails: Dict[str, Any]) -> Any:
        # instances of other types pass the keyword: only those of its type can fail it
        branches = [{"type": applies_to, **a} for a in fails]
        return False if not branches else branches[0] if len(branches) == 1 else {"anyOf": branches}

    if k == "type":
        types = conv.types({"type": v}, path)
        rest = [t for t in _ALL_TYPES if t not in types and not (t == "number" and "integer" in types)]
        branches: List[Any] = [{"type": rest}] if rest else []
        if "integer" in types:  # numbers that are not integers (those written with a fraction)
            branches.append({"type": "number", _NOT_INTEGER: True})
        return False if not branches else branches[0] if len(branches) == 1 else {"anyOf": branches}
    if k in ("enum", "const"):
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
    if k == "not":
        return v
    if k == "anyOf" and isinstance(v, list):
        return {"allOf": [negate(conv, b, _ptr(path, "anyOf", i)) for i, b in enumerate(v)]}
    if k == "pattern":
        return only("string", {_NOT_PATTERNS: [v]})
    bounds = {
        "minLength": ("string", "maxLength", -1),
        "maxLength": ("string", "minLength", 1),
        "minItems": ("array", "maxItems", -1),
        "maxItems": ("array", "minItems", 1),
        "minProperties": ("object", "maxProperties", -1),
        "maxProperties": ("object", "minProperties", 1),
    }
    if k in bounds and isinstance(v, int) and not isinstance(v, bool):
        kind, opposite, step = bounds[k]
        return only(kind) if v + step < 0 else only(kind, {opposite: v + step})
    numeric = {
        "minimum": "exclusiveMaximum",
        "maximum": "exclusiveMinimum",
        "exclusiveMinimum": "maximum",
        "exclusiveMaximum": "minimum",
    }
    if k in numeric and isinstance(v, (int, float)) and not isinstance(v, bool):
        if isinstance(schema.get("exclusiveMinimum"), bool) or isinstance(
            schema.get("exclusiveMaximum"), bool
        ):
            return None  # draft-4 booleans change the meaning of minimum / maximum
        return only("number", {numeric[k]: v})
    if k in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(v, bool):
        return False if not v else None
    if k == "required" and isinstance(v, list):
        if not v:
            return False
        return only("object", *({"properties": {name: False}} for name in v))
    if (
        k == "properties"
        and isinstance(v, dict)
        and not ({"additionalProperties", "patternProperties"} & set(schema))
    ):
        branches = [
            {
                "type": "object",
                "required": [name],
                "properties": {name: negate(conv, s, _ptr(path, "properties", name))},
            }
            for name, s in v.items()
        ]
        branches = [b for b in branches if b["properties"][b["required"][0]] is not False]
        return False if not branches else branches[0] if len(branches) == 1 else {"anyOf": branches}
    return None
