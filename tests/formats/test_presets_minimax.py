"""The ``minimax_m2`` preset against the kit's ``minimax-m2.jinja``: the template's tool-call
turn (its reasoning opened by the generation prompt's ``<think>\\n``) is accepted by the
grammar (byte level: the kit has no MiniMax tokenizer), parses back, renders back exactly, and
``detect`` picks the preset."""

from __future__ import annotations

from typing import List, Optional

import pytest

from agentgrammar import Tool, ToolCall
from agentgrammar.errors import ToolError
from agentgrammar.formats import AgentOutput, FormatParseError, detect, get
from tests.formats.kit_templates import RICH_TOOLS, assistant, render_template, template_turn
from tests.kit import CANONICAL_MESSAGES, kit_template, kit_tokenizer

OSLO = ToolCall("get_weather", {"city": "Oslo"})
ROME = ToolCall("get_weather", {"city": "Rome", "days": 3, "units": ["C", "F"]})
ANCHOR = "]~b]ai\n"
THOUGHT = "The user wants the weather."


@pytest.mark.parametrize("reasoning", [THOUGHT, None])
@pytest.mark.parametrize("content", ["", "Let me check."])
@pytest.mark.parametrize("calls", [[OSLO], [OSLO, ROME]], ids=["one", "two"])
def test_the_templates_turn(calls: List[ToolCall], content: str, reasoning: Optional[str]) -> None:
    fmt = get("minimax_m2")
    turn = template_turn("minimax-m2", assistant(calls, content, reasoning), ANCHOR, "[e~[", tools=RICH_TOOLS)
    if reasoning is not None:  # the prompt opens the block: the model's text starts inside it
        prompt = render_template("minimax-m2", CANONICAL_MESSAGES[:2], tools=RICH_TOOLS, generation=True)
        assert prompt.endswith(ANCHOR + "<think>\n") and turn.startswith("<think>\n")
    assert fmt.grammar(RICH_TOOLS, reasoning="auto").accepts(turn), turn
    out = fmt.parse(turn, tools=RICH_TOOLS)
    assert out == AgentOutput(think=reasoning, tool_calls=calls, text=content or None)
    assert fmt.render(out, tools=RICH_TOOLS) == turn
    if reasoning is not None:
        assert fmt.grammar(RICH_TOOLS).accepts(turn)


def test_detect_picks_minimax_m2() -> None:
    tok = kit_tokenizer("qwen3")
    kwargs = {"chat_template": kit_template("templates-only", "minimax-m2")}
    assert detect(tok, template_kwargs=kwargs).name == "minimax_m2"
    assert get("minimax") is get("minimax_m2")


def test_xgrammars_trigger_without_the_newline_is_accepted() -> None:
    fmt = get("minimax_m2")
    text = 'Hi<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Oslo</parameter>\n</invoke>\n</minimax:tool_call>'
    assert fmt.grammar(RICH_TOOLS, reasoning="disabled").accepts(text)
    assert fmt.parse(text, tools=RICH_TOOLS) == AgentOutput(tool_calls=[OSLO], text="Hi")


def test_parameter_names_that_break_the_quoting_are_refused() -> None:
    tool = Tool("t", "", {"type": "object", "properties": {'a"b': {"type": "string"}}})
    with pytest.raises(ToolError, match="'\"'"):
        get("minimax_m2").grammar([tool])


def test_the_grammar_refuses_malformed_calls() -> None:
    g = get("minimax_m2").grammar(RICH_TOOLS, reasoning="disabled")
    good = '\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Oslo</parameter>\n<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>'
    assert g.accepts(good)
    for bad in (
        good.replace('name="get_weather"', "name=get_weather"),
        good.replace(">3<", '>"3"<'),
        good.replace('name="city"', 'name="town"'),
        good.replace("</invoke>\n", ""),
        good.replace("</minimax:tool_call>", ""),
    ):
        assert not g.accepts(bad), bad


@pytest.mark.parametrize(
    "text",
    [
        "<think>\nnever closed",
        '\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Oslo',
        '\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city',
        '\n<minimax:tool_call>\n<invoke name="get_weather',
        '\n<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">a</parameter>\n<parameter name="city">b</parameter>\n</invoke>\n</minimax:tool_call>',
        '\n<minimax:tool_call>\n<invoke name="get_weather">\n</invoke>\n',
        "\n<minimax:tool_call>\nhello",
    ],
)
def test_hostile_turns_are_typed_parse_errors(text: str) -> None:
    with pytest.raises(FormatParseError):
        get("minimax_m2").parse(text)
