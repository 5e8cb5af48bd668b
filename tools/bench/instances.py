"""Valid arguments made from a tool's JSON schema, for the realistic outputs the benchmark walks.

>>> instance({"type": "object", "properties": {"n": {"type": "integer", "minimum": 5}}, "required": ["n"]})
{'n': 6}
"""

from __future__ import annotations

from typing import Any


def instance(schema: Any, depth: int = 0) -> Any:
    """A small value valid for a (BFCL-style, ``$ref``-free) JSON schema: required properties
    in schema order, the first enum value, bounds respected. Raises ``ValueError`` for what it
    cannot fill (patterns, formats, ``$ref``)."""
    if depth > 8 or not isinstance(schema, dict):
        raise ValueError("too deep")
    if "$ref" in schema or "pattern" in schema or "format" in schema or "not" in schema:
        raise ValueError("not filled: $ref / pattern / format / not")
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance(schema[key][0], depth + 1)
    t = schema.get("type", "string")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "null")
    if t == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return {k: instance(v, depth + 1) for k, v in props.items() if k in required}
    if t == "array":
        items = schema.get("items", {"type": "string"})
        return [instance(items, depth + 1) for _ in range(max(1, int(schema.get("minItems", 1))))]
    if t == "string":
        text = "San Francisco, CA"
        lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
        text = text.ljust(lo, "x")
        return text[: int(hi)] if hi is not None else text
    if t in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        value = 3 if t == "integer" else 2.5
        if lo is not None and value <= lo:
            value = int(lo) + 1 if t == "integer" else lo + 0.5
        if hi is not None and value >= hi:
            value = int(hi) - 1 if t == "integer" else hi - 0.5
        return value
    if t == "boolean":
        return True
    if t == "null":
        return None
    raise ValueError(f"type {t!r}")
