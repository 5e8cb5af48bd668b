"""The ``styled`` call layout: a call's arguments written in one of xgrammar's XML parameter
styles (``AgentFormat.argument_style``), the layouts of xgrammar 0.2.9's builtin tags for
Gemma 4, Cohere, Kimi-K3 and MiniMax-M3. The grammar is the structural tag's ``json_schema``
item with that ``style`` (``grammar/structural_tag/xml_styles.py``); this module writes the
arguments (``render_arguments``), ``styled_parse`` reads them back.

* ``gemma``: JSON with bare keys and strings between ``<|"|>``: ``{city:<|"|>Oslo<|"|>,days:3}``;
* ``cohere_xml``: one ``<cofl:value name="KEY" type="T">VALUE</cofl:value>`` per argument, ``T``
  ``raw`` (a string, written raw), ``json`` (a number, boolean or null), ``dict`` (an object:
  its members as elements) or ``list`` (an array: ``<cofl:value type="T">ITEM</cofl:value>``
  per item); keys XML-escaped;
* ``kimi_k3_xml``: one ``<|open|>argument key="KEY" type="T"<|sep|>VALUE<|close|>argument<|sep|>``
  per argument, ``T`` the schema's type (an integer is a ``number``), strings raw, other
  values JSON;
* ``minimax_m3_xml``: ``]<]minimax[>[<KEY>VALUE]<]minimax[>[</KEY>`` per argument, objects as
  nested elements, arrays as ``<item>`` elements, strings raw, other values JSON.

Each writes the compact form (no whitespace between elements), which the style's grammar
accepts; a value the style cannot delimit (a raw string holding its end marker) is a
``RenderError``.

Example:
    >>> render_arguments("gemma", {"city": "Oslo", "days": 3, "tags": ["a"]})
    '{city:<|"|>Oslo<|"|>,days:3,tags:[<|"|>a<|"|>]}'
    >>> print(render_arguments("kimi_k3_xml", {"city": "Oslo", "days": 3}))
    <|open|>argument key="city" type="string"<|sep|>Oslo<|close|>argument<|sep|><|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from .errors import RenderError
from .xml_params import is_raw_string

__all__ = [
    "COHERE_END",
    "GEMMA_QUOTE",
    "KIMI_END",
    "M3_NS",
    "STYLES",
    "kimi_type",
    "render_arguments",
    "schema_of",
]

#: The argument styles of the ``styled`` layout (xgrammar's ``json_schema`` styles).
STYLES = ("gemma", "cohere_xml", "kimi_k3_xml", "minimax_m3_xml")

GEMMA_QUOTE = '<|"|>'
COHERE_END = "</cofl:value>"
KIMI_OPEN = '<|open|>argument key="'
KIMI_END = "<|close|>argument<|sep|>"
M3_NS = "]<]minimax[>["
_KIMI_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
# what ends a gemma key (the grammar writes the schema's keys bare, then ":")
_GEMMA_KEY_BREAKS = ":,{}[]" + GEMMA_QUOTE + " \t\r\n"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError as e:
        raise RenderError(f"cannot write the value {value!r}: {e}") from None


def schema_of(schema: Any, key: str) -> Any:
    """The schema of property ``key`` of an object schema (``None`` when not known)."""
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    return props.get(key) if isinstance(props, Mapping) else None


def _value_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "object" if isinstance(value, Mapping) else "array"


def kimi_type(schema: Any, value: Any) -> str:
    """Kimi-K3's ``type`` attribute of an argument: the schema's one type (an integer is a
    ``number``), ``string`` for string constants, else the value's own JSON type (which the
    grammar accepts wherever the schema names no single type).

    Example:
        >>> kimi_type({"type": "integer"}, 3), kimi_type({"enum": ["a", "b"]}, "a"), kimi_type(None, [1])
        ('number', 'string', 'array')
    """
    if isinstance(schema, Mapping) and "$ref" not in schema:
        kind = schema.get("type")
        if isinstance(kind, str) and kind in _KIMI_TYPES:
            return "number" if kind == "integer" else kind
        values = [schema["const"]] if "const" in schema else schema.get("enum")
        if isinstance(values, list) and values and all(isinstance(x, str) for x in values):
            return "string"
    return _value_type(value)


def _raw(value: str, ends: Sequence[str], what: str) -> str:
    for end in ends:
        if end and end in value:
            raise RenderError(f"the {what} holds {end!r}, which ends it: it cannot be written", marker=end)
    return value


def _gemma(value: Any, excludes: Sequence[str], where: str) -> str:
    if isinstance(value, str):
        return GEMMA_QUOTE + _raw(value, (GEMMA_QUOTE, *excludes), f"string {where}") + GEMMA_QUOTE
    if isinstance(value, Mapping):
        parts = []
        for k, v in value.items():
            if not isinstance(k, str) or not k or any(c in _GEMMA_KEY_BREAKS for c in k):
                raise RenderError(f"the key {k!r} {where} cannot be written bare in the gemma style")
            parts.append(f"{k}:{_gemma(v, excludes, f'{where}.{k}')}")
        return "{" + ",".join(parts) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_gemma(v, excludes, f"{where}[{i}]") for i, v in enumerate(value)) + "]"
    return _json(value)


def _cohere_key(key: str) -> str:
    return key.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _cohere(value: Any, where: str) -> str:
    """A value after its element's name: `` type="T">VALUE</cofl:value>``."""
    if isinstance(value, str):
        return ' type="raw">' + _raw(value, (COHERE_END,), f"string {where}") + COHERE_END
    if isinstance(value, Mapping):
        members = "".join(
            f'<cofl:value name="{_cohere_key(str(k))}"' + _cohere(v, f"{where}.{k}") for k, v in value.items()
        )
        return ' type="dict">' + members + COHERE_END
    if isinstance(value, (list, tuple)):
        items = "".join("<cofl:value" + _cohere(v, f"{where}[{i}]") for i, v in enumerate(value))
        return ' type="list">' + items + COHERE_END
    return ' type="json">' + _json(value) + COHERE_END


