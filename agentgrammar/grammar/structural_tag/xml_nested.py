"""xgrammar's two parameter styles that nest at every level: ``gemma`` and ``minimax_m3_xml``.

* ``gemma`` (Gemma 4) is JSON with unquoted keys and strings between ``<|"|>`` delimiters:
  ``{city:<|"|>Paris<|"|>,days:3}``. A string's text never holds the delimiter; its ``pattern``
  or ``format`` is matched in full, its length bounds are ignored (as xgrammar does).
* ``minimax_m3_xml`` writes a property as ``]<]minimax[>[<KEY>VALUE]<]minimax[>[</KEY>``, an
  array's items as ``<item>`` elements, an object's properties as nested elements, strings raw
  (without the marker ``]<]minimax[>[``) and other values as JSON, with no whitespace around a
  value. A constrained string, or a schema without constraints, is refused, as xgrammar does.

Example:
    >>> from agentgrammar import Grammar
    >>> g = Grammar.from_structural_tag({"type": "json_schema", "style": "gemma", "json_schema": {
    ...     "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    ...     "required": ["city"]}})
    >>> g.accepts('{city:<|"|>Paris<|"|>, days: 3}'), g.accepts('{"city":"Paris"}')
    (True, False)
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

from ...errors import StructuralTagError
from ..ir import EMPTY, Expr, Literal, Repeat, RuleRef, choice, seq
from ..json_values import format_chars
from ..regex import parse_regex
from .xml_values import XML_NAME, Case, ValueCases, count_of, required_of, some_of

__all__ = ["nested_style_expr"]

_QUOTE = '<|"|>'
_M3 = "]<]minimax[>["


def _members(v: ValueCases, members: List[Tuple[Expr, bool]], sep: Expr, *, rule: str) -> Optional[Expr]:
    """The members in order, optional ones optional, ``sep`` between two present ones:
    ``start(i)`` writes the first present member from ``i`` on, ``after(i)`` the rest, each
    behind a separator (a rule per member, so each tail is built once)."""
    after: Expr = EMPTY
    start: Optional[Expr] = EMPTY
    for member, required in reversed(members):
        tail = after
        after_here = seq([seq([sep, member]) if required else Repeat(seq([sep, member]), 0, 1), tail])
        first = seq([member, tail])
        start = first if required else choice([first, start])
        after = v.b.rule(rule, after_here) if after_here is not EMPTY else EMPTY
    return start


class GemmaStyle:
    """The ``gemma`` style (see the module docstring)."""

    def __init__(self, values: ValueCases) -> None:
        self.v = values
        self._any: Optional[RuleRef] = None

    def string(self, inner: Expr) -> Expr:
        q = self.v.literal(_QUOTE)
        return seq([q, inner, q])

    def value(self, schema: Any, path: str) -> Optional[Expr]:
        return choice([self.case(c, path) for c in self.v.cases(schema, path)])

    def case(self, case: Case, path: str) -> Optional[Expr]:
        kind, payload = case
        if kind == "text":
            return self.string(self.v.text(_QUOTE))
        if kind == "raw":
            return self.string(self.raw(payload, path))
        if kind == "str":
            if any(x in payload for x in self.v.excludes):
                return None  # xgrammar drops a constant that holds an exclude
            return self.string(self.v.literal(payload))
        if kind == "lit":
            return self.v.literal(payload)
        if kind == "any":
            return self.any()
        schema = self.v.resolve(payload)
        kind_of = schema.get("type") if isinstance(schema, dict) else None
        if kind_of == "object" or (kind_of is None and isinstance(schema, dict) and "properties" in schema):
            return self.object(schema, path)
        if kind_of == "array" or (kind_of is None and isinstance(schema, dict) and "items" in schema):
            return self.array(schema, path)
        return self.v.json(schema, path)

    def raw(self, schema: Mapping[str, Any], path: str) -> Expr:
        """A constrained string: its pattern or format in full, else (lengths ignored) any
        text without the delimiter."""
        try:
            if isinstance(schema.get("pattern"), str):
                return self.v.b.rule("gemma_pattern", parse_regex(schema["pattern"]))
            fmt = schema.get("format")
            chars = format_chars(fmt) if isinstance(fmt, str) else None
        except Exception as e:  # a GrammarError: the pattern's own message
            raise StructuralTagError(str(e), path=path) from None
        return self.v.b.rule("gemma_format", chars) if chars is not None else self.v.text(_QUOTE)

    def object(self, schema: Mapping[str, Any], path: str) -> Optional[Expr]:
        props = schema.get("properties")
        if not isinstance(props, dict) or not props:
            return self.generic_object()
        ws = self.v.ws()
        required = required_of(schema, path)
        members: List[Tuple[Expr, bool]] = []
        for key, sub in props.items():
            value = self.value(sub, f"{path}.properties.{key}")
            if value is None:
                if key in required:
                    return None
                continue
            members.append((seq([self.v.literal(key), ws, Literal(b":"), ws, value]), key in required))
        body = _members(self.v, members, seq([ws, Literal(b","), ws]), rule="gemma_members")
        if body is None:
            return None
        return seq([Literal(b"{"), ws, body, ws, Literal(b"}")])

    def array(self, schema: Mapping[str, Any], path: str) -> Optional[Expr]:
        if "prefixItems" in schema:
            raise StructuralTagError("'prefixItems' is not supported by the gemma style", path=path)
        ws = self.v.ws()
        lo, hi = count_of(schema, "minItems") or 0, count_of(schema, "maxItems")
        empty = seq([Literal(b"["), ws, Literal(b"]")])
        item = self.value(schema.get("items", True), path + ".items")
        if item is None or hi == 0:
            return empty if lo == 0 else None
        if hi is not None and hi < lo:
            return None
        more = Repeat(seq([ws, Literal(b","), ws, item]), max(lo - 1, 0), None if hi is None else hi - 1)
        full = seq([Literal(b"["), ws, item, more, ws, Literal(b"]")])
        return choice([full, empty]) if lo == 0 else full

    def generic_object(self) -> Expr:
        ws, any_value = self.v.ws(), self.any()
        member = seq([XML_NAME, ws, Literal(b":"), ws, any_value])
        more = Repeat(seq([ws, Literal(b","), ws, member]), 0, None)
        return some_of(
            [
                seq([Literal(b"{"), ws, member, more, ws, Literal(b"}")]),
                seq([Literal(b"{"), ws, Literal(b"}")]),
            ]
        )

    def any(self) -> RuleRef:
        """Any value, Gemma's way (a rule, as it nests)."""
        if self._any is None:
            name = self.v.b.fresh("gemma_any")
            self._any = RuleRef(name)
            ws = self.v.ws()
            items = seq([self._any, Repeat(seq([ws, Literal(b","), ws, self._any]), 0, None)])
            array = seq([Literal(b"["), ws, Repeat(seq([items, ws]), 0, 1), Literal(b"]")])
            scalars = self.v.json({"type": ["number", "boolean", "null"]}, "$")
            self.v.b.rules[name] = some_of(
                [scalars, self.string(self.v.text(_QUOTE)), array, self.generic_object()]
            )
        return self._any


