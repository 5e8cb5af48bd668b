"""The ``pythonic`` call layout (Llama-4, Llama-3.2 1B/3B): a turn's calls are one Python list of
calls with keyword arguments, ``[get_weather(city="Oslo", days=3), now()]``, each value a
Python literal: ``"..."`` strings, numbers, ``True`` / ``False`` / ``None``, lists ``[...]`` and
dicts ``{"key": value}``.

This module writes values (``python_literal``, ``render_arguments``) and builds the grammar of
one call's keyword arguments from the tool's JSON Schema (``arguments_grammar``); reading them
back is ``pythonic_parse``, which never evaluates anything.

The grammar writes one spelling of each value, the JSON one where Python reads it the same
way: strings double-quoted with JSON's escapes (``json_values``: lengths, ``pattern`` and the
supported ``format`` s held exactly), numbers as JSON numbers (bounds held exactly), separators
``", "`` and ``": "``. It holds ``type`` (and lists of types), ``enum``, ``const``, ``anyOf`` /
``oneOf`` (as a choice), local ``$ref`` s (recursive ones too), ``properties`` / ``required`` (a
dict or the call's keywords, closed and in schema order), ``items`` with ``minItems`` /
``maxItems``, a ``pattern`` or ``format`` with lengths (the JSON converter's automaton, embedded;
past its limit the bound is dropped, as in the JSON layouts). Other keywords (``allOf`` of
several schemas, ``prefixItems``, ``uniqueItems``, ``multipleOf`` ...) leave the value looser
than the schema (any literal of the type, or any literal): ``parse(..., tools=...)`` validates
every call, so a value the schema refuses is a ``ToolError`` there. ``any_order`` is not
offered: keywords come in schema order (a sound subset).

Example:
    >>> from agentgrammar import Tool
    >>> tool = Tool("get_weather", "", {"type": "object", "properties": {"city": {"type": "string"},
    ...     "days": {"type": "integer", "minimum": 1}}, "required": ["city"]})
    >>> g = arguments_grammar(tool)
    >>> [g.accepts(s) for s in ('city="Oslo"', 'city="Oslo", days=2', "city='Oslo'", 'days=2')]
    [True, True, False, False]
    >>> render_arguments({"city": "Oslo", "ok": True, "tags": ["a"]})
    'city="Oslo", ok=True, tags=["a"]'
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring as _py_str  # a str as a double-quoted JSON string
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import GrammarError, ToolError
from ..grammar import Grammar
from ..grammar.ir import EMPTY, CharClass, Choice, Embed, Expr, Literal, Repeat, Rule, RuleRef, choice, seq
from ..grammar.json_values import (
    ANY_NUMBER,
    STRING_CONSTRAINTS,
    SUPPORTED_FORMATS,
    format_string,
    integer_expr,
    number_expr,
    pattern_string,
    repeat,
    string_expr,
)
from ..grammar.memo import BoundedCache
from ..grammar.structural_tag import compact_schema_grammar
from ..registry import Tool

__all__ = ["arguments_grammar", "is_keyword_name", "python_literal", "render_arguments"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_DEPTH = 64  # schema nesting the converter follows before a value is left as any literal


def is_keyword_name(name: Any) -> bool:
    """Whether ``name`` can be written as a keyword argument (an ASCII identifier).

    Example:
        >>> is_keyword_name("city"), is_keyword_name("max-results"), is_keyword_name("2x")
        (True, False, False)
    """
    return isinstance(name, str) and _IDENTIFIER.fullmatch(name) is not None


def python_literal(value: Any) -> str:
    """``value`` (JSON data) as a Python literal, in the grammar's spelling. ``ValueError`` for
    what has no such literal (NaN, a non-str dict key, an object of another type).

    Example:
        >>> python_literal({"a": [1, 2.5, None], "b": False, "c": "é\\n"})
        '{"a": [1, 2.5, None], "b": False, "c": "é\\\\n"}'
    """
    parts: List[str] = []
    _write(value, parts, 0)
    return "".join(parts)


def _write(value: Any, out: List[str], depth: int) -> None:
    if depth > 512:
        raise ValueError("the value nests too deeply to write")
    if value is True or value is False or value is None:
        out.append(repr(value))
    elif isinstance(value, str):
        out.append(_py_str(value))
    elif isinstance(value, (int, float)):
        out.append(json.dumps(value, allow_nan=False))  # a JSON number is a Python literal
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _write(item, out, depth + 1)
        out.append("]")
    elif isinstance(value, Mapping):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise ValueError(f"a dict key that is not a string: {key!r}")
            out.append((", " if i else "") + _py_str(key) + ": ")
            _write(item, out, depth + 1)
        out.append("}")
    else:
        raise ValueError(f"no Python literal for a {type(value).__name__}")


def render_arguments(arguments: Mapping[str, Any]) -> str:
    """A call's arguments as keyword arguments, ``key=value, ...``; ``ValueError`` for a key that
    is not an identifier or a value without a literal.

    Example:
        >>> render_arguments({"a": 1, "b": "x"})
        'a=1, b="x"'
    """
    parts = []
    for key, value in arguments.items():
        if not is_keyword_name(key):
            raise ValueError(f"the argument name {key!r} is not an identifier (a keyword argument)")
        parts.append(f"{key}={python_literal(value)}")
    return ", ".join(parts)


# --------------------------------------------------------------------------- the grammar

_BOOL = Choice((Literal(b"True"), Literal(b"False")))
_ITEM_SEP = b", "
_KEY_SEP = b": "


class _Converter:
    """JSON Schema to the IR of Python literals; named rules for recursion ($ref, any value)
    and for objects with optional members."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.rules: Dict[str, Expr] = {}
        self._refs: Dict[str, str] = {}
        self._count = 0

    def _name(self, base: str) -> str:
        self._count += 1
        return f"{base}_{self._count}"

    def any_value(self) -> Expr:
        """Any literal (the value of an unconstrained schema)."""
        if "py_any" not in self.rules:
            self.rules["py_any"] = EMPTY  # reserved while the body refers to it
            value = RuleRef("py_any")
            items = seq([value, Repeat(seq([Literal(_ITEM_SEP), value]), 0, None)])
            member = seq([string_expr(), Literal(_KEY_SEP), value])
            members = seq([member, Repeat(seq([Literal(_ITEM_SEP), member]), 0, None)])
            self.rules["py_any"] = Choice(
                (
                    string_expr(),
                    ANY_NUMBER,
                    _BOOL,
                    Literal(b"None"),
                    seq([Literal(b"["), Repeat(items, 0, 1), Literal(b"]")]),
                    seq([Literal(b"{"), Repeat(members, 0, 1), Literal(b"}")]),
                )
            )
        return RuleRef("py_any")

    def _resolve(self, ref: str) -> Any:
        target: Any = self.root
        if not ref.startswith("#"):
            raise GrammarError(f"only local $refs are supported, got {ref!r}")
        for part in (p for p in ref[1:].split("/") if p):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                raise GrammarError(f"the $ref {ref!r} points nowhere")
            target = target[part]
        return target

    def value(self, schema: Any, depth: int = 0) -> Optional[Expr]:
        """The literals of ``schema``; None when no value fits it."""
        if schema is False:
            return None
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
            return self.any_value()
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = self._refs.get(ref)
            if name is None:
                name = self._refs[ref] = self._name("py_ref")
                self.rules[name] = EMPTY  # reserved: a recursive $ref refers to it
                body = self.value(self._resolve(ref), depth + 1)
                if body is None:
                    raise GrammarError(f"the $ref {ref!r} accepts no value")
                self.rules[name] = body
            return RuleRef(name)
        if "const" in schema:
            return Literal(python_literal(schema["const"]).encode("utf-8"))
        if isinstance(schema.get("enum"), list):
            return choice([Literal(python_literal(v).encode("utf-8")) for v in schema["enum"]])
        for key in ("anyOf", "oneOf"):  # oneOf as anyOf: validation tells them apart
            if isinstance(schema.get(key), list):
                return choice([self.value(s, depth + 1) for s in schema[key]])
        if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            return self.value(schema["allOf"][0], depth + 1)
        kinds = schema.get("type")
        if kinds is None:
            kinds = "object" if "properties" in schema else "array" if "items" in schema else None
        if kinds is None:
            return self.any_value()
        kinds = kinds if isinstance(kinds, list) else [kinds]
        return choice([self._typed(schema, k, depth) for k in kinds])

    def _typed(self, schema: Mapping[str, Any], kind: Any, depth: int) -> Optional[Expr]:
        if kind == "string":
            return _string(schema)
        if kind in ("integer", "number"):
            bounds = {
                "minimum": _num(schema.get("minimum")),
                "maximum": _num(schema.get("maximum")),
                "exclusive_minimum": _num(schema.get("exclusiveMinimum")),
                "exclusive_maximum": _num(schema.get("exclusiveMaximum")),
            }
            return integer_expr(**bounds) if kind == "integer" else number_expr(**bounds)
        if kind == "boolean":
            return _BOOL
        if kind == "null":
            return Literal(b"None")
        if kind == "array":
            return self._array(schema, depth)
        if kind == "object":
            return self._object(schema, depth)
        raise GrammarError(f"unknown JSON Schema type {kind!r}")

    def _array(self, schema: Mapping[str, Any], depth: int) -> Optional[Expr]:
        lo, hi = _count(schema.get("minItems"), 0), _count(schema.get("maxItems"), None)
        if hi is not None and hi < lo:
            return None
        items = schema.get("items")
        item = self.value(items, depth + 1) if isinstance(items, (Mapping, bool)) else self.any_value()
        if hi == 0 or item is None:
            return Literal(b"[]") if lo == 0 else None
        rest = repeat(seq([Literal(_ITEM_SEP), item]), max(lo - 1, 0), None if hi is None else hi - 1)
        body = seq([item, rest])
        return seq([Literal(b"["), body if lo else Repeat(body, 0, 1), Literal(b"]")])

    def _object(self, schema: Mapping[str, Any], depth: int) -> Optional[Expr]:
        props = schema.get("properties")
        if not isinstance(props, Mapping) or not props:
            if schema.get("additionalProperties") is False:
                return Literal(b"{}")
            return self._any_dict()
        members = []
        for key, sub in props.items():
            value = self.value(sub, depth + 1)
            if value is None:
                if key in schema.get("required", ()):
                    return None
                continue
            key_text = Literal(_py_str(key).encode("utf-8") + _KEY_SEP)
            members.append((key_text, value, key in schema.get("required", ())))
        return seq([Literal(b"{"), self.members(members), Literal(b"}")])

    def _any_dict(self) -> Expr:
        value = self.any_value()
        member = seq([string_expr(), Literal(_KEY_SEP), value])
        members = seq([member, Repeat(seq([Literal(_ITEM_SEP), member]), 0, None)])
        return seq([Literal(b"{"), Repeat(members, 0, 1), Literal(b"}")])

    def members(self, members: List[Tuple[Expr, Expr, bool]]) -> Expr:
        """``key value`` members in order, separated by ``", "``, the optional ones optional:
        one rule per (member, whether a separator comes first) where one is optional."""
        if all(required for _, _, required in members):
            out: List[Expr] = []
            for i, (key, value, _) in enumerate(members):
                out += [Literal(_ITEM_SEP)] if i else []
                out += [key, value]
            return seq(out) if out else EMPTY
        names: Dict[Tuple[int, bool], Expr] = {}
        base = self._name("py_members")

        def rest(i: int, sep: bool) -> Expr:
            if i == len(members):
                return EMPTY
            found = names.get((i, sep))
            if found is None:
                key, value, required = members[i]
                taken = seq([Literal(_ITEM_SEP) if sep else EMPTY, key, value, rest(i + 1, True)])
                body = taken if required else Choice((taken, rest(i + 1, sep)))
                name = f"{base}_{i}_{int(sep)}"
                self.rules[name] = body
                found = names[(i, sep)] = RuleRef(name)
            return found

        return rest(0, False)


