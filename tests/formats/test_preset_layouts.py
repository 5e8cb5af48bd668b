"""What each family's preset accepts, reads and writes, on hand-written turns (no model kit
needed): llama3's call-or-text turns, gpt-oss's header forms, Mistral's call ids and spacings,
Qwen3-Coder's raw strings and unsatisfiable optional parameters."""

from __future__ import annotations

import re
from typing import Any, Dict, List

import pytest

from agentgrammar import Tool, ToolCall, ToolError
from agentgrammar.formats import AgentOutput, FormatParseError, get

WEATHER = Tool(
    "get_weather",
    "Weather in a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
    },
)
NOW = Tool("now", "The time.", {"type": "object", "properties": {}})
TOOLS = [WEATHER, NOW]
OSLO = ToolCall("get_weather", {"city": "Oslo"})

# --------------------------------------------------------------------------- llama3

LLAMA = get("llama3")
BARE = '{"name": "get_weather", "parameters": {"city": "Oslo"}}'


def test_llama3_renders_the_templates_bare_json() -> None:
    out = AgentOutput(tool_calls=[ToolCall("get_weather", {"days": 2, "city": "Oslo"})])
    assert (
        LLAMA.render(out, tools=TOOLS) == '{"name": "get_weather", "parameters": {"city": "Oslo", "days": 2}}'
    )
    assert LLAMA.render(AgentOutput(text="Sunny.")) == "Sunny."


@pytest.mark.parametrize("tool_choice", ["auto", "required", "get_weather"])
def test_llama3_a_turn_is_one_call_bare_or_after_python_tag(tool_choice: str) -> None:
    g = LLAMA.grammar(TOOLS, tool_choice=tool_choice)
    for text in (BARE, "<|python_tag|>" + BARE):
        assert g.accepts(text), text
        assert LLAMA.parse(text, tools=TOOLS) == AgentOutput(tool_calls=[OSLO])
    assert not g.accepts(BARE + BARE) and not g.accepts(BARE + "; " + BARE)  # one call per message
    assert not g.accepts(BARE + " Done.") and not g.accepts("Sure. " + BARE)  # a call or text, not both


def test_llama3_text_cannot_be_mistaken_for_a_call() -> None:
    auto = LLAMA.grammar(TOOLS)
    assert auto.accepts("It is sunny in Oslo.") and auto.accepts("")
    assert LLAMA.parse("It is sunny in Oslo.<|eot_id|>") == AgentOutput(text="It is sunny in Oslo.")
    for text in ('{"answer": 1}', " leading space", "\nHi", "<b>hi</b>", "Hi <|python_tag|> there"):
        assert not auto.accepts(text), text
    assert not LLAMA.grammar(TOOLS, tool_choice="required").accepts("It is sunny.")
    assert LLAMA.grammar(TOOLS, tool_choice="none").accepts("Sunny.")
    assert not LLAMA.grammar(TOOLS, tool_choice="none").accepts(BARE)
    # parse reads a turn that starts like a call as one, whatever the whitespace
    spaced = '  { "name" : "get_weather", "parameters": {"city": "Oslo"}}'
    assert LLAMA.parse(spaced).tool_calls == [OSLO]
    assert LLAMA.parse('{"answer": 1}').text == '{"answer": 1}'  # JSON, but not a call
    with pytest.raises(FormatParseError, match="text after the tool call"):
        LLAMA.parse(BARE + " and more")
    with pytest.raises(ValueError, match="either tool calls or text"):
        LLAMA.render(AgentOutput(text="Sure.", tool_calls=[OSLO]))
    with pytest.raises(ValueError, match="starts like a tool call"):
        LLAMA.render(AgentOutput(text='{"name": "x"}'))
    with pytest.raises(ValueError, match="at most one tool call"):
        LLAMA.render(AgentOutput(tool_calls=[OSLO, OSLO]))


# --------------------------------------------------------------------------- harmony (gpt-oss)

