"""The ``kimi_k3`` preset against xgrammar 0.2.9's builtin ``kimi_k3`` tag (the kit has no
Kimi-K3 template): ``<|open|>KIND<|sep|>...<|close|>KIND<|sep|>`` blocks, the response before
the calls, ``tool="NAME" index="N"`` call heads, typed ``argument key="K" type="T"`` headers,
and ``<|close|>message<|sep|>`` at the end of every turn."""

from __future__ import annotations

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import AgentOutput, get
from tests.formats.xgrammar_tag_checks import (
    OSLO,
    TIME,
    TOOLS,
    Sample,
    check_hostile,
    check_malformed,
    check_sample,
    cut_offs,
    theirs,
    xgr_accepts,
)

OPEN, CLOSE, SEP = "<|open|>", "<|close|>", "<|sep|>"
ARG = OPEN + 'argument key="{}" type="{}"' + SEP + "{}" + CLOSE + "argument" + SEP
OSLO_CALL = (
    OPEN + 'call tool="get_weather" index="{}"' + SEP + ARG.format("city", "string", "Oslo")
    + ARG.format("days", "number", "3") + CLOSE + "call" + SEP
)  # fmt: skip
NOW_CALL = OPEN + 'call tool="now" index="{}"' + SEP + CLOSE + "call" + SEP
END = CLOSE + "message" + SEP


def _turn(response: str, *calls: str, think: str = "") -> str:
    tools = OPEN + "tools" + SEP + "".join(c.format(i) for i, c in enumerate(calls)) + CLOSE + "tools" + SEP
    head = f"{OPEN}think{SEP}{think}{CLOSE}think{SEP}" if think else ""
    return head + f"{OPEN}response{SEP}{response}{CLOSE}response{SEP}" + (tools if calls else "") + END


ONE = _turn("", OSLO_CALL)
SAMPLES = [
    Sample(ONE, [OSLO]),
    Sample(_turn("", OSLO_CALL, NOW_CALL), [OSLO, TIME]),
    Sample(_turn("Let me look.", OSLO_CALL), [OSLO], "Let me look."),
    Sample(_turn("", NOW_CALL, think="Easy."), [TIME], think="Easy."),
    Sample(_turn("Hi.", think="Easy."), [], "Hi.", "Easy."),
]


@pytest.mark.parametrize("sample", SAMPLES, ids=range(len(SAMPLES)))
def test_what_xgrammars_tag_accepts(sample: Sample) -> None:
    check_sample("kimi_k3", sample)


def test_the_prompt_opens_the_first_block_in_xgrammars_other_modes() -> None:
    # xgrammar's "enabled" / "disabled" turns start inside the block the prompt opened; ours
    # start with its marker (as in "auto"): the same text once the marker is put back
    inside = "Easy." + CLOSE + "think" + SEP + ONE
    assert xgr_accepts(theirs("kimi_k3", reasoning="enabled"), inside)
    assert get("kimi_k3").grammar(TOOLS, reasoning="enabled").accepts(OPEN + "think" + SEP + inside)
    body = ONE[len(OPEN + "response" + SEP) :]
    assert xgr_accepts(theirs("kimi_k3", reasoning="disabled"), body)
    assert get("kimi_k3").grammar(TOOLS, reasoning="disabled").accepts(ONE)


def test_malformed_calls_are_refused_by_both() -> None:
    check_malformed(
        "kimi_k3",
        ONE,
        [
            ONE.replace('type="number"', 'type="string"'),  # the schema's type, not another
            ONE.replace('index="0"', 'index=""'),
            ONE.replace("get_weather", "get_whether"),
            ONE[: -len(END)],  # the message's end is required
            ONE.replace(ARG.format("city", "string", "Oslo"), ""),  # city is required
            ONE.replace(f"{OPEN}response{SEP}{CLOSE}response{SEP}", ""),  # so is the response block
        ],
    )


def test_hostile_and_cut_off_output_is_a_parse_error() -> None:
    check_hostile(
        "kimi_k3",
        [
            *cut_offs(ONE),
            ONE.replace(">3<", ">NaN<").replace(SEP + "3" + CLOSE, SEP + "NaN" + CLOSE),
            ONE.replace('key="days"', 'key="city"'),  # a key twice
            ONE.replace('index="0"', 'index="x"'),
            ONE.replace(SEP + "3" + CLOSE, SEP + "[" * 5000 + CLOSE),
        ],
    )


def test_values_other_than_strings_are_json_and_typed() -> None:
    fmt = get("kimi_k3")
    out = AgentOutput(tool_calls=[ToolCall("f", {"a": [1, "x"], "b": None, "c": "3"}, "0")])
    text = fmt.render(out)
    assert ARG.format("a", "array", '[1,"x"]') in text and ARG.format("c", "string", "3") in text
    assert fmt.parse(text) == out