class MinimaxM3Style:
    """The ``minimax_m3_xml`` style (see the module docstring)."""

    def __init__(self, values: ValueCases) -> None:
        self.v = values

    def element(self, key: str, value: Expr) -> Expr:
        return seq([self.v.literal(f"{_M3}<{key}>"), value, self.v.literal(f"{_M3}</{key}>")])

    def value(self, schema: Any, path: str) -> Optional[Expr]:
        return choice([self.case(c, path) for c in self.v.cases(schema, path)])

    def case(self, case: Case, path: str) -> Optional[Expr]:
        kind, payload = case
        if kind == "text":
            return self.v.text(_M3)
        if kind == "raw":
            raise StructuralTagError(
                "minimax_m3_xml does not support a string's pattern, format or length bounds", path=path
            )
        if kind == "any":
            raise StructuralTagError(
                "minimax_m3_xml does not support a schema without constraints", path=path
            )
        if kind in ("str", "lit"):
            return self.v.literal(payload)
        schema = self.v.resolve(payload)
        kind_of = schema.get("type") if isinstance(schema, dict) else None
        if kind_of == "object" or (kind_of is None and isinstance(schema, dict) and "properties" in schema):
            return self.object(schema, path)
        if kind_of == "array" or (kind_of is None and isinstance(schema, dict) and "items" in schema):
            return self.array(schema, path)
        return self.v.json(schema, path)

    def object(self, schema: Any, path: str) -> Optional[Expr]:
        """The properties as elements, whitespace around and between; an object that may be
        empty is nothing at all or a non-empty run of elements."""
        if schema is False:
            return None
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict) or not props:
            return EMPTY
        ws = self.v.ws()
        required = required_of(schema, path)
        members: List[Tuple[Expr, bool]] = []
        for key, sub in props.items():
            value = self.value(sub, f"{path}.properties.{key}")
            if value is None:
                if key in required:
                    return None
                continue
            members.append((self.element(key, value), key in required))
        if not members:
            return EMPTY
        if any(r for _, r in members):
            body = _members(self.v, members, ws, rule="m3_members")
            return None if body is None else seq([ws, body, ws])
        firsts: List[Optional[Expr]] = []
        for i, (member, _) in enumerate(members):  # the first element written, then the rest
            rest = [Repeat(seq([ws, m]), 0, 1) for m, _ in members[i + 1 :]]
            firsts.append(seq([member, *rest]))
        body = choice(firsts)
        assert body is not None
        return some_of([EMPTY, seq([ws, body, ws])])

    def array(self, schema: Mapping[str, Any], path: str) -> Optional[Expr]:
        if "prefixItems" in schema:
            raise StructuralTagError("'prefixItems' is not supported by minimax_m3_xml", path=path)
        ws = self.v.ws()
        lo, hi = count_of(schema, "minItems") or 0, count_of(schema, "maxItems")
        value = self.value(schema.get("items", False), path + ".items")
        if value is None or hi == 0:
            return EMPTY if lo == 0 else None
        if hi is not None and hi < lo:
            return None
        item = self.element("item", value)
        more = Repeat(seq([ws, item]), max(lo - 1, 0), None if hi is None else hi - 1)
        full = seq([ws, item, more, ws])
        return some_of([EMPTY, full]) if lo == 0 else full


def nested_style_expr(
    values: ValueCases, style: str, schema: Any, any_order: bool, path: str
) -> Optional[Expr]:
    """The grammar of a ``json_schema`` item in ``gemma`` or ``minimax_m3_xml``."""
    if any_order:
        raise StructuralTagError(f"'any_order' is not supported with style {style!r}", path=path)
    schema = values.resolve(schema)
    if isinstance(schema, dict) and schema.get("type", "object") != "object":
        raise StructuralTagError(
            f"an XML parameter style needs an object schema, not type {schema.get('type')!r}", path=path
        )
    if style == "gemma":
        gemma = GemmaStyle(values)
        return gemma.object(schema, path) if isinstance(schema, dict) else gemma.generic_object()
    return MinimaxM3Style(values).object(schema, path)