HARMONY = get("harmony")
ARGS = '{"city": "Oslo"}'
# every header form of a call: the recipient in the role header or in the channel header, the
# content type " json", " <|constrain|>json" or "<|constrain|>json"
HEADERS = [
    " to=functions.get_weather<|channel|>commentary json<|message|>",
    " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>",
    " to=functions.get_weather<|channel|>commentary<|constrain|>json<|message|>",
    "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
    "<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>",
    "<|channel|>commentary to=functions.get_weather json<|message|>",
]
ANALYSIS = "<|channel|>analysis<|message|>Check the weather.<|end|><|start|>assistant"


def test_harmony_renders_the_templates_form() -> None:
    out = AgentOutput(think="Check the weather.", tool_calls=[OSLO])
    assert HARMONY.render(out, tools=TOOLS) == ANALYSIS + HEADERS[0] + ARGS + "<|call|>"
    final = AgentOutput(think="Easy.", response="Sunny.")
    assert (
        HARMONY.render(final)
        == "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Sunny.<|return|>"
    )


@pytest.mark.parametrize("header", HEADERS)
def test_harmony_reads_every_header_form(header: str) -> None:
    for args in (ARGS, '{"city":"Oslo"}'):  # the template's JSON and the compact JSON
        call = header + args + "<|call|>"
        assert HARMONY.grammar(TOOLS).accepts(ANALYSIS + call), call
        assert HARMONY.grammar(TOOLS, reasoning="auto").accepts(call)
        assert HARMONY.grammar(TOOLS, tool_choice="get_weather").accepts(ANALYSIS + call)
        assert HARMONY.parse(ANALYSIS + call, tools=TOOLS) == AgentOutput(
            think="Check the weather.", tool_calls=[OSLO]
        )
    assert not HARMONY.grammar(TOOLS).accepts(
        ANALYSIS + header.replace("get_weather", "get_wether") + ARGS + "<|call|>"
    )


def test_harmony_a_call_ends_at_call_and_the_turn_with_it() -> None:
    g = HARMONY.grammar(TOOLS)
    call = ANALYSIS + HEADERS[0] + ARGS + "<|call|>"
    assert g.accepts(call)
    assert not g.accepts(call[: -len("<|call|>")])
    assert not g.accepts(call + "<|start|>assistant" + HEADERS[0] + ARGS + "<|call|>")  # one call per turn
    assert not g.accepts(call + "<|start|>assistant<|channel|>final<|message|>Hi<|return|>")
    assert not g.accepts(call.replace(ARGS, '{"city":  "Oslo"}'))  # at most one whitespace character
    assert g.accepts(ANALYSIS + "<|channel|>final<|message|>Sunny.<|return|>")
    assert not HARMONY.grammar(TOOLS, tool_choice="required").accepts(
        ANALYSIS + "<|channel|>final<|message|>x<|return|>"
    )


def test_harmony_accepts_every_call_form_of_xgrammars_builtin_tag() -> None:
    xgr = pytest.importorskip("xgrammar")
    tools = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in TOOLS]
    tag = xgr.get_model_structural_tag("harmony", tools=tools).model_dump()
    calls = [
        t for t in tag["format"]["tags"] if t["begin"].endswith("<|message|>") and "functions." in t["begin"]
    ]
    assert len(calls) >= 2 * len(TOOLS)
    g = HARMONY.grammar(TOOLS, reasoning="auto")
    for t in calls:
        args = ARGS if "get_weather" in t["begin"] else "{}"
        assert g.accepts(t["begin"] + args + t["end"]), t["begin"]


# --------------------------------------------------------------------------- mistral

MISTRAL, MISTRAL_V7 = get("mistral"), get("mistral_v7")


