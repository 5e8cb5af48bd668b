"""Reading the ``styled`` layout's arguments back (``read_arguments``): one small reader per
xgrammar XML parameter style (``styled``), written for hostile text. Nothing is evaluated; JSON
values go through ``arguments.loads_strict`` (no NaN, no numbers past the float range, no key
twice); nesting past ``MAX_JSON_DEPTH``, a key given twice, an element that is not closed or a
value the style cannot hold are a ``StyledParseError`` with the offset of the problem.

Where the text does not say a value's type (MiniMax-M3's raw values, Kimi-K3's values under a
type other than ``string``), the tool's schema decides when it is known: a string schema reads
the value raw, others as JSON; without one, a value that is JSON is read as JSON, else as text.

Example:
    >>> read_arguments("gemma", '{city:<|"|>Oslo<|"|>,days:3}<tool_call|>', 0)
    ({'city': 'Oslo', 'days': 3}, 28)
    >>> read_arguments("gemma", '{city:<|"|>Oslo', 0)
    Traceback (most recent call last):
    ...
    agentgrammar.formats.styled_parse.StyledParseError: a string that is not closed with '<|"|>' (at offset 11)
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import AgentGrammarError
from ..registry.nesting import nesting_depth
from .arguments import MAX_JSON_DEPTH, DuplicateKeyError, JSONLimitError, loads_strict
from .styled import COHERE_END, GEMMA_QUOTE, KIMI_END, M3_NS, schema_of

__all__ = ["StyledParseError", "read_arguments"]

_WS = " \t\r\n"
# a scalar: JSON's, a JSON string (not the style's, read all the same) and NaN / Infinity (for
# loads_strict to name)
_SCALAR = re.compile(
    r'-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null|"(?:[^"\\]|\\.)*"|-?Infinity|NaN'
)
_GEMMA_KEY_END = re.compile(r"[:,{}\[\]]|<\|\"\|>")
_COHERE_NAME = '<cofl:value name="'
_KIMI_OPEN = '<|open|>argument key="'
_UNESCAPE = (("&quot;", '"'), ("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))

# MiniMax-M3: ("raw", text, offset) or ("children", [(key, node, offset of the element)], offset)
Node = Tuple[str, Any, int]


class StyledParseError(AgentGrammarError, ValueError):
    """Arguments that do not follow their style: ``problem`` says what, ``offset`` where.

    Example:
        >>> str(StyledParseError("a key given twice", 4))
        'a key given twice (at offset 4)'
    """

    def __init__(self, problem: str, offset: int) -> None:
        super().__init__(f"{problem} (at offset {offset})")
        self.problem = problem
        self.offset = offset


def _kind(schema: Any) -> Optional[str]:
    """``"string"``, ``"object"`` or ``"array"`` where the schema says so plainly, else None."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if kind in ("string", "object", "array"):
        return str(kind)
    if kind is None and "properties" in schema:
        return "object"
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(x, str) for x in values):
        return "string"
    return None


