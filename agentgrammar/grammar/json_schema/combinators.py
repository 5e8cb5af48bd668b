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
from .keywords import _OBJECT_KW, _REWRITTEN_KW, _TYPES, _is_annotation, _ptr
from .lexical import choice
from .merge import deref, merge
from .negate import negate
from .strings import string_one_of, string_union

if TYPE_CHECKING:
    from .convert import Converter


_MAX_ONE_OF = 8  # oneOf branches made exclusive by negating the others (n * (n - 1) negations)
_OBJECT = {"type": "object"}


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


def _resolved(conv: Converter, branches: List[Any], path: str) -> Optional[List[Any]]:
    """The branches with their ``$ref`` s followed; None when one cannot be followed."""
    try:
        return [deref(conv, b, path) if isinstance(b, dict) else b for b in branches]
    except SchemaError:
        return None


def disjoint(conv: Converter, branches: List[Any], rest: Dict[str, Any], path: str) -> bool:
    """Whether no instance can match two of ``branches`` (by type, or by a constant property)."""
    resolved = _resolved(conv, branches, path)
    if resolved is None:
        return False
    sets = []
    for b in resolved:
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
    if _distinct_values(resolved):
        return True

    # A discriminator: objects only (else a non-object matches every branch), and a
    # property required in every branch, with pairwise distinct constants.
    def objects_only(b: Dict[str, Any]) -> bool:
        return any(x.get("type") in ("object", ["object"]) for x in (b, rest))

    if all(isinstance(b, dict) and objects_only(b) for b in resolved):
        return _discriminated(conv, resolved, rest, path)
    return False


def objects_by_discriminator(conv: Converter, branches: List[Any], rest: Dict[str, Any], path: str) -> bool:
    """Whether only objects can match exactly one of ``branches``, and those match at most one:
    two branches or more say nothing but object keywords (every other value matches both),
    and a discriminator tells the branches apart. oneOf is then the objects of anyOf: the
    usual tagged union written without ``"type": "object"``, which was made exclusive by
    negations and merges (seven such branches: 370 ms)."""
    resolved = _resolved(conv, branches, path)
    if resolved is None or not all(isinstance(b, dict) for b in resolved):
        return False
    only_object_kw = [b for b in resolved if all(k in _OBJECT_KW or _is_annotation(k) for k in b)]
    return len(only_object_kw) >= 2 and _discriminated(conv, resolved, rest, path)


def _discriminated(conv: Converter, resolved: List[Dict[str, Any]], rest: Dict[str, Any], path: str) -> bool:
    """Whether a property required in every branch (or in ``rest``) has a ``const`` or ``enum``
    in each, pairwise distinct: no object matches two branches."""
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


def _value_key(v: Any) -> Any:
    """A key equal for JSON-equal values only (``1`` and ``1.0``, not ``true`` and ``1``)."""
    t = _type_of(v)
    if t in ("integer", "number"):
        return ("#", v)  # Python's numbers hash and compare across int and float
    if t == "array":
        return ("a", tuple(_value_key(x) for x in v))
    if t == "object":
        return ("o", frozenset((k, _value_key(x)) for k, x in v.items()))
    return (t, v)


def _distinct_values(branches: List[Any]) -> bool:
    """Whether every branch is a ``const`` or an ``enum`` (whatever else it says) and no value
    is in two of them: the usual oneOf of constants, each with its description. Made
    exclusive instead, six such branches took 16 ms of negations and merges."""
    seen: Set[Any] = set()
    for b in branches:
        if b is False:
            continue
        if not isinstance(b, dict) or not ("const" in b or isinstance(b.get("enum"), list)):
            return False
        values = [b["const"]] if "const" in b else b["enum"]
        try:
            keys = {_value_key(v) for v in values}
        except TypeError:  # not JSON (the conversion says what is wrong)
            return False
        if not seen.isdisjoint(keys):
            return False
        seen |= keys
    return True


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
        if objects_by_discriminator(conv, branches, rest, path):
            rest = merge(conv, rest, _OBJECT, path)  # only objects match exactly one branch
            if rest is False:
                return None
        else:
            united, expr = string_one_of(conv, branches, rest, path, hint)
            if united:
                return expr
            made_exclusive = exclusive(conv, branches, path)
            if made_exclusive is None:
                conv.unsupported(
                    "oneOf",
                    path,
                    "has branches that are neither provably disjoint nor negatable "
                    "(only those are exact); use anyOf",
                )
            else:
                branches = made_exclusive
    if rest:
        branches = [merge(conv, rest, b, _ptr(path, kw, i)) for i, b in enumerate(branches)]
    united, expr = string_union(conv, branches, path, hint)
    if united:
        return expr
    alts = [conv.sub(b, _ptr(path, kw, i), depth, f"{hint}_{kw.lower()}_{i}") for i, b in enumerate(branches)]
    return choice(alts)
