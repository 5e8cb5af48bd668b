"""Tool names are matched whole (``re.fullmatch``): a trailing newline is not a valid name, in
any way a tool is made, and a call to such a name cannot be written (issue 38)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agentgrammar import Tool, ToolCall, ToolError
from agentgrammar.formats import AgentOutput, get, names
from agentgrammar.formats.format import RenderError
from agentgrammar.registry import TOOL_NAME_PATTERN, ToolRegistry, check_tool_name
from agentgrammar.registry.openai import tool_from_openai

BAD_NAMES = ["tool_a\n", "tool_a\r\n", "\ntool_a", "tool a", "tool_a>", "a" * 65, ""]
SCHEMA = {"type": "object", "properties": {}}


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_with_anything_after_it_is_refused(name: str) -> None:
    with pytest.raises(ToolError, match="invalid tool name"):
        check_tool_name(name)
    with pytest.raises(ToolError, match="invalid tool name"):
        Tool(name, "", SCHEMA)
    with pytest.raises(ToolError, match="invalid tool name"):
        tool_from_openai({"name": name, "parameters": SCHEMA})
    assert TOOL_NAME_PATTERN.match(name) is None  # the public pattern is anchored at both ends too


@pytest.mark.parametrize("name", ["tool_a\n", "bad name"])
def test_functions_and_models_named_so_are_refused(name: str) -> None:
    def f() -> None:
        """Nothing."""

    class M(BaseModel):
        x: int = 0

    with pytest.raises(ToolError, match="invalid tool name"):
        Tool.from_function(f, name=name)
    with pytest.raises(ToolError, match="invalid tool name"):
        Tool.from_model(M, name=name)
    with pytest.raises(ToolError, match="invalid tool name"):
        ToolRegistry().add(f, name=name)
    M.model_config["title"] = name
    with pytest.raises(ToolError):
        Tool.from_model(M)


def test_valid_names_still_pass() -> None:
    for name in ("a", "_x", "get_weather", "ns.tool-1", "a" * 64):
        assert check_tool_name(name) == name


@pytest.mark.parametrize("fmt_name", names())
def test_render_refuses_a_call_to_an_invalid_name(fmt_name: str) -> None:
    fmt = get(fmt_name)
    out = AgentOutput(tool_calls=[ToolCall("tool_a\n", {})])
    with pytest.raises(RenderError, match="tool name"):
        fmt.render(out)


@pytest.mark.parametrize("fmt_name", ["qwen3_coder", "harmony", "deepseek_r1", "mistral_small_3_2"])
def test_a_name_written_raw_never_parses_back_as_another_name(fmt_name: str) -> None:
    fmt = get(fmt_name)
    good = fmt.render(AgentOutput(tool_calls=[ToolCall("tool_a", {})]))
    assert fmt.parse(good).tool_calls[0].name == "tool_a"
    with pytest.raises((RenderError, ToolError)):
        fmt.render(AgentOutput(tool_calls=[ToolCall("tool_a\n", {})]))