def test_mistral_call_ids() -> None:
    ids = [MISTRAL.new_call_id(i) for i in range(2000)]
    assert all(re.fullmatch("[A-Za-z0-9]{9}", i) for i in ids) and len(set(ids)) == len(ids)
    assert MISTRAL.new_call_id(7) == MISTRAL_V7.new_call_id(7) == get("mistral").new_call_id(7)
    assert get("hermes").new_call_id(7) == "call_7"
    with pytest.raises(ValueError, match="non-negative int"):
        MISTRAL.new_call_id(-1)
    call = ToolCall("get_weather", {"city": "Oslo"}, "abc123XYZ")
    text = MISTRAL.render(AgentOutput(tool_calls=[call, ToolCall("now", {})]), tools=TOOLS)
    assert (
        text
        == '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "abc123XYZ"}, {"name": "now", "arguments": {}}]'
    )
    assert MISTRAL.parse(text, tools=TOOLS).tool_calls == [call, ToolCall("now", {})]
    g = MISTRAL.grammar(TOOLS)
    assert g.accepts(text)
    for bad in ("abc123XY", "abc123XYZ0", "abc-23XYZ"):
        assert not g.accepts(text.replace("abc123XYZ", bad)), bad
    with pytest.raises(ValueError, match="9 ASCII letters and digits"):
        MISTRAL.render(AgentOutput(tool_calls=[ToolCall("now", {}, "call_1")]))
    with pytest.raises(FormatParseError, match="call id 'id' of 'now' is not a string"):
        MISTRAL.parse('[TOOL_CALLS][{"name": "now", "arguments": {}, "id": 7}]')


def test_mistral_spacing_after_the_marker() -> None:
    out = AgentOutput(tool_calls=[ToolCall("now", {}, "abc123XYZ")])
    nemo, small = MISTRAL.render(out), MISTRAL_V7.render(out)
    assert nemo.startswith("[TOOL_CALLS][{") and small.startswith("[TOOL_CALLS] [{")
    for fmt in (MISTRAL, MISTRAL_V7):
        for text in (nemo, small, "Let me check. " + small):
            assert fmt.grammar(TOOLS).accepts(text), (fmt.name, text)
            assert fmt.parse(text).tool_calls == out.tool_calls
        assert not fmt.grammar(TOOLS).accepts(nemo.replace("[TOOL_CALLS][", "[TOOL_CALLS]  ["))


def test_mistral_small_3_2_writes_each_call_with_its_id_and_args_markers() -> None:
    fmt = get("mistral_small_3_2")
    calls = [ToolCall("get_weather", {"city": "Oslo"}, "abc123XYZ"), ToolCall("now", {}, "def456UVW")]
    text = fmt.render(AgentOutput(tool_calls=calls), tools=TOOLS)
    assert (
        text
        == '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Oslo"}[TOOL_CALLS]now[CALL_ID]def456UVW[ARGS]{}'
    )
    g = fmt.grammar(TOOLS)
    assert g.accepts(text) and fmt.parse(text, tools=TOOLS).tool_calls == calls
    without_ids = '[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}'
    assert g.accepts(without_ids) and fmt.parse(without_ids).tool_calls == [OSLO]
    assert not g.accepts(text.replace("abc123XYZ", "abc123"))
    assert not fmt.grammar(TOOLS, tool_choice="get_weather").accepts(text)
    assert fmt.markers() == ["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"]


# --------------------------------------------------------------------------- qwen3_coder

CODER = get("qwen3_coder")


def _coder_call(name: str, **values: str) -> str:
    params = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in values.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


STRINGS = Tool(
    "book",
    "",
    {
        "type": "object",
        "properties": {
            "date": {"type": "string", "format": "date"},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "note": {"type": "string", "minLength": 2, "maxLength": 8},
            "email": {"type": "string", "format": "email"},
            "ref": {"type": "string", "format": "uuid"},
            "text": {"type": "string"},
        },
        "required": ["date"],
    },
)


