"""How deep a JSON value nests, and how deep tool arguments may: the registry refuses deeper
arguments before validating them, and the formats' JSON reader refuses deeper text.

Example:
    >>> nesting_depth({"a": [1, {"b": 2}]}) <= MAX_JSON_DEPTH
    True
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

__all__ = ["MAX_JSON_DEPTH", "nesting_depth"]

#: How deep parsed JSON may nest (objects and arrays, the outermost one counted): the same as
#: ``json_schema.MAX_SCHEMA_DEPTH``, so that no schema the front-end takes is too deep for its
#: own values, while the decoder and the validators stay far from Python's recursion limit.
MAX_JSON_DEPTH = 256


def nesting_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``value`` nests (dicts, lists and tuples; the outermost counted, a scalar is 0),
    found level by level without recursion; the count stops at ``limit + 1`` (so a cyclic
    value is "too deep", not an endless walk), and a container met twice on one level is
    walked once.

    Example:
        >>> nesting_depth({"a": [1, {"b": 2}]}), nesting_depth(3)
        (3, 0)
        >>> loop = []; loop.append(loop)
        >>> nesting_depth(loop, limit=10)
        11
    """
    level = [value] if isinstance(value, (Mapping, list, tuple)) else []
    depth = 0
    while level and depth <= limit:
        depth += 1
        below: Dict[int, Any] = {}
        for node in level:
            for child in node.values() if isinstance(node, Mapping) else node:
                if isinstance(child, (Mapping, list, tuple)):
                    below.setdefault(id(child), child)
        level = list(below.values())
    return depth
