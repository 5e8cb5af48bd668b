"""Model output is hostile input: ``parse`` answers with a typed error naming the problem and
where it is, or with calls whose arguments are safe JSON, never a crash, an untyped exception or
a value such as NaN that slips past validation (NaN passes ``minimum`` / ``maximum``)."""

from __future__ import annotations

import json
import math
from typing import Any, Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import Field

from agentgrammar import AgentGrammarError, Tool, ToolCall, ToolError, ToolRegistry
from agentgrammar.cli import main
from agentgrammar.formats import AgentOutput, FormatParseError, get, names
from agentgrammar.formats.arguments import (
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    JSONLimitError,
    decode_strict,
    loads_strict,
    nesting_depth,
)
from agentgrammar.grammar.json_schema import MAX_SCHEMA_DEPTH

PLACEHOLDER = 12345.5  # a value to find in the rendered text and replace


def _tools() -> List[Tool]:
    registry = ToolRegistry()

    @registry.tool
    def transfer(amount: float = Field(ge=0, le=100)) -> str:
        """Send money."""
        return f"sent {amount}"

    @registry.tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    registry.add(
        Tool(
            "tenth",
            "A multiple of 0.1 (jsonschema divides by it).",
            {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.1}}},
        )
    )
    return list(registry)


TOOLS = _tools()


def _call_text(preset: str, name: str = "transfer", arguments: Any = None) -> str:
    """A call as ``preset`` writes it, with ``PLACEHOLDER`` as the argument."""
    args = {"amount": PLACEHOLDER} if arguments is None else arguments
    return get(preset).render(AgentOutput(tool_calls=[ToolCall(name, args)]))


def _with(preset: str, value: str, **kw: Any) -> str:
    text = _call_text(preset, **kw)
    assert str(PLACEHOLDER) in text
    return text.replace(str(PLACEHOLDER), value, 1)


def _json_presets() -> List[str]:
    # the styled layouts write strings raw (Gemma 4's between <|"|>): no JSON escapes in them
    return [n for n in names() if get(n).call_layout not in ("xml", "styled")]


# --------------------------------------------------------------------------- non-finite numbers


@pytest.mark.parametrize("preset", [n for n in names() if get(n).call_layout != "xml"])
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_non_finite_numbers_are_refused(preset: str, value: str) -> None:
    text = _with(preset, value)
    for tools in (None, TOOLS):
        with pytest.raises(FormatParseError) as info:
            get(preset).parse(text, tools=tools)
        assert info.value.offset == text.index(value)
        assert value in str(info.value) and (
            "not a JSON number" in str(info.value) or "float" in str(info.value)
        )


def test_nan_in_an_xml_parameter_is_text_never_a_float() -> None:
    fmt = get("qwen3_coder")
    text = _with("qwen3_coder", "NaN")
    args = fmt.parse(text).tool_calls[0].arguments
    assert args == {"amount": "NaN"}  # a word, as any other non-JSON value: never float("nan")
    with pytest.raises(ToolError, match="amount"):
        fmt.parse(text, tools=TOOLS)  # not a number
    with pytest.raises(FormatParseError, match="too large for a float"):
        fmt.parse(_with("qwen3_coder", "1e999"))


# --------------------------------------------------------------------------- integers, depth


@pytest.mark.parametrize("preset", names())
def test_integers_past_the_digit_limit_are_refused(preset: str) -> None:
    ok = "9" * MAX_INT_DIGITS
    assert get(preset).parse(_with(preset, ok)).tool_calls[0].arguments["amount"] == int(ok)
    for digits in (MAX_INT_DIGITS + 1, 5000):  # 5000: past Python's own int-str limit (ValueError)
        text = _with(preset, "-" + "9" * digits)
        with pytest.raises(FormatParseError, match=f"more than {MAX_INT_DIGITS} digits") as info:
            get(preset).parse(text, tools=TOOLS)
        assert info.value.offset == text.index("-99")


@pytest.mark.parametrize("preset", names())
def test_nesting_past_the_depth_limit_is_refused(preset: str) -> None:
    for depth in (MAX_JSON_DEPTH + 1, 5000):  # 5000: a RecursionError in Python's json
        text = _with(preset, "[" * depth + "]" * depth)
        with pytest.raises(
            FormatParseError,
            match=f"nested more than {MAX_JSON_DEPTH - 1}|nested more than {MAX_JSON_DEPTH} levels",
        ) as info:
            get(preset).parse(text, tools=TOOLS)
        assert text[info.value.offset] == "["


@pytest.mark.parametrize("preset", names())
def test_nesting_within_the_limit_is_read(preset: str) -> None:
    # the arguments object and the value: MAX_JSON_DEPTH levels in all (the xml layout has no
    # call object around them; the JSON layouts have one or two more)
    outer = 1 if get(preset).call_layout in ("xml", "name_then_json") else 3
    depth = MAX_JSON_DEPTH - outer
    args = get(preset).parse(_with(preset, "[" * depth + "]" * depth)).tool_calls[0].arguments
    assert nesting_depth(args) <= MAX_JSON_DEPTH


def test_depth_limit_is_the_schema_depth_limit() -> None:
    assert MAX_JSON_DEPTH == MAX_SCHEMA_DEPTH


