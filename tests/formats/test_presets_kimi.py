"""The Kimi presets against the kit's Kimi-K2 templates (``kimi-k2-instruct-0711.jinja``;
``kimi-k2-thinking.llamacpp.jinja``, rendered outside transformers' sandbox, which refuses its
``list.append``): the template's tool-call turn is accepted by the grammar (byte level: the kit
has no Kimi tokenizer), parses back to the calls with their ``functions.NAME:IDX`` ids, renders
back exactly, and ``detect`` picks ``kimi_k2``."""

from __future__ import annotations

from typing import List, Optional

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import AgentOutput, FormatParseError, RenderError, detect, get
from tests.formats.kit_templates import RICH_TOOLS, assistant, template_turn
from tests.kit import kit_template, kit_tokenizer

OSLO = ToolCall("get_weather", {"city": "Oslo"})
ROME = ToolCall("get_weather", {"city": "Rome", "days": 3, "units": ["C"]})
ANCHOR = "<|im_assistant|>assistant<|im_middle|>"
THOUGHT = "The user wants the weather."


def _ids(calls: List[ToolCall], start: int = 0) -> List[ToolCall]:
    return [ToolCall(c.name, c.arguments, f"functions.{c.name}:{start + i}") for i, c in enumerate(calls)]


@pytest.mark.parametrize("content", ["", "Let me check."])
@pytest.mark.parametrize("calls", [[OSLO], [OSLO, ROME]], ids=["one", "two"])
def test_the_instruct_templates_turn(calls: List[ToolCall], content: str) -> None:
    fmt = get("kimi_k2")
    turn = template_turn(
        "kimi-k2-instruct-0711", assistant(calls, content), ANCHOR, "<|im_end|>", tools=RICH_TOOLS
    )
    assert turn.startswith(content + "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0")
    assert fmt.grammar(RICH_TOOLS).accepts(turn), turn
    out = fmt.parse(turn, tools=RICH_TOOLS)
    assert out == AgentOutput(tool_calls=_ids(calls), text=content or None)
    assert fmt.render(out, tools=RICH_TOOLS) == turn
    # without ids, render numbers the calls of the turn as the template does
    assert fmt.render(AgentOutput(tool_calls=calls, text=content or None), tools=RICH_TOOLS) == turn


@pytest.mark.parametrize("reasoning", [None, THOUGHT])
def test_the_thinking_templates_turn(reasoning: Optional[str]) -> None:
    # llama.cpp's K2-Thinking copy writes the message's own ids, else counts calls from 1
    fmt = get("kimi_k2_thinking")
    calls = _ids([OSLO, ROME], start=4)
    message = assistant(calls, "", reasoning if reasoning is not None else "")
    turn = template_turn(
        "kimi-k2-thinking.llamacpp", message, ANCHOR, "<|im_end|>", tools=RICH_TOOLS, sandboxed=False
    )
    assert turn.startswith(f"<think>{reasoning or ''}</think><|tool_calls_section_begin|>")
    assert fmt.grammar(RICH_TOOLS).accepts(turn), turn
    out = fmt.parse(turn, tools=RICH_TOOLS)
    assert out == AgentOutput(think=reasoning or "", tool_calls=calls)
    assert fmt.render(out, tools=RICH_TOOLS) == turn
    # the think block is required unless reasoning is "auto" or "disabled"
    bare = turn[turn.index("</think>") + len("</think>") :]
    assert not fmt.grammar(RICH_TOOLS).accepts(bare)
    assert fmt.grammar(RICH_TOOLS, reasoning="auto").accepts(bare)
    assert get("kimi").grammar(RICH_TOOLS, reasoning="disabled").accepts(bare)


def test_detect_picks_kimi_k2() -> None:
    tok = kit_tokenizer("qwen3")  # any tokenizer renders a template given as chat_template
    kwargs = {"chat_template": kit_template("templates-only", "kimi-k2-instruct-0711")}
    assert detect(tok, template_kwargs=kwargs).name == "kimi_k2"


def test_call_ids_are_the_heads_id() -> None:
    fmt = get("kimi_k2")
    assert fmt.new_call_id(7, "get_weather") == "functions.get_weather:7"
    with pytest.raises(ValueError, match="give name"):
        fmt.new_call_id(7)
    with pytest.raises(ValueError, match="6 digits"):
        fmt.new_call_id(10**6, "get_weather")
    for bad in (
        "call_1",
        "functions.now:1",
        "functions.get_weather:x",
        "functions.get_weather:",
        "functions.get_weather:1234567",
    ):
        with pytest.raises(RenderError, match="functions"):
            fmt.render(AgentOutput(tool_calls=[ToolCall("get_weather", {"city": "Oslo"}, bad)]))


def test_the_grammar_refuses_malformed_calls() -> None:
    g = get("kimi_k2").grammar(RICH_TOOLS)
    good = (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
        '{"city": "Oslo"}<|tool_call_end|><|tool_calls_section_end|>'
    )
    assert g.accepts(good)
    for bad in (
        good.replace(":0<", "<"),  # no index
        good.replace(":0<", ":a<"),
        good.replace(":0<", ":1234567<"),  # past six digits: a weak model cannot loop in the index
        good.replace("functions.", ""),
        good.replace("get_weather", "get_time"),
        good.replace('"Oslo"', "3"),
        good.replace("<|tool_calls_section_end|>", ""),
    ):
        assert not g.accepts(bad), bad


@pytest.mark.parametrize(
    "text",
    [
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather<|tool_call_argument_begin|>{}",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:<|tool_call_argument_begin|>{}",
        "<|tool_calls_section_begin|><|tool_call_begin|>get_weather:0<|tool_call_argument_begin|>{}",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0{}<|tool_call_end|>",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>[]<|tool_call_end|><|tool_calls_section_end|>",
        "<|tool_calls_section_begin|>",
        "<think>unclosed <|tool_calls_section_begin|>",
    ],
)
def test_hostile_turns_are_typed_parse_errors(text: str) -> None:
    for name in ("kimi_k2", "kimi_k2_thinking"):
        with pytest.raises(FormatParseError):
            get(name).parse(text)
