"""The gpt-oss preset ``harmony`` and its TypeScript-like tools section."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Mapping, Sequence

from ...registry import Tool
from ..format import AgentFormat


def _ts_type(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> str:
    """A TypeScript-like type for a JSON Schema, as Harmony writes tool parameters."""
    if not isinstance(schema, Mapping) or depth > 8:
        return "any"
    if "$ref" in schema and isinstance(schema["$ref"], str):
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1])
        return _ts_type(target, defs, depth + 1) if target is not None else "any"
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_ts_type(s, defs, depth + 1) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_ts_type({**schema, "type": k}, defs, depth + 1) for k in kind)
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind == "array":
        item = _ts_type(schema.get("items"), defs, depth + 1)
        return f"Array<{item}>"
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if not props:
            return "object"
        required = set(schema.get("required", ()))
        fields = ", ".join(
            f"{k}{'' if k in required else '?'}: {_ts_type(v, defs, depth + 1)}" for k, v in props.items()
        )
        return "{ " + fields + " }"
    return "any"


def harmony_tools(tools: Sequence[Tool]) -> str:
    """The Harmony (gpt-oss) developer-message tools section: a TypeScript-like ``functions``
    namespace.

    Example:
        >>> from agentgrammar import Tool
        >>> print(harmony_tools([Tool("now", "The time.", {"type": "object", "properties": {}})]))
        # Tools
        <BLANKLINE>
        ## functions
        <BLANKLINE>
        namespace functions {
        <BLANKLINE>
        // The time.
        type now = () => any;
        <BLANKLINE>
        } // namespace functions
    """
    out = ["# Tools\n\n## functions\n\nnamespace functions {\n"]
    for t in tools:
        schema = t.parameters
        defs: Dict[str, Any] = {**schema.get("definitions", {}), **schema.get("$defs", {})}
        lines = [f"// {line}" for line in t.description.splitlines()] if t.description else []
        props = schema.get("properties") or {}
        if not props:
            lines.append(f"type {t.name} = () => any;")
        else:
            required = set(schema.get("required", ()))
            lines.append(f"type {t.name} = (_: {{")
            for key, sub in props.items():
                if isinstance(sub, Mapping) and sub.get("description"):
                    lines.extend(f"// {line}" for line in str(sub["description"]).splitlines())
                opt = "" if key in required else "?"
                default = (
                    f", // default: {json.dumps(sub['default'], ensure_ascii=False)}"
                    if isinstance(sub, Mapping) and "default" in sub
                    else ","
                )
                lines.append(f"{key}{opt}: {_ts_type(sub, defs)}{default}")
            lines.append("}) => any;")
        out.append("\n".join(lines) + "\n")
    out.append("} // namespace functions")
    return "\n".join(out)


PRESETS: Dict[str, Callable[[], AgentFormat]] = {
    # gpt-oss after its generation prompt "<|start|>assistant": an optional analysis message,
    # then one call or the final answer. The template puts the recipient in the role header
    # (" to=functions.NAME<|channel|>commentary json"); openai-harmony writes it in the channel
    # header ("<|channel|>commentary to=functions.NAME <|constrain|>json"); xgrammar's harmony tag
    # also has "<|constrain|>json" without the space. Every such header is accepted.
    "harmony": lambda: AgentFormat(
        name="harmony",
        think_begin="<|channel|>analysis<|message|>",
        think_end="<|end|>",
        think_suffix="<|start|>assistant",
        call_layout="name_then_json",
        call_begin=" to=functions.",
        name_end="<|channel|>commentary json<|message|>",
        call_begin_variants=(
            " to=functions.",
            " to=functions.",
            "<|channel|>commentary to=functions.",
            "<|channel|>commentary to=functions.",
            "<|channel|>commentary to=functions.",
        ),
        name_end_variants=(
            "<|channel|>commentary <|constrain|>json<|message|>",
            "<|channel|>commentary<|constrain|>json<|message|>",
            " <|constrain|>json<|message|>",
            "<|constrain|>json<|message|>",
            " json<|message|>",
        ),
        call_end="<|call|>",
        call_separator="<|start|>assistant",
        parallel_calls=False,
        response_begin="<|channel|>final<|message|>",
        response_end="<|return|>",
        response_after_calls=False,
        block_separator="<|start|>assistant",
        # The template writes the arguments with tojson ({"city": "Oslo"}); the models and
        # openai-harmony also write them compact ({"city":"Oslo"}): both, and no more than
        # one whitespace character anywhere.
        whitespace="flexible",
        max_whitespace=1,
        tools_prompt=harmony_tools,
    ),
}
