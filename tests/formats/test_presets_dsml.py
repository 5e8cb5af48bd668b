"""The DSML presets: ``deepseek_v3_2`` against the kit's ``deepseek-v3.2.jinja`` (thinking off
and on): the template's tool-call turn is accepted by the grammar (as text, and token by token
with the kit's DeepSeek-V4 tokenizer, whose ``｜DSML｜`` is one token), parses back with values
typed by their ``string="true|false"`` marks, renders back exactly, and ``detect`` picks it."""

from __future__ import annotations

from typing import List

import pytest

from agentgrammar import Compiler, Matcher, ToolCall, Vocabulary
from agentgrammar.formats import AgentOutput, FormatParseError, get
from agentgrammar.formats.token_markers import marker_tokens, with_token_markers
from tests.formats.kit_templates import RICH_TOOLS, assistant, template_turn
from tests.kit import kit_tokenizer

OSLO = ToolCall("get_weather", {"city": "Oslo"})
ROME = ToolCall("get_weather", {"city": "Rome", "days": 3, "units": ["C"]})
EOS = "<｜end▁of▁sentence｜>"
THOUGHT = "The user wants the weather."


def _turn(calls: List[ToolCall], content: str, thinking: bool) -> str:
    if thinking:  # the prompt opens "<think>"; the turn renders it with the reasoning
        message = assistant(calls, content, THOUGHT)
        return template_turn(
            "deepseek-v3.2", message, "<｜Assistant｜>", EOS, tools=RICH_TOOLS, thinking=True
        )
    # the prompt writes "<think></think>"; the template's history writes "</think>" alone
    return template_turn(
        "deepseek-v3.2", assistant(calls, content), "<｜Assistant｜></think>", EOS, tools=RICH_TOOLS
    )


@pytest.mark.parametrize("thinking", [False, True], ids=["thinking-off", "thinking-on"])
@pytest.mark.parametrize("content", ["", "Let me check."])
@pytest.mark.parametrize("calls", [[OSLO], [OSLO, ROME]], ids=["one", "two"])
def test_the_templates_turn(calls: List[ToolCall], content: str, thinking: bool) -> None:
    fmt = get("deepseek_v3_2")
    turn = _turn(calls, content, thinking)
    assert 'string="true">Oslo<' in turn
    reasoning = "enabled" if thinking else "disabled"
    assert fmt.grammar(RICH_TOOLS, reasoning=reasoning).accepts(turn), turn
    out = fmt.parse(turn, tools=RICH_TOOLS)
    assert out == AgentOutput(think=THOUGHT if thinking else None, tool_calls=calls, text=content or None)
    assert fmt.parse(turn) == out  # the string marks type the values without the tools
    assert fmt.render(out, tools=RICH_TOOLS) == turn
    assert fmt.render(out) == turn


@pytest.mark.parametrize("thinking", [False, True], ids=["thinking-off", "thinking-on"])
def test_the_templates_turn_token_by_token(thinking: bool) -> None:
    tok = kit_tokenizer("deepseek")
    fmt = get("deepseek_v3_2")
    vocab = Vocabulary.from_huggingface(tok)
    markers = marker_tokens(fmt, vocab)
    assert "｜DSML｜" in markers and "</think>" in markers
    grammar = with_token_markers(fmt, markers).grammar(
        RICH_TOOLS, reasoning="enabled" if thinking else "disabled"
    )
    matcher = Matcher(Compiler(vocab.with_token_markers(markers)).compile(grammar))
    turn = _turn([OSLO, ROME], "Let me check.", thinking)
    for i, token in enumerate(tok.encode(turn + EOS, add_special_tokens=False)):
        assert matcher.accept_token(token), (turn, i, tok.decode([token]))
    assert matcher.is_terminated()


@pytest.mark.parametrize(
    ("name", "calls", "invoke", "parameter"),
    [
        ("deepseek_v4", "tool_calls", "invoke", "parameter"),
        ("deepseek_v4_1", " calls", " invoke", " parameter"),
    ],
)
def test_the_v4_layouts(name: str, calls: str, invoke: str, parameter: str) -> None:
    fmt = get(name)
    out = AgentOutput(tool_calls=[OSLO, ROME], text="Hi")
    text = fmt.render(out, tools=RICH_TOOLS)
    assert text.startswith(
        f'Hi\n\n<｜DSML｜{calls}>\n<｜DSML｜{invoke} name="get_weather">\n<｜DSML｜{parameter} name="city" string="true">Oslo</｜DSML｜{parameter}>\n'
    )
    assert fmt.grammar(RICH_TOOLS, reasoning="disabled").accepts(text)
    assert fmt.parse(text, tools=RICH_TOOLS) == out
    # to DeepSeek-V3.2 the block is text, never a call
    assert get("deepseek_v3_2").parse(text).tool_calls == []
    assert (
        not get("deepseek_v3_2")
        .grammar(RICH_TOOLS, tool_choice="required", reasoning="disabled")
        .accepts(text)
    )


def test_the_grammar_refuses_malformed_calls() -> None:
    g = get("deepseek_v3_2").grammar(RICH_TOOLS, tool_choice="required", reasoning="disabled")
    good = _turn([ROME], "", False)
    assert g.accepts(good)
    for bad in (
        good.replace('"days" string="false">3', '"days" string="true">3'),
        good.replace('"city" string="true">Rome', '"city" string="false">Rome'),
        good.replace('"city" string="true">Rome', '"city" string="false">"Rome"'),
        good.replace('"days" string="false">3', '"days" string="false">three'),
        good.replace("</｜DSML｜invoke>\n", ""),
        good.replace("<｜DSML｜function_calls>", "<｜DSML｜tool_calls>"),
    ):
        assert not g.accepts(bad), bad


@pytest.mark.parametrize(
    "text",
    [
        "<think>never closed",
        '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">Oslo',
        '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="maybe">Oslo</｜DSML｜parameter>\n',
        '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="days" string="false">[1,</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>x',
        '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather"',
        "\n\n<｜DSML｜function_calls>\n",
    ],
)
def test_hostile_turns_are_typed_parse_errors(text: str) -> None:
    with pytest.raises(FormatParseError):
        get("deepseek_v3_2").parse(text, tools=RICH_TOOLS)
