"""Text that spells a tool call, a block marker or a parameter delimiter is never written so
that it reads back as something else (issue 38): ``render`` either writes an output that
``parse`` reads back unchanged or raises ``RenderError``, and xml parameter names that cannot be
delimited are refused when the call grammar is built."""

from __future__ import annotations

import random
from typing import Dict, List, Optional

import pytest

from agentgrammar import AgentGrammarError, Tool, ToolCall, ToolError
from agentgrammar.formats import AgentOutput, get, names
from agentgrammar.formats.format import RenderError

TOOL = Tool("x", "", {"type": "object", "properties": {"a": {"type": "string"}}})


def _markers(fmt_name: str) -> List[str]:
    fmt = get(fmt_name)
    return list(dict.fromkeys([*fmt.triggers(), *fmt.markers(), *fmt.stop]))


def _round_trips_or_refused(fmt_name: str, out: AgentOutput) -> Optional[str]:
    """None when ``render`` refused ``out`` or ``parse`` reads it back unchanged; else why not.
    A format whose call heads hold the call id (Kimi-K2, Cohere's index) gets calls with ids of
    its form."""
    fmt = get(fmt_name)
    if fmt.call_id_form is not None or fmt.call_index is not None:
        calls = [
            ToolCall(c.name, c.arguments, fmt.new_call_id(i, c.name)) for i, c in enumerate(out.tool_calls)
        ]
        out = AgentOutput(think=out.think, tool_calls=calls, response=out.response, text=out.text)
    try:
        text = fmt.render(out, tools=[TOOL])
    except RenderError:
        return None
    back = fmt.parse(text, tools=[TOOL])
    return None if back == out else f"{out!r} rendered as {text!r} parses as {back!r}"


def test_render_error_is_a_typed_value_error() -> None:
    assert issubclass(RenderError, AgentGrammarError) and issubclass(RenderError, ValueError)


@pytest.mark.parametrize("fmt_name", names())
def test_free_text_that_spells_a_call_is_refused(fmt_name: str) -> None:
    fmt = get(fmt_name)
    call = fmt.render(AgentOutput(tool_calls=[ToolCall("x", {"a": "b"})]), tools=[TOOL])
    for text in (call, f"Hi {call} there", f"Hi{call}"):
        with pytest.raises(RenderError) as info:
            fmt.render(AgentOutput(text=text))
        if fmt.has_response:  # no free text at all: the response block holds the text
            assert "no free text" in str(info.value)
            out = AgentOutput(response=text.strip())
            if fmt.response_first:  # a rendered turn holds the (empty) response block's end
                assert _round_trips_or_refused(fmt_name, out) is None
                continue
            assert fmt.parse(fmt.render(out)) == out  # inside the response, a call is text
            continue
        assert info.value.marker is not None and info.value.marker in text


FIELDS = [
    (name, field)
    for name in names()
    for field, present in (
        ("text", not get(name).has_response),
        ("think", get(name).has_think),
        ("response", get(name).has_response),
    )
    if present
]


@pytest.mark.parametrize("fmt_name, field", FIELDS)
def test_a_marker_in_any_text_round_trips_or_is_refused(fmt_name: str, field: str) -> None:
    problems = []
    for marker in _markers(fmt_name):
        for core in {marker, marker.strip()} - {""}:
            for value in (core, f"a {core} b", f"a{core}", f"{core}b", f"a{core[:-1]}", f"{core[1:]}b"):
                value = value.strip() or "z"
                for calls in ([], [ToolCall("x", {"a": "v"})]):
                    kw: Dict[str, object] = {field: value, "tool_calls": calls}
                    problem = _round_trips_or_refused(fmt_name, AgentOutput(**kw))  # type: ignore[arg-type]
                    if problem:
                        problems.append(problem)
    assert not problems, problems[:3]


