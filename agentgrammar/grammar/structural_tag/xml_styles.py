"""xgrammar's XML parameter styles: a ``json_schema`` item whose ``style`` is not ``"json"``
describes the arguments of a call (an object schema) as one element per property.

The flat styles write each property as ``OPEN KEY ... VALUE END`` (``qwen_xml``:
``<parameter=KEY>VALUE</parameter>``), with whitespace between elements and around the whole:

* a plain string is written raw, right after the opening, and runs to the first end marker;
* a constrained string (pattern, format, lengths) or a constant is written raw, a value of any
  other type as JSON (nested strings quoted), with whitespace around it;
* properties in schema order, the optional ones optional; with ``any_order``, any order (keys
  may repeat, as in xgrammar), their number between the required count and ``maxProperties``;
* ``deepseek_xml`` / ``deepseek_v4_1_xml`` say ``string="true"`` before a raw string (no
  whitespace around it) and ``string="false"`` before JSON; ``kimi_k3_xml`` says the schema's
  ``type`` (an integer is a ``"number"``); ``cohere_xml`` says ``raw``, ``json``, ``dict`` or
  ``list``, and nests objects and arrays as elements of its own (``CohereStyle``).

``gemma`` and ``minimax_m3_xml`` nest at every level: ``xml_nested``.

Example:
    >>> from agentgrammar import Grammar
    >>> g = Grammar.from_structural_tag({"type": "json_schema", "style": "qwen_xml", "json_schema": {
    ...     "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    ...     "required": ["city"]}})
    >>> g.accepts("<parameter=city>Paris, FR</parameter>\\n<parameter=days> 3 </parameter>")
    True
    >>> g.accepts('<parameter=days>3</parameter>'), g.accepts('<parameter=city>a</parameter></parameter>')
    (False, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ...errors import StructuralTagError
from ..ir import EMPTY, Expr, Literal, Repeat, RuleRef, choice, seq
from ..regex import parse_regex
from . import models as st
from .base import BuilderBase
from .xml_nested import nested_style_expr
from .xml_values import Case, ValueCases, count_of, defs_of, required_of, some_of

__all__ = ["XML_STYLES", "xml_style_expr"]


@dataclass(frozen=True)
class _Flat:
    """A flat style: ``open`` KEY, then (by ``attrs``) the rest of the opening, VALUE, ``end``."""

    open: str
    end: str
    attrs: str  # "plain": after_key follows; "glm"; "string_flag" (DeepSeek); "kimi_type"; "cohere"
    after_key: str = ""


_DSML = "\uff5cDSML\uff5c"
_FLAT: Dict[str, _Flat] = {
    "qwen_xml": _Flat("<parameter=", "</parameter>", "plain", ">"),
    "minimax_xml": _Flat('<parameter name="', "</parameter>", "plain", '">'),
    "glm_xml": _Flat("<arg_key>", "</arg_value>", "glm"),
    "deepseek_xml": _Flat(f'<{_DSML}parameter name="', f"</{_DSML}parameter>", "string_flag"),
    "deepseek_v4_1_xml": _Flat(f'<{_DSML} parameter name="', f"</{_DSML} parameter>", "string_flag"),
    "kimi_k3_xml": _Flat('<|open|>argument key="', "<|close|>argument<|sep|>", "kimi_type"),
    "cohere_xml": _Flat('<cofl:value name="', "</cofl:value>", "cohere"),
}
#: Every XML parameter style of xgrammar 0.2.9.
XML_STYLES = (*_FLAT, "gemma", "minimax_m3_xml")

_KIMI_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
_STRINGS = ("text", "raw", "str")
_COHERE_KEY = r'([^\x00"&<>]|&amp;|&lt;|&gt;|&quot;)+'


def _xml_escape(key: str) -> str:
    return key.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


class FlatStyle:
    """The grammar of one ``json_schema`` item in a flat style (``cohere_xml`` included)."""

    def __init__(self, values: ValueCases, style: _Flat, any_order: bool) -> None:
        self.v = values
        self.s = style
        self.any_order = any_order
        self._cohere: Optional[Tuple[str, str]] = None  # the rules of Cohere's any value

    # ---- the object of parameters -------------------------------------------------------------

    def params(self, schema: Any, path: str) -> Optional[Expr]:
        """The elements of an object schema's properties, whitespace around and between."""
        schema = self.v.resolve(schema)
        if isinstance(schema, dict) and schema.get("type", "object") != "object":
            raise StructuralTagError(
                f"an XML parameter style needs an object schema, not type {schema.get('type')!r}", path=path
            )
        props = schema.get("properties") if isinstance(schema, dict) else None
        if schema is False:
            return None
        if not isinstance(props, dict) or not props:
            return self.generic_object()
        required = required_of(schema, path)
        elements: List[Tuple[Expr, bool]] = []
        for key, sub in props.items():
            element = self.element(key, sub, f"{path}.properties.{key}")
            if element is None:
                if key in required:
                    return None
                continue
            elements.append((element, key in required))
        ws = self.v.ws()
        if self.any_order and elements:
            item = choice([e for e, _ in elements])
            assert item is not None
            lo = max(count_of(schema, "minProperties") or 0, sum(r for _, r in elements))
            hi = count_of(schema, "maxProperties")
            if hi is not None and hi < lo:
                return None
            if lo == 0:
                return seq([ws, Repeat(seq([item, ws]), 0, hi)])
            more = Repeat(seq([ws, item]), lo - 1, None if hi is None else hi - 1)
            return seq([ws, item, more, ws])
        parts: List[Expr] = [ws]
        for element, is_required in elements:
            part = seq([element, ws])
            parts.append(part if is_required else Repeat(part, 0, 1))
        return seq(parts)

    def element(self, key: str, schema: Any, path: str) -> Optional[Expr]:
        """One property: its opening, value and end; None when no value fits the schema."""
        cases = self.v.cases(schema, path)
        if not cases or any(x in key for x in self.v.excludes):  # xgrammar drops such a name
            return None
        if self.s.attrs == "cohere":
            head = self.v.literal(f'<cofl:value name="{_xml_escape(key)}"')
            groups = self.cohere_groups(cases, path)
            return None if groups is None else seq([head, groups])
        head = self.v.literal(self.s.open + key)
        if self.s.attrs == "string_flag":
            return seq([head, self.flagged(cases, path)]) if cases else None
        middle = self.middle(self.kimi_type(schema))
        body = self.body(cases, path)
        return None if body is None else seq([head, middle, body, self.v.literal(self.s.end)])

    def middle(self, kimi_type: Expr) -> Expr:
        """What follows the key before the value."""
        if self.s.attrs == "glm":
            return seq([self.v.literal("</arg_key>"), self.v.ws(), self.v.literal("<arg_value>")])
        if self.s.attrs == "kimi_type":
            return seq([self.v.literal('" type="'), kimi_type, self.v.literal('"<|sep|>')])
        return self.v.literal(self.s.after_key)

    def body(self, cases: List[Case], path: str) -> Optional[Expr]:
        """A value: a plain string alone is raw text up to the end; anything else has
        whitespace around it."""
        if cases == [("text", None)]:
            return self.v.text(self.s.end)
        inner = choice([self.v.case_expr(c, self.s.end, path) for c in cases])
        return None if inner is None else seq([self.v.ws(), inner, self.v.ws()])

    def flagged(self, cases: List[Case], path: str) -> Optional[Expr]:
        """DeepSeek: ``string="true">`` and a raw string, or ``string="false">`` and JSON."""
        strings: List[Optional[Expr]] = []
        others: List[Optional[Expr]] = []
        for case in cases:
            if case[0] == "any":
                strings.append(self.v.text(self.s.end))
                others.append(self.v.json({"type": ["number", "boolean", "null", "array", "object"],
                                           "items": True}, path))  # fmt: skip
            elif case[0] in _STRINGS:
                strings.append(self.v.case_expr(case, self.s.end, path))
            else:
                others.append(self.v.case_expr(case, self.s.end, path))
        end = self.v.literal(self.s.end)
        raw, rest = choice(strings), choice(others)
        return choice([
            None if raw is None else seq([self.v.literal('" string="true">'), raw, end]),
            None if rest is None else seq([self.v.literal('" string="false">'), self.v.ws(), rest, self.v.ws(), end]),
        ])  # fmt: skip

    def kimi_type(self, schema: Any) -> Expr:
        """Kimi-K3's ``type`` attribute: the schema's one type (an integer is a number), a
        string for string constants, else (a ``$ref`` too, as in xgrammar) any of the seven."""
        if isinstance(schema, dict) and "$ref" not in schema:
            kind = schema.get("type")
            if isinstance(kind, str) and kind in _KIMI_TYPES:
                return self.v.literal("number" if kind == "integer" else kind)
            values = [schema["const"]] if "const" in schema else schema.get("enum")
            if isinstance(values, list) and values and all(isinstance(x, str) for x in values):
                return self.v.literal("string")
        found = choice([self.v.literal(t) for t in _KIMI_TYPES])
        assert found is not None
        return found

    def generic_object(self) -> Expr:
        """Any parameters, each named ``[a-zA-Z_][a-zA-Z0-9_]*`` (Cohere: any XML-escaped
        name), each value any value."""
        ws = self.v.ws()
        if self.s.attrs == "cohere":
            return RuleRef(self.cohere_any()[1])
        head = seq([self.v.literal(self.s.open), self.v.name()])
        if self.s.attrs == "string_flag":
            element = seq([head, self.flagged([("any", None)], "$")])
        else:
            kimi = choice([self.v.literal(t) for t in _KIMI_TYPES])
            assert kimi is not None
            body = self.body([("any", None)], "$")
            assert body is not None
            element = seq([head, self.middle(kimi), body, self.v.literal(self.s.end)])
        return some_of([seq([ws, element, Repeat(seq([ws, element]), 0, None), ws]), ws])

    # ---- cohere_xml -----------------------------------------------------------------------------

    def cohere_groups(self, cases: List[Case], path: str) -> Optional[Expr]:
        """Cohere's ``type="raw|json|dict|list"`` and the value: a plain string raw up to the
        end, anything else with whitespace around it."""
        ws, end = self.v.ws(), self.v.literal("</cofl:value>")
        groups: Dict[str, List[Optional[Expr]]] = {"raw": [], "json": [], "dict": [], "list": []}
        alts: List[Optional[Expr]] = []
        for kind, payload in cases:
            if kind == "any":
                alts.append(RuleRef(self.cohere_any()[0]))
                continue
            if kind in _STRINGS or kind == "lit":
                label = "raw" if kind in _STRINGS else "json"
                groups[label].append(
                    self.v.text("</cofl:value>") if kind == "text" else seq([ws, self.v.case_expr((kind, payload), "", path), ws])
                )  # fmt: skip
                continue
            schema = self.v.resolve(payload)
            kind_of = schema.get("type") if isinstance(schema, dict) else None
            if kind_of == "object" or (
                kind_of is None and isinstance(schema, dict) and "properties" in schema
            ):
                inner = self.params(schema, path)
                groups["dict"].append(None if inner is None else seq([ws, inner, ws]))
            elif kind_of == "array" or (kind_of is None and isinstance(schema, dict) and "items" in schema):
                inner = self.cohere_list(schema, path)
                groups["list"].append(None if inner is None else seq([ws, inner, ws]))
            else:
                groups["json"].append(seq([ws, self.v.json(schema, path), ws]))
        for label, exprs in groups.items():
            body = choice(exprs)
            if body is not None:
                alts.append(seq([self.v.literal(f' type="{label}">'), body, end]))
        return choice(alts)

    def cohere_list(self, schema: Mapping[str, Any], path: str) -> Optional[Expr]:
        """Cohere's list: items ``<cofl:value type="...">VALUE</cofl:value>``, nothing between."""
        if "prefixItems" in schema:
            raise StructuralTagError("'prefixItems' is not supported by cohere_xml", path=path)
        lo, hi = count_of(schema, "minItems") or 0, count_of(schema, "maxItems")
        items = schema.get("items", False)
        if hi is not None and hi < lo:
            return None
        cases = self.v.cases(items, path + ".items")
        groups = self.cohere_groups(cases, path + ".items") if cases else None
        if groups is None:
            return EMPTY if lo == 0 else None
        return Repeat(seq([self.v.literal("<cofl:value"), groups]), lo, hi)

    def cohere_any(self) -> Tuple[str, str]:
        """Cohere's any value, as rules made once: the four groups, and any dict content."""
        if self._cohere is None:
            b, ws = self.v.b, self.v.ws()
            groups, obj, lst = b.fresh("cohere_any"), b.fresh("cohere_object"), b.fresh("cohere_list")
            self._cohere = (groups, obj)
            end = self.v.literal("</cofl:value>")
            scalar = self.v.json({"type": ["number", "boolean", "null"]}, "$")
            b.rules[groups] = some_of([
                seq([self.v.literal(' type="raw">'), self.v.text("</cofl:value>"), end]),
                seq([self.v.literal(' type="json">'), ws, scalar, ws, end]),
                seq([self.v.literal(' type="dict">'), ws, RuleRef(obj), ws, end]),
                seq([self.v.literal(' type="list">'), ws, RuleRef(lst), ws, end]),
            ])  # fmt: skip
            key = parse_regex(_COHERE_KEY)
            element = seq([self.v.literal('<cofl:value name="'), key, Literal(b'"'), RuleRef(groups)])
            b.rules[obj] = some_of([seq([ws, element, Repeat(seq([ws, element]), 0, None), ws]), ws])
            b.rules[lst] = Repeat(seq([self.v.literal("<cofl:value"), RuleRef(groups)]), 0, None)
        return self._cohere


