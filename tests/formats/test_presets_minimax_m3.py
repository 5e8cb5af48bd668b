"""The ``minimax_m3`` preset against xgrammar 0.2.9's builtin ``minimax_m3`` tag (the kit has
no MiniMax-M3 template): ``]<]minimax[>[``-prefixed XML, nested values as nested elements."""

from __future__ import annotations

import pytest

from agentgrammar import Tool, ToolCall
from agentgrammar.formats import AgentOutput, get
from tests.formats.xgrammar_tag_checks import (
    OSLO,
    TIME,
    Sample,
    check_hostile,
    check_malformed,
    check_sample,
    cut_offs,
)

NS = "]<]minimax[>["
OSLO_CALL = f'{NS}<invoke name="get_weather">{NS}<city>Oslo{NS}</city>{NS}<days>3{NS}</days>{NS}</invoke>\n'
NOW_CALL = f'{NS}<invoke name="now">{NS}</invoke>\n'


def _block(*calls: str) -> str:
    return f"{NS}<tool_call>\n" + "".join(calls) + f"{NS}</tool_call>"


ONE = _block(OSLO_CALL)
SAMPLES = [
    Sample(ONE, [OSLO]),
    Sample(_block(OSLO_CALL, NOW_CALL), [OSLO, TIME]),
    Sample("Let me look." + ONE, [OSLO], "Let me look."),
    Sample("<mm:think>Easy.</mm:think>" + _block(NOW_CALL), [TIME], think="Easy."),
    Sample(_block(OSLO_CALL.replace(f"{NS}<days>", f"\n  {NS}<days>")), [OSLO], reasoning="disabled"),
]


@pytest.mark.parametrize("sample", SAMPLES, ids=range(len(SAMPLES)))
def test_what_xgrammars_tag_accepts(sample: Sample) -> None:
    check_sample("minimax_m3", sample)


def test_malformed_calls_are_refused_by_both() -> None:
    check_malformed(
        "minimax_m3",
        ONE,
        [
            ONE.replace(">3]", '>"3"]'),  # a JSON string where an integer goes
            ONE.replace(f"{NS}<city>Oslo{NS}</city>", ""),  # city is required
            ONE.replace("get_weather", "get_whether"),
            ONE.replace(f"{NS}</city>", f"{NS}</town>"),
            ONE.replace(f"{NS}</tool_call>", ""),
        ],
    )


def test_hostile_and_cut_off_output_is_a_parse_error() -> None:
    check_hostile(
        "minimax_m3",
        [
            *cut_offs(ONE),
            ONE.replace(">3]", ">NaN]"),
            ONE.replace(f"<days>3{NS}</days>", f"<city>3{NS}</city>"),  # a key twice
            ONE.replace(f"{NS}</city>", f"{NS}</town>"),
            _block(f'{NS}<invoke name="get_weather">' + f"{NS}<a>" * 400),
        ],
    )


def test_nested_values_round_trip_typed_by_the_schema() -> None:
    fmt = get("minimax_m3")
    tool = Tool(
        "f",
        "",
        {
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"type": "string"}},
                "opts": {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}},
                "code": {"type": "string"},
            },
        },
    )
    out = AgentOutput(
        tool_calls=[ToolCall("f", {"tags": ["1", "b"], "opts": {"n": 2, "s": "7"}, "code": "42"})]
    )
    text = fmt.render(out, tools=[tool])
    assert f"{NS}<tags>{NS}<item>1{NS}</item>{NS}<item>b{NS}</item>{NS}</tags>" in text
    assert fmt.grammar([tool], reasoning="disabled").accepts(text)
    assert fmt.parse(text, tools=[tool]) == out
    assert fmt.parse(text).tool_calls[0].arguments["code"] == 42  # without the schema: JSON
