"""Behaviour tests for agentgrammar/registry/openai.py: OpenAI tool dicts and tool calls, both
ways, and ToolRegistry.from_openai / to_openai."""

from __future__ import annotations

import copy
from typing import Any, Dict, List

import pytest

from agentgrammar import Tool, ToolCall, ToolError, ToolRegistry
from agentgrammar.registry.openai import (
    openai_strict_compatible,
    tool_call_from_openai,
    tool_call_to_openai,
    tool_from_openai,
    tool_to_openai,
)

WEATHER: Dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city."},
                "unit": {"type": "string", "enum": ["c", "f"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}
SEARCH: Dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["query"],
        },
    },
}
NOW: Dict[str, Any] = {
    "type": "function",
    "function": {"name": "now", "parameters": {"type": "object", "properties": {}}},
}


def test_round_trip_through_a_registry() -> None:
    tools = [WEATHER, SEARCH, NOW]
    before = copy.deepcopy(tools)
    registry = ToolRegistry.from_openai(tools)
    assert registry.names == ["get_weather", "search", "now"]
    assert registry.to_openai() == tools
    assert tools == before  # inputs are not touched
    assert registry.to_openai(["now", "get_weather"]) == [NOW, WEATHER]


def test_fields() -> None:
    tool = tool_from_openai(WEATHER)
    assert tool.name == "get_weather"
    assert tool.description == "Get the weather in a city."
    assert tool.parameters == WEATHER["function"]["parameters"]
    assert tool.parameters is not WEATHER["function"]["parameters"]
    assert (tool.model, tool.handler, tool.strict, tool.is_async) == (None, None, True, False)
    assert tool_from_openai(SEARCH).strict is False


def test_output_is_a_copy() -> None:
    tool = tool_from_openai(SEARCH)
    out = tool_to_openai(tool)
    out["function"]["parameters"]["properties"].clear()
    assert tool.parameters["properties"]


