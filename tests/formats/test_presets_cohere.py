"""The ``cohere`` preset against xgrammar 0.2.9's builtin ``cohere`` tag (the kit has no
template for Cohere's XML tool calls): ``<cofl:tool_calls><cofl:tool_call id="N" name="NAME">``
typed ``<cofl:value name="K" type="raw|json|dict|list">`` arguments."""

from __future__ import annotations

import pytest

from agentgrammar import ToolCall
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

V = '<cofl:value name="{}" type="{}">{}</cofl:value>'
OSLO_CALL = (
    '<cofl:tool_call id="{}" name="get_weather">'
    + V.format("city", "raw", "Oslo")
    + V.format("days", "json", "3")
    + "</cofl:tool_call>"
)
NOW_CALL = '<cofl:tool_call id="{}" name="now"></cofl:tool_call>'


def _block(*calls: str) -> str:
    return "<cofl:tool_calls>" + "".join(c.format(i) for i, c in enumerate(calls)) + "</cofl:tool_calls>"


ONE = _block(OSLO_CALL)
SAMPLES = [
    Sample(ONE, [OSLO]),
    Sample(_block(OSLO_CALL, NOW_CALL), [OSLO, TIME]),
    Sample("Let me look." + ONE, [OSLO], "Let me look."),
    Sample("<|START_THINKING|>Easy.<|END_THINKING|>" + _block(NOW_CALL), [TIME], think="Easy."),
    Sample(_block(OSLO_CALL.replace(">3<", "> 3\n<")), [OSLO], reasoning="disabled"),
]


@pytest.mark.parametrize("sample", SAMPLES, ids=range(len(SAMPLES)))
def test_what_xgrammars_tag_accepts(sample: Sample) -> None:
    check_sample("cohere", sample)


def test_malformed_calls_are_refused_by_both() -> None:
    check_malformed(
        "cohere",
        ONE,
        [
            ONE.replace('type="json">3', 'type="raw">3'),  # a raw string where an integer goes
            ONE.replace('type="raw">Oslo', 'type="json">"Oslo"'),
            ONE.replace('id="0"', 'id=""'),
            ONE.replace("get_weather", "get_whether"),
            ONE.replace("</cofl:tool_calls>", ""),
            ONE.replace(V.format("city", "raw", "Oslo"), ""),  # city is required
        ],
    )


def test_hostile_and_cut_off_output_is_a_parse_error() -> None:
    check_hostile(
        "cohere",
        [
            *cut_offs(ONE),
            ONE.replace('type="json">3', 'type="json">NaN'),
            ONE.replace('type="json">3', 'type="blob">3'),
            ONE.replace('name="days"', 'name="city"'),  # a key twice
            ONE.replace('id="0"', 'id="x"'),
            '<cofl:tool_calls><cofl:tool_call id="0" name="f">' + '<cofl:value name="a" type="list">' * 400,
        ],
    )


def test_nested_values_and_escaped_names_round_trip() -> None:
    fmt = get("cohere")
    out = AgentOutput(tool_calls=[ToolCall("f", {'a&"b': [1, "x", {"c": None}], "d": {"e": True}}, "0")])
    text = fmt.render(out)
    assert '<cofl:value name="a&amp;&quot;b" type="list"><cofl:value type="json">1</cofl:value>' in text
    assert fmt.parse(text) == out