@pytest.mark.parametrize(
    "key, good, bad",
    [
        ("date", "2019-12-13", ['"2019-12-13"', "2019-13-13", "2019-12-1"]),
        ("code", "OSL", ['"OSL"', "OSLO", "osl"]),
        ("note", "hi there", ['"hi there"', "h", "much too long"]),
        ("email", "a.b@example.com", ['"a@b.com"', "not an email"]),
        ("ref", "123e4567-e89b-12d3-a456-426614174000", ["123e4567"]),
    ],
)
def test_qwen3_coder_writes_every_string_raw_held_to_its_schema(key: str, good: str, bad: List[str]) -> None:
    args: Dict[str, Any] = {"date": "2019-12-13", key: good}
    text = CODER.render(AgentOutput(tool_calls=[ToolCall("book", args)]), tools=[STRINGS])
    assert f"<parameter={key}>\n{good}\n</parameter>" in text
    g = CODER.grammar([STRINGS])
    assert g.accepts(text), text
    assert CODER.parse(text, tools=[STRINGS]).tool_calls == [ToolCall("book", args)]
    for value in bad:
        assert not g.accepts(text.replace(f">\n{good}\n<", f">\n{value}\n<")), value


def test_qwen3_coder_raw_text_never_holds_the_parameter_end() -> None:
    g = CODER.grammar([STRINGS])
    multi = _coder_call("book", date="2019-12-13", text="line one\nline two")
    assert g.accepts(multi)
    assert not g.accepts(_coder_call("book", date="2019-12-13", note="a\n</parameter>"))
    for value in ("a\n</parameter>\nb", "ends with\n</parameter>"):
        with pytest.raises(ValueError, match="cannot be written before"):
            CODER.render(
                AgentOutput(tool_calls=[ToolCall("book", {"date": "2019-12-13", "text": value})]),
                tools=[STRINGS],
            )


def test_qwen3_coder_drops_optional_parameters_that_accept_no_value() -> None:
    odd = {"type": "integer", "enum": ["1", "2", "dontcare"]}  # no integer is in the enum
    tool = Tool("pick", "", {"type": "object", "properties": {"n": odd, "s": {"type": "string"}}})
    g = CODER.grammar([tool])
    assert g.accepts(_coder_call("pick", s="x")) and g.accepts(_coder_call("pick"))
    assert not g.accepts(_coder_call("pick", n="1", s="x")) and not g.accepts(_coder_call("pick", n='"1"'))
    never = Tool("never", "", {"type": "object", "properties": {"w": {"type": "string", "enum": []}}})
    assert CODER.grammar([never]).accepts(_coder_call("never"))
    required = Tool("strict", "", {"type": "object", "properties": {"n": odd}, "required": ["n"]})
    with pytest.raises(ToolError, match=r"tool 'strict': parameter 'n': .*accepts no value") as info:
        CODER.grammar([required])
    assert info.value.tool == "strict" and info.value.field == "n"
    bad = Tool("bad", "", {"type": "object", "properties": {"p": {"type": "string", "pattern": "(?=x)a"}}})
    with pytest.raises(ToolError, match=r"tool 'bad': parameter 'p': .*lookahead"):
        CODER.grammar([bad])


def test_qwen3_coder_reads_booleans_and_null_as_its_template_writes_them() -> None:
    # The template writes a scalar with ``| string``: True, False, None; JSON's spelling works too.
    tool = Tool(
        "f",
        "",
        {"type": "object", "properties": {"flag": {"type": "boolean"}, "n": {"type": ["integer", "null"]}}},
    )
    fmt = get("qwen3_coder")
    grammar = fmt.grammar([tool])

    def call(flag: str, n: str) -> str:
        return (
            f"<tool_call>\n<function=f>\n<parameter=flag>\n{flag}\n</parameter>\n"
            f"<parameter=n>\n{n}\n</parameter>\n</function>\n</tool_call>"
        )

    for flag, n, expected in [("True", "None", (True, None)), ("false", "7", (False, 7))]:
        text = call(flag, n)
        assert grammar.accepts(text)
        args = fmt.parse(text, tools=[tool]).tool_calls[0].arguments
        assert (args["flag"], args["n"]) == expected
    assert not grammar.accepts(call("TRUE", "1")) and not grammar.accepts(call("true", "Null"))