def _num(value: Any) -> Any:
    """A numeric bound, or None (draft-4 boolean exclusive bounds and non-numbers are not)."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: Any, default: Optional[int]) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _string(schema: Mapping[str, Any]) -> Expr:
    pattern, fmt = schema.get("pattern"), schema.get("format")
    if (isinstance(pattern, str) or isinstance(fmt, str)) and (
        "minLength" in schema or "maxLength" in schema
    ):
        # several character constraints at once: the JSON converter's automaton of them (the
        # same spelling of strings), loosened only where the product is past its limit
        keywords = {k: schema[k] for k in STRING_CONSTRAINTS if k in schema}
        try:
            return Embed(compact_schema_grammar({**keywords, "type": "string"}, (", ", ": ")))
        except GrammarError:
            pass  # as before: the pattern or format alone
    if isinstance(pattern, str):
        return pattern_string(pattern)
    if isinstance(fmt, str) and fmt in SUPPORTED_FORMATS:
        found = format_string(fmt)
        if found is not None:
            return found
    lo, hi = _count(schema.get("minLength"), 0), _count(schema.get("maxLength"), None)
    return string_expr(lo or 0, hi)


def _keyword_arguments(schema: Any, conv: _Converter, tool: Tool) -> Expr:
    """The keyword arguments of a call: one ``name=value`` per property, in schema order."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(props, Mapping) or not props:
        if isinstance(schema, Mapping) and schema.get("additionalProperties") is False:
            return EMPTY
        # no declared parameters: any keyword arguments (validation holds them to the schema)
        ident = seq(
            [
                CharClass(((0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))),
                Repeat(CharClass(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))), 0, None),
            ]
        )
        member = seq([ident, Literal(b"="), conv.any_value()])
        return Repeat(seq([member, Repeat(seq([Literal(_ITEM_SEP), member]), 0, None)]), 0, 1)
    required = set(schema.get("required", ()))
    members = []
    for key, sub in props.items():
        if not is_keyword_name(key):
            raise ToolError(
                f"tool {tool.name!r}: parameter {key!r} cannot be a keyword argument (not an identifier)",
                tool=tool.name,
                field=key,
            )
        value = conv.value(sub, 1)
        if value is None:
            if key in required:
                raise ToolError(
                    f"tool {tool.name!r}: parameter {key!r}: its schema accepts no value",
                    tool=tool.name,
                    field=key,
                )
            continue  # no value can be written: the parameter is never written
        members.append((Literal(key.encode("ascii") + b"="), value, key in required))
    return conv.members(members)


