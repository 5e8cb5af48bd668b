"""Presets under xgrammar 0.2.9's model keys of the XML and DSML families (Kimi, MiniMax, DeepSeek-V3.2/V4, GLM-4.7) (``get_model_structural_tag``): the key is a preset
name or an alias (``aliases()``), and texts that xgrammar's builtin tag for that key accepts (a
call with arguments, two calls, text then a call) are accepted by the preset's grammar and
parse back; malformed calls are refused. (xgrammar's ``kimi_k3``, ``minimax_m3``, ``gemma_4``
and ``cohere`` layouts: test_presets_kimi_k3.py, test_presets_minimax_m3.py,
test_presets_gemma.py, test_presets_cohere.py.)"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import AgentOutput, get, names
from agentgrammar.formats.presets import aliases

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402

TOOLS: List[Dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
OSLO = ToolCall("get_weather", {"city": "Oslo", "days": 2})
ROME = ToolCall("get_weather", {"city": "Rome"})

KIMI_CALL = "<|tool_call_begin|>functions.get_weather:{i}<|tool_call_argument_begin|>{args}<|tool_call_end|>"
KIMI = "<|tool_calls_section_begin|>{calls}<|tool_calls_section_end|>"


def _kimi(*calls: Tuple[int, str]) -> str:
    return KIMI.format(calls="".join(KIMI_CALL.format(i=i, args=a) for i, a in calls))


def _dsml(calls: str, space: str, *invokes: str) -> str:
    d = "｜DSML｜" + space
    return f"\n\n<{d}{calls}>\n" + "".join(invokes) + f"</{d}{calls}>"


def _invoke(space: str, **params: Tuple[str, str]) -> str:
    d = "｜DSML｜" + space
    body = "".join(
        f'<{d}parameter name="{k}" string="{s}">{v}</{d}parameter>\n' for k, (s, v) in params.items()
    )
    return f'<{d}invoke name="get_weather">\n{body}</{d}invoke>\n'


def _minimax(*invokes: str) -> str:
    return "\n<minimax:tool_call>\n" + "".join(invokes) + "</minimax:tool_call>"


def _mm_invoke(**params: str) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params.items())
    return f'<invoke name="get_weather">\n{body}</invoke>\n'


def _glm(**params: str) -> str:
    body = "".join(f"<arg_key>{k}</arg_key><arg_value>{v}</arg_value>" for k, v in params.items())
    return f"<tool_call>get_weather{body}</tool_call>"


def _v4(space: str, calls: str) -> List[Tuple[str, List[ToolCall], str]]:
    one = _invoke(space, city=("true", "Oslo"), days=("false", "2"))
    two = _invoke(space, city=("true", "Rome"))
    return [
        (_dsml(calls, space, one), [OSLO], ""),
        (_dsml(calls, space, one, two), [OSLO, ROME], ""),
        ("Let me check." + _dsml(calls, space, two), [ROME], "Let me check."),
    ]


# key -> (reasoning for both grammars, [(text, calls, free text)])
CASES: Dict[str, Tuple[str, List[Tuple[str, List[ToolCall], str]]]] = {
    "kimi": (
        "disabled",
        [
            (_kimi((0, '{"city": "Oslo", "days": 2}')), [OSLO], ""),
            (_kimi((0, '{"city": "Oslo", "days": 2}'), (1, '{"city": "Rome"}')), [OSLO, ROME], ""),
            ("Let me check." + _kimi((7, '{"city": "Rome"}')), [ROME], "Let me check."),
        ],
    ),
    "minimax": (
        "auto",
        [
            (_minimax(_mm_invoke(city="Oslo", days="2")), [OSLO], ""),
            (_minimax(_mm_invoke(city="Oslo", days="2"), _mm_invoke(city="Rome")), [OSLO, ROME], ""),
            ("Let me check." + _minimax(_mm_invoke(city="Rome")), [ROME], "Let me check."),
        ],
    ),
    "deepseek_v3_2": ("disabled", _v4("", "function_calls")),
    "deepseek_v4": ("disabled", _v4("", "tool_calls")),
    "deepseek_v4_1": ("disabled", _v4(" ", "calls")),
    "glm_4_7": (
        "disabled",
        [
            (_glm(city="Oslo", days="2"), [OSLO], ""),
            (_glm(city="Oslo", days="2") + "\n" + _glm(city="Rome"), [OSLO, ROME], ""),
            ("Let me check.\n" + _glm(city="Rome"), [ROME], "Let me check."),
        ],
    ),
}


def _with_ids(fmt: Any, calls: List[ToolCall], text: str) -> List[ToolCall]:
    if fmt.call_id_form is None:
        return calls
    found = fmt.parse(text).tool_calls  # the ids the text holds
    return [ToolCall(c.name, c.arguments, f.id) for c, f in zip(calls, found)]


def test_the_keys_are_presets_or_aliases() -> None:
    keys = set(xgr.builtin_structural_tag._structural_tag_registry)
    for key in CASES:
        assert key in keys
        assert key in names() or key in aliases()
    # every alias names a preset; all but "pythonic" (a layout's name) are xgrammar keys
    assert set(aliases()) - {"pythonic"} <= keys and set(aliases().values()) <= set(names())
    assert get("kimi") is get(aliases()["kimi"])


@pytest.mark.parametrize("key", list(CASES))
def test_texts_xgrammar_accepts_are_accepted_and_parsed(key: str) -> None:
    reasoning, texts = CASES[key]
    theirs = xgr.Grammar.from_structural_tag(
        xgr.get_model_structural_tag(key, tools=TOOLS, reasoning=reasoning)
    )
    fmt = get(key)
    ours = fmt.grammar(TOOLS, reasoning=reasoning)
    for text, calls, free in texts:
        assert _is_grammar_accept_string(theirs, text), text  # a text of xgrammar's layout
        assert ours.accepts(text), text
        out = fmt.parse(text, tools=TOOLS)
        assert out == AgentOutput(tool_calls=_with_ids(fmt, calls, text), text=free or None), text


@pytest.mark.parametrize("key", list(CASES))
def test_malformed_calls_are_refused(key: str) -> None:
    reasoning, texts = CASES[key]
    ours = get(key).grammar(TOOLS, tool_choice="required", reasoning=reasoning)
    text = texts[0][0]
    assert ours.accepts(text)
    broken = [
        text.replace("get_weather", "get_time"),  # an unknown tool
        text.replace("2", "two", 1),  # a typed value that is not one
        text[: len(text) // 2],  # cut off
        text.replace("city", "town"),  # an undeclared argument, the required one missing
    ]
    for bad in broken:
        assert not ours.accepts(bad), bad
