"""Argument values of tool calls: JSON read strictly (a key twice in one object is an error, not
"the last one wins") and objects written in their schema's property order.

Example:
    >>> loads_strict('{"city": "Oslo", "days": 2}')
    {'city': 'Oslo', 'days': 2}
    >>> loads_strict('{"city": "Oslo", "city": "Bergen"}')
    Traceback (most recent call last):
    ...
    agentgrammar.formats.arguments.DuplicateKeyError: duplicate key 'city' in a JSON object
    >>> order_like({"days": 2, "city": "Oslo"}, {"properties": {"city": {}, "days": {}}})
    {'city': 'Oslo', 'days': 2}
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import AgentGrammarError

__all__ = ["DuplicateKeyError", "decode_strict", "loads_strict", "order_like"]


class DuplicateKeyError(AgentGrammarError, ValueError):
    """A JSON object names the same key twice (``key`` is that key).

    Example:
        >>> DuplicateKeyError("a").key
        'a'
    """

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in a JSON object")
        self.key = key


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates)


def decode_strict(text: str, pos: int = 0) -> Tuple[Any, int]:
    """The JSON value at ``pos`` in ``text`` and the offset after it (``JSONDecoder.raw_decode``),
    with ``DuplicateKeyError`` for an object, at any depth, that names a key twice.

    Example:
        >>> decode_strict('x {"a": [1, {"b": 2}]} y', 2)
        ({'a': [1, {'b': 2}]}, 22)
    """
    return _DECODER.raw_decode(text, pos)


def loads_strict(text: str) -> Any:
    """``json.loads`` with ``DuplicateKeyError`` for a key given twice in one object.

    Example:
        >>> loads_strict("[1, 2]")
        [1, 2]
    """
    return _DECODER.decode(text)


def _resolve(schema: Any, root: Any) -> Any:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed."""
    seen = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref: str = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        target: Any = root
        for part in (p for p in ref[1:].split("/") if p):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                return schema
            target = target[part]
        schema, seen = target, seen + 1
    return schema


def _branch_for(value: Any, schema: Mapping[str, Any], root: Any) -> Optional[Any]:
    """The ``anyOf`` / ``oneOf`` / ``allOf`` branch whose properties hold every key of ``value``
    (a dict), or whose ``items`` apply (a list); None when no branch is an object / array."""
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if not isinstance(branches, list):
            continue
        for branch in branches:
            branch = _resolve(branch, root)
            if not isinstance(branch, Mapping):
                continue
            props = branch.get("properties")
            if isinstance(value, Mapping) and isinstance(props, Mapping) and all(k in props for k in value):
                return branch
            if isinstance(value, list) and isinstance(branch.get("items"), Mapping):
                return branch
    return None


def order_like(value: Any, schema: Any, root: Any = None, _depth: int = 0) -> Any:
    """``value`` with the members of every object in the order of its schema's ``properties``
    (nested objects and array items too, through local ``$ref`` s and the matching ``anyOf`` /
    ``oneOf`` branch); members the schema does not declare keep their order, after the others.
    ``root`` is the document that ``$ref`` s point into (default: ``schema``).

    Example:
        >>> schema = {"properties": {"a": {"$ref": "#/$defs/P"}, "b": {}},
        ...           "$defs": {"P": {"properties": {"x": {}, "y": {}}}}}
        >>> order_like({"b": 1, "a": {"y": 2, "x": 3}}, schema)
        {'a': {'x': 3, 'y': 2}, 'b': 1}
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or _depth > 64:
        return value
    branch = (
        _branch_for(value, schema, root) if "properties" not in schema and "items" not in schema else None
    )
    if branch is not None:
        schema = branch
    if isinstance(value, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            out = {k: order_like(value[k], props[k], root, _depth + 1) for k in props if k in value}
            out.update((k, v) for k, v in value.items() if k not in out)
            return out
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [order_like(v, schema["items"], root, _depth + 1) for v in value]
    return value
