"""Read a structural tag: a model, a dict or JSON text into a ``StructuralTag``, with the JSON
path of the first problem in the error.

Example:
    >>> parse_structural_tag('{"type": "const_string", "value": "hi"}').format.value
    'hi'
"""

from __future__ import annotations

import json
from typing import Any, Dict, Sequence, Union, get_args

from pydantic import BaseModel, ValidationError

from ...errors import StructuralTagError
from . import models as st

__all__ = ["MAX_TAG_DEPTH", "parse_structural_tag"]

# The ``type`` of every format model: pydantic puts these tags in error locations.
_FORMAT_TYPES = frozenset(m.model_fields["type"].default for m in get_args(get_args(st.Format)[0]))


def _json_path(loc: Sequence[Union[str, int]]) -> str:
    """A pydantic error location as a JSON path (the union's tag names left out)."""
    out = "$"
    prev: Union[str, int, None] = None
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _FORMAT_TYPES and (prev in ("format", "content") or isinstance(prev, int)):
            pass  # the discriminator pydantic inserts, not a key of the input
        else:
            out += f".{part}"
        prev = part
    return out


#: How deep a structural tag given as a dict or JSON text may nest (objects and arrays, a
#: ``json_schema`` inside counted): twice ``json_schema.MAX_SCHEMA_DEPTH``, so a schema at its
#: own limit fits; checked before pydantic and the builder, which recurse per level, see it.
MAX_TAG_DEPTH = 512


def _check_depth(obj: Any) -> None:
    """``StructuralTagError`` for ``obj`` nested deeper than ``MAX_TAG_DEPTH``, found level by
    level without recursion (a container met twice on a level is walked once, so a cyclic
    dict is too deep rather than an endless walk)."""
    level, depth = [obj], 0
    while level:
        depth += 1
        if depth > MAX_TAG_DEPTH:
            raise StructuralTagError(f"the structural tag nests more than {MAX_TAG_DEPTH} levels")
        below: Dict[int, Any] = {}
        for node in level:
            for child in node.values() if isinstance(node, dict) else node:
                if isinstance(child, (dict, list, tuple)):
                    below.setdefault(id(child), child)
        level = list(below.values())


def parse_structural_tag(obj: Any) -> st.StructuralTag:
    """A ``StructuralTag`` from a model, a dict or JSON text; ``StructuralTagError`` (with the JSON
    path of the first problem) when it is malformed, or nested deeper than ``MAX_TAG_DEPTH``.

    Example:
        >>> parse_structural_tag('{"type": "const_string", "value": "hi"}').format.value
        'hi'
        >>> parse_structural_tag("[" * 5000)
        Traceback (most recent call last):
        ...
        agentgrammar.errors.StructuralTagError: the structural tag nests more than 512 levels
    """
    if isinstance(obj, st.StructuralTag):
        return obj
    if isinstance(obj, BaseModel):  # a bare format, kept as it is (a GrammarText may hold a Grammar)
        obj = {"type": "structural_tag", "format": obj}
    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except ValueError as e:
            raise StructuralTagError(f"not valid JSON: {e}") from None
        except RecursionError:  # the decoder recurses per level: far deeper than MAX_TAG_DEPTH
            raise StructuralTagError(f"the structural tag nests more than {MAX_TAG_DEPTH} levels") from None
    if isinstance(obj, (dict, list)):
        _check_depth(obj)
    if (
        isinstance(obj, dict)
        and obj.get("type") != "structural_tag"
        and "format" not in obj
        and "type" in obj
    ):
        obj = {"type": "structural_tag", "format": obj}  # a bare format dict
    try:
        return st.StructuralTag.model_validate(obj)
    except ValidationError as e:
        err = e.errors()[0]
        raise StructuralTagError(err["msg"], path=_json_path(err["loc"])) from None
