"""``allOf``: schemas merged into one (the instances valid against both), ``$ref`` siblings
included."""

from __future__ import annotations

import math
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
)

from .instances import _json_equal
from .keywords import (
    _AND_PATTERNS,
    _INTERNAL_KW,
    _POSITIONAL_KW,
    _has_positional,
    _is_annotation,
    _positions,
    _ptr,
)
from .resolve import resolve

if TYPE_CHECKING:
    from .convert import Converter


def deref(conv: Converter, s: Any, path: str, guard: int = 0) -> Any:
    """Replace a top-level ``$ref`` by its target merged with the siblings. Remembered per
    schema object: the siblings are a new dict each time, so the merge memo (by identity)
    would never see the same pair again, and merges that deref the same schemas along
    every path (allOf over shared definitions) would merge them anew each time."""
    if not (isinstance(s, dict) and "$ref" in s):
        return s
    found = conv.deref_memo.get(id(s))
    if found is not None and found[0] is s:
        return found[1]
    original = s
    while isinstance(s, dict) and "$ref" in s:
        if guard > 32:
            raise conv.fail("'$ref' chain too deep (a reference cycle with no structure)", path, "$ref")
        target, _ = resolve(conv, s["$ref"], path)
        rest = {k: v for k, v in s.items() if k != "$ref"}
        s = merge(conv, target, rest, path) if rest else target
        guard += 1
    conv.deref_memo[id(original)] = (original, s)
    return s


def merge(conv: Converter, a: Any, b: Any, path: str) -> Any:
    """The schema of the instances valid against both ``a`` and ``b`` (simple cases)."""
    if a is False or b is False:
        return False
    if a is True or a == {}:
        return b
    if b is True or b == {}:
        return a
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise conv.fail("a schema must be an object or a boolean", path)
    # Merges recurse into properties and '$ref's; the same pair recurs once per path that
    # reaches it (allOf of shared definitions: quadratic or worse). Memoized by identity
    # (the memo holds both, so their ids stay theirs); results are never mutated.
    key = (id(a), id(b))
    found = conv.merge_memo.get(key)
    if found is not None:
        return found[2]
    out = _merge(conv, a, b, path)
    conv.merge_memo[key] = (a, b, out)
    return out


