"""JSON instances as the converter compares and keys them: their type, equality by value and
their compact JSON text."""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps of a str, unwrapped
from typing import (
    Any,
    Callable,
)

from ...errors import SchemaError


def _compact_encoder() -> Callable[[Any], str]:
    """``json.dumps(x, separators=(",", ":"))``, its C encoder made once: sub() keys every
    sub-schema by its compact JSON text, hundreds of times per tool registry, and making the
    encoder was most of the cost of encoding a small sub-schema. Without the circular-reference
    check: ``_check_depth`` has refused a document that contains itself."""
    encoder = json.JSONEncoder(separators=(",", ":"))
    make = getattr(json.encoder, "c_make_encoder", None)
    try:  # the arguments JSONEncoder.iterencode passes it
        c_encode = make(None, encoder.default, _json_str, None, ":", ",", False, False, True)  # type: ignore[misc]
    except TypeError:  # no C accelerator (None), or one of another signature
        return encoder.encode
    return lambda x: "".join(c_encode(x, 0))


_compact_json = _compact_encoder()


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
