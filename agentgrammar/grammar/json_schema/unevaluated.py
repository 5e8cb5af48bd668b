"""``unevaluatedProperties`` / ``unevaluatedItems``: rewritten into ``additionalProperties`` /
``items`` wherever the properties (items) that the other keywords evaluate are known from the
schema alone.

Evaluation follows draft 2020-12: ``properties``, ``patternProperties`` and
``additionalProperties`` (``prefixItems``, ``items``) evaluate, and so do the in-place
applicators ``allOf``, ``$ref``, the branches of ``anyOf`` / ``oneOf`` that validate, and ``if``
with ``then`` (or ``else`` when ``if`` fails); ``not`` evaluates nothing. A branching applicator
is distributed first, each branch then carrying the keyword: exact when at most one branch can
validate (provably disjoint branches; ``if`` against its negation) or when every branch
evaluates the same properties. The rest is refused (``SchemaError``; lenient: ignored, an
over-approximation): branches that evaluate different properties and may overlap,
``dependentSchemas``, ``contains`` under ``unevaluatedItems``, and patterns that would have to
be merged across ``allOf``.

Example:
    >>> from agentgrammar import Grammar
    >>> g = Grammar.from_json_schema({"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False})
    >>> g.accepts('{"a": 1}'), g.accepts('{"a": 1, "b": 2}')
    (True, False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional, Tuple, Union

from .combinators import disjoint
from .keywords import _MAX_LEVEL, _ptr
from .resolve import resolve

if TYPE_CHECKING:
    from .convert import Converter

UNEVALUATED_KW = ("unevaluatedProperties", "unevaluatedItems")

#: Every property (item) is evaluated.
_ALL = "all"
#: The property names and patterns evaluated, or the number of leading items evaluated.
_Evaluated = Union[str, Tuple[FrozenSet[str], FrozenSet[str]], int]
_BRANCHING = ("anyOf", "oneOf")


def without_unevaluated(conv: Converter, schema: Any, path: str) -> Any:
    """``schema`` with its ``unevaluated*`` keywords rewritten away (see the module)."""
    for kw in UNEVALUATED_KW:
        if isinstance(schema, dict) and kw in schema:
            schema = _rewrite(conv, schema, kw, path)
    return schema


def _rewrite(conv: Converter, schema: Dict[str, Any], kw: str, path: str) -> Any:
    unevaluated = schema[kw]
    rest = {k: v for k, v in schema.items() if k != kw}
    if unevaluated is True:
        return rest
    if "if" in rest and ("then" in rest or "else" in rest):
        return _distribute_if(rest, kw, unevaluated)
    for branching in _BRANCHING:
        if branching in rest:
            return _distribute(conv, rest, branching, kw, unevaluated, path)
    evaluated = _evaluated(conv, rest, kw, path)
    if evaluated is None:
        conv.unsupported(
            kw, path, "cannot be expressed: what the other keywords evaluate depends on the instance"
        )
        return rest
    return _constrained(conv, rest, kw, unevaluated, evaluated, path)


def _constrained(
    conv: Converter, rest: Dict[str, Any], kw: str, unevaluated: Any, evaluated: _Evaluated, path: str
) -> Any:
    """``rest`` and: what ``evaluated`` leaves out is valid against ``unevaluated``."""
    if evaluated == _ALL:
        return rest
    if kw == "unevaluatedItems":
        assert isinstance(evaluated, int)
        return {"allOf": [rest, {"prefixItems": [True] * evaluated, "items": unevaluated}]}
    names, patterns = evaluated  # type: ignore[misc]
    if not patterns:
        return {
            "allOf": [
                rest,
                {"properties": dict.fromkeys(sorted(names), True), "additionalProperties": unevaluated},
            ]
        }
    if not any(k in rest for k in ("allOf", "$ref", *_BRANCHING)):  # the patterns are this schema's own
        return {**rest, "additionalProperties": unevaluated}
    conv.unsupported(kw, path, "with patternProperties in other schemas than its own cannot be expressed")
    return rest


def _distribute_if(rest: Dict[str, Any], kw: str, unevaluated: Any) -> Any:
    """``if`` / ``then`` / ``else`` as two cases that cannot both hold, each with ``kw``: ``if``
    and ``then`` evaluate in the first, ``else`` alone in the second (``not`` evaluates nothing)."""
    base = {k: v for k, v in rest.items() if k not in ("if", "then", "else")}
    cond, then, otherwise = rest["if"], rest.get("then", True), rest.get("else", True)
    if isinstance(cond, bool):
        return {"allOf": [base, then if cond else otherwise], kw: unevaluated}
    return {
        "anyOf": [
            {"allOf": [base, cond, then], kw: unevaluated},
            {"allOf": [base, {"not": cond}, otherwise], kw: unevaluated},
        ]
    }


def _distribute(
    conv: Converter, rest: Dict[str, Any], branching: str, kw: str, unevaluated: Any, path: str
) -> Any:
    """``anyOf`` / ``oneOf`` under ``kw``: ``kw`` in each branch when the branches are disjoint,
    or once for all when they all evaluate the same; refused otherwise."""
    branches = rest[branching]
    if not isinstance(branches, list) or not branches:
        raise conv.fail(f"'{branching}' must be a non-empty array", path, branching)
    base = {k: v for k, v in rest.items() if k != branching}
    cases = [{"allOf": [base, b]} for b in branches]
    if disjoint(conv, branches, base, path):  # at most one validates: anyOf is oneOf here
        return {"anyOf": [{**c, kw: unevaluated} for c in cases]}
    seen = {_evaluated(conv, c, kw, path) for c in cases}
    if len(seen) == 1 and None not in seen:  # whichever validate, the same are evaluated
        return _constrained(conv, rest, kw, unevaluated, seen.pop(), path)  # type: ignore[arg-type]
    conv.unsupported(
        kw,
        path,
        f"cannot be expressed: the '{branching}' branches may overlap and evaluate different "
        + ("properties" if kw == "unevaluatedProperties" else "items"),
    )
    return rest


def _evaluated(conv: Converter, schema: Any, kw: str, path: str, level: int = 0) -> Optional[_Evaluated]:
    """What ``schema`` evaluates when it validates; None when that depends on the instance (or
    cannot be told: ``$ref`` s nested past ``_MAX_LEVEL``)."""
    empty: _Evaluated = 0 if kw == "unevaluatedItems" else (frozenset(), frozenset())
    if not isinstance(schema, dict):
        return empty
    if level > _MAX_LEVEL:
        return None
    if kw in schema:  # a nested one evaluates whatever is left
        return _ALL
    if any(k in schema for k in (*_BRANCHING, "if", "dependentSchemas")) or (
        kw == "unevaluatedItems" and "contains" in schema
    ):
        return None
    own = _own_items(schema) if kw == "unevaluatedItems" else _own_properties(schema)
    parts = [own]
    if "$ref" in schema:
        target, _ = resolve(conv, schema["$ref"], path)
        parts.append(_evaluated(conv, target, kw, path, level + 1))
    for i, branch in enumerate(schema.get("allOf", [])):
        parts.append(_evaluated(conv, branch, kw, _ptr(path, "allOf", i), level + 1))
    return _union(parts)


def _own_properties(schema: Dict[str, Any]) -> _Evaluated:
    if "additionalProperties" in schema:
        return _ALL
    props, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    return (
        frozenset(props if isinstance(props, dict) else ()),
        frozenset(patterns if isinstance(patterns, dict) else ()),
    )


def _own_items(schema: Dict[str, Any]) -> _Evaluated:
    items = schema.get("items")
    if isinstance(items, list):  # the older spelling: additionalItems evaluates the rest
        return _ALL if "additionalItems" in schema else len(items)
    if items is not None:
        return _ALL
    prefix = schema.get("prefixItems", [])
    return len(prefix) if isinstance(prefix, list) else 0


def _union(parts: Any) -> Optional[_Evaluated]:
    if any(p is None for p in parts):
        return None
    if any(p == _ALL for p in parts):
        return _ALL
    if all(isinstance(p, int) for p in parts):
        return max(parts)
    return (frozenset().union(*(p[0] for p in parts)), frozenset().union(*(p[1] for p in parts)))