def _merge(conv: Converter, a: Dict[str, Any], b: Dict[str, Any], path: str) -> Any:
    a = deref(conv, a, path)
    b = deref(conv, b, path)
    if a is False or b is False:
        return False
    if a is True or b is True:
        return b if a is True else a
    a = flatten_all_of(conv, a, path)
    b = flatten_all_of(conv, b, path)
    if a is False or b is False:
        return False
    out: Dict[str, Any] = {}
    keys = list(a) + [k for k in b if k not in a]
    for k in keys:
        if _is_annotation(k) or (k in _POSITIONAL_KW and _has_positional(a) and _has_positional(b)):
            continue
        if k not in b:
            out[k] = a[k]
            continue
        if k not in a:
            out[k] = b[k]
            continue
        x, y = a[k], b[k]
        if k in ("properties", "additionalProperties") or k in _POSITIONAL_KW:
            continue  # handled below
        if x == y:
            out[k] = x
        elif k == "type":
            tx = [x] if isinstance(x, str) else list(x)
            ty = [y] if isinstance(y, str) else list(y)
            both = [t for t in tx if t in ty]
            if "integer" in tx and "number" in ty and "integer" not in both:
                both.append("integer")
            if "integer" in ty and "number" in tx and "integer" not in both:
                both.append("integer")
            if not both:
                return False
            out[k] = both
        elif k == "required":
            out[k] = list(dict.fromkeys(list(x) + list(y)))
        elif k in ("minimum", "minLength", "minItems", "minProperties"):
            out[k] = max(x, y)
        elif k in ("maximum", "maxLength", "maxItems", "maxProperties"):
            out[k] = min(x, y)
        elif (
            k in ("exclusiveMinimum", "exclusiveMaximum")
            and not isinstance(x, bool)
            and not isinstance(y, bool)
        ):
            out[k] = max(x, y) if k == "exclusiveMinimum" else min(x, y)
        elif k in ("enum", "const"):
            xs = x if k == "enum" else [x]
            ys = y if k == "enum" else [y]
            common = [v for v in xs if any(_json_equal(v, w) for w in ys)]
            out.pop("const", None)
            out["enum"] = common
        elif k in ("anyOf", "oneOf"):
            # a pair whose types conflict merges to False: drop it, so that negated
            # 'anyOf's (one branch per type) stay near one branch per type
            merged = [merge(conv, p, q, path) for p in x for q in y]
            out[k] = [m for m in merged if m is not False]
            if merged and not out[k]:  # (an empty list stays: the checks name it)
                return False
            if len(out[k]) > 256:
                raise conv.fail(f"merging two '{k}' lists gives too many branches", path, k)
            if k == "oneOf":
                conv.unsupported(k, path, "appears in two allOf branches (cannot be merged exactly)")
                out["anyOf"] = out.pop(k)
        elif k == "uniqueItems":
            out[k] = bool(x or y)
        elif k == "multipleOf" and all(
            isinstance(z, int) and not isinstance(z, bool) and z > 0 for z in (x, y)
        ):
            out[k] = x * y // math.gcd(x, y)  # multiples of both: multiples of the lcm
        elif k == "not":  # neither x nor y: not (x or y)
            out[k] = {"anyOf": [x, y]}
        elif k in _INTERNAL_KW:
            out[k] = list(dict.fromkeys([*x, *y]))
        elif k == "pattern" and isinstance(x, str) and isinstance(y, str):
            out[k] = x  # both must match: the other joins the patterns intersected
            out[_AND_PATTERNS] = list(dict.fromkeys([*out.get(_AND_PATTERNS, []), y]))
        else:
            conv.unsupported(k, path, "differs between allOf branches and cannot be merged")
            out[k] = x  # lenient: keep one side (a superset of the intersection)
    if _has_positional(a) and _has_positional(b):
        out.update(merge_positions(conv, a, b, path))
    if "enum" in out and "const" in out:
        out["enum"] = [v for v in out.pop("enum") if _json_equal(v, out["const"])]
        del out["const"]
    if "properties" in a or "properties" in b or "additionalProperties" in a or "additionalProperties" in b:
        if "patternProperties" in a or "patternProperties" in b:
            conv.unsupported("patternProperties", path, "cannot be merged in allOf")
        pa, pb = a.get("properties", {}), b.get("properties", {})
        aa = a.get("additionalProperties", True)
        ab = b.get("additionalProperties", True)
        props: Dict[str, Any] = {}
        for name in list(pa) + [n for n in pb if n not in pa]:
            props[name] = merge(conv, pa.get(name, aa), pb.get(name, ab), path)
        out["properties"] = props
        add = merge(conv, aa, ab, path)
        if add is not True:
            out["additionalProperties"] = add
    return out


def merge_positions(conv: Converter, a: Dict[str, Any], b: Dict[str, Any], path: str) -> Dict[str, Any]:
    """Merge the array keywords of two schemas position by position.

    In each schema ``items`` applies only past its own ``prefixItems``, so the merged
    schema for index i is the merge of what each side says about index i.
    """
    pa, ra = _positions(a, conv, path)
    pb, rb = _positions(b, conv, path)
    n = max(len(pa), len(pb))
    prefix = [merge(conv, pa[i] if i < len(pa) else ra, pb[i] if i < len(pb) else rb, path) for i in range(n)]
    out: Dict[str, Any] = {}
    if prefix:
        out["prefixItems"] = prefix
    rest = merge(conv, ra, rb, path)
    if rest is not True:
        out["items"] = rest
    return out


def flatten_all_of(conv: Converter, s: Dict[str, Any], path: str) -> Any:
    if "allOf" not in s:
        return s
    branches = s["allOf"]
    if not isinstance(branches, list) or not branches:
        raise conv.fail("'allOf' must be a non-empty array", path, "allOf")
    acc: Any = {k: v for k, v in s.items() if k != "allOf"}
    for b in branches:
        acc = merge(conv, acc, b, _ptr(path, "allOf"))
    return acc