_GRAMMARS: "BoundedCache[Grammar]" = BoundedCache("pythonic argument grammars", limit=4096)


def arguments_grammar(tool: Tool) -> Grammar:
    """The grammar of ``tool``'s keyword arguments (what stands between the parentheses of a
    call), one per schema (tools with equal schemas share it). ``ToolError`` naming the tool
    when its schema cannot be written this way.

    Example:
        >>> from agentgrammar import Tool
        >>> g = arguments_grammar(Tool("t", "", {"type": "object", "properties": {"on": {"type": "boolean"}}}))
        >>> g.accepts("on=True"), g.accepts("on=true"), g.accepts("")
        (True, False, True)
    """
    schema = tool.parameters
    key = json.dumps(schema, sort_keys=True)
    found = _GRAMMARS.get(key)
    if found is not None:
        return found
    conv = _Converter(schema)
    try:
        root = _keyword_arguments(schema, conv, tool)
        rules = [Rule("root", root), *(Rule(n, b) for n, b in conv.rules.items())]
        grammar = Grammar.from_rules(rules)
    except (GrammarError, ValueError) as e:
        if isinstance(e, ToolError):
            raise
        raise ToolError(f"tool {tool.name!r}: cannot build its argument grammar: {e}", tool=tool.name) from e
    return _GRAMMARS.put(key, grammar)
