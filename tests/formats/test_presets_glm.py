"""The GLM-4.5 and GLM-4.7 presets: ``glm4_5`` against the kit's ``glm-4.5.llamacpp.jinja``
(no newline after the name nor after each ``</arg_value>``, unlike GLM-4.6's ``glm4``), and
``glm_4_7``, written from xgrammar's ``glm_4_7`` tag (the kit has no GLM-4.7 template)."""

from __future__ import annotations

from typing import List, Optional

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import AgentOutput, FormatParseError, detect, get
from tests.formats.kit_templates import RICH_TOOLS, assistant, template_turn
from tests.kit import kit_template, kit_tokenizer

OSLO = ToolCall("get_weather", {"city": "Oslo"})
ROME = ToolCall("get_weather", {"city": "Rome", "days": 3, "units": ["C"]})
THOUGHT = "The user wants the weather."


@pytest.mark.parametrize("reasoning", [None, THOUGHT])
@pytest.mark.parametrize("content", ["", "Let me check."])
@pytest.mark.parametrize("calls", [[OSLO], [OSLO, ROME]], ids=["one", "two"])
def test_the_glm_4_5_templates_turn(calls: List[ToolCall], content: str, reasoning: Optional[str]) -> None:
    fmt = get("glm4_5")
    turn = template_turn(
        "glm-4.5.llamacpp", assistant(calls, content, reasoning), "<|assistant|>", None, tools=RICH_TOOLS
    )
    assert "<tool_call>get_weather<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value></tool_call>" in turn
    assert fmt.grammar(RICH_TOOLS).accepts(turn), turn
    out = fmt.parse(turn, tools=RICH_TOOLS)
    assert out == AgentOutput(think=reasoning or "", tool_calls=calls, text=content or None)
    assert fmt.render(out, tools=RICH_TOOLS) == turn
    assert not get("glm4").grammar(RICH_TOOLS).accepts(turn)  # GLM-4.6's layout differs


def test_detect_tells_glm_4_5_from_glm_4_6() -> None:
    tok = kit_tokenizer("qwen3")
    for template, preset in (("glm-4.5.llamacpp", "glm4_5"), ("glm-4.6", "glm4")):
        kwargs = {"chat_template": kit_template("templates-only", template)}
        assert detect(tok, template_kwargs=kwargs).name == preset


def test_glm_4_7_writes_the_compact_form() -> None:
    fmt = get("glm_4_7")
    out = AgentOutput(think="hm", tool_calls=[OSLO, ROME], text="Hi")
    text = fmt.render(out, tools=RICH_TOOLS)
    assert (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Rome</arg_value><arg_key>days</arg_key><arg_value>3</arg_value>"
        in text
    )
    assert fmt.grammar(RICH_TOOLS).accepts(text)
    assert fmt.parse(text, tools=RICH_TOOLS) == out


def test_a_tool_whose_name_prefixes_another_is_told_apart() -> None:
    # the name runs into the first parameter: "get" and "get_weather" share a prefix
    tools = [
        *RICH_TOOLS,
        {
            "type": "function",
            "function": {
                "name": "get",
                "parameters": {"type": "object", "properties": {"k": {"type": "string"}}},
            },
        },
    ]
    for name in ("glm4_5", "glm_4_7"):
        fmt = get(name)
        for out in (
            AgentOutput(tool_calls=[ToolCall("get", {"k": "v"})]),
            AgentOutput(tool_calls=[ToolCall("get", {})]),
            AgentOutput(tool_calls=[OSLO]),
        ):
            text = fmt.render(out, tools=tools)
            assert fmt.grammar(tools, tool_choice="required", reasoning="disabled").accepts(text), text
            assert fmt.parse(text, tools=tools) == AgentOutput(think=None, tool_calls=out.tool_calls)


@pytest.mark.parametrize(
    "text",
    [
        "<tool_call>get_weather<arg_key>city</arg_key>\n<arg_value>Oslo",
        "<tool_call>get_weather<arg_key>city",
        "<tool_call>get_weather",
        "<tool_call><arg_key>city</arg_key>\n<arg_value>Oslo</arg_value></tool_call>",
        "\n<think>open",
    ],
)
def test_hostile_turns_are_typed_parse_errors(text: str) -> None:
    for name in ("glm4_5", "glm_4_7"):
        with pytest.raises(FormatParseError):
            get(name).parse(text.replace("</arg_key>\n", "</arg_key>") if name == "glm_4_7" else text)
