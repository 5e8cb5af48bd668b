"""Each preset against its family's official chat template (the offline model kit in
``../shared/data/models``, read in place; skipped when it is absent): the assistant tool-call
turn that the template renders, cut at the family's end-of-turn token, is accepted by the
preset's grammar (as text, and token by token with the family's real tokenizer and its markers
as single tokens), ``parse`` gives the call back, and ``render`` writes exactly that turn."""

from __future__ import annotations

import functools
import os
from typing import Any, Dict, List, NamedTuple, Optional

import pytest

from agentgrammar import Compiler, Matcher, ToolCall, Vocabulary
from agentgrammar.formats import AgentOutput, get
from tests.kit import CANONICAL_TOOLS

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KIT = os.path.join(REPO, "..", "shared", "data", "models")

TOOLS = CANONICAL_TOOLS  # the kit conversation's get_weather
QUESTION = "What is the weather in Oslo?"
CALL_ID = "abc123XYZ"  # Mistral's templates want 9 letters and digits
THOUGHT = "The user wants the weather in Oslo, so I call get_weather."


class Case(NamedTuple):
    folder: str  # in the kit
    template: Optional[str]  # chat_template.<variant>.jinja (None: the default), or a templates-only file
    preset: str
    anchor: str  # the assistant role header after which the turn starts
    eot: Optional[str]  # the end-of-turn token the turn is cut at (None: the turn ends the render)
    reasoning: Optional[str] = None  # the message key the template reads the reasoning from
    options: Optional[Dict[str, Any]] = None  # grammar options
    json_arguments: bool = False  # the template concatenates `arguments`: give JSON text


QWEN = "<|im_start|>assistant\n"
LLAMA = "<|start_header_id|>assistant<|end_header_id|>\n\n"
CASES = [
    Case("qwen3", None, "qwen3", QWEN, "<|im_end|>"),
    Case("qwen3", None, "qwen3", QWEN, "<|im_end|>", reasoning="reasoning_content"),
    Case("qwen3", "thinking-2507", "qwen3", QWEN, "<|im_end|>"),
    Case("qwen3", "qwen2.5-instruct", "hermes", QWEN, "<|im_end|>"),
    Case("qwen3", "qwen3-coder", "qwen3_coder", QWEN, "<|im_end|>"),
    Case("gpt-oss", None, "harmony", "<|start|>assistant", None, options={"reasoning": "auto"}),
    Case("gpt-oss", None, "harmony", "<|start|>assistant", None, reasoning="thinking"),
    Case("llama3", None, "llama3", LLAMA, "<|eot_id|>"),
    Case("llama3", "llama3.1", "llama3", LLAMA, "<|eot_id|>"),
    Case("templates-only", "mistral-nemo-instruct-2407", "mistral", "[/INST]", "</s>"),
    Case("templates-only", "mistral-small-3.1-24b-instruct-2503", "mistral_v7", "[/INST]", "</s>"),
    Case("templates-only", "mistral-small-3.2-24b-instruct-2506", "mistral_small_3_2", "[/INST]", "</s>"),
    # DeepSeek-V3.1 renders a tool-call turn after "<｜Assistant｜></think>" whatever `thinking`
    # is (tests/kit.py has the thinking prompt's "<think>" case)
    Case(
        "deepseek",
        None,
        "deepseek_v3_1",
        "<｜Assistant｜></think>",
        "<｜end▁of▁sentence｜>",
        options={"reasoning": "disabled"},
        json_arguments=True,
    ),
    Case("templates-only", "glm-4.6", "glm4", "<|assistant|>", None, reasoning="reasoning_content"),
    Case("templates-only", "glm-4.6", "glm4", "<|assistant|>", None),
]


def _case_id(case: Case) -> str:
    return f"{case.preset}-{case.template or case.folder}" + (f"-{case.reasoning}" if case.reasoning else "")


def kit_path(*parts: str) -> str:
    path = os.path.join(KIT, *parts)
    if not os.path.exists(path):
        pytest.skip(
            f"the offline model kit is not at {os.path.normpath(KIT)} ({os.path.join(*parts)} missing)"
        )
    return path


@functools.lru_cache(maxsize=None)
def _tokenizer(folder: str) -> Any:
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(kit_path(folder), local_files_only=True)


