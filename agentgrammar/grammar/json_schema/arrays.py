"""Array schemas: positional items, item counts and ``contains`` counts."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
)

from ..ir import (
    EMPTY,
    Expr,
    Repeat,
    RuleRef,
    seq,
)
from ..normalize import copies
from .keywords import _count, _ptr
from .lexical import _opt, choice
from .merge import merge
from .negate import negate

if TYPE_CHECKING:
    from .convert import Converter


_MAX_CONTAINS = 256  # minContains / maxContains are counted with one rule per count


def array_schema(conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str) -> Optional[Expr]:
    lay = conv.layout
    items = schema.get("items")
    prefix: List[Any] = []
    if "prefixItems" in schema:
        prefix = schema["prefixItems"]
        if not isinstance(prefix, list):
            raise conv.fail("'prefixItems' must be an array", path, "prefixItems")
        # strict: no items past the declared positions unless items allows them (as xgrammar)
        rest = items if items is not None else not conv.strict
        rest_path = _ptr(path, "items")
        prefix_kw = "prefixItems"
    elif isinstance(items, list):
        prefix = items
        rest = schema.get("additionalItems", not conv.strict)
        rest_path = _ptr(path, "additionalItems")
        prefix_kw = "items"
    else:
        rest = items if items is not None else True
        rest_path = _ptr(path, "items")
        prefix_kw = "items"
    if schema.get("uniqueItems") not in (None, False):
        conv.unsupported("uniqueItems", path)
    if "contains" in schema and not (schema.get("minContains") == 0 and "maxContains" not in schema):
        return array_contains(conv, schema, rest, path, depth, hint, positional=bool(prefix))
    lo = _count(schema, "minItems", conv, path) or 0
    hi = _count(schema, "maxItems", conv, path)
    if hi is not None and lo > hi:
        return None
    k = len(prefix)
    pexprs = [
        conv.sub(s, _ptr(path, prefix_kw, i), depth + 1, f"{hint}_item_{i}") for i, s in enumerate(prefix)
    ]
    rexpr = conv.sub(rest, rest_path, depth + 1, f"{hint}_items")
    sep = lay.sep(depth)
    # Items at positions >= limit cannot exist.
    limit = k if rexpr is None else None
    for i, p in enumerate(pexprs):
        if p is None:
            limit = i
            break
    if hi is not None:
        limit = hi if limit is None else min(limit, hi)
    if limit is not None and lo > limit:
        return None

    def tail(i: int) -> Optional[Expr]:
        """Items from position i (>= 1) on, each preceded by the separator."""
        if limit is not None and i >= limit:
            return EMPTY
        if i < k:
            p = pexprs[i]
            assert p is not None
            nxt = tail(i + 1)
            assert nxt is not None
            piece = seq([sep, p, nxt])
            return piece if i < lo else _opt(piece)
        assert rexpr is not None
        rmin = max(lo - i, 0)
        rmax = None if limit is None else limit - i
        item = seq([sep, rexpr])
        if copies(rmin, rmax):  # copied: a rule, as normalization makes it
            name = conv.fresh(f"{hint}_repeat")
            conv.rules[name] = item
            item = RuleRef(name)
        return Repeat(item, rmin, rmax)

    alts: List[Optional[Expr]] = []
    if lo == 0:
        alts.append(lay.empty(depth, b"[]"))
    if limit is None or limit > 0:
        first = pexprs[0] if k else rexpr
        assert first is not None
        t = tail(1)
        assert t is not None
        alts.append(lay.container(depth, b"[]", seq([first, t])))
    return choice(alts)


def array_contains(
    conv: Converter, schema: Dict[str, Any], items: Any, path: str, depth: int, hint: str, *, positional: bool
) -> Optional[Expr]:
    """Arrays with ``minContains..maxContains`` items valid against ``contains``: every item
    is either a *yes* item (items and contains) or a *no* item (items and not contains),
    so counting the yes items is exact. One rule per count; needs ``contains`` negatable."""
    lo_c, hi_c = schema.get("minContains", 1), schema.get("maxContains")
    for k, x in (("minContains", lo_c), ("maxContains", hi_c)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
            raise conv.fail(f"'{k}' must be a non-negative integer", path, k)
    if hi_c is not None and lo_c > hi_c:
        return None
    if positional or "minItems" in schema or "maxItems" in schema:
        conv.unsupported("contains", path, "together with prefixItems, minItems or maxItems is not supported")
        return array_schema(
            conv,
            {k: v for k, v in schema.items() if k not in ("contains", "minContains", "maxContains")},
            path,
            depth,
            hint,
        )
    if max(lo_c, hi_c or 0) > _MAX_CONTAINS:
        conv.unsupported(
            "minContains" if lo_c > _MAX_CONTAINS else "maxContains",
            path,
            f"above {_MAX_CONTAINS} is not supported",
        )
        return base_array(conv, depth)
    contains = schema["contains"]
    yes = conv.sub(merge(conv, items, contains, path), _ptr(path, "contains"), depth + 1, f"{hint}_yes")
    no = conv.sub(
        merge(conv, items, negate(conv, contains, _ptr(path, "contains")), path),
        _ptr(path, "items"),
        depth + 1,
        f"{hint}_no",
    )
    if yes is None and lo_c > 0:
        return None
    lay = conv.layout
    sep = lay.sep(depth)
    top = hi_c if hi_c is not None else lo_c  # counts past lo_c are all alike when unbounded
    names = [conv.fresh(f"{hint}_contains_{n}") for n in range(top + 1)]
    for n in range(top + 1):  # after(n): what may follow once n yes items are written
        more_yes = n + 1 if n < top else (n if hi_c is None else None)
        alts: List[Optional[Expr]] = [
            seq([sep, no, RuleRef(names[n])]) if no is not None else None,
            seq([sep, yes, RuleRef(names[more_yes])]) if yes is not None and more_yes is not None else None,
            EMPTY if n >= lo_c else None,
        ]
        conv.rules[names[n]] = choice(alts) or EMPTY  # (None only once n >= lo_c: see below)
    first: List[Optional[Expr]] = []
    if no is not None:
        first.append(seq([no, RuleRef(names[0])]))
    if yes is not None and top >= 1:
        first.append(seq([yes, RuleRef(names[min(1, top)])]))
    out: List[Optional[Expr]] = [lay.empty(depth, b"[]")] if lo_c == 0 else []
    body = choice(first)
    if body is not None:
        out.append(lay.container(depth, b"[]", body))
    return choice(out)


def base_array(conv: Converter, depth: int) -> Optional[Expr]:
    """Any array (the lenient fallback)."""
    return array_schema(conv, {"type": "array"}, "", depth, "any_array")
