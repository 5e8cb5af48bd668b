"""Checks shared by the presets written from xgrammar 0.2.9's builtin tags (Gemma 4, Cohere,
Kimi-K3, MiniMax-M3; tests/formats/test_presets_<family>.py): a sample is a text that
xgrammar's tag for the key accepts (checked with xgrammar's matcher), with the calls, think and
content it holds."""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional

import pytest

from agentgrammar import Tool, ToolCall
from agentgrammar.formats import AgentOutput, FormatParseError, get

xgr = pytest.importorskip("xgrammar")
from xgrammar.testing import _is_grammar_accept_string as xgr_accepts  # noqa: E402

WEATHER = Tool(
    "get_weather",
    "",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)
NOW = Tool("now", "", {"type": "object", "properties": {}})
TOOLS = [WEATHER, NOW]
OPENAI = [{"type": "function", "function": {"name": t.name, "parameters": t.parameters}} for t in TOOLS]
OSLO = ToolCall("get_weather", {"city": "Oslo", "days": 3})
TIME = ToolCall("now", {})


class Sample(NamedTuple):
    text: str
    calls: List[ToolCall]
    content: Optional[str] = None  # the free text, or the response where the format has one
    think: Optional[str] = None
    reasoning: str = "auto"  # both tags' reasoning mode


def theirs(key: str, **kw: Any) -> Any:
    """xgrammar's compiled builtin tag for ``key`` over ``TOOLS``."""
    tag = xgr.get_model_structural_tag(key, tools=OPENAI, **kw)
    return xgr.Grammar.from_structural_tag(tag.model_dump_json())


def expected(key: str, sample: Sample) -> AgentOutput:
    fmt = get(key)
    calls = sample.calls
    if fmt.call_index is not None:  # the index in the head is the call's id
        calls = [ToolCall(c.name, c.arguments, str(i)) for i, c in enumerate(calls)]
    if fmt.has_response:
        return AgentOutput(think=sample.think, tool_calls=calls, response=sample.content)
    return AgentOutput(think=sample.think, tool_calls=calls, text=sample.content)


def check_sample(key: str, sample: Sample) -> None:
    """xgrammar's tag accepts the sample; the preset's grammar accepts it and parses it back;
    the preset renders those calls as a text xgrammar's tag accepts."""
    fmt = get(key)
    assert xgr_accepts(theirs(key, reasoning=sample.reasoning), sample.text), "not xgrammar's layout"
    assert fmt.grammar(TOOLS, reasoning=sample.reasoning).accepts(sample.text), sample.text
    out = fmt.parse(sample.text, tools=TOOLS)
    assert out == expected(key, sample)
    assert fmt.parse(sample.text) == out  # the text alone says each value's type
    rendered = fmt.render(out, tools=TOOLS)
    assert xgr_accepts(theirs(key, reasoning=sample.reasoning), rendered), rendered
    assert fmt.grammar(TOOLS, reasoning=sample.reasoning).accepts(rendered)
    assert fmt.parse(rendered, tools=TOOLS) == out


def check_malformed(key: str, good: str, bad: List[str], reasoning: str = "auto") -> None:
    """Each of ``bad`` is refused by both grammars (``good``, which both accept, is the control)."""
    ours = get(key).grammar(TOOLS, reasoning=reasoning)
    theirs_ = theirs(key, reasoning=reasoning)
    assert ours.accepts(good) and xgr_accepts(theirs_, good)
    for text in bad:
        assert text != good
        assert not ours.accepts(text) and not xgr_accepts(theirs_, text), text


def check_hostile(key: str, texts: List[str]) -> None:
    """Each of ``texts`` is a typed parse error, with and without tools."""
    fmt = get(key)
    for text in texts:
        for tools in (None, TOOLS):
            with pytest.raises(FormatParseError):
                fmt.parse(text, tools=tools)


def cut_offs(text: str) -> List[str]:
    """``text`` cut at every point inside its last call (the texts a truncated turn leaves)."""
    return [text[:k] for k in range(len(text) // 2, len(text) - 1)]
