"""``$ref``: JSON pointers inside the schema resolved, each referenced schema one shared rule."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Optional,
    Tuple,
)
from urllib.parse import unquote

from ...errors import SchemaError
from ..ir import (
    EMPTY,
    Choice,
    Expr,
    RuleRef,
)
from .keywords import _ptr, _sanitize, _show

if TYPE_CHECKING:
    from .convert import Converter


def resolve(conv: Converter, ref: Any, path: str) -> Tuple[Any, str]:
    """The node ``ref`` points to, and its decoded fragment; each reference is looked up
    once (a schema with shared definitions resolves the same few many times)."""
    found = conv.resolved.get(ref) if isinstance(ref, str) else None
    if found is None:
        found = conv.resolved[ref] = _resolve(conv, ref, path)
    return found


def _resolve(conv: Converter, ref: Any, path: str) -> Tuple[Any, str]:
    if not isinstance(ref, str):
        raise conv.fail("'$ref' must be a string", path, "$ref")
    if not ref.startswith("#"):
        raise SchemaError(
            f"JSON Schema keyword '$ref' at {_show(_ptr(path, '$ref'))}: only references inside "
            f"the schema ('#...') are supported, not {ref!r}",
            keyword="$ref",
            pointer=_show(_ptr(path, "$ref")),
        )
    frag = unquote(ref[1:])
    if frag and not frag.startswith("/"):
        raise SchemaError(
            f"JSON Schema keyword '$ref' at {_show(_ptr(path, '$ref'))}: anchors ({ref!r}) are not supported",
            keyword="$ref",
            pointer=_show(_ptr(path, "$ref")),
        )
    node = conv.root
    for seg in frag.split("/")[1:]:
        seg = seg.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and seg in node:
            node = node[seg]
        elif isinstance(node, list) and seg.isdigit() and int(seg) < len(node):
            node = node[int(seg)]
        else:
            raise conv.fail(f"'$ref' {ref!r} points to nothing", path, "$ref")
    return node, frag


def ref_rule(conv: Converter, ref: str, path: str, depth: int) -> Optional[Expr]:
    target, frag = resolve(conv, ref, path)
    if target is False:
        return None
    key = (frag, conv.layout.key(depth))
    if key in conv.dead_refs:
        return None
    name = conv.ref_memo.get(key)
    if name is not None:
        return RuleRef(name)
    segs = [s.replace("~1", "/").replace("~0", "~") for s in frag.split("/")[1:]]
    if not segs:
        hint = "root"
    elif len(segs) == 2 and segs[0] in ("$defs", "definitions"):
        hint = "defs_" + _sanitize(segs[1])
    else:
        hint = "ref_" + _sanitize("_".join(segs))
    if conv.layout.mode == "indent" and key[1]:
        hint += f"_d{key[1]}"
    name = conv.fresh(hint)
    conv.ref_memo[key] = name
    conv.rules[name] = EMPTY  # placeholder (recursion)
    expr = conv.convert(target, frag, depth, name)
    if expr is None:
        # An unsatisfiable definition: a rule that matches nothing (recursive references to
        # it may exist already), and the reference contributes nothing.
        conv.rules[name] = Choice(())
        conv.dead_refs.add(key)
        return None
    conv.rules[name] = expr
    return RuleRef(name)
