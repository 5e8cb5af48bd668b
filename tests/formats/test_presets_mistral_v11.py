"""The ``mistral_v11`` preset: what Mistral's v11+ models write when they call,
``[TOOL_CALLS]NAME[ARGS]{...}`` per call (vLLM's mistral parser reads this form), against the
kit's Mistral-Small-3.2 template (which adds ``[CALL_ID]ID`` in the history) and the
``mistral_small_3_2`` preset, which shares its layout."""

from __future__ import annotations

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import AgentOutput, FormatParseError, get
from tests.formats.test_family_templates import CASES, canonical_turn
from tests.kit import CANONICAL_TOOLS

TOOLS = CANONICAL_TOOLS
OSLO = ToolCall("get_weather", {"city": "Oslo"})
V11 = '[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"}'


def test_the_v11_form_is_the_3_2_templates_turn_without_its_id() -> None:
    small = canonical_turn(next(c for c in CASES if c.preset == "mistral_small_3_2"))
    assert small == '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Oslo"}'
    assert small.replace("[CALL_ID]abc123XYZ", "") == V11
    v11, v32 = get("mistral_v11"), get("mistral_small_3_2")
    assert v11.render(AgentOutput(tool_calls=[OSLO]), tools=TOOLS) == V11
    for fmt in (v11, v32):  # both read what a v11 model writes
        assert fmt.grammar(TOOLS).accepts(V11)
        assert fmt.parse(V11, tools=TOOLS).tool_calls == [OSLO]
    assert not v11.grammar(TOOLS).accepts(small)  # v11 writes no id


def test_calls_back_to_back_after_text() -> None:
    fmt = get("mistral_v11")
    text = "Checking both." + V11 + V11.replace("Oslo", "Bergen")
    assert fmt.grammar(TOOLS).accepts(text)
    out = fmt.parse(text + "</s>", tools=TOOLS)
    assert out.text == "Checking both."
    assert out.tool_calls == [OSLO, ToolCall("get_weather", {"city": "Bergen"})]
    assert fmt.render(out, tools=TOOLS) == text
    assert not fmt.grammar(TOOLS, parallel_tool_calls=False).accepts(text)


@pytest.mark.parametrize(
    "bad",
    [
        '[TOOL_CALLS]get_weather{"city": "Oslo"}',  # no [ARGS]
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}]',  # the pre-v11 list
        '[TOOL_CALLS]get_weather[ARGS]{"city": 7}',
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Oslo"',
    ],
)
def test_malformed_calls_are_refused(bad: str) -> None:
    assert not get("mistral_v11").grammar(TOOLS).accepts(bad)


def test_ids_for_the_history_keep_mistrals_shape() -> None:
    fmt = get("mistral_v11")
    assert fmt.id_begin is None and len(fmt.new_call_id(5)) == 9 and fmt.new_call_id(5).isalnum()


@pytest.mark.parametrize("cut", range(len("[TOOL_CALLS]get_"), len(V11) - 1))
def test_a_cut_off_call_is_a_parse_error(cut: int) -> None:
    with pytest.raises(FormatParseError):
        get("mistral_v11").parse(V11[:cut])