def _check_excludes(f: st.JSONSchema, path: str) -> None:
    """Excludes are never in a string's text (raw or JSON), nor in a property name; as in
    xgrammar, ``cohere_xml`` and ``minimax_m3_xml`` have none, and none may start or end with
    whitespace."""
    words = [x for x in f.excludes if x]
    if not words:
        return
    if f.style in ("cohere_xml", "minimax_m3_xml"):
        raise StructuralTagError(
            f"'excludes' inside json_schema is not supported with style {f.style!r}", path=path
        )
    for word in words:
        if word != word.strip():
            raise StructuralTagError(
                f"an exclude of an XML style may not start or end with whitespace: {word!r}", path=path
            )
        if f.style == "gemma" and all(c.isascii() and (c.isalnum() or c == "_") for c in word):
            raise StructuralTagError(
                f"an exclude that may occur in a property name is not supported: {word!r}", path=path
            )


def xml_style_expr(b: BuilderBase, f: st.JSONSchema, path: str) -> Optional[Expr]:
    """The grammar of ``json_schema`` item ``f`` in its XML ``style`` (see the module docstring)."""
    _check_excludes(f, path + ".excludes")
    options: Tuple[Tuple[str, Any], ...] = (
        ("strict", True),
        ("any_order", f.any_order),
        ("max_whitespace", f.max_whitespace_cnt),
        ("xgrammar_types", True),
        ("loose_lengths", True),
    )
    values = ValueCases(b, defs_of(f.json_schema), options, f.max_whitespace_cnt)
    values.excludes = [x for x in f.excludes if x]
    if f.style in _FLAT:
        return FlatStyle(values, _FLAT[f.style], f.any_order).params(f.json_schema, path + ".json_schema")
    return nested_style_expr(values, f.style, f.json_schema, f.any_order, path + ".json_schema")