def test_a_huge_number_under_multiple_of_is_a_tool_error() -> None:
    # jsonschema divides by 0.1: OverflowError for an int too large for a float
    text = _with("hermes", "1" + "0" * 400, name="tenth", arguments={"x": PLACEHOLDER})
    with pytest.raises(ToolError, match="cannot validate"):
        get("hermes").parse(text, tools=TOOLS)


# --------------------------------------------------------------------------- surrogates


@pytest.mark.parametrize("preset", names())
@pytest.mark.parametrize("escape", ["\\ud800", "\\uDFFF", "\\ud83dx", "\\ud83d\\u0041", "\\ude00\\ud83d"])
def test_lone_surrogate_escapes_are_refused(preset: str, escape: str) -> None:
    text = _with(preset, f'"{escape}"')
    for tools in (None, TOOLS):
        with pytest.raises(FormatParseError, match="lone surrogate") as info:
            get(preset).parse(text, tools=tools)
        assert text[info.value.offset] == "\\"


@pytest.mark.parametrize("preset", _json_presets())
def test_surrogate_pairs_and_escaped_backslashes_are_text(preset: str) -> None:
    for spelled, value in (
        ('"\\ud83d\\ude00"', "😀"),
        ('"\\uD83D\\uDE00"', "😀"),
        ('"\\\\ud800"', "\\ud800"),
    ):
        text = _with(preset, spelled, name="echo", arguments={"text": PLACEHOLDER})
        assert get(preset).parse(text, tools=TOOLS).tool_calls[0].arguments == {"text": value}


@pytest.mark.parametrize("preset", names())
def test_a_raw_lone_surrogate_anywhere_is_refused(preset: str) -> None:
    text = _call_text(preset, "echo", {"text": "ab"}).replace("ab", "a\ud800b")
    with pytest.raises(FormatParseError, match="lone surrogate") as info:
        get(preset).parse(text)
    assert text[info.value.offset] == "\ud800"
    with pytest.raises(FormatParseError, match="lone surrogate"):
        get(preset).parse("Hello \udcff")


# --------------------------------------------------------------------------- the JSON reader


@pytest.mark.parametrize(
    ("text", "kind", "offset"),
    [
        ('{"a": NaN}', "constant", 6),
        ("[1, -Infinity]", "constant", 4),
        ("Infinity", "constant", 0),
        ("[1e309]", "non_finite", 1),
        ("9" * 641, "digits", 0),
        ('[0, "x", ' + "9" * 700 + "]", "digits", 9),
        ("[" * 300, "depth", 256),
        ('{"k": "[[[[", "v": ' + "{" * 300, "depth", 19 + 255),
        ('["ok", "\\ud800"]', "surrogate", 8),
        ('{"\\udc00": 1}', "surrogate", 2),
        ('["\\ud83d\\ud83d\\ude00"]', "surrogate", 2),
    ],
)
def test_loads_strict_names_the_problem_and_where(text: str, kind: str, offset: int) -> None:
    with pytest.raises(JSONLimitError) as info:
        loads_strict(text)
    assert (info.value.kind, info.value.offset) == (kind, offset)
    assert isinstance(info.value, AgentGrammarError) and isinstance(info.value, ValueError)


def test_decode_strict_offsets_are_in_the_whole_text() -> None:
    text = '<call> {"a": [1e400]} </call> NaN'
    with pytest.raises(JSONLimitError) as info:
        decode_strict(text, 7)
    assert info.value.offset == text.index("1e400")
    assert decode_strict('<call> {"a": [1]} NaN', 7) == ({"a": [1]}, 17)  # text after: not read


def test_syntax_errors_stay_json_errors() -> None:
    for text in ('{"a": "NaN is', "[1, 2", '{"a": 1 x NaN}', "[1] x"):
        with pytest.raises(json.JSONDecodeError):
            loads_strict(text)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_JSON, st.booleans())
def test_loads_strict_reads_what_json_reads(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert loads_strict(text) == json.loads(text)
    assert decode_strict(" " + text + " tail", 1) == (json.loads(text), 1 + len(text))


def _safe(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, dict):
        return all(_safe(k) and _safe(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_safe(v) for v in value)
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["[", "]", "{", "}", '"a"', ":", ",", "1", "1e999", "NaN", '"\\ud800"', '"\\ud83d\\ude00"', "-Infinity", " ", "9" * 700]), max_size=12))  # fmt: skip
def test_loads_strict_is_json_minus_the_unsafe(pieces: List[str]) -> None:
    text = "".join(pieces)
    try:
        expected = json.loads(text)
    except (ValueError, RecursionError):
        expected = None
        with pytest.raises(ValueError):
            loads_strict(text)
        return
    if _safe(expected) and nesting_depth(expected) <= MAX_JSON_DEPTH and "9" * 641 not in text:
        assert loads_strict(text) == expected
    else:
        with pytest.raises(JSONLimitError):
            loads_strict(text)


# --------------------------------------------------------------------------- the check command


@pytest.mark.parametrize(
    ("value", "message"),
    [("9" * 5000, "more than 640 digits"), ("[" * 5000 + "]" * 5000, "nested more than"), ("NaN", "NaN")],
)
def test_check_reports_hostile_values_without_a_traceback(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = '<tool_call>{"name": "calculate", "arguments": {"expression": %s}}</tool_call>' % value
    assert main(["check", "--format", "tags", "--json", text]) == 1
    result: Dict[str, Any] = json.loads(capsys.readouterr().out)
    assert not result["valid"] and message in result["error"]
