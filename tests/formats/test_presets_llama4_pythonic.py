"""The ``llama4_pythonic`` preset (alias ``pythonic``): a turn is text, or one Python list of calls
with keyword arguments, ``[get_weather(city="Oslo"), now()]``. The kit has no Llama-4 template:
the form is Meta's documented one, as vLLM's llama4_pythonic parser reads it."""

from __future__ import annotations

import os
import random

import pytest

from agentgrammar import Tool, ToolCall, ToolError
from agentgrammar.formats import AgentOutput, FormatParseError, RenderError, get

WEATHER = Tool(
    "get_weather",
    "",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
            "units": {"enum": ["celsius", "fahrenheit"]},
            "detail": {"type": "object", "properties": {"wind": {"type": "boolean"}}},
        },
        "required": ["city"],
    },
)
NOW = Tool("now", "", {"type": "object", "properties": {}})
TOOLS = [WEATHER, NOW]
FMT = get("llama4_pythonic")


def test_pythonic_is_an_alias() -> None:
    assert get("pythonic") is FMT


def test_the_documented_form_is_rendered_accepted_and_parsed() -> None:
    out = AgentOutput(
        tool_calls=[
            ToolCall("get_weather", {"city": "Oslo", "days": 3, "detail": {"wind": True}}),
            ToolCall("now", {}),
        ]
    )
    text = FMT.render(out, tools=TOOLS)
    assert text == '[get_weather(city="Oslo", days=3, detail={"wind": True}), now()]'
    assert FMT.grammar(TOOLS).accepts(text)
    assert FMT.parse(text + "<|eot|>", tools=TOOLS) == out
    # vLLM's example template quotes every value: the same text for string arguments
    assert FMT.render(AgentOutput(tool_calls=[ToolCall("get_weather", {"city": "Oslo"})])) == (
        '[get_weather(city="Oslo")]'
    )


def test_a_turn_is_calls_or_text() -> None:
    g = FMT.grammar(TOOLS)
    assert g.accepts("It is sunny in Oslo.")
    assert FMT.parse("It is sunny in Oslo.").text == "It is sunny in Oslo."
    for mixed in ("Let me check: [now()]", "[now()] Done.", "[now()]\n[now()]"):
        assert not g.accepts(mixed)
    with pytest.raises(RenderError):
        FMT.render(AgentOutput(text="Let me check.", tool_calls=[ToolCall("now", {})]))
    with pytest.raises(RenderError):  # text that would read as calls
        FMT.render(AgentOutput(text="[1, 2] are numbers"))
    with pytest.raises(FormatParseError, match="text after the tool call"):
        FMT.parse("[now()] Done.")


@pytest.mark.parametrize(
    "bad",
    [
        "[get_weather(city='Oslo')]",  # the grammar writes double quotes (parse reads both)
        '[get_weather("Oslo")]',  # positional
        '[get_weather(city="Oslo", days=15)]',  # out of range
        '[get_weather(city="Oslo", units="kelvin")]',
        "[get_weather(days=2)]",  # missing required
        '[get_weather(city="Oslo", extra=1)]',
        "[get_weather(city=str(1))]",
        '[get_weather(city="Oslo")',
        '[get_weather(city="Oslo"),now()]',
        'get_weather(city="Oslo")',  # not in a list
        "[]",
    ],
)
def test_malformed_calls_are_refused_by_the_grammar(bad: str) -> None:
    assert not FMT.grammar(TOOLS, tool_choice="required").accepts(bad)
    # with calls optional, text may be anything that does not start like calls (a bare call
    # included: parse reads it as text, as the grammar does)
    assert FMT.grammar(TOOLS).accepts(bad) == (not bad.startswith("["))


def test_tool_choice() -> None:
    named = FMT.grammar(TOOLS, tool_choice="now")
    assert named.accepts("[now()]") and not named.accepts("[now(), now()]") and not named.accepts("Hi")
    required = FMT.grammar(TOOLS, tool_choice="required")
    assert required.accepts("[now(), now()]") and not required.accepts("Hi")
    single = FMT.grammar(TOOLS, parallel_tool_calls=False)
    assert single.accepts("[now()]") and not single.accepts("[now(), now()]")


def test_parse_reads_other_python_spellings_and_validates() -> None:
    out = FMT.parse("[ get_weather( city = 'Oslo' , days=2, ) , now() ]", tools=TOOLS)
    assert out.tool_calls == [ToolCall("get_weather", {"city": "Oslo", "days": 2}), ToolCall("now", {})]
    with pytest.raises(ToolError, match="invalid arguments for tool 'get_weather'"):
        FMT.parse('[get_weather(city="Oslo", days=99)]', tools=TOOLS)


def test_hostile_python_is_never_evaluated(tmp_path: "os.PathLike[str]") -> None:
    marker = os.path.join(str(tmp_path), "ran")
    for text in (
        f'[get_weather(city=__import__("os").system("touch {marker}"))]',
        f'[get_weather(city=open("{marker}", "w"))]',
        f'[__import__("os").system("touch {marker}")]',
        f'[get_weather(city=(lambda: open("{marker}", "w"))())]',
        f"[get_weather(city=f\"{{open('{marker}', 'w')}}\")]",
    ):
        with pytest.raises(FormatParseError):
            FMT.parse(text, tools=TOOLS)
    assert not os.path.exists(marker)


def test_every_cut_of_a_call_is_a_parse_error() -> None:
    text = '[get_weather(city="Os\\"lo", detail={"wind": False}), now()]'
    assert FMT.parse(text).tool_calls
    for cut in range(1, len(text)):
        with pytest.raises(FormatParseError):
            FMT.parse(text[:cut])


def test_garbled_calls_are_typed_errors() -> None:
    rng = random.Random(3)
    text = '[get_weather(city="Oslo", days=3, detail={"wind": True}), now()]'
    for _ in range(2000):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice("[](){}\"',=:\\ xN-1.")
        garbled = "".join(chars)
        try:
            out = FMT.parse(garbled)
        except FormatParseError as e:
            assert 0 <= e.offset <= len(garbled)
            continue
        assert out.text is not None or out.tool_calls  # read as text or as calls
