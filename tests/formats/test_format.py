"""``AgentFormat`` itself: tool and tool_choice handling, the three call layouts, whitespace
policies, caching of per-tool pieces, rendering and parsing rules, and errors."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentgrammar
from agentgrammar import AgentFormat, AgentOutput, Tool, ToolCall, ToolError, ToolRegistry
from agentgrammar import structural_tag as stag
from agentgrammar.formats import FormatParseError, get
from tests.formats.format_fixtures import FREE, FUNCTION, NOW, TAGS, TOOLS, WEATHER, WEATHER_SCHEMA, XML, call

# --------------------------------------------------------------------------- AgentOutput


def test_output_is_a_value() -> None:
    a = AgentOutput(think="t", tool_calls=(call(),), response="r")
    assert a == AgentOutput("t", [call()], "r") and a.tool_calls == [call()]
    assert a != AgentOutput("t", [call()], "r", text="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.think = "u"  # type: ignore[misc]
    with pytest.raises(TypeError, match="ToolCall"):
        AgentOutput(tool_calls=[{"name": "x"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="think must be a str"):
        AgentOutput(think=1)  # type: ignore[arg-type]


def test_exports() -> None:
    assert agentgrammar.AgentFormat is AgentFormat and agentgrammar.AgentOutput is AgentOutput
    assert agentgrammar.formats.get("tags").name == "tags"
    assert issubclass(FormatParseError, agentgrammar.AgentGrammarError)
    assert issubclass(FormatParseError, ValueError)


# --------------------------------------------------------------------------- tools and tool_choice


def test_tools_in_any_form() -> None:
    text = FREE.render(AgentOutput(think="", tool_calls=[call()]))
    openai = [
        {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}},
        {"name": "now", "parameters": {"type": "object", "properties": {}}},
    ]
    for tools in (ToolRegistry(TOOLS), TOOLS, WEATHER, openai, [openai[0], NOW], iter(TOOLS)):
        assert FREE.grammar(tools).accepts(text), tools
    with pytest.raises(ToolError, match="two tools are named 'now'"):
        FREE.grammar([NOW, Tool("now", "", {"type": "object", "properties": {}})])
    with pytest.raises(ToolError, match="expected a Tool"):
        FREE.grammar([42])  # type: ignore[list-item]


@pytest.mark.parametrize(
    "tool_choice",
    [
        "launch",
        {"type": "function", "function": {"name": "launch"}},
        {
            "type": "allowed_tools",
            "allowed_tools": {
                "mode": "auto",
                "tools": [{"type": "function", "function": {"name": "launch"}}],
            },
        },
    ],
)
def test_unknown_tool_choice_is_a_tool_error(tool_choice: Any) -> None:
    with pytest.raises(ToolError, match="unknown tool 'launch'"):
        FREE.grammar(TOOLS, tool_choice=tool_choice)


def test_malformed_options() -> None:
    with pytest.raises(ValueError, match="tool_choice must be"):
        FREE.grammar(TOOLS, tool_choice=3)
    with pytest.raises(ValueError, match="allowed_tools mode"):
        FREE.grammar(
            TOOLS, tool_choice={"type": "allowed_tools", "allowed_tools": {"mode": "any", "tools": []}}
        )
    with pytest.raises(ValueError, match="reasoning must be"):
        FREE.grammar(TOOLS, reasoning="maybe")
    with pytest.raises(ToolError, match="no tools"):
        FREE.grammar([], tool_choice="required")


def test_tool_choice_modes() -> None:
    one = FREE.render(AgentOutput(think="", tool_calls=[call()]))
    two = FREE.render(AgentOutput(think="", tool_calls=[call(), call("now")]))
    chat = FREE.render(AgentOutput(think="", text="Hello"))

    def accepts(text: str, **options: Any) -> bool:
        return FREE.grammar(TOOLS, **options).accepts(text)

    assert accepts(one) and accepts(two) and accepts(chat)
    assert accepts(chat, tool_choice="none") and not accepts(one, tool_choice="none")
    assert not accepts("<think></think>Hi <tool_call>", tool_choice="none")  # the trigger never appears
    assert accepts(one, tool_choice="required") and not accepts(chat, tool_choice="required")
    assert accepts(one, tool_choice="get_weather") and not accepts(two, tool_choice="get_weather")
    assert accepts(one, tool_choice="get_weather", parallel_tool_calls=True)
    assert not accepts(two, parallel_tool_calls=False)
    allowed_now = {
        "type": "allowed_tools",
        "allowed_tools": {"mode": "required", "tools": [{"type": "function", "name": "now"}]},
    }
    assert not accepts(one, tool_choice=allowed_now)
    assert accepts(FREE.render(AgentOutput(think="", tool_calls=[call("now")])), tool_choice=allowed_now)
    # a tool without arguments takes exactly {}
    assert not accepts(FREE.render(AgentOutput(think="", tool_calls=[ToolCall("now", {"x": 1})])))
    # no tools with "auto": just text, and the trigger cannot appear
    assert FREE.grammar([]).accepts(chat) and not FREE.grammar([]).accepts(one)


def test_reasoning_modes() -> None:
    with_think = FREE.render(AgentOutput(think="hmm", tool_calls=[call()]))
    without = FREE.render(AgentOutput(tool_calls=[call()]))
    for reasoning, ok_with, ok_without in (
        ("enabled", True, False),
        ("disabled", False, True),
        ("auto", True, True),
    ):
        g = FREE.grammar(TOOLS, reasoning=reasoning)
        assert (g.accepts(with_think), g.accepts(without)) == (ok_with, ok_without), reasoning
    # a format without a think block ignores the option
    assert FUNCTION.grammar(TOOLS, reasoning="enabled").accepts(
        FUNCTION.render(AgentOutput(tool_calls=[call()]))
    )
    # free text never contains the think markers
    assert not FREE.grammar(TOOLS, reasoning="disabled").accepts("a </think> b")


def test_response_formats_have_no_free_text() -> None:
    g = TAGS.grammar(TOOLS)
    ok = [
        AgentOutput(think="x", response="Hi"),
        AgentOutput(think="x", tool_calls=[call()]),
        AgentOutput(think="x", tool_calls=[call(), call("now")], response="Done"),
    ]
    for out in ok:
        assert g.accepts(TAGS.render(out)), out
    assert not g.accepts("<think>x</think>\nHello")
    assert not g.accepts("<think>x</think>\n")  # neither a call nor a response
    assert not g.accepts(TAGS.render(AgentOutput(think="x", response="Hi")) + " trailing")
    assert TAGS.grammar(TOOLS, tool_choice="none").accepts("<think>x</think>\n<response>Hi</response>")
    assert not TAGS.grammar(TOOLS, tool_choice="none").accepts(TAGS.render(ok[1]))
    one_way = dataclasses.replace(TAGS, response_after_calls=False)
    assert not one_way.grammar(TOOLS).accepts(TAGS.render(ok[2]))


# --------------------------------------------------------------------------- layouts


@pytest.mark.parametrize("fmt", [FREE, FUNCTION, XML, TAGS], ids=lambda f: f.name)
def test_layouts_round_trip(fmt: AgentFormat) -> None:
    out = AgentOutput(
        think="t" if fmt.has_think else None,
        tool_calls=[call(city="Oslo", days=3, tags=["a", "b"]), call("now")],
        response="r" if fmt.has_response else None,
        text=None if fmt.has_response else "Hi",
    )
    text = fmt.render(out, tools=TOOLS)
    assert fmt.grammar(TOOLS, reasoning="auto").accepts(text), text
    assert fmt.parse(text, tools=TOOLS) == out


def test_name_then_json_layout() -> None:
    text = FUNCTION.render(AgentOutput(tool_calls=[call(days=2)]))
    assert text == '<function=get_weather>{"city": "Oslo", "days": 2}</function>'
    g = FUNCTION.grammar(TOOLS)
    assert g.accepts(text) and not g.accepts(text.replace("get_weather", "get_wether"))


def test_xml_layout_writes_strings_raw() -> None:
    text = XML.render(AgentOutput(tool_calls=[call(city="New York", days=2, tags=["x"])]), tools=TOOLS)
    assert text == (
        "<tool_call><function=get_weather><parameter=city>New York</parameter>"
        '<parameter=days>2</parameter><parameter=tags>["x"]</parameter></function></tool_call>'
    )
    g = XML.grammar(TOOLS)
    assert g.accepts(text)
    assert not g.accepts(text.replace(">2<", ">two<"))
    assert not g.accepts(text.replace("<parameter=city>New York</parameter>", ""))  # required
    # a raw string that looks like a number stays a string with the tools, not without
    digits = XML.render(AgentOutput(tool_calls=[call(city="123")]), tools=TOOLS)
    assert XML.parse(digits, tools=TOOLS).tool_calls == [call(city="123")]
    assert XML.parse(digits).tool_calls == [ToolCall("get_weather", {"city": 123})]
    enum_tool = Tool(
        "pick", "", {"type": "object", "properties": {"c": {"enum": ["a", "b"]}}, "required": ["c"]}
    )
    picked = XML.render(AgentOutput(tool_calls=[ToolCall("pick", {"c": "b"})]), tools=[enum_tool])
    assert "<parameter=c>b</parameter>" in picked and XML.grammar([enum_tool]).accepts(picked)
    with pytest.raises(ToolError, match="xml layout needs an object schema"):
        XML.grammar([Tool("odd", "", {"type": "array"})])


def test_custom_json_keys_and_separators() -> None:
    fmt = AgentFormat(
        name_key="tool", arguments_key="args", separators=(",", ":"), call_begin="<call>", call_end="</call>"
    )
    text = fmt.render(AgentOutput(tool_calls=[call(days=1)]))
    assert text == '<call>{"tool":"get_weather","args":{"city":"Oslo","days":1}}</call>'
    assert fmt.grammar(TOOLS).accepts(text)
    assert not fmt.grammar(TOOLS).accepts(text.replace('"days":1', '"days": 1'))
    assert fmt.parse(text).tool_calls == [call(days=1)]


# --------------------------------------------------------------------------- whitespace


def test_compact_and_flexible_whitespace() -> None:
    compact = AgentFormat()
    spaced = '<tool_call>{"name": "get_weather", "arguments": {"city" :  "Oslo" ,"days":2}}</tool_call>'
    tight = compact.render(AgentOutput(tool_calls=[call(days=2)]))
    assert compact.grammar(TOOLS).accepts(tight) and not compact.grammar(TOOLS).accepts(spaced)
    flexible = AgentFormat(whitespace="flexible")
    assert flexible.grammar(TOOLS).accepts(tight) and flexible.grammar(TOOLS).accepts(spaced)
    capped = AgentFormat(whitespace="flexible", max_whitespace=1)
    assert not capped.grammar(TOOLS).accepts(spaced)  # two spaces after the colon
    assert flexible.parse(spaced).tool_calls == [call(days=2)]
    tag = flexible.structural_tag(TOOLS)
    assert isinstance(tag.format, stag.TriggeredTags) and isinstance(
        tag.format.tags[0].content, stag.JSONSchema
    )


# --------------------------------------------------------------------------- caching


def test_pieces_are_cached_per_tool() -> None:
    fmt = AgentFormat()
    assert fmt.call_tag(WEATHER) is fmt.call_tag(WEATHER)
    assert AgentFormat(name="other").call_tag(WEATHER) is fmt.call_tag(WEATHER)  # same layout
    assert FUNCTION.call_tag(WEATHER) is not fmt.call_tag(WEATHER)
    tag = fmt.structural_tag(TOOLS)
    assert isinstance(tag.format, stag.TriggeredTags) and tag.format.tags[0] is fmt.call_tag(WEATHER)
    # OpenAI dicts map to one Tool each, so they hit the cache as well
    d = {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}}
    first = fmt.structural_tag([d]).format
    again = fmt.structural_tag([json.loads(json.dumps(d))]).format
    assert isinstance(first, stag.TriggeredTags) and isinstance(again, stag.TriggeredTags)
    assert first.tags[0] is again.tags[0]


def test_requests_only_assemble_cached_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    tools = [Tool(f"tool_{i}", "", WEATHER_SCHEMA) for i in range(300)]
    fmt = get("hermes")
    fmt.structural_tag(tools)  # builds every tool's piece once

    def no_rebuild(*args: object) -> None:
        raise AssertionError("a known tool's piece was built again")

    monkeypatch.setattr(type(fmt), "_build_call_tags", no_rebuild)
    for n in (10, 100, 300):
        assert len(fmt.structural_tag(tools[:n]).format.tags) == n


def test_tools_with_equal_schemas_share_one_argument_grammar(monkeypatch: pytest.MonkeyPatch) -> None:
    """In the compact layout a tool's arguments are embedded as their grammar, built once per
    distinct schema and never printed and parsed back."""
    fmt = AgentFormat()
    tools = [Tool(f"twin_{i}", "", {**WEATHER_SCHEMA}) for i in range(3)]
    monkeypatch.setattr(agentgrammar.Grammar, "from_ebnf", lambda *a, **k: pytest.fail("EBNF parsed"))
    contents = [fmt.call_tag(t).content for t in tools]
    assert all(isinstance(c, stag.GrammarText) for c in contents)
    assert len({id(c.grammar) for c in contents}) == 1  # type: ignore[union-attr]
    g = fmt.grammar(tools)
    monkeypatch.undo()
    text = fmt.render(AgentOutput(tool_calls=[ToolCall(name="twin_1", arguments={"city": "Oslo"})]))
    assert g.accepts(text) and not g.accepts(text.replace("twin_1", "twin_3"))
    assert fmt.structural_tag(tools).model_dump()["format"]["tags"][0]["content"]["grammar"] == str(
        contents[0].grammar  # type: ignore[union-attr]
    )


# --------------------------------------------------------------------------- render and parse


def test_render_errors() -> None:
    with pytest.raises(ValueError, match="no response block"):
        FREE.render(AgentOutput(response="x"))
    with pytest.raises(ValueError, match="no think block"):
        FUNCTION.render(AgentOutput(think="x"))
    with pytest.raises(ValueError, match="at most one tool call"):
        get("harmony").render(AgentOutput(tool_calls=[call(), call()]))
    with pytest.raises(ValueError, match="no response after tool calls"):
        get("harmony").render(AgentOutput(tool_calls=[call()], response="x"))
    with pytest.raises(ValueError, match="end marker"):
        FREE.render(AgentOutput(think="a </think> b"))


def test_render_orders_arguments_like_the_schema() -> None:
    out = AgentOutput(tool_calls=[ToolCall("get_weather", {"days": 2, "city": "Oslo"})])
    text = FREE.render(out, tools=TOOLS)
    assert '{"city": "Oslo", "days": 2}' in text and FREE.grammar(TOOLS, reasoning="disabled").accepts(text)
    assert not FREE.grammar(TOOLS, reasoning="disabled").accepts(FREE.render(out))  # schema order


def test_parse_is_lenient_about_whitespace_and_stop() -> None:
    fmt = get("qwen3")
    text = '  <think>\nplan\n</think>\nSure.\n\n<tool_call>{"name": "now", "arguments": {}}</tool_call>\n<|im_end|>'
    assert fmt.parse(text) == AgentOutput(think="plan", tool_calls=[call("now")], text="Sure.")
    text = '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call> and <tool_call>\n{"name": "now", "arguments": {}}\n</tool_call> done'
    assert get("hermes").parse(text) == AgentOutput(tool_calls=[call("now"), call("now")], text="and\ndone")


@pytest.mark.parametrize(
    "text, message",
    [
        ("<think>never closed", "the think block is not closed"),
        ("<think></think>\n<response>open", "the response block is not closed"),
        ("<think></think>\n<response>a</response><response>b</response>", "a second response block"),
        ('<think></think>\n<tool_call>{"name": "now", "arguments": {}}', "expected the end of the call"),
        ('<think></think>\n<tool_call>{"name": "now", "arguments": []}</tool_call>', "not a JSON object"),
        ('<think></think>\n<tool_call>{"arguments": {}}</tool_call>', "without a 'name'"),
        (
            '<think></think>\n<tool_call>{"name": "now", "arguments": {}, "x": 1}</tool_call>',
            "unexpected keys",
        ),
        ("<think></think>\n<tool_call>nope</tool_call>", "not valid JSON"),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(FormatParseError, match=message) as info:
        TAGS.parse(text)
    assert 0 <= info.value.offset <= len(text)


def test_parse_errors_in_other_layouts() -> None:
    with pytest.raises(FormatParseError, match="not followed by '>'"):
        FUNCTION.parse("<function=now")
    with pytest.raises(FormatParseError, match="parameter 'city' is not closed"):
        XML.parse("<tool_call><function=get_weather><parameter=city>Oslo")
    with pytest.raises(FormatParseError, match="expected the tool calls marker"):
        get("mistral").parse('[TOOL_CALLS]{"name": "now", "arguments": {}}')


_plain = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<"), max_size=20).map(
    lambda s: s.strip(" \t\r\n")
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    think=st.one_of(st.none(), _plain),
    text=_plain,
    names=st.lists(st.sampled_from(["get_weather", "now"]), max_size=3),
    cities=st.lists(st.text(max_size=8), min_size=3, max_size=3),
)
def test_round_trip_without_grammar(think: Any, text: str, names: List[str], cities: List[str]) -> None:
    calls = [call(n, city=c) if n == "get_weather" else call(n) for n, c in zip(names, cities)]
    for fmt in (FREE, FUNCTION, XML):
        out = AgentOutput(think=think if fmt.has_think else None, tool_calls=calls, text=text or None)
        assert fmt.parse(fmt.render(out, tools=TOOLS), tools=TOOLS) == out


# --------------------------------------------------------------------------- definitions and prompts


def test_invalid_definitions() -> None:
    with pytest.raises(ValueError, match="give both or neither"):
        AgentFormat(think_begin="<think>")
    with pytest.raises(ValueError, match="call_layout"):
        AgentFormat(call_layout="yaml")
    with pytest.raises(ValueError, match="needs name_end"):
        AgentFormat(call_layout="name_then_json")
    with pytest.raises(ValueError, match="must start every tool call"):
        AgentFormat(trigger="<call>")
    with pytest.raises(ValueError, match="whitespace"):
        AgentFormat(whitespace="any")
    with pytest.raises(ValueError, match="calls_end needs calls_begin"):
        AgentFormat(calls_end="]")
    with pytest.raises(ValueError, match="name_key must be a string"):
        AgentFormat(name_key=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="arguments_key must be a string"):
        AgentFormat(arguments_key=1)  # type: ignore[arg-type]


def test_markers_and_templates() -> None:
    assert TAGS.markers() == [
        "<think>",
        "</think>",
        "<tool_call>",
        "</tool_call>",
        "<response>",
        "</response>",
    ]
    assert FUNCTION.call_template() == "<function=<tool-name>><arguments-json-object></function>"
    assert (
        XML.call_template()
        == "<tool_call><function=<tool-name>><parameter=<name>><value></parameter></function></tool_call>"
    )
    block = AgentFormat().render_tools(TOOLS)
    assert "<tools>\n" in block and block.count("\n{") == 2 and "get_weather" in block
    custom = AgentFormat(tools_prompt=lambda tools: " ".join(t.name for t in tools))
    assert custom.render_tools(ToolRegistry(TOOLS)) == "get_weather now"


def test_schema_that_cannot_compile_names_the_tool() -> None:
    bad = Tool("bad", "", {"type": "object", "properties": {"x": {"type": "array", "uniqueItems": True}}})
    with pytest.raises(ToolError, match="tool 'bad'"):
        AgentFormat().grammar([bad])