@pytest.mark.parametrize("fmt_name", names())
def test_random_outputs_made_of_markers_round_trip_or_are_refused(fmt_name: str) -> None:
    fmt = get(fmt_name)
    frags = ["hi", "a", " ", "\n", "{", "}", '"']
    for m in _markers(fmt_name):
        frags += [m, m[: len(m) // 2], m[len(m) // 2 :]]
    rng = random.Random(fmt_name)

    def text() -> str:
        return "".join(rng.choice(frags) for _ in range(rng.randint(1, 4))).strip() or "z"

    problems = []
    for _ in range(400):
        kw: Dict[str, object] = {}
        if fmt.has_think and rng.random() < 0.5:
            kw["think"] = text()
        if not fmt.has_response and rng.random() < 0.6:
            kw["text"] = text()
        if fmt.has_response and rng.random() < 0.5:
            kw["response"] = text()
        if rng.random() < 0.5:
            kw["tool_calls"] = [ToolCall("x", {"a": text()})]
        problem = _round_trips_or_refused(fmt_name, AgentOutput(**kw))  # type: ignore[arg-type]
        if problem:
            problems.append(problem)
    assert not problems, problems[:3]


def test_the_think_text_may_hold_a_trigger_but_not_its_end() -> None:
    fmt = get("qwen3")
    out = AgentOutput(think="I could write <tool_call> here", text="ok")
    assert fmt.parse(fmt.render(out)) == out
    with pytest.raises(RenderError, match="end marker") as info:
        fmt.render(AgentOutput(think="done</think>then"))
    assert info.value.marker == "</think>"


def test_free_text_that_would_open_the_think_block_is_refused() -> None:
    with pytest.raises(RenderError, match="think marker"):
        get("qwen3").render(AgentOutput(text="<think>secret</think>hello"))


def test_formats_with_a_response_block_have_no_free_text() -> None:
    with pytest.raises(RenderError, match="no free text"):
        get("harmony").render(AgentOutput(text="hello"))


def test_free_text_ending_in_a_stop_string_is_refused() -> None:
    with pytest.raises(RenderError, match="stop string") as info:
        get("qwen3_coder").render(AgentOutput(text="bye<|im_end|>"))
    assert info.value.marker == "<|im_end|>"


def test_a_raw_call_id_holding_a_marker_is_refused() -> None:
    import dataclasses

    fmt = dataclasses.replace(get("mistral_small_3_2"), call_id_length=None)
    with pytest.raises(RenderError, match="letters and digits"):
        fmt.render(AgentOutput(tool_calls=[ToolCall("x", {}, id="ab[ARGS]{}")]))
    out = AgentOutput(tool_calls=[ToolCall("x", {}, id="abc123")])
    assert fmt.parse(fmt.render(out)) == out


# --------------------------------------------------------------------------- xml names

BAD_XML_NAMES = [
    "a>b",
    "a\nb",
    "a\rb",
    "</parameter>",
    "x</parameter>y",
    "<parameter=b",
    " a",
    "a ",
    "",
    "a\u2028b",
]


@pytest.mark.parametrize("key", BAD_XML_NAMES)
def test_xml_property_names_that_cannot_be_delimited_are_refused(key: str) -> None:
    fmt = get("qwen3_coder")
    tool = Tool(
        "t", "", {"type": "object", "properties": {key: {"type": "string"}, "ok": {"type": "integer"}}}
    )
    with pytest.raises(ToolError) as info:
        fmt.grammar([tool])
    assert info.value.tool == "t" and info.value.field == key
    assert "'t'" in str(info.value) and repr(key) in str(info.value)
    with pytest.raises(RenderError, match=repr(key).replace("\\", "\\\\")):
        fmt.render(AgentOutput(tool_calls=[ToolCall("t", {key: "v"})]), tools=[tool])
    with pytest.raises(RenderError):
        fmt.render(AgentOutput(tool_calls=[ToolCall("t", {key: "v"})]))


@pytest.mark.parametrize("key", ["city", "first name", "é", "a-b.c", "a=b"])
def test_other_xml_property_names_round_trip(key: str) -> None:
    fmt = get("qwen3_coder")
    tool = Tool("t", "", {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]})
    out = AgentOutput(tool_calls=[ToolCall("t", {key: "v"})])
    text = fmt.render(out, tools=[tool])
    assert fmt.grammar([tool]).accepts(text)
    assert fmt.parse(text, tools=[tool]) == out
