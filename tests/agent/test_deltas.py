"""``TurnDeltas`` on every preset without a model: the deltas of a rendered turn, fed in chunks
of any size, join to what ``parse`` reads from the whole turn."""

from __future__ import annotations

import json
from typing import Any, Dict, List

import pytest

from agentgrammar import ToolCall
from agentgrammar.agent.deltas import TurnDeltas
from agentgrammar.agent.events import ReasoningDelta, TextDelta, ToolCallArgumentsDelta, ToolCallNamed
from agentgrammar.formats import AgentFormat, AgentOutput, get, names
from agentgrammar.formats.pythonic import python_literal

CALLS = [
    ToolCall("get_weather", {"city": 'Oslo "x" </tool_call> ]}', "days": [1, 2], "opts": {"a": None}}),
    ToolCall("now", {}),
]
XML_CALLS = [ToolCall("get_weather", {"city": "Oslo\n<b>", "days": [1, 2]}), ToolCall("now", {})]


def _outputs(fmt: AgentFormat) -> List[AgentOutput]:
    calls = XML_CALLS if fmt.call_layout == "xml" else CALLS
    calls = calls if fmt.parallel_calls else calls[:1]
    think = "  Let me think.\n\n About it. " if fmt.has_think else None
    if fmt.has_response:
        tail = "  It is sunny\n\n in Oslo. " if fmt.response_after_calls else None
        return [
            AgentOutput(think=think, tool_calls=calls, response=tail),
            AgentOutput(think=think, response=" Done.\n"),
        ]
    text = None if fmt.calls_or_text else "Checking the weather."
    return [
        AgentOutput(think=think, text=text, tool_calls=calls),
        AgentOutput(think=think, text=" Hi\nthere. "),
    ]


def _events(fmt: AgentFormat, text: str, chunk: int) -> List[Any]:
    deltas = TurnDeltas(fmt, call_id=lambda i, name: f"call_{i}")
    events: List[Any] = []
    for k in range(0, len(text), chunk):
        events += deltas.feed(text[k : k + chunk])
    events += deltas.finish()
    assert not deltas.calls.lost
    return events


@pytest.mark.parametrize("name", names())
@pytest.mark.parametrize("chunk", [1, 2, 5, 10_000])
def test_deltas_join_to_the_parse(name: str, chunk: int) -> None:
    fmt = get(name)
    for output in _outputs(fmt):
        text = fmt.render(output)
        parsed = fmt.parse(text)
        events = _events(fmt, text, chunk)
        assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == (parsed.think or "")
        content = parsed.response if fmt.has_response else parsed.text
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (content or "")
        named = [e for e in events if isinstance(e, ToolCallNamed)]
        assert [(e.index, e.name) for e in named] == [(i, c.name) for i, c in enumerate(parsed.tool_calls)]
        for i, call in enumerate(parsed.tool_calls):
            first = next(k for k, e in enumerate(events) if isinstance(e, ToolCallNamed) and e.index == i)
            pieces = [
                (k, e) for k, e in enumerate(events) if isinstance(e, ToolCallArgumentsDelta) and e.index == i
            ]
            assert all(k > first for k, _ in pieces), "an argument delta came before the call's name"
            if fmt.call_layout in ("xml", "pythonic"):
                values: Dict[str, str] = {}
                for _, e in pieces:
                    values[e.parameter] = values.get(e.parameter, "") + e.text
                assert set(values) == set(call.arguments)
                for key, value in call.arguments.items():
                    if fmt.call_layout == "pythonic":  # the Python literal as written
                        assert values[key] == python_literal(value)
                    else:
                        assert values[key] in (value, json.dumps(value), fmt._dumps(value))
            else:
                joined = "".join(e.text for _, e in pieces)
                assert json.loads(joined) == call.arguments
                assert all(e.parameter is None for _, e in pieces)
                if fmt.call_layout == "styled":  # one delta: the arguments' JSON, once complete
                    assert len(pieces) == 1
                else:  # the JSON as written
                    assert joined in text


def test_names_and_ids_come_as_soon_as_known() -> None:
    fmt = get("hermes")
    deltas = TurnDeltas(fmt, call_id=lambda i, name: f"id{i}")
    assert deltas.feed('<tool_call>\n{"name": "get_wea') == []
    assert deltas.feed("ther") == []  # "get_weather" may still go on
    assert deltas.feed('"') == [ToolCallNamed(0, "get_weather", "id0")]
    # Mistral writes its ids after the arguments: not known with the name
    mistral = TurnDeltas(get("mistral"), call_id=lambda i, name: f"id{i}")
    events = mistral.feed('[TOOL_CALLS][{"name": "now", "arguments": {}, "id": "abc123XYZ"}]')
    assert events[0] == ToolCallNamed(0, "now", None)
    # Mistral-Small-3.2 writes it before the arguments: in the name's event
    small = TurnDeltas(get("mistral_small_3_2"))
    assert small.feed("[TOOL_CALLS]now[CALL_ID]abc123XYZ[ARGS]{}")[0] == ToolCallNamed(0, "now", "abc123XYZ")


def test_held_back_text_waits_for_what_decides_it() -> None:
    deltas = TurnDeltas(get("tags"))
    assert deltas.feed("<think>  a ") == [ReasoningDelta("a")]
    assert deltas.feed("b</th") == [ReasoningDelta(" b")]  # "</th" may end the block
    assert deltas.feed("ink>\n<response> x") == [TextDelta("x")]
    assert deltas.feed(" \n") == []
    assert deltas.feed("y</response>") == [TextDelta(" \ny")]
    assert deltas.finish() == []


def test_text_that_strays_stops_the_call_deltas() -> None:
    deltas = TurnDeltas(get("hermes"))
    events = deltas.feed('<tool_call>\n{"nome": "f"}')
    assert events == [] and deltas.calls.lost