@pytest.mark.parametrize(
    "definition",
    [
        {"name": "now", "description": "The time.", "parameters": {"type": "object", "properties": {}}},
        {
            "type": "function",
            "name": "now",
            "description": "The time.",
            "parameters": {"type": "object", "properties": {}},
        },
        {"type": "function", "function": {"name": "now", "description": "The time."}},
    ],
)
def test_bare_responses_and_parameterless_forms(definition: Dict[str, Any]) -> None:
    tool = tool_from_openai(definition)
    assert (tool.name, tool.description) == ("now", "The time.")
    assert tool.parameters == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    "definition, message",
    [
        ({"type": "web_search"}, "unsupported OpenAI tool type 'web_search'"),
        ({"type": "function", "function": {"description": "no name"}}, "not an OpenAI function tool"),
        ({"function": "get_weather"}, "not an OpenAI function tool"),
        ("get_weather", "must be a dict"),
        ({"name": "get weather"}, "invalid tool name 'get weather'"),
        ({"name": "a" * 65}, "invalid tool name"),
        ({"name": "f", "description": 3}, "the description must be a string"),
        ({"name": "f", "parameters": ["x"]}, "parameters must be a JSON Schema dict"),
        (
            {"name": "f", "parameters": {"type": "objekt"}},
            r"parameters is not a valid JSON Schema: parameters\['type'\]",
        ),
        ({"name": "f", "strict": "yes"}, "'strict' must be a boolean"),
    ],
)
def test_invalid_definitions(definition: Any, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        tool_from_openai(definition)


def test_duplicate_names_and_a_single_dict() -> None:
    with pytest.raises(ToolError, match="a tool named 'now' is already registered"):
        ToolRegistry.from_openai([NOW, NOW])
    with pytest.raises(ToolError, match="takes a list of tool dicts"):
        ToolRegistry.from_openai(NOW)  # type: ignore[arg-type]


def test_schema_only_tools_validate_with_jsonschema() -> None:
    tool = tool_from_openai(SEARCH)
    assert tool.validate({"query": "q", "limit": 2}) == {"query": "q", "limit": 2}
    with pytest.raises(
        ToolError, match=r"invalid arguments for tool 'search': limit: 0 is less than the minimum of 1"
    ) as info:
        tool.validate({"query": "q", "limit": 0})
    assert (info.value.tool, info.value.field) == ("search", "limit")
    with pytest.raises(ToolError, match=r"query: 'query' is a required property") as info:
        tool.validate({})
    assert info.value.field == "query"
    with pytest.raises(ToolError, match=r"\(arguments\): Additional properties are not allowed"):
        tool_from_openai(WEATHER).validate({"city": "x", "unit": "c", "extra": 1})
    with pytest.raises(ToolError, match="expected a JSON object"):
        tool.validate(["q"])  # type: ignore[arg-type]


def test_schema_only_tool_with_a_handler_gets_keywords() -> None:
    registry = ToolRegistry()
    registry.add(tool_from_openai(SEARCH), handler=lambda query, limit=5: f"{query}:{limit}")
    assert registry.call(ToolCall("search", {"query": "q"})) == "q:5"
    with pytest.raises(ToolError, match="invalid arguments for tool 'search'"):
        registry.call(ToolCall("search", {"limit": 1}))


def test_calling_a_tool_without_handler() -> None:
    registry = ToolRegistry.from_openai([NOW])
    with pytest.raises(ToolError, match="tool 'now' has no handler"):
        registry.call(ToolCall("now", {}))


def test_generated_tools_are_strict_only_when_openai_would_accept_it() -> None:
    registry = ToolRegistry()

    @registry.tool
    def all_required(city: str, days: int) -> None:
        """Forecast."""

    @registry.tool
    def with_default(city: str, days: int = 1) -> None: ...

    @registry.tool(strict=False)
    def loose(city: str) -> None: ...

    out: List[Dict[str, Any]] = registry.to_openai()
    assert out[0] == {
        "type": "function",
        "function": {
            "name": "all_required",
            "description": "Forecast.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city", "days"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    assert "strict" not in out[1]["function"]
    assert "strict" not in out[2]["function"]
    assert "description" not in out[1]["function"]
    # and back: the schemas survive, handlers do not
    again = ToolRegistry.from_openai(out)
    assert [t.parameters for t in again] == [t.parameters for t in registry]
    assert [t.handler for t in again] == [None, None, None]


@pytest.mark.parametrize(
    "schema, ok",
    [
        ({"type": "object", "properties": {}, "additionalProperties": False}, True),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["a"],
                "additionalProperties": False,
            },
            True,
        ),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, False),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}, False),
        ({"type": "array"}, False),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A"}},
                "required": ["a"],
                "additionalProperties": False,
                "$defs": {"A": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": []}},
            },
            False,
        ),
        (
            {
                "type": "object",
                "properties": {"m": {"type": "object", "additionalProperties": {"type": "number"}}},
                "required": ["m"],
                "additionalProperties": False,
            },
            False,
        ),
    ],
)
def test_openai_strict_compatible(schema: Dict[str, Any], ok: bool) -> None:
    assert openai_strict_compatible(schema) is ok


def test_tool_calls_both_ways() -> None:
    call = ToolCall("get_weather", {"city": "Zürich", "unit": "c"}, id="call_1")
    out = tool_call_to_openai(call)
    assert out == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Zürich", "unit": "c"}'},
    }
    assert tool_call_from_openai(out) == call
    assert tool_call_to_openai(ToolCall("now", {})) == {
        "type": "function",
        "function": {"name": "now", "arguments": "{}"},
    }
    flat = {"type": "function_call", "call_id": "c9", "name": "now", "arguments": "{}"}
    assert tool_call_from_openai(flat) == ToolCall("now", {}, id="c9")
    assert tool_call_from_openai({"function": {"name": "f", "arguments": {"a": 1}}}) == ToolCall(
        "f", {"a": 1}
    )


@pytest.mark.parametrize(
    "call, message",
    [
        ({"function": {"name": "f", "arguments": "{not json"}}, "are not valid JSON"),
        ({"function": {"name": "f", "arguments": "[1]"}}, "must be a dict"),
        ({"function": {"arguments": "{}"}}, "no function name"),
        ([], "must be a dict"),
    ],
)
def test_invalid_tool_calls(call: Any, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        tool_call_from_openai(call)


def test_tools_are_plain_tool_objects() -> None:
    assert all(isinstance(tool, Tool) for tool in ToolRegistry.from_openai([WEATHER, SEARCH]))
