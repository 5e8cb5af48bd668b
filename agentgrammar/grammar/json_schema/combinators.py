"""``anyOf`` / ``oneOf`` (disjoint or made exclusive), ``if`` / ``then`` / ``else`` and the
dependency keywords rewritten into them."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Set,
)

from ...errors import SchemaError
from ..ir import Expr
from .instances import _json_equal, _type_of
from .keywords import _REWRITTEN_KW, _TYPES, _is_annotation, _ptr
from .lexical import choice
from .merge import deref, merge
from .negate import negate
from .strings import string_union

if TYPE_CHECKING:
    from .convert import Converter


_MAX_ONE_OF = 8  # oneOf branches made exclusive by negating the others (n * (n - 1) negations)


def rewrite(conv: Converter, schema: Dict[str, Any], path: str) -> Any:
    """``if``/``then``/``else`` and the dependency keywords as anyOf / allOf / not."""
    rest = {k: v for k, v in schema.items() if k not in _REWRITTEN_KW}
    clauses: List[Any] = []
    cond = schema.get("if", True)
    then, otherwise = schema.get("then", True), schema.get("else", True)
    if "if" not in schema or (then is True and otherwise is True):
        pass  # without then/else, if constrains nothing
    elif isinstance(cond, bool):
        clauses.append(then if cond else otherwise)
    else:
        negated = negate(conv, cond, _ptr(path, "if"))
        clauses.append(
            {
                "anyOf": [
                    {"allOf": [cond, then]},
                    {"allOf": [negated, otherwise]},
                ]
            }
        )
    for kw in ("dependencies", "dependentRequired", "dependentSchemas"):
        deps = schema.get(kw, {})
        if not isinstance(deps, dict):
            raise conv.fail(f"'{kw}' must be an object", path, kw)
        for name, dep in deps.items():
            if isinstance(dep, list):
                dep = {"required": dep}
            if dep is True or dep == {}:
                continue
            # absent, or present and the dependency holds (objects only, as both forms say)
            clauses.append({"anyOf": [{"properties": {name: False}}, {"allOf": [{"required": [name]}, dep]}]})
    return {"allOf": [rest, *clauses]} if clauses else rest


def exclusive(conv: Converter, branches: List[Any], path: str) -> Optional[List[Any]]:
    """oneOf's branches made disjoint: each branch and the negation of every other one;
    None when some branch cannot be negated exactly."""
    if len(branches) > _MAX_ONE_OF:
        return None
    lenient, conv.lenient = conv.lenient, False
    try:
        negated = [negate(conv, b, _ptr(path, "oneOf", i)) for i, b in enumerate(branches)]
    except SchemaError:
        return None
    finally:
        conv.lenient = lenient
    return [{"allOf": [b, *(n for j, n in enumerate(negated) if j != i)]} for i, b in enumerate(branches)]


def disjoint(conv: Converter, branches: List[Any], rest: Dict[str, Any], path: str) -> bool:
    """Whether no instance can match two of ``branches`` (by type, or by a constant property)."""
    sets = []
    resolved = []
    for b in branches:
        try:
            b = deref(conv, b, path) if isinstance(b, dict) else b
        except SchemaError:
            return False
        resolved.append(b)
        if not isinstance(b, dict):
            if b is False:
                sets.append(set())
                continue
            return False
        if "enum" in b or "const" in b:
            vals = b["enum"] if "enum" in b else [b["const"]]
            s = {_type_of(v) for v in vals}
        elif "type" in b:
            ts = [b["type"]] if isinstance(b["type"], str) else b["type"]
            s = set(ts)
            if b.get("nullable") is True:
                s.add("null")
        else:
            s = set(_TYPES)
        if "number" in s:
            s.add("integer")
        sets.append(s)
    if all(not (sets[i] & sets[j]) for i in range(len(sets)) for j in range(i)):
        return True

    # A discriminator: objects only (else a non-object matches every branch), and a
    # property required in every branch, with pairwise distinct constants.
    def objects_only(b: Dict[str, Any]) -> bool:
        return any(x.get("type") in ("object", ["object"]) for x in (b, rest))

    if all(isinstance(b, dict) and objects_only(b) for b in resolved):
        common: Optional[Set[str]] = None
        for b in resolved:
            req = set(b.get("required", [])) | set(rest.get("required", []))
            common = req if common is None else common & req
        for prop in sorted(common or ()):
            vals = []
            for b in resolved:
                ps = b.get("properties", {}).get(prop)
                ps = deref(conv, ps, path) if isinstance(ps, dict) else ps
                if not isinstance(ps, dict) or not ("const" in ps or "enum" in ps):
                    break
                vals.append(ps["enum"] if "enum" in ps else [ps["const"]])
            else:
                ok = all(
                    not any(_json_equal(x, y) for x in vals[i] for y in vals[j])
                    for i in range(len(vals))
                    for j in range(i)
                )
                if ok:
                    return True
    return False


def any_of(
    conv: Converter, schema: Dict[str, Any], kw: str, path: str, depth: int, hint: str
) -> Optional[Expr]:
    """``anyOf`` or ``oneOf`` (``kw``): a choice of the branches, each merged with the
    siblings; ``oneOf`` branches must be provably disjoint or made exclusive by negation."""
    branches = schema[kw]
    if not isinstance(branches, list) or not branches:
        raise conv.fail(f"'{kw}' must be a non-empty array", path, kw)
    rest = {k: v for k, v in schema.items() if k != kw and not _is_annotation(k)}
    if kw == "oneOf" and not disjoint(conv, branches, rest, path):
        made_exclusive = exclusive(conv, branches, path)
        if made_exclusive is not None:
            branches = made_exclusive
        else:
            conv.unsupported(
                "oneOf",
                path,
                "has branches that are neither provably disjoint nor negatable "
                "(only those are exact); use anyOf",
            )
    if rest:
        branches = [merge(conv, rest, b, _ptr(path, kw, i)) for i, b in enumerate(branches)]
    united, expr = string_union(conv, branches, path, hint)
    if united:
        return expr
    alts = [conv.sub(b, _ptr(path, kw, i), depth, f"{hint}_{kw.lower()}_{i}") for i, b in enumerate(branches)]
    return choice(alts)
