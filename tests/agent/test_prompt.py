"""Prompts through chat templates and the structured conversation (no model needed)."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from agentgrammar import Tool, ToolCall
from agentgrammar.agent.messages import assistant_message, output_of, with_argument_shape
from agentgrammar.agent.prompt import PromptBuilder, reasoning_switches
from agentgrammar.errors import AgentError
from agentgrammar.formats import AgentOutput, get

jinja2 = pytest.importorskip("jinja2")

NOW = Tool("now", "The time.", {"type": "object", "properties": {"tz": {"type": "string"}}})


class TemplateTokenizer:
    """A tokenizer stand-in that renders its ``chat_template`` with jinja2, as transformers does."""

    def __init__(self, template: str) -> None:
        self.chat_template = template
        self.calls: List[Dict[str, Any]] = []

    def apply_chat_template(self, messages: Any, tools: Any = None, tokenize: bool = False, **kw: Any) -> str:
        self.calls.append({"messages": messages, "tools": tools, **kw})
        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        env.filters["tojson"] = lambda v: json.dumps(v)
        return env.from_string(kw.pop("chat_template", None) or self.chat_template).render(
            messages=messages, tools=tools, **kw
        )


# Concatenates arguments (as DeepSeek's templates do): a dict there raises.
CONCAT = (
    "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
    "{% for c in m.tool_calls or [] %}[{{ c.function.name }} "
    + "{{ '' + c.function.arguments }}]{% endfor %}"
    "{% endfor %}{% if tools %}<tools>{% for t in tools %}{{ t.function.name }}{% endfor %}{% endif %}"
    "{% if add_generation_prompt %}<assistant>{% if enable_thinking is false %}<think></think>"
    "{% else %}<think>\n{% endif %}{% endif %}"
)


def test_assistant_messages_hold_the_turn_structured() -> None:
    out = AgentOutput(
        think="Hmm.", tool_calls=[ToolCall("now", {"tz": "UTC"}, id="call_1")], text="Checking."
    )
    m = assistant_message(out)
    assert m == {
        "role": "assistant",
        "content": "Checking.",
        "reasoning_content": "Hmm.",
        "thinking": "Hmm.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "now", "arguments": {"tz": "UTC"}}}
        ],
    }
    assert output_of(m) == out
    as_json = with_argument_shape([m], "json")[0]["tool_calls"][0]["function"]["arguments"]
    assert as_json == '{"tz": "UTC"}'
    assert with_argument_shape(with_argument_shape([m], "json"), "dict") == [m]
    assert assistant_message(AgentOutput(tool_calls=[ToolCall("now", {})]))["content"] == ""
    with pytest.raises(ValueError):
        assistant_message(out, arguments="xml")


def test_reasoning_switches_follow_what_the_template_reads() -> None:
    assert reasoning_switches("{{ enable_thinking }} {{ thinking }}", "enabled") == {
        "enable_thinking": True,
        "thinking": True,
    }
    assert reasoning_switches("{{ reasoning_effort }}", "disabled") == {"reasoning_effort": "low"}
    assert reasoning_switches("{{ enable_thinking }}", "auto") == {}
    assert reasoning_switches("{{ messages }}", "disabled") == {}


def test_a_template_that_concatenates_arguments_gets_json_text() -> None:
    tok = TemplateTokenizer(CONCAT)
    builder = PromptBuilder(tok, get("qwen3"), {"extra": 1})
    assert builder.argument_shape == "json"
    call = assistant_message(AgentOutput(tool_calls=[ToolCall("now", {"tz": "UTC"}, id="c1")]))
    messages = [{"role": "user", "content": "Time?"}, call, {"role": "tool", "content": "noon"}]
    prompt = builder.build(messages, [NOW], "disabled")
    assert prompt.templated and '[now {"tz": "UTC"}]' in prompt.text
    assert prompt.text.endswith("<assistant><think></think>")
    assert prompt.opened == "<think></think>"  # the generation prompt wrote an empty think block
    assert tok.calls[-1]["enable_thinking"] is False and tok.calls[-1]["extra"] == 1
    assert builder.build(messages, [NOW], "enabled").opened == "<think>\n"


def test_a_template_that_fails_is_an_agent_error_quoting_it() -> None:
    tok = TemplateTokenizer("{{ raise_here() }}")
    with pytest.raises(AgentError, match=r"chat template cannot render.*raise_here"):
        PromptBuilder(tok, get("hermes")).build([{"role": "user", "content": "Hi"}], [NOW], "auto")


def test_a_template_that_ignores_tools_gets_the_format_block() -> None:
    tok = TemplateTokenizer("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}")
    fmt = get("hermes")
    prompt = PromptBuilder(tok, fmt).build([{"role": "user", "content": "Hi"}], [NOW], "auto")
    assert prompt.text == "<system>" + fmt.render_tools([NOW]) + "<user>Hi"
    assert prompt.opened == ""


def test_without_a_template_the_plain_layout_renders_structured_turns() -> None:
    class Plain:
        chat_template = None

    fmt = get("tags")
    turn = assistant_message(AgentOutput(think="t", tool_calls=[ToolCall("now", {})]))
    prompt = PromptBuilder(Plain(), fmt).build([{"role": "user", "content": "Hi"}, turn], [NOW], "enabled")
    assert not prompt.templated
    assert "<|assistant|>\n" + fmt.render(output_of(turn), tools=[NOW]) + "\n" in prompt.text
