"""``formats.warm_up``: every preset's warm-up grammar is its request grammar over a tool with an
argument of each JSON type: it accepts a call of that tool with every argument (each value's
states reachable), as the preset renders it, with and without the think block, and an answer
with no call."""

from __future__ import annotations

from typing import Any, Dict

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import AgentOutput, get, names
from agentgrammar.formats.warm_up import WARM_UP_TOOL

ARGUMENTS: Dict[str, Any] = {
    "text": "Oslo, 3 days",
    "count": -12,
    "ratio": 2.5e-3,
    "flag": True,
    "items": ["a", "b c"],
    "numbers": [1, 20],
    "options": {"name": "x", "size": 0.5},
}


def test_the_tool_has_an_argument_of_each_type() -> None:
    properties = WARM_UP_TOOL.parameters["properties"]
    assert set(properties) == set(ARGUMENTS)
    types = {p["type"] for p in properties.values()}
    assert types == {"string", "integer", "number", "boolean", "array", "object"}
    assert not WARM_UP_TOOL.parameters.get("required")  # each value reachable from the opening


@pytest.mark.parametrize("name", names())
def test_a_call_with_every_argument_and_text_are_accepted(name: str) -> None:
    fmt = get(name)
    grammar = fmt.warm_up_grammar()
    call = AgentOutput(tool_calls=[ToolCall("warm_up", ARGUMENTS)])
    assert grammar.accepts(fmt.render(call, tools=[WARM_UP_TOOL]))
    if fmt.has_think:  # reasoning "auto": the think block may open the turn, or not
        assert grammar.accepts(fmt.render(AgentOutput(think="Let me see.", tool_calls=call.tool_calls)))
    answer = (
        AgentOutput(response="No call needed.") if fmt.has_response else AgentOutput(text="No call needed.")
    )
    assert grammar.accepts(fmt.render(answer))


def test_a_call_of_another_tool_is_refused() -> None:
    fmt = get("qwen3")
    other = fmt.render(AgentOutput(tool_calls=[ToolCall("other", {})]))
    assert not fmt.warm_up_grammar().accepts(other)
