"""xgrammar 0.2.9's model keys served by our presets (``get(key)``): strings that xgrammar's own
builtin tag for the key accepts (checked with xgrammar's matcher) are accepted by the preset's
request grammar and parse back to the same calls; where the preset's turn is narrower (Llama-3's
one call, Qwen3-Coder's template spelling of a call without arguments), the test says so."""

from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional

import pytest

from agentgrammar import ToolCall
from agentgrammar.formats import FormatParseError, get, names
from agentgrammar.formats.presets.aliases import ALIASES

xgr = pytest.importorskip("xgrammar")
from tests.formats.xgrammar_tag_checks import OPENAI, OSLO, TIME, TOOLS, xgr_accepts  # noqa: E402


class Sample(NamedTuple):
    text: str
    calls: List[ToolCall]
    free: Optional[str] = None  # the text the preset reads besides the calls
    think: Optional[str] = None


# For each key: xgrammar's reasoning mode (ours is the same but for "auto" think blocks, which
# xgrammar's "enabled" leaves open in the prompt) and the samples: a call with arguments, two
# calls, text then a call.
HERMES_OSLO = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}\n</tool_call>'
HERMES_NOW = '<tool_call>\n{"name": "now", "arguments": {}}\n</tool_call>'
CODER_OSLO = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"
)
CODER_CITY = (
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call>"
)
DS_OSLO = '<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Oslo", "days": 3}\n```<｜tool▁call▁end｜>'
DS_NOW = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n{}\n```<｜tool▁call▁end｜>"
V31_OSLO = '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Oslo", "days": 3}<｜tool▁call▁end｜>'
V31_NOW = "<｜tool▁call▁begin｜>now<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
MIMO_OSLO = (
    "<tool_call><function=get_weather><parameter=city>Oslo</parameter><parameter=days>3</parameter>"
    "</function></tool_call>"
)
MIMO_NOW = "<tool_call><function=now></function></tool_call>"
EXA_OSLO = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": 3}}</tool_call>'
EXA_NOW = '<tool_call>{"name": "now", "arguments": {}}</tool_call>'
TB, TE = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
HARMONY_OSLO = (
    ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo", "days": 3}<|call|>'
)

SAMPLES: Dict[str, List[Sample]] = {
    "llama": [Sample('{"name": "get_weather", "parameters": {"city": "Oslo", "days": 3}}', [OSLO])],
    "qwen_3": [
        Sample(HERMES_OSLO, [OSLO]),
        Sample(HERMES_OSLO + "\n" + HERMES_NOW, [OSLO, TIME]),
        Sample("Let me look.\n" + HERMES_OSLO, [OSLO], "Let me look."),
        Sample("<think>Easy.</think>\n\n" + HERMES_NOW, [TIME], think="Easy."),
    ],
    "qwen_3_coder": [
        Sample(CODER_OSLO, [OSLO]),
        Sample(CODER_OSLO + "\n" + CODER_CITY, [OSLO, ToolCall("get_weather", {"city": "Oslo"})]),
        Sample("Let me look.\n" + CODER_CITY, [ToolCall("get_weather", {"city": "Oslo"})], "Let me look."),
    ],
    "qwen_3_5": [
        Sample(CODER_OSLO, [OSLO]),
        Sample(
            "<think>\nEasy.\n</think>\n\n" + CODER_OSLO + "\n" + CODER_CITY,
            [OSLO, ToolCall("get_weather", {"city": "Oslo"})],
            think="Easy.",
        ),
        Sample("Let me look.\n" + CODER_OSLO, [OSLO], "Let me look."),
    ],
    "deepseek_r1": [
        Sample(TB + DS_OSLO + TE, [OSLO]),
        Sample(TB + DS_OSLO + "\n" + DS_NOW + TE, [OSLO, TIME]),
        Sample("Let me look." + TB + DS_OSLO + TE, [OSLO], "Let me look."),
    ],
    "deepseek_v3_1": [
        Sample(TB + V31_OSLO + TE, [OSLO]),
        Sample(TB + V31_OSLO + V31_NOW + TE, [OSLO, TIME]),
        Sample("Let me look." + TB + V31_OSLO + TE, [OSLO], "Let me look."),
    ],
    "harmony": [
        Sample(HARMONY_OSLO, [OSLO]),
        Sample(
            "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant" + HARMONY_OSLO,
            [OSLO],
            think="Easy.",
        ),
    ],
    "mimo": [
        Sample(MIMO_OSLO, [OSLO]),
        Sample(MIMO_OSLO + MIMO_NOW, [OSLO, TIME]),
        Sample("Let me look." + MIMO_OSLO, [OSLO], "Let me look."),
        Sample("<think>Easy.</think>" + MIMO_NOW, [TIME], think="Easy."),
    ],
    "exaone": [
        Sample(EXA_OSLO, [OSLO]),
        Sample(EXA_OSLO + EXA_NOW, [OSLO, TIME]),
        Sample("Let me look." + EXA_OSLO, [OSLO], "Let me look."),
        Sample("<think>Easy.</think>\n\n" + EXA_NOW, [TIME], think="Easy."),
    ],
}


def _theirs(key: str, **kw: Any) -> Any:
    tag = xgr.get_model_structural_tag(key, tools=OPENAI, **kw)
    return xgr.Grammar.from_structural_tag(tag.model_dump_json())


def _reasoning(key: str, sample: Sample) -> str:
    if key == "harmony":
        return "auto"
    return "auto" if sample.think is not None else "disabled"


CASES = [(key, s) for key, samples in SAMPLES.items() for s in samples]


@pytest.mark.parametrize(("key", "sample"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_what_xgrammars_tag_accepts_the_preset_accepts_and_parses(key: str, sample: Sample) -> None:
    reasoning = _reasoning(key, sample)
    assert xgr_accepts(_theirs(key, reasoning=reasoning), sample.text), "not in xgrammar's language"
    fmt = get(key)
    assert fmt.grammar(TOOLS, reasoning=reasoning).accepts(sample.text), sample.text
    out = fmt.parse(sample.text, tools=TOOLS)
    assert out.tool_calls == sample.calls
    assert out.text == sample.free and out.think == sample.think


@pytest.mark.parametrize("key", sorted(SAMPLES))
def test_malformed_calls_are_refused_by_both(key: str) -> None:
    fmt = get(key)
    ours = fmt.grammar(TOOLS, reasoning=_reasoning(key, SAMPLES[key][0]))
    theirs = _theirs(key, reasoning=_reasoning(key, SAMPLES[key][0]))
    good = SAMPLES[key][0].text
    for bad in (
        good.replace("Oslo", "Oslo", 1).replace("3", '"3"', 1),  # days as a string
        good.replace("get_weather", "get_whether"),  # no such tool
        good[:-3],  # cut off
    ):
        assert bad != good
        assert not ours.accepts(bad) and not xgr_accepts(theirs, bad), bad
    with pytest.raises(FormatParseError):
        fmt.parse(good[: len(good) // 2])


def test_aliases_name_presets_and_stay_out_of_names() -> None:
    for alias, target in ALIASES.items():
        assert get(alias) is get(target) and alias not in names()
    for key in ("harmony", "deepseek_r1", "deepseek_v3_1", "mimo", "exaone"):
        assert key in names()
    with pytest.raises(ValueError, match="unknown format"):
        get("no_such_family")


def test_every_xgrammar_key_names_a_preset() -> None:
    keys = set(xgr.builtin_structural_tag._structural_tag_registry)
    assert {"gemma_4", "cohere", "kimi_k3", "minimax_m3"} <= keys
    for key in keys:
        assert get(key).name in names(), key


def test_llama3_is_one_call_or_text_where_xgrammars_llama_tag_is_wider() -> None:
    one = SAMPLES["llama"][0].text
    for wider in ("Let me look." + one, one + one):
        assert xgr_accepts(_theirs("llama"), wider)
        assert not get("llama").grammar(TOOLS).accepts(wider)  # the templates' one call per turn


def test_qwen3_coder_writes_a_call_without_arguments_as_its_template_does() -> None:
    template_form = "<tool_call>\n<function=now>\n</function>\n</tool_call>"
    xgrammar_form = "<tool_call>\n<function=now>\n\n</function>\n</tool_call>"
    for key in ("qwen_3_coder", "qwen_3_5"):
        fmt = get(key)
        assert fmt.render(fmt.parse(template_form)) == template_form
        assert fmt.grammar(TOOLS, reasoning="disabled").accepts(template_form)
        assert not fmt.grammar(TOOLS, reasoning="disabled").accepts(xgrammar_form)
        assert xgr_accepts(_theirs(key, reasoning="disabled"), xgrammar_form)
        assert not xgr_accepts(_theirs(key, reasoning="disabled"), template_form)
