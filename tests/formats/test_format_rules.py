"""``AgentFormat`` request rules added for real model families: a named ``tool_choice`` is exactly
one call (xgrammar's builtin model tags), ``render`` writes arguments in schema order and
``any_order`` accepts any, ``parse`` rejects duplicate keys, and call-head variants and call ids."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict

import pytest

from agentgrammar import AgentFormat, AgentOutput, Tool, ToolCall
from agentgrammar.formats import FormatParseError, get
from tests.formats.format_fixtures import FREE, FUNCTION, TAGS, TOOLS, WEATHER, XML, call

# --------------------------------------------------------------------------- tool_choice as xgrammar's model tags


@pytest.mark.parametrize(
    "fmt", [FREE, FUNCTION, XML, TAGS, get("mistral"), get("harmony")], ids=lambda f: f.name
)
def test_a_named_tool_is_exactly_one_call_then_the_turn_ends(fmt: AgentFormat) -> None:
    think = "t" if fmt.has_think else None
    one = fmt.render(AgentOutput(think=think, tool_calls=[call()]), tools=TOOLS)
    for choice in ("get_weather", {"type": "function", "function": {"name": "get_weather"}}):
        g = fmt.grammar(TOOLS, tool_choice=choice, parallel_tool_calls=True)
        assert g.accepts(one), one
        writer = dataclasses.replace(fmt, parallel_calls=True)
        two = writer.render(AgentOutput(think=think, tool_calls=[call(), call()]), tools=TOOLS)
        assert not g.accepts(two)  # no further call
        if fmt.has_response:  # no response after it
            with_response = dataclasses.replace(fmt, response_after_calls=True)
            after = with_response.render(
                AgentOutput(think=think, tool_calls=[call()], response="r"), tools=TOOLS
            )
            assert not g.accepts(after)
            assert fmt.grammar(TOOLS).accepts(after) == fmt.response_after_calls
        else:  # no free text before or after it
            assert not g.accepts(one + "\nDone.") and not g.accepts(
                one.replace(fmt.trigger or "", "Hi " + (fmt.trigger or ""), 1)
            )
            assert fmt.grammar(TOOLS).accepts(one + "\nDone.") == (
                not fmt.calls_begin
            )  # (a calls block ends the turn)
        if fmt.has_think:
            assert g.accepts(one) and not fmt.grammar(
                TOOLS, tool_choice=choice, reasoning="disabled"
            ).accepts(one)


def test_required_and_sequential_calls() -> None:
    one = FREE.render(AgentOutput(think="", tool_calls=[call()]))
    two = FREE.render(AgentOutput(think="", tool_calls=[call(), call("now")]))
    required = FREE.grammar(TOOLS, tool_choice="required")
    assert required.accepts(one) and required.accepts(two) and required.accepts(one + "\nDone.")
    assert not required.accepts(FREE.render(AgentOutput(think="", text="Hi")))
    sequential = FREE.grammar(TOOLS, parallel_tool_calls=False)
    assert sequential.accepts(one) and not sequential.accepts(two) and not sequential.accepts(one + "\nDone.")


# --------------------------------------------------------------------------- argument order


NESTED_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {
        "where": {"$ref": "#/$defs/Place"},
        "when": {"type": "object", "properties": {"day": {"type": "integer"}, "hour": {"type": "integer"}}},
        "stops": {"type": "array", "items": {"$ref": "#/$defs/Place"}},
    },
    "required": ["where"],
    "$defs": {
        "Place": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}}
    },
}
TRIP = Tool("trip", "", NESTED_SCHEMA)
SHUFFLED = {
    "stops": [{"zip": "1", "city": "A"}],
    "when": {"hour": 9, "day": 1},
    "where": {"zip": "0150", "city": "Oslo"},
}


@pytest.mark.parametrize(
    "fmt",
    [FREE, FUNCTION, XML, get("llama3"), get("mistral"), get("harmony"), get("qwen3_coder")],
    ids=lambda f: f.name,
)
def test_render_writes_arguments_in_schema_order_and_any_order_accepts_others(fmt: AgentFormat) -> None:
    out = AgentOutput(think="t" if fmt.has_think else None, tool_calls=[ToolCall("trip", SHUFFLED)])
    text = fmt.render(out, tools=[TRIP])
    keys = [
        k
        for k in re.findall(r'"?(\w+)"?(?:": |":|>)', text)
        if k in ("where", "when", "stops", "city", "zip", "day", "hour")
    ]
    assert keys == ["where", "city", "zip", "when", "day", "hour", "stops", "city", "zip"], text
    assert fmt.grammar([TRIP]).accepts(text), text
    assert fmt.parse(text, tools=[TRIP]).tool_calls[0].arguments == SHUFFLED
    unordered = fmt.render(out)  # without the tools: the caller's order
    assert not fmt.grammar([TRIP]).accepts(unordered), unordered
    assert fmt.grammar([TRIP], any_order=True).accepts(unordered), unordered
    assert fmt.grammar([TRIP], any_order=True).accepts(text)


def test_any_order_pieces_are_cached_apart() -> None:
    fmt = AgentFormat()
    assert fmt.call_tags(WEATHER, any_order=True) is fmt.call_tags(WEATHER, any_order=True)
    assert fmt.call_tags(WEATHER, any_order=True) is not fmt.call_tags(WEATHER)
    flexible = AgentFormat(whitespace="flexible")
    text = '<tool_call>{"name": "get_weather", "arguments": {"days": 2,  "city": "Oslo"}}</tool_call>'
    assert flexible.grammar(TOOLS, any_order=True).accepts(text) and not flexible.grammar(TOOLS).accepts(text)


def test_xml_any_order_keeps_each_parameter_once_and_the_required_ones() -> None:
    g = XML.grammar(TOOLS, any_order=True)

    def xml(*params: str) -> str:
        body = "".join(f"<parameter={p.split('=')[0]}>{p.split('=')[1]}</parameter>" for p in params)
        return f"<tool_call><function=get_weather>{body}</function></tool_call>"

    assert g.accepts(xml("days=2", "city=Oslo")) and g.accepts(xml("tags=[]", "city=Oslo", "days=2"))
    assert not g.accepts(xml("days=2")) and not g.accepts(xml("city=Oslo", "city=Oslo"))
    assert not XML.grammar(TOOLS).accepts(xml("days=2", "city=Oslo"))


# --------------------------------------------------------------------------- duplicate keys


@pytest.mark.parametrize(
    "fmt, text, key",
    [
        (
            FREE,
            '<tool_call>{"name": "get_weather", "arguments": {"city": "a", "city": "b"}}</tool_call>',
            "city",
        ),
        (FREE, '<tool_call>{"name": "now", "name": "get_weather", "arguments": {}}</tool_call>', "name"),
        (FREE, '<tool_call>{"name": "x", "arguments": {"a": {"b": 1, "b": 2}}}</tool_call>', "b"),
        (FREE, '<tool_call>{"name": "x", "arguments": {"a": [{"c": 1, "c": 1}]}}</tool_call>', "c"),
        (FUNCTION, '<function=x>{"a": 1, "a": 1}</function>', "a"),
        (
            XML,
            "<tool_call><function=x><parameter=a>1</parameter><parameter=a>2</parameter></function></tool_call>",
            "a",
        ),
        (XML, '<tool_call><function=x><parameter=a>{"k": 1, "k": 2}</parameter></function></tool_call>', "k"),
        (
            get("mistral"),
            '[TOOL_CALLS][{"name": "x", "arguments": {}, "id": "abc123XYZ", "id": "abc123XYZ"}]',
            "id",
        ),
    ],
)
def test_parse_rejects_duplicate_keys(fmt: AgentFormat, text: str, key: str) -> None:
    with pytest.raises(FormatParseError, match=f"'{key}'.* twice"):
        fmt.parse(text)


# --------------------------------------------------------------------------- variants and call ids


def test_variants_ids_and_their_checks() -> None:
    fmt = AgentFormat(
        call_layout="name_then_json",
        call_begin="<call ",
        name_end=">",
        call_begin_variants=("<call ", "[call "),
        name_end_variants=(" >", "]"),
        call_end="</call>",
    )
    assert fmt.markers() == ["<call ", "[call ", "</call>", ">", " >", "]"]
    assert fmt.triggers() == ["<call ", "[call "]
    g = fmt.grammar(TOOLS)
    for text in (
        "<call now>{}</call>",
        "<call now >{}</call>",
        "[call now]{}</call>",
        "Hi [call now]{}</call>",
    ):
        assert g.accepts(text), text
        assert fmt.parse(text).tool_calls == [ToolCall("now", {})]
    assert (
        not g.accepts("[call now>{}</call>")
        and fmt.render(AgentOutput(tool_calls=[call("now")])) == "<call now>{}</call>"
    )
    with pytest.raises(ValueError, match="name_end_variants pairs with call_begin_variants"):
        AgentFormat(
            call_layout="name_then_json",
            name_end=">",
            call_begin_variants=("a",),
            name_end_variants=("b", "c"),
        )
    with pytest.raises(ValueError, match="calls_begin_variants needs calls_begin"):
        AgentFormat(calls_begin_variants=("[",))
    with pytest.raises(ValueError, match="calls_or_text is for formats with free text"):
        dataclasses.replace(TAGS, calls_or_text=True)
    with pytest.raises(ValueError, match="id_key is a third key"):
        AgentFormat(id_key="name")
    with pytest.raises(ValueError, match="call_id_length"):
        AgentFormat(id_key="id", call_id_length=0)
    with_ids = AgentFormat(id_key="call_id")
    text = with_ids.render(AgentOutput(tool_calls=[ToolCall("now", {}, "call_0")]))
    assert text == '<tool_call>{"name": "now", "arguments": {}, "call_id": "call_0"}</tool_call>'
    assert with_ids.grammar(TOOLS).accepts(text) and with_ids.grammar(TOOLS).accepts(
        text.replace(', "call_id": "call_0"', "")
    )
    assert with_ids.parse(text).tool_calls == [ToolCall("now", {}, "call_0")]
    assert with_ids.new_call_id(0) == "call_0"
