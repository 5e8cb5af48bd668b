"""JSON instances as the converter compares and keys them: their type, equality by value and
their compact JSON text."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps of a str, unwrapped
from typing import Any

from ...errors import SchemaError
from ..json_text import json_encoder

# sub() keys every sub-schema by its compact JSON text (``_check_depth`` has refused a
# document that contains itself)
_compact_json = json_encoder(",", ":")


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    raise SchemaError(f"not a JSON value: {v!r}")


def _json_equal(a: Any, b: Any) -> bool:
    ta, tb = _type_of(a), _type_of(b)
    num = ("integer", "number")
    if ta in num and tb in num:
        return bool(a == b)
    if ta != tb:
        return False
    if ta == "array":
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if ta == "object":
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def _values_key(v: Any) -> str:
    # a string (most enum values) as json.dumps spells it, without its Python wrapper
    return _json_str(v) if type(v) is str else json.dumps(v, sort_keys=True)
