"""``enum`` / ``const``: each value spelled with the layout, filtered by its sibling keywords."""

from __future__ import annotations

import json
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Set,
)

from ...errors import SchemaError
from ..ir import (
    Expr,
    Literal,
    seq,
)
from .excludes import filtered_literal
from .instances import _json_equal, _type_of, _values_key
from .keywords import (
    _AND_PATTERNS,
    _INTERNAL_KW,
    _NOT_INTEGER,
    _NOT_NUMBERS,
    _NOT_PATTERNS,
    _NOT_STRINGS,
    _is_annotation,
)
from .lexical import _string_literal, choice
from .strings import _pattern_dfa

if TYPE_CHECKING:
    from .convert import Converter


def enum_schema(
    conv: Converter, schema: Dict[str, Any], types: List[str], path: str, depth: int
) -> Optional[Expr]:
    if "enum" in schema:
        vals = schema["enum"]
        if not isinstance(vals, list):
            raise conv.fail("'enum' must be an array", path, "enum")
    else:
        vals = [schema["const"]]
    if "const" in schema and "enum" in schema:
        vals = [v for v in vals if _json_equal(v, schema["const"])]
    if schema.get("nullable") is True and "type" not in schema and "enum" in schema:
        vals = vals + [None]
    kept = []
    seen: Set[str] = set()
    others = {
        k: v
        for k, v in schema.items()
        if not _is_annotation(k) and k not in ("enum", "const", "type", "nullable")
    }
    validator = None
    if others:
        import jsonschema

        if conv.validator is None:
            root = conv.root if isinstance(conv.root, (dict, bool)) else {}
            conv.validator = jsonschema.Draft202012Validator(root)
        validator = conv.validator.evolve(
            schema={k: v for k, v in others.items() if k not in (*_INTERNAL_KW, _NOT_INTEGER)}
        )  # '$ref's resolve against the root
    for v in vals:
        t = _type_of(v)
        ok = t in types or (t == "integer" and "number" in types)
        if ok and isinstance(v, (int, float)) and not isinstance(v, bool):
            if others.get(_NOT_INTEGER) and float(v).is_integer():
                ok = False
            if any(_json_equal(v, w) for w in others.get(_NOT_NUMBERS, ())):
                ok = False
        if ok and isinstance(v, str):  # the internal keywords, which a validator ignores
            ok = (
                v not in others.get(_NOT_STRINGS, ())
                and not any(_pattern_dfa(p).matches(v) for p in others.get(_NOT_PATTERNS, ()))
                and all(_pattern_dfa(p).matches(v) for p in others.get(_AND_PATTERNS, ()))
            )
        if ok and validator is not None:
            try:
                ok = validator.is_valid(v)
            except Exception as e:  # e.g. an unresolvable $ref
                conv.unsupported("enum", path, f"cannot be checked against its sibling keywords ({e})")
                ok = True  # lenient: keep the value
        key = _values_key(v) if ok else None
        if key is not None and key not in seen:
            seen.add(key)
            kept.append(v)  # equal numbers spelled differently (1 and 1.0) are both kept
    return choice([json_literal(conv, v, depth) for v in kept])


def json_literal(conv: Converter, v: Any, depth: int) -> Optional[Expr]:
    """One JSON value, spelled with the layout at ``depth``; None when every spelling of one
    of its strings holds one of ``conv.excludes``."""
    lay = conv.layout
    if v is None or isinstance(v, bool):
        return Literal(json.dumps(v).encode())
    if isinstance(v, int):
        return Literal(str(v).encode())
    if isinstance(v, float):
        forms = [json.dumps(v)]
        if v.is_integer() and abs(v) < 1e16:
            forms.append(str(int(v)))
        out = choice([Literal(f.encode()) for f in forms])
        assert out is not None
        return out
    if isinstance(v, str):
        return filtered_literal(v, conv.excludes) if conv.excludes else _string_literal(v)
    if isinstance(v, list):
        if not v:
            return lay.empty(depth, b"[]")
        items: List[Optional[Expr]] = []
        for i, x in enumerate(v):
            if i:
                items.append(lay.sep(depth))
            items.append(json_literal(conv, x, depth + 1))
        return None if None in items else lay.container(depth, b"[]", seq(items))
    if isinstance(v, dict):
        if not v:
            return lay.empty(depth, b"{}")
        items = []
        for i, (k, x) in enumerate(v.items()):
            if i:
                items.append(lay.sep(depth))
            items += [json_literal(conv, str(k), depth), lay.colon(depth), json_literal(conv, x, depth + 1)]
        return None if None in items else lay.container(depth, b"{}", seq(items))
    raise SchemaError(f"not a JSON value: {v!r}")