def _raw_here(value: Any, schema: Any) -> bool:
    """Whether a string is written raw: unless the schema, when known, is not a string's (a
    string there is written as JSON, so that it reads back as a string)."""
    return isinstance(value, str) and (schema is None or is_raw_string(schema))


def _m3(value: Any, schema: Any, where: str) -> str:
    if _raw_here(value, schema):
        return _raw(value, (M3_NS,), f"string {where}")
    if isinstance(value, Mapping):
        return "".join(_m3_element(str(k), v, schema_of(schema, k), f"{where}.{k}") for k, v in value.items())
    if isinstance(value, (list, tuple)):
        items = schema.get("items") if isinstance(schema, Mapping) else None
        return "".join(_m3_element("item", v, items, f"{where}[{i}]") for i, v in enumerate(value))
    return _json(value)


def _m3_element(key: str, value: Any, schema: Any, where: str) -> str:
    if not key or any(c in key for c in "<>/ \t\r\n") or M3_NS in key:
        raise RenderError(f"the key {key!r} {where} cannot be an element name in the minimax_m3_xml style")
    return f"{M3_NS}<{key}>{_m3(value, schema, where)}{M3_NS}</{key}>"


def _kimi(args: Mapping[str, Any], schema: Any) -> str:
    parts = []
    for key, value in args.items():
        if not key or any(m in key for m in ('"', "<|open|>", "<|close|>", "<|sep|>")):
            raise RenderError(f"the argument name {key!r} cannot be written in the kimi_k3_xml style")
        sub = schema_of(schema, key) if schema is not None else None
        kind = kimi_type(sub, value)
        raw = _raw_here(value, sub) or (isinstance(value, str) and kind == "string")
        text = _raw(value, (KIMI_END,), f"argument {key!r}") if raw else _json(value)
        parts.append(f'{KIMI_OPEN}{key}" type="{kind}"<|sep|>{text}{KIMI_END}')
    return "".join(parts)


def render_arguments(
    style: str, args: Mapping[str, Any], schema: Any = None, *, excludes: Sequence[str] = ()
) -> str:
    """``args`` (a call's arguments, in the order to write them) in ``style``; ``schema`` (the
    tool's parameters, when known) gives Kimi-K3's types; ``excludes``: texts a gemma string
    never holds. ``RenderError`` for what the style cannot write.

    Example:
        >>> render_arguments("cohere_xml", {"city": "Oslo", "days": 3})
        '<cofl:value name="city" type="raw">Oslo</cofl:value><cofl:value name="days" type="json">3</cofl:value>'
        >>> render_arguments("minimax_m3_xml", {"tags": ["a", "b"]}).count("<item>")
        2
    """
    if style not in STYLES:
        raise ValueError(f"argument_style must be one of {STYLES}, got {style!r}")
    try:
        return _render_arguments(style, args, schema, excludes)
    except RecursionError:  # a parsed value nested within the reader's depth, deeper for these writers
        raise RenderError(f"the arguments nest too deeply to be written in the {style} style") from None


def _render_arguments(style: str, args: Mapping[str, Any], schema: Any, excludes: Sequence[str]) -> str:
    if style == "gemma":
        return _gemma(args, excludes, "in the arguments")
    if style == "cohere_xml":
        return "".join(
            f'<cofl:value name="{_cohere_key(str(k))}"' + _cohere(v, f"argument {k!r}")
            for k, v in args.items()
        )
    if style == "kimi_k3_xml":
        return _kimi(args, schema)
    return _m3(args, schema, "in the arguments")
