"""Hostile turns in the styled layout found by the outputs fuzz harness: a typed error, never a
raw exception from the JSON decoder, and no arguments nested past what a tool takes."""

from __future__ import annotations

import pytest

from agentgrammar.formats import FormatParseError, get
from agentgrammar.formats.arguments import MAX_JSON_DEPTH
from agentgrammar.formats.errors import RenderError
from agentgrammar.formats.styled import render_arguments


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


@pytest.mark.parametrize("style", ["gemma", "cohere_xml", "kimi_k3_xml", "minimax_m3_xml"])
def test_arguments_that_parse_but_nest_too_deeply_to_write_are_a_render_error(style: str) -> None:
    """A value read within the reader's depth may take the writers, which recurse in Python,
    past the interpreter's stack (the agent fuzz harness: minimax_m3 objects 300 deep)."""
    value: object = 1
    for _ in range(2 * MAX_JSON_DEPTH):
        value = {"a": value}
    try:
        out = render_arguments(style, {"n": value})
    except RenderError as e:  # never RecursionError
        assert "nest too deeply" in str(e)
    else:
        assert out.count('"a"') + out.count("<a>") + out.count("a:") >= 2 * MAX_JSON_DEPTH
    if style == "minimax_m3_xml":  # an element a level, each three calls deep
        with pytest.raises(RenderError, match="nest too deeply"):
            render_arguments(style, {"n": value})