def _messages(case: Case) -> List[Dict[str, Any]]:
    args: Any = '{"city": "Oslo"}' if case.json_arguments else {"city": "Oslo"}
    call = {"type": "function", "id": CALL_ID, "function": {"name": "get_weather", "arguments": args}}
    assistant: Dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [call]}
    if case.reasoning == "thinking":  # gpt-oss: content and thinking may not both be given
        assistant = {"role": "assistant", "thinking": THOUGHT, "tool_calls": [call]}
    elif case.reasoning:
        assistant[case.reasoning] = THOUGHT
    return [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": QUESTION},
        assistant,
    ]


def rendered(case: Case) -> str:
    """The template's rendering of the conversation up to and including the tool call."""
    messages = _messages(case)
    if case.folder == "templates-only":
        pytest.importorskip("transformers")
        from transformers.utils.chat_template_utils import render_jinja_template

        template = open(kit_path(case.folder, f"{case.template}.jinja"), encoding="utf-8").read()
        out, _ = render_jinja_template(
            conversations=[messages],
            tools=TOOLS,
            chat_template=template,
            add_generation_prompt=False,
            bos_token="<s>",
            eos_token="</s>",
        )
        return str(out[0])
    name = f"chat_template.{case.template}.jinja" if case.template else "chat_template.jinja"
    template = open(kit_path(case.folder, name), encoding="utf-8").read()
    return str(
        _tokenizer(case.folder).apply_chat_template(
            messages,
            tools=TOOLS,
            add_generation_prompt=False,
            tokenize=False,
            chat_template=template,
            date_string="26 Jul 2024",
        )
    )


def canonical_turn(case: Case) -> str:
    """The assistant turn: after the role header that follows the user's question, up to the
    end-of-turn token."""
    text = rendered(case)
    start = text.index(case.anchor, text.index(QUESTION)) + len(case.anchor)
    turn = text[start:]
    return turn[: turn.index(case.eot)] if case.eot else turn


def expected_output(case: Case) -> AgentOutput:
    fmt = get(case.preset)
    call = ToolCall("get_weather", {"city": "Oslo"}, CALL_ID if fmt.id_key or fmt.id_begin else None)
    think = THOUGHT if case.reasoning else ("" if case.preset in ("qwen3", "glm4") else None)
    return AgentOutput(think=think, tool_calls=[call])


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_templates_turn_is_accepted_parsed_and_rendered(case: Case) -> None:
    fmt = get(case.preset)
    turn = canonical_turn(case)
    assert "get_weather" in turn and "Oslo" in turn, turn  # the template wrote the call
    assert fmt.grammar(TOOLS, **(case.options or {})).accepts(turn), turn
    out = fmt.parse(turn, tools=TOOLS)
    assert out == expected_output(case), turn
    assert fmt.render(out, tools=TOOLS) == turn


@pytest.mark.parametrize("case", [c for c in CASES if c.folder != "templates-only"], ids=_case_id)
def test_the_templates_turn_is_accepted_token_by_token(case: Case) -> None:
    """With the family's tokenizer, the turn's tokens (markers as the model's single tokens)
    walk the grammar to its end."""
    from agentgrammar.formats.token_markers import marker_tokens, with_token_markers

    tok = _tokenizer(case.folder)
    vocab = Vocabulary.from_huggingface(tok)
    fmt = get(case.preset)
    markers = marker_tokens(fmt, vocab)
    compiled = Compiler(vocab.with_token_markers(markers)).compile(
        with_token_markers(fmt, markers).grammar(TOOLS, **(case.options or {}))
    )
    matcher = Matcher(compiled)
    turn = canonical_turn(case)
    for i, token in enumerate(tok.encode(turn, add_special_tokens=False)):
        assert matcher.accept_token(token), (turn, i, tok.decode([token]))
    assert matcher.is_completed()


def test_both_mistral_spacings_are_read_by_both_presets() -> None:
    nemo = canonical_turn(next(c for c in CASES if c.preset == "mistral"))
    small = canonical_turn(next(c for c in CASES if c.preset == "mistral_v7"))
    assert nemo.startswith("[TOOL_CALLS][{") and small.startswith("[TOOL_CALLS] [{")
    for preset in ("mistral", "mistral_v7"):
        fmt = get(preset)
        for turn in (nemo, small):
            assert fmt.grammar(TOOLS).accepts(turn)
            assert fmt.parse(turn, tools=TOOLS).tool_calls == [
                ToolCall("get_weather", {"city": "Oslo"}, CALL_ID)
            ]