# --------------------------------------------------------------------------- deepseek_v3_1

V31 = get("deepseek_v3_1")
V31_OSLO = '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Oslo"}<｜tool▁call▁end｜>'
V31_NOW = "<｜tool▁call▁begin｜>now<｜tool▁sep｜>{}<｜tool▁call▁end｜>"


def _v31(*calls: str) -> str:
    return "<｜tool▁calls▁begin｜>" + "".join(calls) + "<｜tool▁calls▁end｜>"


def test_deepseek_v3_1_chains_parallel_calls_with_no_separator() -> None:
    calls = [ToolCall("get_weather", {"city": "Oslo", "days": 2}), ToolCall("now", {})]
    text = V31.render(AgentOutput(tool_calls=calls), tools=TOOLS)
    assert text == _v31(V31_OSLO.replace('"Oslo"}', '"Oslo", "days": 2}'), V31_NOW)
    g = V31.grammar(TOOLS, reasoning="disabled")
    assert g.accepts(text) and V31.parse(text, tools=TOOLS).tool_calls == calls
    assert V31.parse(text + "<｜end▁of▁sentence｜>").tool_calls == calls  # the stop string is dropped
    assert not g.accepts(_v31(V31_OSLO, "\n", V31_NOW))  # the grammar: back to back only
    assert not V31.grammar(TOOLS, reasoning="disabled", parallel_tool_calls=False).accepts(text)
    assert not g.accepts(_v31(V31_OSLO) + " Done.")  # the calls end the turn
    # values are JSON (no raw strings), arguments held to the schema
    assert not g.accepts(_v31(V31_OSLO.replace('"Oslo"', "Oslo")))
    assert not g.accepts(_v31(V31_OSLO.replace('"Oslo"}', '"Oslo", "days": 0}')))


def test_deepseek_v3_1_text_and_reasoning_before_the_calls() -> None:
    # the template glues the message's content to the calls; with thinking on, the prompt opens
    # "<think>" and the model closes it with "</think>" (no newlines of the format's own)
    out = AgentOutput(think="Oslo, so get_weather.", text="Let me check.", tool_calls=[OSLO])
    text = V31.render(out, tools=TOOLS)
    assert text == "<think>Oslo, so get_weather.</think>Let me check." + _v31(V31_OSLO)
    assert V31.grammar(TOOLS).accepts(text) and V31.parse(text, tools=TOOLS) == out
    assert not V31.grammar(TOOLS, reasoning="disabled").accepts(text)
    assert V31.grammar(TOOLS, reasoning="auto").accepts("It is sunny.")
    assert not V31.grammar(TOOLS, tool_choice="required", reasoning="disabled").accepts("It is sunny.")
    assert V31.grammar(TOOLS, tool_choice="now", reasoning="disabled").accepts(_v31(V31_NOW))
    assert V31.markers() == [
        "<think>",
        "</think>",
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁sep｜>",
    ]


def test_deepseek_v3_1_parse_errors_and_tools_block() -> None:
    with pytest.raises(FormatParseError, match="the end of the tool calls"):
        V31.parse("<｜tool▁calls▁begin｜>" + V31_OSLO)
    with pytest.raises(FormatParseError, match="not valid JSON"):
        V31.parse(_v31('<｜tool▁call▁begin｜>now<｜tool▁sep｜>{"a": <｜tool▁call▁end｜>'))
    with pytest.raises(FormatParseError, match="names the key 'city' twice"):
        V31.parse(_v31(V31_OSLO.replace('"Oslo"}', '"Oslo", "city": "Bergen"}')))
    with pytest.raises(ValueError, match="think block's end marker"):
        V31.render(AgentOutput(think="a</think>b", tool_calls=[OSLO]))
    block = V31.render_tools(TOOLS)
    assert block.startswith("## Tools\nYou have access to the following tools:\n\n### get_weather\n")
    assert "\n\n### now\nDescription: The time.\n\nParameters: {" in block
    assert "<｜tool▁sep｜>tool_call_arguments<｜tool▁call▁end｜>{additional_tool_calls}" in block


