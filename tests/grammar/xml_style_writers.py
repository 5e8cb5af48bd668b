"""Writers of xgrammar's XML parameter styles, for the differential tests: arguments (a dict) to
the text a model would write in a style, with random whitespace where the style allows it.

Example:
    >>> import random
    >>> write("qwen_xml", {"properties": {"a": {"type": "string"}}}, {"a": "x"}, random.Random(0), ws=False)
    '<parameter=a>x</parameter>'
"""

from __future__ import annotations

import json
import random
from typing import Any, Dict, List

DSML = "\uff5cDSML\uff5c"
M3 = "]<]minimax[>["
QUOTE = '<|"|>'
_STRING_CONSTRAINTS = ("pattern", "format", "minLength", "maxLength")

FLAT = {
    "qwen_xml": ("<parameter={k}>", "</parameter>"),
    "minimax_xml": ('<parameter name="{k}">', "</parameter>"),
    "glm_xml": ("<arg_key>{k}</arg_key>{ws}<arg_value>", "</arg_value>"),
    "deepseek_xml": (f'<{DSML}parameter name="{{k}}" string="{{flag}}">', f"</{DSML}parameter>"),
    "deepseek_v4_1_xml": (f'<{DSML} parameter name="{{k}}" string="{{flag}}">', f"</{DSML} parameter>"),
    "kimi_k3_xml": ('<|open|>argument key="{k}" type="{t}"<|sep|>', "<|close|>argument<|sep|>"),
}


def _ws(rng: random.Random, on: bool) -> str:
    return rng.choice(["", "", " ", "\n", "\n  ", "\t"]) if on else ""


def _plain(schema: Dict[str, Any]) -> bool:
    return schema.get("type") == "string" and not any(k in schema for k in _STRING_CONSTRAINTS)


def _kimi_type(schema: Dict[str, Any]) -> str:
    t = schema.get("type", "string")
    return "number" if t == "integer" else t


def write(
    style: str, schema: Dict[str, Any], args: Dict[str, Any], rng: random.Random, ws: bool = True
) -> str:
    """``args`` (in ``schema``'s property order) written in ``style``."""
    props = schema["properties"]
    keys = [k for k in props if k in args]
    if style == "gemma":
        return _gemma(args, rng, ws, keys)
    if style == "minimax_m3_xml":
        return _m3_object(props, args, rng, ws, keys, top=True)
    if style == "cohere_xml":
        return _ws(rng, ws) + "".join(_cohere(k, props[k], args[k], rng, ws) + _ws(rng, ws) for k in keys)
    open_, end = FLAT[style]
    out = _ws(rng, ws)
    for k in keys:
        sub, v = props[k], args[k]
        is_str = isinstance(v, str)
        head = open_.format(k=k, ws=_ws(rng, ws), flag="true" if is_str else "false", t=_kimi_type(sub))
        if is_str and (_plain(sub) or style.startswith("deepseek")):
            body = v
        else:
            body = _ws(rng, ws) + (v if is_str else json.dumps(v)) + _ws(rng, ws)
        out += head + body + end + _ws(rng, ws)
    return out


def _gemma_value(v: Any, rng: random.Random, ws: bool) -> str:
    if isinstance(v, str):
        return QUOTE + v + QUOTE
    if isinstance(v, dict):
        return _gemma(v, rng, ws, list(v))
    if isinstance(v, list):
        sep = _ws(rng, ws) + "," + _ws(rng, ws)
        return "[" + _ws(rng, ws) + sep.join(_gemma_value(x, rng, ws) for x in v) + _ws(rng, ws) + "]"
    return json.dumps(v)


def _gemma(args: Dict[str, Any], rng: random.Random, ws: bool, keys: List[str]) -> str:
    members = [k + _ws(rng, ws) + ":" + _ws(rng, ws) + _gemma_value(args[k], rng, ws) for k in keys]
    return "{" + _ws(rng, ws) + (_ws(rng, ws) + "," + _ws(rng, ws)).join(members) + _ws(rng, ws) + "}"


def _m3_value(schema: Dict[str, Any], v: Any, rng: random.Random, ws: bool) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        props = schema["properties"]
        return _m3_object(props, v, rng, ws, [k for k in props if k in v], top=False)
    if isinstance(v, list):
        if not v:
            return ""
        items = [f"{M3}<item>{_m3_value(schema['items'], x, rng, ws)}{M3}</item>" for x in v]
        return _ws(rng, ws) + "".join(i + _ws(rng, ws) for i in items)
    return json.dumps(v)


def _m3_object(
    props: Dict[str, Any], args: Dict[str, Any], rng: random.Random, ws: bool, keys: List[str], top: bool
) -> str:
    if not keys:
        return ""
    parts = [f"{M3}<{k}>{_m3_value(props[k], args[k], rng, ws)}{M3}</{k}>" for k in keys]
    return _ws(rng, ws) + "".join(p + _ws(rng, ws) for p in parts)


def _cohere_body(schema: Dict[str, Any], v: Any, rng: random.Random, ws: bool) -> str:
    """`` type="...">VALUE</cofl:value>``"""
    end = "</cofl:value>"
    if isinstance(v, str):
        body = v if _plain(schema) else _ws(rng, ws) + v + _ws(rng, ws)
        return f' type="raw">{body}{end}'
    if isinstance(v, dict):
        props = schema["properties"]
        inner = "".join(_cohere(k, props[k], v[k], rng, ws) + _ws(rng, ws) for k in props if k in v)
        return f' type="dict">{_ws(rng, ws)}{_ws(rng, ws)}{inner}{_ws(rng, ws)}{end}'
    if isinstance(v, list):
        items = "".join("<cofl:value" + _cohere_body(schema["items"], x, rng, ws) for x in v)
        return f' type="list">{_ws(rng, ws)}{items}{_ws(rng, ws)}{end}'
    return f' type="json">{_ws(rng, ws)}{json.dumps(v)}{_ws(rng, ws)}{end}'


def _cohere(key: str, schema: Dict[str, Any], v: Any, rng: random.Random, ws: bool) -> str:
    return f'<cofl:value name="{key}"' + _cohere_body(schema, v, rng, ws)
