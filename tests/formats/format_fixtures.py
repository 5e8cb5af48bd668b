"""Tools and formats that the ``AgentFormat`` tests share."""

from __future__ import annotations

from typing import Any, Dict

from agentgrammar import AgentFormat, Tool, ToolCall

__all__ = ["FREE", "FUNCTION", "NOW", "TAGS", "TOOLS", "WEATHER", "WEATHER_SCHEMA", "XML", "call"]

WEATHER_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city"],
}
WEATHER = Tool("get_weather", "Weather in a city.", WEATHER_SCHEMA)
NOW = Tool("now", "The time.", {"type": "object", "properties": {}})
TOOLS = [WEATHER, NOW]

TAGS = AgentFormat(
    name="t",
    think_begin="<think>",
    think_end="</think>",
    think_suffix="\n",
    response_begin="<response>",
    response_end="</response>",
)
FREE = AgentFormat(name="free", think_begin="<think>", think_end="</think>")
FUNCTION = AgentFormat(
    name="function",
    call_layout="name_then_json",
    call_begin="<function=",
    name_end=">",
    call_end="</function>",
)
XML = AgentFormat(
    name="xml",
    call_layout="xml",
    call_begin="<tool_call><function=",
    name_end=">",
    call_end="</function></tool_call>",
)


def call(name: str = "get_weather", **args: Any) -> ToolCall:
    return ToolCall(name, {"city": "Oslo", **args} if name == "get_weather" else args)