class _Reader:
    def __init__(self, text: str, schema: Any) -> None:
        self.text = text
        self.schema = schema

    def ws(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _WS:
            pos += 1
        return pos

    def expect(self, pos: int, marker: str, what: str) -> int:
        if not self.text.startswith(marker, pos):
            found = self.text[pos : pos + 20]
            raise StyledParseError(f"expected {what} {marker!r}, found {found!r}", pos)
        return pos + len(marker)

    def up_to(self, pos: int, marker: str, what: str) -> int:
        at = self.text.find(marker, pos)
        if at < 0:
            raise StyledParseError(f"{what} that is not closed with {marker!r}", pos)
        return at

    def json(self, raw: str, at: int, what: str) -> Any:
        try:
            return loads_strict(raw, max_depth=MAX_JSON_DEPTH - 1)
        except DuplicateKeyError as e:
            raise StyledParseError(f"{what} names the key {e.key!r} twice", at) from None
        except JSONLimitError as e:
            raise StyledParseError(f"{what} holds {e.problem}", at + e.offset) from None
        except json.JSONDecodeError as e:  # hostile text: not JSON where the type says JSON
            raise StyledParseError(f"{what} is not JSON: {e.msg}", at + e.pos) from None

    def depth(self, depth: int, pos: int) -> None:
        if depth > MAX_JSON_DEPTH:
            raise StyledParseError(f"values nested more than {MAX_JSON_DEPTH} levels deep", pos)

    @staticmethod
    def put(out: Dict[str, Any], key: str, value: Any, at: int) -> None:
        if key in out:
            raise StyledParseError(f"the key {key!r} is given twice", at)
        out[key] = value

    # ---- gemma --------------------------------------------------------------------------------

    def gemma(self, pos: int, depth: int) -> Tuple[Any, int]:
        text, p = self.text, self.ws(pos)
        self.depth(depth, p)
        if text.startswith(GEMMA_QUOTE, p):
            end = self.up_to(p + len(GEMMA_QUOTE), GEMMA_QUOTE, "a string")
            return text[p + len(GEMMA_QUOTE) : end], end + len(GEMMA_QUOTE)
        if text.startswith("{", p):
            obj: Dict[str, Any] = {}
            p = self.ws(p + 1)
            if text.startswith("}", p):
                return obj, p + 1
            while True:
                m = _GEMMA_KEY_END.search(text, p)
                if m is None or m.group() != ":" or not text[p : m.start()].strip(_WS):
                    raise StyledParseError("expected a key then ':'", p)
                key = text[p : m.start()].strip(_WS)
                value, p = self.gemma(m.end(), depth + 1)
                self.put(obj, key, value, m.start())
                p = self.ws(p)
                if text.startswith("}", p):
                    return obj, p + 1
                p = self.ws(self.expect(p, ",", "',' or '}' after a member:"))
        if text.startswith("[", p):
            items: List[Any] = []
            p = self.ws(p + 1)
            if text.startswith("]", p):
                return items, p + 1
            while True:
                value, p = self.gemma(p, depth + 1)
                items.append(value)
                p = self.ws(p)
                if text.startswith("]", p):
                    return items, p + 1
                p = self.expect(p, ",", "',' or ']' after an item:")
        m = _SCALAR.match(text, p)
        if m is None:
            raise StyledParseError(f"expected a value, found {text[p : p + 20]!r}", p)
        return self.json(m.group(), p, "the value"), m.end()

    # ---- cohere_xml ---------------------------------------------------------------------------

    def cohere_members(self, pos: int, depth: int) -> Tuple[Dict[str, Any], int]:
        out: Dict[str, Any] = {}
        while True:
            p = self.ws(pos)
            if not self.text.startswith(_COHERE_NAME, p):
                return out, pos
            at = p + len(_COHERE_NAME)
            end = self.up_to(at, '"', "an argument name")
            key = self.text[at:end]
            for escaped, plain in _UNESCAPE:
                key = key.replace(escaped, plain)
            value, pos = self.cohere_typed(end + 1, depth)
            self.put(out, key, value, p)

    def cohere_typed(self, pos: int, depth: int) -> Tuple[Any, int]:
        """`` type="T">VALUE</cofl:value>`` at ``pos``."""
        self.depth(depth, pos)
        text = self.text
        p = self.expect(pos, ' type="', "the value's")
        close = self.up_to(p, '">', "a value type")
        kind, body = text[p:close], close + 2
        if kind == "raw":
            end = self.up_to(body, COHERE_END, "a value")
            return text[body:end], end + len(COHERE_END)
        if kind == "json":
            end = self.up_to(body, COHERE_END, "a value")
            return self.json(text[body:end], body, "the value"), end + len(COHERE_END)
        if kind == "dict":
            value: Any
            value, p = self.cohere_members(body, depth + 1)
        elif kind == "list":
            value, p = [], body
            while True:
                q = self.ws(p)
                if not text.startswith('<cofl:value type="', q):
                    break
                item, p = self.cohere_typed(q + len("<cofl:value"), depth + 1)
                value.append(item)
        else:
            raise StyledParseError(f"the value type {kind!r} is none of raw, json, dict, list", p)
        return value, self.expect(self.ws(p), COHERE_END, "the value's end")

    # ---- kimi_k3_xml --------------------------------------------------------------------------

    def kimi(self, pos: int) -> Tuple[Dict[str, Any], int]:
        out: Dict[str, Any] = {}
        text = self.text
        while True:
            p = self.ws(pos)
            if not text.startswith(_KIMI_OPEN, p):
                return out, pos
            at = p + len(_KIMI_OPEN)
            key_end = self.up_to(at, '" type="', "an argument name")
            key = text[at:key_end]
            type_at = key_end + len('" type="')
            type_end = self.up_to(type_at, '"<|sep|>', "an argument type")
            kind, body = text[type_at:type_end], type_end + len('"<|sep|>')
            end = self.up_to(body, KIMI_END, f"argument {key!r}")
            raw = text[body:end]
            if kind == "string" or _kind(schema_of(self.schema, key)) == "string":
                value: Any = raw
            else:
                try:
                    value = loads_strict(raw, max_depth=MAX_JSON_DEPTH - 1)
                except (DuplicateKeyError, JSONLimitError):
                    value = self.json(raw, body, f"argument {key!r}")
                except ValueError:  # a raw string under another type: what the grammar allows for any value
                    value = raw
            self.put(out, key, value, p)
            pos = end + len(KIMI_END)

    # ---- minimax_m3_xml -----------------------------------------------------------------------

    def m3_children(self, pos: int, depth: int) -> Tuple[List[Tuple[str, Node, int]], int]:
        self.depth(depth, pos)
        text, out = self.text, []
        while True:
            p = self.ws(pos)
            if not text.startswith(M3_NS + "<", p) or text.startswith(M3_NS + "</", p):
                return out, pos
            at = p + len(M3_NS) + 1
            close = self.up_to(at, ">", "an element name")
            key = text[at:close]
            node, q = self.m3_node(close + 1, depth + 1)
            pos = self.expect(q, f"{M3_NS}</{key}>", "the element's end")
            out.append((key, node, p))

    def m3_node(self, pos: int, depth: int) -> Tuple[Node, int]:
        text, p = self.text, self.ws(pos)
        if text.startswith(M3_NS + "<", p) and not text.startswith(M3_NS + "</", p):
            children, q = self.m3_children(p, depth)
            return ("children", children, p), self.ws(q)
        end = self.up_to(pos, M3_NS, "a value")
        return ("raw", text[pos:end], pos), end

    def m3_value(self, node: Node, schema: Any) -> Any:
        kind, at = _kind(schema), node[2]
        if node[0] == "children":
            children = node[1]
            if kind == "array" or (kind is None and all(k == "item" for k, _, _ in children)):
                items = schema.get("items") if isinstance(schema, Mapping) else None
                return [self.m3_value(n, items) for _, n, _ in children]
            out: Dict[str, Any] = {}
            for key, child, p in children:
                self.put(out, key, self.m3_value(child, schema_of(schema, key)), p)
            return out
        raw = node[1]
        if kind == "string":
            return raw
        if kind in ("object", "array") and not raw.strip(_WS):
            return {} if kind == "object" else []
        try:
            return loads_strict(raw, max_depth=MAX_JSON_DEPTH - 1)
        except (DuplicateKeyError, JSONLimitError):
            return self.json(raw, at, "the value")
        except ValueError:  # text: a string (validation, if any, reports a wrong type)
            return raw


def read_arguments(style: str, text: str, pos: int, schema: Any = None) -> Tuple[Dict[str, Any], int]:
    """The arguments written in ``style`` at ``pos`` in ``text`` and the offset after them (the
    call's end marker, or whitespace before it, follows); ``schema``: the tool's parameters,
    when known. ``StyledParseError`` for text that does not follow the style.

    Example:
        >>> read_arguments("minimax_m3_xml", "]<]minimax[>[<city>Oslo]<]minimax[>[</city>", 0)
        ({'city': 'Oslo'}, 43)
    """
    args, end = _read(style, text, pos, schema)
    # elements and the JSON inside them nest together: the whole stays within what a tool takes
    if nesting_depth(args, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise StyledParseError(f"the arguments nest more than {MAX_JSON_DEPTH} levels deep", pos)
    return args, end


def _read(style: str, text: str, pos: int, schema: Any) -> Tuple[Dict[str, Any], int]:
    r = _Reader(text, schema)
    if style == "gemma":
        start = r.ws(pos)
        if not text.startswith("{", start):
            raise StyledParseError(f"expected the arguments' '{{', found {text[start : start + 20]!r}", start)
        value, end = r.gemma(start, 1)
        return value, end
    if style == "cohere_xml":
        return r.cohere_members(pos, 1)
    if style == "kimi_k3_xml":
        return r.kimi(pos)
    if style == "minimax_m3_xml":
        children, end = r.m3_children(pos, 1)
        params = {**(schema if isinstance(schema, Mapping) else {}), "type": "object"}
        return r.m3_value(("children", children, pos), params), end
    raise ValueError(f"unknown argument style {style!r}")
