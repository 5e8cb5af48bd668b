"""The ``gemma_4`` preset against xgrammar 0.2.9's builtin ``gemma_4`` tag (the kit has no
Gemma 4 template): ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>``, reasoning in
``<|channel>thought\\n...<channel|>``."""

from __future__ import annotations

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import AgentOutput, RenderError, get
from tests.formats.xgrammar_tag_checks import (
    OSLO,
    TIME,
    TOOLS,
    Sample,
    check_hostile,
    check_malformed,
    check_sample,
    cut_offs,
)

Q = '<|"|>'
CALL = f"<|tool_call>call:get_weather{{city:{Q}Oslo{Q},days:3}}<tool_call|>"
NOW = "<|tool_call>call:now{}<tool_call|>"
SAMPLES = [
    Sample(CALL, [OSLO]),
    Sample(CALL + NOW, [OSLO, TIME]),
    Sample("Let me look." + CALL, [OSLO], "Let me look."),
    Sample("<|channel>thought\nEasy.<channel|>" + NOW, [TIME], think="Easy."),
    Sample("<|channel>thought\nEasy.<channel|>Sure." + CALL, [OSLO], "Sure.", "Easy.", "enabled"),
    Sample(
        f"<|tool_call>call:get_weather{{ city : {Q}a, b{Q} }}<tool_call|>",
        [ToolCall("get_weather", {"city": "a, b"})],
    ),
]


@pytest.mark.parametrize("sample", SAMPLES, ids=range(len(SAMPLES)))
def test_what_xgrammars_tag_accepts(sample: Sample) -> None:
    check_sample("gemma_4", sample)


def test_malformed_calls_are_refused_by_both() -> None:
    check_malformed(
        "gemma_4",
        CALL,
        [
            CALL.replace("days:3", f"days:{Q}3{Q}"),  # a string where an integer goes
            CALL.replace(f"{Q}Oslo{Q}", '"Oslo"'),  # JSON quotes
            CALL.replace("city:", '"city":'),  # a quoted key
            CALL.replace("get_weather", "get_whether"),
            CALL.replace("<tool_call|>", ""),
            "<|tool_call>call:get_weather{days:3}<tool_call|>",  # city is required
        ],
    )


def test_hostile_and_cut_off_output_is_a_parse_error() -> None:
    check_hostile(
        "gemma_4",
        [
            *cut_offs(CALL),
            "<|channel>thought\nnever closed",
            f"<|tool_call>call:get_weather{{city:{Q}a{Q},city:{Q}b{Q}}}<tool_call|>",  # a key twice
            "<|tool_call>call:get_weather{days:NaN}<tool_call|>",
            "<|tool_call>call:get_weather{days:" + "[" * 5000 + "<tool_call|>",
            "<|tool_call>call:get_weather{days}<tool_call|>",
            "<|tool_call>call:{}<tool_call|>",
        ],
    )


def test_strings_that_hold_a_control_marker_are_not_written() -> None:
    fmt = get("gemma_4")
    for text in (Q, "<tool_call|>", "a<|channel>b"):
        with pytest.raises(RenderError):
            fmt.render(AgentOutput(tool_calls=[ToolCall("get_weather", {"city": text})]), tools=TOOLS)
        assert not fmt.grammar(TOOLS, reasoning="disabled").accepts(CALL.replace("Oslo", text)), text


def test_nested_values_round_trip() -> None:
    fmt = get("gemma_4")
    out = AgentOutput(tool_calls=[ToolCall("f", {"a": [1, {"b": None, "c": "x y"}], "d": True})])
    text = fmt.render(out)
    assert text == f"<|tool_call>call:f{{a:[1,{{b:null,c:{Q}x y{Q}}}],d:true}}<tool_call|>"
    assert fmt.parse(text) == out
