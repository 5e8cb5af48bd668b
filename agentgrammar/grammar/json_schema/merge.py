"""``allOf``: schemas merged into one (the instances valid against both), ``$ref`` siblings
included."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

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
    # unevaluated* first: it sees only its own schema's evaluation, not the merged one's
    a = conv.without_unevaluated(a, path)
    b = conv.without_unevaluated(b, path)
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
    both_positional = _has_positional(a) and _has_positional(b)
    for k in list(a) + [k for k in b if k not in a]:
        if _is_annotation(k) or (k in _POSITIONAL_KW and both_positional):
            continue
        if k not in b or k not in a:
            out[k] = a[k] if k in a else b[k]
        elif k in ("properties", "additionalProperties") or k in _POSITIONAL_KW:
            continue  # merged together below
        elif a[k] == b[k]:
            out[k] = a[k]
        elif merge_keyword(conv, k, a[k], b[k], out, path) is False:
            return False
    if both_positional:
        out.update(merge_positions(conv, a, b, path))
    if "enum" in out and "const" in out:
        out["enum"] = [v for v in out.pop("enum") if _json_equal(v, out["const"])]
        del out["const"]
    if any(k in s for s in (a, b) for k in ("properties", "additionalProperties")):
        out.update(merge_properties(conv, a, b, path))
    return out


def merge_keyword(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    """Put into ``out`` keyword ``k`` of both ``x`` and ``y`` (different values); False when no
    instance can satisfy both. What cannot be merged is unsupported (lenient: ``x`` is kept,
    a superset of the intersection)."""
    merger = _MERGERS.get(k)
    if merger is not None:
        merged = merger(conv, k, x, y, out, path)
        if merged is not None:
            return merged
    conv.unsupported(k, path, "differs between allOf branches and cannot be merged")
    out[k] = x
    return True


def _merge_type(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    tx = [x] if isinstance(x, str) else list(x)
    ty = [y] if isinstance(y, str) else list(y)
    both = [t for t in tx if t in ty]
    if "integer" in tx and "number" in ty and "integer" not in both:
        both.append("integer")
    if "integer" in ty and "number" in tx and "integer" not in both:
        both.append("integer")
    out[k] = both
    return bool(both)


def _merge_required(
    conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str
) -> Optional[bool]:
    out[k] = list(dict.fromkeys(list(x) + list(y)))
    return True


def _merge_lower(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    out[k] = max(x, y)  # minimum, minLength, ...: the larger bound
    return True


def _merge_upper(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    out[k] = min(x, y)  # maximum, maxLength, ...: the smaller bound
    return True


def _merge_exclusive(
    conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str
) -> Optional[bool]:
    if isinstance(x, bool) or isinstance(y, bool):
        return None  # draft-4 booleans qualify minimum / maximum
    out[k] = max(x, y) if k == "exclusiveMinimum" else min(x, y)
    return True


def _merge_values(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    xs = x if k == "enum" else [x]
    ys = y if k == "enum" else [y]
    out.pop("const", None)
    out["enum"] = [v for v in xs if any(_json_equal(v, w) for w in ys)]
    return True


def _merge_branches(
    conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str
) -> Optional[bool]:
    # a pair whose types conflict merges to False: drop it, so that negated 'anyOf's (one
    # branch per type) stay near one branch per type
    merged = [merge(conv, p, q, path) for p in x for q in y]
    out[k] = [m for m in merged if m is not False]
    if merged and not out[k]:  # (an empty list stays: the checks name it)
        return False
    if len(out[k]) > 256:
        raise conv.fail(f"merging two '{k}' lists gives too many branches", path, k)
    if k == "oneOf":
        conv.unsupported(k, path, "appears in two allOf branches (cannot be merged exactly)")
        out["anyOf"] = out.pop(k)
    return True


def _merge_unique(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    out[k] = bool(x or y)
    return True


def _merge_multiple(
    conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str
) -> Optional[bool]:
    if not all(isinstance(z, int) and not isinstance(z, bool) and z > 0 for z in (x, y)):
        return None
    out[k] = x * y // math.gcd(x, y)  # multiples of both: multiples of the lcm
    return True


def _merge_not(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    out[k] = {"anyOf": [x, y]}  # neither x nor y: not (x or y)
    return True


def _merge_internal(
    conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str
) -> Optional[bool]:
    out[k] = list(dict.fromkeys([*x, *y]))
    return True


def _merge_pattern(conv: Converter, k: str, x: Any, y: Any, out: Dict[str, Any], path: str) -> Optional[bool]:
    if not (isinstance(x, str) and isinstance(y, str)):
        return None
    out[k] = x  # both must match: the other joins the patterns intersected
    out[_AND_PATTERNS] = list(dict.fromkeys([*out.get(_AND_PATTERNS, []), y]))
    return True


_Merger = Callable[["Converter", str, Any, Any, Dict[str, Any], str], Optional[bool]]
#: How each keyword of two allOf branches merges (True: merged into ``out``; False: no instance
#: satisfies both; None: these values cannot be merged).
_MERGERS: Dict[str, _Merger] = {
    "type": _merge_type,
    "required": _merge_required,
    **dict.fromkeys(("minimum", "minLength", "minItems", "minProperties"), _merge_lower),
    **dict.fromkeys(("maximum", "maxLength", "maxItems", "maxProperties"), _merge_upper),
    **dict.fromkeys(("exclusiveMinimum", "exclusiveMaximum"), _merge_exclusive),
    **dict.fromkeys(("enum", "const"), _merge_values),
    **dict.fromkeys(("anyOf", "oneOf"), _merge_branches),
    "uniqueItems": _merge_unique,
    "multipleOf": _merge_multiple,
    "not": _merge_not,
    **dict.fromkeys(_INTERNAL_KW, _merge_internal),
    "pattern": _merge_pattern,
}


def merge_properties(conv: Converter, a: Dict[str, Any], b: Dict[str, Any], path: str) -> Dict[str, Any]:
    """``properties`` and ``additionalProperties`` of two schemas merged: each name's schema is
    the merge of what each side says about it."""
    if "patternProperties" in a or "patternProperties" in b:
        conv.unsupported("patternProperties", path, "cannot be merged in allOf")
    pa, pb = a.get("properties", {}), b.get("properties", {})
    aa = a.get("additionalProperties", True)
    ab = b.get("additionalProperties", True)
    props: Dict[str, Any] = {}
    for name in list(pa) + [n for n in pb if n not in pa]:
        props[name] = merge(conv, pa.get(name, aa), pb.get(name, ab), path)
    out: Dict[str, Any] = {"properties": props}
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
