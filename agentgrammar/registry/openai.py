"""OpenAI-style tool definitions and tool calls, both ways.

Tools: ``{"type": "function", "function": {"name", "description", "parameters", "strict"}}``
(Chat Completions), or the flat ``{"name", "description", "parameters"}`` form (with or without
``"type": "function"``, as in the Responses API). Tool calls: ``{"id", "type": "function",
"function": {"name", "arguments"}}`` with the arguments as a JSON string (or a dict).

Example:
    >>> tool = tool_from_openai({"type": "function", "function": {
    ...     "name": "get_weather", "description": "Weather in a city.",
    ...     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
    ...                    "required": ["city"], "additionalProperties": False},
    ...     "strict": True}})
    >>> tool_to_openai(tool)["function"]["strict"]
    True
    >>> tool_call_from_openai({"id": "call_1", "type": "function",
    ...                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}})
    ToolCall(name='get_weather', arguments={'city': 'Oslo'}, id='call_1')
"""

from __future__ import annotations

import copy
import json
from typing import Any, Dict, Mapping

from ..errors import ToolError
from .signature import subschemas
from .tool import Tool, ToolCall

__all__ = [
    "openai_strict_compatible",
    "tool_call_from_openai",
    "tool_call_to_openai",
    "tool_from_openai",
    "tool_to_openai",
]

_EMPTY_PARAMETERS: Dict[str, Any] = {"type": "object", "properties": {}}


def tool_from_openai(definition: Mapping[str, Any]) -> Tool:
    """The tool (without handler) that an OpenAI tool dict defines. ``parameters`` is copied;
    missing, it is the schema of no arguments. ``strict`` is the dict's ``strict`` (default
    false). ``ToolError`` for anything that is not a function tool with a valid name and schema.

    Example:
        >>> tool = tool_from_openai({"name": "now", "description": "The time."})
        >>> tool.parameters, tool.handler
        ({'type': 'object', 'properties': {}}, None)
    """
    if not isinstance(definition, Mapping):
        raise ToolError(f"an OpenAI tool must be a dict, got {type(definition).__name__}")
    kind = definition.get("type", "function")
    if kind != "function":
        raise ToolError(f"unsupported OpenAI tool type {kind!r}: only function tools can be registered")
    function = definition.get("function", definition)
    if not isinstance(function, Mapping) or "name" not in function:
        raise ToolError(
            'not an OpenAI function tool: expected {"type": "function", "function": {"name": ..., '
            '"parameters": ...}} or {"name": ..., "parameters": ...}, got ' + _short(definition)
        )
    name = function["name"]
    description = function.get("description") or ""
    parameters = function.get("parameters")
    parameters = copy.deepcopy(_EMPTY_PARAMETERS if parameters is None else parameters)
    strict = function.get("strict")
    if not isinstance(strict, (bool, type(None))):
        raise ToolError(f"tool {name!r}: 'strict' must be a boolean, got {strict!r}", tool=str(name))
    return Tool(name, description, parameters, strict=bool(strict))


def tool_to_openai(tool: Tool) -> Dict[str, Any]:
    """The Chat Completions tool dict of ``tool`` (the schema is copied). ``"strict": true`` is
    included when the tool is strict and its schema meets OpenAI's strict-mode rules
    (``openai_strict_compatible``), since OpenAI rejects a strict tool that does not.

    Example:
        >>> tool_to_openai(Tool("now", "", {"type": "object", "properties": {}}, strict=False))
        {'type': 'function', 'function': {'name': 'now', 'parameters': {'type': 'object', 'properties': {}}}}
    """
    function: Dict[str, Any] = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = copy.deepcopy(tool.parameters)
    if tool.strict and openai_strict_compatible(tool.parameters):
        function["strict"] = True
    return {"type": "function", "function": function}


def openai_strict_compatible(schema: Mapping[str, Any]) -> bool:
    """Whether OpenAI's strict mode accepts ``schema`` as far as its structure goes: an object at
    the top, and every object schema with ``properties`` closed (``"additionalProperties":
    false``) with all its properties required. (Keywords that OpenAI does not support are not
    checked.)

    Example:
        >>> openai_strict_compatible({"type": "object", "properties": {"a": {"type": "string"}},
        ...                           "required": [], "additionalProperties": False})
        False
    """
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return False
    for sub in subschemas(dict(schema)):
        if "properties" in sub or sub.get("type") == "object":
            properties = sub.get("properties", {})
            if sub.get("additionalProperties") is not False:
                return False
            if set(sub.get("required", ())) != set(properties):
                return False
    return True


def tool_call_from_openai(call: Mapping[str, Any]) -> ToolCall:
    """The ``ToolCall`` of an OpenAI tool call dict (``{"id", "type": "function", "function":
    {"name", "arguments"}}`` or the flat ``{"name", "arguments", "id"/"call_id"}``); arguments
    given as a JSON string are parsed. ``ToolError`` for arguments that are not a JSON object.

    Example:
        >>> tool_call_from_openai({"name": "now", "arguments": ""})
        ToolCall(name='now', arguments={}, id=None)
    """
    if not isinstance(call, Mapping):
        raise ToolError(f"an OpenAI tool call must be a dict, got {type(call).__name__}")
    function = call.get("function", call)
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise ToolError(f"not an OpenAI tool call (no function name): {_short(call)}")
    name = function["name"]
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as e:
            raise ToolError(
                f"the arguments of the call to {name!r} are not valid JSON: {e}", tool=name
            ) from e
    return ToolCall(name, arguments, call.get("id", call.get("call_id")))


def tool_call_to_openai(call: ToolCall) -> Dict[str, Any]:
    """The Chat Completions tool call dict of ``call`` (arguments as a JSON string; ``id`` left
    out when the call has none).

    Example:
        >>> tool_call_to_openai(ToolCall("add", {"a": 1}, id="call_7"))
        {'id': 'call_7', 'type': 'function', 'function': {'name': 'add', 'arguments': '{"a": 1}'}}
    """
    out: Dict[str, Any] = {} if call.id is None else {"id": call.id}
    out["type"] = "function"
    out["function"] = {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)}
    return out


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