# --------------------------------------------------------------------------- glm4

GLM = get("glm4")
TYPED = Tool(
    "f",
    "",
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "b": {"type": "boolean"},
            "l": {"type": "array"},
            "s": {"type": "string"},
        },
    },
)
# what the GLM-4.6 template renders for this turn (reasoning "Think.", content "Checking.")
GLM_TURN = (
    "\n<think>Think.</think>\nChecking.\n<tool_call>f\n<arg_key>n</arg_key>\n<arg_value>3</arg_value>\n"
    "<arg_key>b</arg_key>\n<arg_value>true</arg_value>\n<arg_key>l</arg_key>\n"
    '<arg_value>[1, "a"]</arg_value>\n<arg_key>s</arg_key>\n<arg_value>two\nlines</arg_value>\n</tool_call>'
)


def test_glm4_writes_strings_raw_and_other_values_as_json() -> None:
    call = ToolCall("f", {"n": 3, "b": True, "l": [1, "a"], "s": "two\nlines"})
    out = AgentOutput(think="Think.", text="Checking.", tool_calls=[call])
    assert GLM.render(out, tools=[TYPED]) == GLM_TURN
    assert GLM.grammar([TYPED]).accepts(GLM_TURN) and GLM.parse(GLM_TURN, tools=[TYPED]) == out
    g = GLM.grammar([TYPED])
    assert not g.accepts(GLM_TURN.replace(">3<", '>"3"<'))  # an integer is JSON
    assert not g.accepts(GLM_TURN.replace(">3<", ">three<"))
    assert g.accepts(GLM_TURN.replace(">two\nlines<", '>"quoted"<'))  # raw: the quotes are the text
    quoted = GLM.parse(GLM_TURN.replace(">two\nlines<", '>"q"<'), tools=[TYPED])
    assert quoted.tool_calls[0].arguments["s"] == '"q"'  # with the tools: a string schema is raw
    with pytest.raises(ValueError, match="cannot be written before"):
        GLM.render(AgentOutput(tool_calls=[ToolCall("f", {"s": "a</arg_value>\nb"})]), tools=[TYPED])


def test_glm4_parallel_calls_and_the_think_forms() -> None:
    calls = [OSLO, ToolCall("now", {})]
    text = GLM.render(AgentOutput(think="", tool_calls=calls), tools=TOOLS)
    assert text == (
        "\n<think></think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n"
        "</tool_call>\n<tool_call>now\n</tool_call>"
    )
    assert GLM.grammar(TOOLS).accepts(text) and GLM.parse(text, tools=TOOLS).tool_calls == calls
    assert not GLM.grammar(TOOLS, parallel_tool_calls=False).accepts(text)
    # enable_thinking=False: the prompt holds "\n<think></think>", the model writes "\n" and the rest
    after = text[len("\n<think></think>") :]
    assert GLM.grammar(TOOLS, reasoning="disabled").accepts(after)
    assert GLM.parse(after).tool_calls == calls
    # a plain answer, and the stop strings (the next role marker) dropped
    assert GLM.parse("\n<think></think>\nSunny.<|user|>") == AgentOutput(think="", text="Sunny.")
    assert GLM.grammar(TOOLS).accepts("\n<think>Easy.</think>\nSunny.")
    assert not GLM.grammar(TOOLS).accepts("<think>Easy.</think>\nSunny.")  # the newline first


def test_glm4_parse_errors() -> None:
    with pytest.raises(FormatParseError, match="the end of the call"):
        GLM.parse("<tool_call>now\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n")
    with pytest.raises(FormatParseError, match="twice"):
        GLM.parse(
            "<tool_call>now\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n"
            "<arg_key>x</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
        )
    with pytest.raises(FormatParseError, match="think block is not closed"):
        GLM.parse("\n<think>hmm")
    assert "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>" in GLM.render_tools(TOOLS)
