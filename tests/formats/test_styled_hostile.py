"""Hostile turns in the styled layout found by the outputs fuzz harness: a typed error, never a
raw exception from the JSON decoder, and no arguments nested past what a tool takes."""

from __future__ import annotations

import pytest

from agentgrammar.formats import FormatParseError, get
from agentgrammar.formats.arguments import MAX_JSON_DEPTH


@pytest.mark.parametrize("value", ["-1:value", "1000</coflue", "\\y", ""])
def test_cohere_json_value_that_is_not_json(value: str) -> None:
    text = (
        '<cofl:tool_calls><cofl:tool_call id="0" name="count">'
        f'<cofl:value name="n" type="json">{value}</cofl:value>'
        "</cofl:tool_call></cofl:tool_calls>"
    )
    with pytest.raises(FormatParseError, match="not JSON"):
        get("cohere").parse(text)


def test_minimax_m3_elements_and_json_nest_within_the_limit() -> None:
    deep = (
        "[" * (MAX_JSON_DEPTH - 1) + "1" + "]" * (MAX_JSON_DEPTH - 1)
    )  # with the two levels around it: one too many
    sep = "]<]minimax[>["
    text = (
        f'{sep}<tool_call>\n{sep}<invoke name="count">{sep}<items>{sep}<item>{deep}{sep}</item>'
        f"{sep}</items>{sep}</invoke>{sep}</tool_call>"
    )
    with pytest.raises(FormatParseError, match="nest more than"):
        get("minimax_m3").parse(text)
